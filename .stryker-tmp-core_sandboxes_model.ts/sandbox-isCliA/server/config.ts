// @ts-nocheck
import { Result } from "effect"
import { parseQuantity, toBytes } from "../core/index.ts"

/** The server's configuration, read once from the environment (design.md section 2). */

export interface ServerConfig {
  readonly port: number
  readonly host: string
  readonly databasePath: string
  readonly apiKey: string | undefined
  readonly defaultTenantId: string
  readonly defaultOrganizationId: string
  readonly storageQuota: string
  readonly storageClasses: ReadonlyArray<string>
  readonly revisionStepMs: number
  readonly publicUrl: string | undefined
  readonly logLevel: LogLevel
  readonly secretsKey: string | undefined
  readonly runtime: "local"
}

export type LogLevel = "debug" | "info" | "warn" | "error" | "silent"

export const DEFAULT_TENANT_ID = "00000000-0000-4000-8000-000000000001"
export const DEFAULT_ORGANIZATION_ID = "00000000-0000-4000-8000-000000000000"

export const defaultConfig: ServerConfig = {
  port: 8080,
  host: "127.0.0.1",
  databasePath: "./data/slipway.db",
  apiKey: undefined,
  defaultTenantId: DEFAULT_TENANT_ID,
  defaultOrganizationId: DEFAULT_ORGANIZATION_ID,
  storageQuota: "100Gi",
  storageClasses: ["standard", "fast"],
  revisionStepMs: 250,
  publicUrl: undefined,
  logLevel: "info",
  secretsKey: undefined,
  runtime: "local"
}

export class ConfigError extends Error {
  override readonly name = "ConfigError"
}

const integer = (name: string, raw: string, min: number, max: number): number => {
  const value = Number(raw)
  if (!/^\d+$/.test(raw.trim()) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`)
  }
  return value
}

/** Checks values that only make sense once parsed, so a bad setting fails before the port opens. */
export const validateConfig = (config: ServerConfig): ServerConfig => {
  const quota = Result.flatMap(parseQuantity(config.storageQuota.trim()), toBytes)
  if (Result.isFailure(quota)) throw new ConfigError(`SLIPWAY_STORAGE_QUOTA: ${quota.failure}`)
  if (quota.success < 0n) throw new ConfigError(`SLIPWAY_STORAGE_QUOTA must not be negative, got "${config.storageQuota}"`)
  if (config.storageClasses.length === 0) throw new ConfigError("SLIPWAY_STORAGE_CLASSES must name at least one storage class")
  return config
}

const logLevels: ReadonlyArray<LogLevel> = ["debug", "info", "warn", "error", "silent"]

/** Reads the documented variables; anything unset keeps its default. Bad values fail fast with a clear message. */
export const configFromEnv = (env: NodeJS.ProcessEnv = process.env): ServerConfig => {
  const pick = (name: string) => (env[name] === undefined || env[name] === "" ? undefined : env[name])
  const logLevel = (pick("LOG_LEVEL") ?? defaultConfig.logLevel).toLowerCase() as LogLevel
  if (!logLevels.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${logLevels.join(", ")}, got "${logLevel}"`)
  const runtime = pick("SLIPWAY_RUNTIME") ?? "local"
  if (runtime !== "local") throw new ConfigError(`SLIPWAY_RUNTIME supports only "local" in this release, got "${runtime}"`)
  return validateConfig({
    port: pick("PORT") ? integer("PORT", pick("PORT")!, 0, 65535) : defaultConfig.port,
    host: pick("HOST") ?? defaultConfig.host,
    databasePath: pick("DATABASE_PATH") ?? defaultConfig.databasePath,
    apiKey: pick("SLIPWAY_API_KEY"),
    defaultTenantId: pick("SLIPWAY_TENANT_ID") ?? DEFAULT_TENANT_ID,
    defaultOrganizationId: pick("SLIPWAY_ORGANIZATION_ID") ?? DEFAULT_ORGANIZATION_ID,
    storageQuota: pick("SLIPWAY_STORAGE_QUOTA") ?? defaultConfig.storageQuota,
    storageClasses: (pick("SLIPWAY_STORAGE_CLASSES") ?? defaultConfig.storageClasses.join(","))
      .split(",")
      .map((name) => name.trim())
      .filter((name) => name.length > 0),
    revisionStepMs: pick("SLIPWAY_REVISION_STEP_MS")
      ? integer("SLIPWAY_REVISION_STEP_MS", pick("SLIPWAY_REVISION_STEP_MS")!, 0, 3_600_000)
      : defaultConfig.revisionStepMs,
    publicUrl: pick("SLIPWAY_PUBLIC_URL")?.replace(/\/+$/, ""),
    logLevel,
    secretsKey: pick("SLIPWAY_SECRETS_KEY"),
    runtime
  })
}
