/**
 * Where the CLI finds its server and key. Precedence, highest first: flags (`--url`,
 * `--api-key`, `--tenant`), environment (`SLIPWAY_URL`, `SLIPWAY_API_KEY`, `SLIPWAY_TENANT_ID`),
 * the config file (`--config <path>`, else `$SLIPWAY_CONFIG`, else
 * `$XDG_CONFIG_HOME/slipway/config.json`, i.e. `~/.config/slipway/config.json`), then the default
 * URL `http://127.0.0.1:8080`. The file is JSON: `{"url": …, "api_key": …, "tenant_id": …}`.
 */
import { existsSync, readFileSync, statSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"
import { isUuid } from "../core/api/common.ts"
import { CliError, ExitCode } from "./errors.ts"

export interface GlobalFlags {
  readonly url?: string | undefined
  readonly apiKey?: string | undefined
  readonly tenant?: string | undefined
  readonly config?: string | undefined
}

export interface Settings {
  readonly url: string
  readonly apiKey: string | undefined
  readonly tenantId: string | undefined
  /** Where each value came from, for `slipway config` and error messages. */
  readonly sources: { readonly url: string; readonly apiKey: string; readonly tenantId: string }
  readonly configPath: string
}

export const defaultUrl = "http://127.0.0.1:8080"

export const defaultConfigPath = (env: NodeJS.ProcessEnv = process.env) =>
  env.SLIPWAY_CONFIG || join(env.XDG_CONFIG_HOME || join(homedir(), ".config"), "slipway", "config.json")

interface FileConfig {
  readonly url?: string
  readonly api_key?: string
  readonly tenant_id?: string
}

const readConfigFile = (path: string, explicit: boolean): FileConfig => {
  if (!existsSync(path)) {
    if (explicit) throw new CliError(ExitCode.usage, "ConfigError", `config file ${path} does not exist`)
    return {}
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"))
  } catch (error) {
    throw new CliError(ExitCode.usage, "ConfigError", `config file ${path} is not valid JSON: ${(error as Error).message}`)
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new CliError(ExitCode.usage, "ConfigError", `config file ${path} must hold a JSON object with url, api_key and tenant_id`)
  }
  const known = new Set(["url", "api_key", "tenant_id"])
  for (const [key, value] of Object.entries(parsed)) {
    if (!known.has(key)) throw new CliError(ExitCode.usage, "ConfigError", `config file ${path}: unknown key ${JSON.stringify(key)} (expected url, api_key, tenant_id)`)
    if (typeof value !== "string") throw new CliError(ExitCode.usage, "ConfigError", `config file ${path}: ${key} must be a string`)
  }
  if ((parsed as FileConfig).api_key !== undefined && process.platform !== "win32" && (statSync(path).mode & 0o077) !== 0) {
    process.stderr.write(`slipway: warning: ${path} holds an API key and is readable by other users (chmod 600 it)\n`)
  }
  return parsed as FileConfig
}

export const resolveSettings = (flags: GlobalFlags, env: NodeJS.ProcessEnv = process.env): Settings => {
  const configPath = flags.config ?? defaultConfigPath(env)
  const file = readConfigFile(configPath, flags.config !== undefined || Boolean(env.SLIPWAY_CONFIG))
  const pick = (flag: string | undefined, envName: string, fileValue: string | undefined): [string | undefined, string] => {
    if (flag !== undefined && flag !== "") return [flag, "flag"]
    const fromEnv = env[envName]
    if (fromEnv !== undefined && fromEnv !== "") return [fromEnv, `env ${envName}`]
    if (fileValue !== undefined && fileValue !== "") return [fileValue, `file ${configPath}`]
    return [undefined, "unset"]
  }
  const [url = defaultUrl, urlSource] = pick(flags.url, "SLIPWAY_URL", file.url)
  const [apiKey, keySource] = pick(flags.apiKey, "SLIPWAY_API_KEY", file.api_key)
  const [tenantId, tenantSource] = pick(flags.tenant, "SLIPWAY_TENANT_ID", file.tenant_id)
  if (!/^https?:\/\/[^/\s]+/.test(url) || !URL.canParse(url)) {
    throw new CliError(ExitCode.usage, "ConfigError", `the server URL must be http(s)://host[:port], got ${JSON.stringify(url)} (from ${urlSource === "unset" ? "default" : urlSource})`)
  }
  if (tenantId !== undefined && !isUuid(tenantId)) {
    throw new CliError(ExitCode.usage, "ConfigError", `the tenant id must be a uuid, got ${JSON.stringify(tenantId)} (from ${tenantSource})`)
  }
  return {
    url: url.replace(/\/+$/, ""),
    apiKey,
    tenantId: tenantId?.toLowerCase(),
    sources: { url: urlSource === "unset" ? "default" : urlSource, apiKey: keySource, tenantId: tenantSource },
    configPath
  }
}

/** The key is required by every API command; say where it may come from. */
export const requireKey = (settings: Settings): string => {
  if (settings.apiKey !== undefined) return settings.apiKey
  throw new CliError(ExitCode.auth, "NoApiKey", `no API key: pass --api-key, set SLIPWAY_API_KEY, or put "api_key" in ${settings.configPath}`)
}
