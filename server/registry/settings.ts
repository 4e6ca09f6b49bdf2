/**
 * The registry's settings, read from the environment (docs/registry.md). Bad values fail at
 * start with a clear message, like the server's other settings (server/config.ts).
 */
import { Cron, Result } from "effect"
import { ConfigError } from "../config.ts"

export interface RegistrySettings {
  /**
   * `SLIPWAY_REGISTRY`: `auto` (default) runs the registry when `docker-registry` is installed,
   * `on` requires it, `off` runs none (push tokens are refused). With `SLIPWAY_REGISTRY_URL`
   * Slipway uses that registry instead of running one.
   */
  readonly mode: "auto" | "on" | "off"
  /** `SLIPWAY_REGISTRY_ADDR`: where the registry Slipway runs listens (`host:port`). */
  readonly addr: string
  /**
   * `SLIPWAY_REGISTRY_URL`: a registry Slipway does not run, configured for Slipway's tokens
   * (docs/registry.md); Slipway reaches its API there.
   */
  readonly url: string | undefined
  /**
   * `SLIPWAY_REGISTRY_HOST`: the `host[:port]` clients push to, answered in `registry_url` (a TLS
   * proxy in front of the registry). Default: the registry's own address, plain HTTP.
   */
  readonly publicHost: string | undefined
  /** `SLIPWAY_REGISTRY_TOKEN_TTL`: seconds a push token (the `docker login` password) is valid. */
  readonly pushTokenTtlSeconds: number
  /** Seconds a registry token answered by the token endpoint is valid (never past the push token's expiry). */
  readonly accessTokenTtlSeconds: number
  /** Seconds the credentials of Slipway's own pulls are valid. */
  readonly pullTokenTtlSeconds: number
  /**
   * `SLIPWAY_REGISTRY_GC`: when garbage collection runs (a cron expression, UTC), `off` for never.
   * Only for the registry Slipway runs.
   */
  readonly gcSchedule: string | undefined
}

export const defaultRegistrySettings: RegistrySettings = {
  mode: "auto",
  addr: "127.0.0.1:5000",
  url: undefined,
  publicHost: undefined,
  pushTokenTtlSeconds: 3600,
  accessTokenTtlSeconds: 300,
  pullTokenTtlSeconds: 900,
  gcSchedule: "0 4 * * *"
}

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)?:(\d{1,5})$/
const PUBLIC_HOST = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/

/** Checks a cron expression as the schedule reads it; undefined when valid. */
export const cronProblem = (expression: string): string | undefined => {
  const parsed = Cron.parse(expression, "UTC")
  return Result.isFailure(parsed) ? parsed.failure.message : undefined
}

export const registrySettingsFromEnv = (env: NodeJS.ProcessEnv = process.env): RegistrySettings => {
  const pick = (name: string) => (env[name] === undefined || env[name]!.trim() === "" ? undefined : env[name]!.trim())
  const mode = (pick("SLIPWAY_REGISTRY") ?? "auto").toLowerCase()
  if (mode !== "auto" && mode !== "on" && mode !== "off") throw new ConfigError(`SLIPWAY_REGISTRY must be one of auto, on, off, got "${mode}"`)
  const addr = pick("SLIPWAY_REGISTRY_ADDR") ?? defaultRegistrySettings.addr
  const port = HOST_PORT.exec(addr)
  if (!port || Number(port[2]) > 65535) throw new ConfigError(`SLIPWAY_REGISTRY_ADDR must be host:port (e.g. 127.0.0.1:5000), got "${addr}"`)
  const url = pick("SLIPWAY_REGISTRY_URL")?.replace(/\/+$/, "")
  if (url !== undefined && !/^https?:\/\/[^/]+$/.test(url)) throw new ConfigError(`SLIPWAY_REGISTRY_URL must be http(s)://host[:port] with no path, got "${url}"`)
  const publicHost = pick("SLIPWAY_REGISTRY_HOST")
  if (publicHost !== undefined && !PUBLIC_HOST.test(publicHost)) throw new ConfigError(`SLIPWAY_REGISTRY_HOST must be host[:port] with no scheme or path, got "${publicHost}"`)
  const ttlText = pick("SLIPWAY_REGISTRY_TOKEN_TTL")
  const ttl = ttlText === undefined ? defaultRegistrySettings.pushTokenTtlSeconds : Number(ttlText)
  if (!/^\d+$/.test(ttlText ?? "0") || ttl < 1 || ttl > 86_400) throw new ConfigError(`SLIPWAY_REGISTRY_TOKEN_TTL must be a number of seconds from 1 to 86400, got "${ttlText}"`)
  const gc = pick("SLIPWAY_REGISTRY_GC") ?? defaultRegistrySettings.gcSchedule!
  const gcSchedule = gc.toLowerCase() === "off" ? undefined : gc
  const problem = gcSchedule === undefined ? undefined : cronProblem(gcSchedule)
  if (problem !== undefined) throw new ConfigError(`SLIPWAY_REGISTRY_GC must be a cron expression (e.g. "0 4 * * *") or off: ${problem}`)
  return {
    ...defaultRegistrySettings,
    mode,
    addr,
    url,
    publicHost,
    pushTokenTtlSeconds: ttl,
    accessTokenTtlSeconds: Math.min(defaultRegistrySettings.accessTokenTtlSeconds, ttl),
    gcSchedule
  }
}
