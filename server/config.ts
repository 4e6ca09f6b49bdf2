import { Result } from "effect"
import { insecureGitHostProblem, isUuid, parseQuantity, toBytes } from "../core/index.ts"

/** The server's configuration, read once from the environment (design.md section 2). */

export interface ServerConfig {
  readonly port: number
  readonly host: string
  readonly databasePath: string
  /**
   * `postgres://...` (DATABASE_URL): every store on that PostgreSQL database, shared by several
   * replicas (docs/postgres.md); `databasePath` is then unused. Unset: the SQLite file.
   */
  readonly databaseUrl: string | undefined
  /** On PostgreSQL: how long a replica's lease on a revision lasts unrenewed (SLIPWAY_LEASE_MS): a dead replica's work moves after this. */
  readonly leaseMs: number
  readonly apiKey: string | undefined
  readonly defaultTenantId: string
  readonly defaultOrganizationId: string
  readonly storageQuota: string
  readonly storageClasses: ReadonlyArray<string>
  readonly revisionStepMs: number
  readonly publicUrl: string | undefined
  readonly logLevel: LogLevel
  /** The key secrets are sealed with: SLIPWAY_SECRETS_KEY, else (at start) the generated key file beside the database. */
  readonly secretsKey: string | undefined
  /** Keys that also open stored values (an unfinished rotation); filled in at start. */
  readonly previousSecretsKeys: ReadonlyArray<string>
  /** Which runtime driver runs deployments and sandboxes (`SLIPWAY_RUNTIME`); `auto` picks `local` when its tools are present. */
  readonly runtime: RuntimeName
  /** Time a client has to send a request's headers (`SLIPWAY_HEADERS_TIMEOUT_MS`): a slowloris is cut here. */
  readonly headersTimeoutMs: number
  /** Time a client has to send a whole request (`SLIPWAY_REQUEST_TIMEOUT_MS`). */
  readonly requestTimeoutMs: number
  /** Open connections at most (`SLIPWAY_MAX_CONNECTIONS`); more are refused at once. */
  readonly maxConnections: number
  /** Largest body an unauthenticated endpoint (the push webhook) reads before its signature is checked (`SLIPWAY_UNAUTHENTICATED_MAX_BODY`, bytes). */
  readonly unauthenticatedMaxBody: number
  /** How long shutdown waits for requests in flight before closing their connections (`SLIPWAY_SHUTDOWN_GRACE_MS`). */
  readonly shutdownGraceMs: number
  /**
   * Bearer token that lets any peer scrape `/metrics` (`SLIPWAY_METRICS_TOKEN`, at least 16
   * characters). Unset: only loopback peers may scrape (docs/metrics.md).
   */
  readonly metricsToken?: string | undefined
  /**
   * Where other replicas reach this one (`SLIPWAY_INTERNAL_URL`); default `http://HOST:PORT`
   * (with the default HOST=127.0.0.1 that is this machine only). docs/replicas.md.
   */
  readonly internalUrl?: string | undefined
  /**
   * The secret replicas share to forward requests to each other (`SLIPWAY_INTERNAL_TOKEN`, at
   * least 16 characters); required on PostgreSQL with the local runtime.
   */
  readonly internalToken?: string | undefined
  /**
   * Git hosts (`host:port`, a bare host meaning port 80) whose repositories may be fetched over
   * plain `http://` (`SLIPWAY_INSECURE_GIT_HOSTS`): `repo_url` accepts them, builds clone from them.
   */
  readonly insecureGitHosts: ReadonlyArray<string>
}

export const runtimeNames = ["auto", "simulated", "local"] as const
export type RuntimeName = (typeof runtimeNames)[number]

export type LogLevel = "debug" | "info" | "warn" | "error" | "silent"

export const DEFAULT_TENANT_ID = "00000000-0000-4000-8000-000000000001"
export const DEFAULT_ORGANIZATION_ID = "00000000-0000-4000-8000-000000000000"

export const defaultConfig: ServerConfig = {
  port: 8080,
  host: "127.0.0.1",
  databasePath: "./data/slipway.db",
  databaseUrl: undefined,
  leaseMs: 15_000,
  apiKey: undefined,
  defaultTenantId: DEFAULT_TENANT_ID,
  defaultOrganizationId: DEFAULT_ORGANIZATION_ID,
  storageQuota: "100Gi",
  storageClasses: ["standard", "fast"],
  revisionStepMs: 250,
  publicUrl: undefined,
  logLevel: "info",
  secretsKey: undefined,
  previousSecretsKeys: [],
  runtime: "auto",
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  maxConnections: 1024,
  unauthenticatedMaxBody: 256 * 1024,
  shutdownGraceMs: 10_000,
  insecureGitHosts: []
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

/** Why a PostgreSQL connection URL (`name` is its variable) is refused, or undefined; the message never shows the password. */
export const postgresUrlProblem = (name: string, raw: string): string | undefined =>
  /^postgres(ql)?:\/\/./i.test(raw) && URL.canParse(raw)
    ? undefined
    : `${name} must be a postgres:// or postgresql:// URL (postgres://user:password@host:5432/database), got "${raw.replace(/\/\/[^@/]*@/, "//***@")}"`

/**
 * Why a public base URL is unusable, or undefined: it must be an absolute http(s) URL (clients
 * are handed `{SLIPWAY_PUBLIC_URL}/sandboxes/{id}` as `dataplane_url`), without query or fragment.
 */
export const baseUrlProblem = (name: string, raw: string): string | undefined => {
  const url = URL.canParse(raw) ? new URL(raw) : undefined
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
    return `${name} must be an http:// or https:// URL such as http://slipway.example.com:8080, got "${raw}"`
  }
  if (url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") {
    return `${name} must be a base URL without credentials, query or fragment, got "${raw}"`
  }
  return undefined
}

/** At least 16 characters, no blanks: a secret that is sent as a header. */
const tokenProblem = (name: string, value: string): string | undefined =>
  /^[\x21-\x7e]{16,}$/.test(value) ? undefined : `${name} must be at least 16 visible ASCII characters without spaces (e.g. openssl rand -hex 32)`

/** Checks values that only make sense once parsed, so a bad setting fails before the port opens. */
export const validateConfig = (config: ServerConfig): ServerConfig => {
  for (const [name, value] of [
    ["SLIPWAY_PUBLIC_URL", config.publicUrl],
    ["SLIPWAY_INTERNAL_URL", config.internalUrl]
  ] as const) {
    const problem = value === undefined ? undefined : baseUrlProblem(name, value)
    if (problem !== undefined) throw new ConfigError(problem)
  }
  if (config.internalToken !== undefined) {
    const problem = tokenProblem("SLIPWAY_INTERNAL_TOKEN", config.internalToken)
    if (problem !== undefined) throw new ConfigError(problem)
  }
  if (config.databaseUrl !== undefined && config.runtime === "local" && config.internalToken === undefined) {
    throw new ConfigError(sharedRuntimeNeeds("SLIPWAY_INTERNAL_TOKEN"))
  }
  for (const [name, value] of [
    ["SLIPWAY_TENANT_ID", config.defaultTenantId],
    ["SLIPWAY_ORGANIZATION_ID", config.defaultOrganizationId]
  ] as const) {
    if (!isUuid(value)) throw new ConfigError(`${name} must be a UUID such as ${DEFAULT_TENANT_ID}, got "${value}"`)
  }
  if (config.databaseUrl !== undefined) {
    const problem = postgresUrlProblem("DATABASE_URL", config.databaseUrl)
    if (problem !== undefined) throw new ConfigError(problem)
  }
  const quota = Result.flatMap(parseQuantity(config.storageQuota.trim()), toBytes)
  if (Result.isFailure(quota)) throw new ConfigError(`SLIPWAY_STORAGE_QUOTA: ${quota.failure}`)
  if (quota.success < 0n) throw new ConfigError(`SLIPWAY_STORAGE_QUOTA must not be negative, got "${config.storageQuota}"`)
  if (config.storageClasses.length === 0) throw new ConfigError("SLIPWAY_STORAGE_CLASSES must name at least one storage class")
  if (config.metricsToken !== undefined && config.metricsToken.length < 16) {
    throw new ConfigError("SLIPWAY_METRICS_TOKEN must be at least 16 characters (e.g. openssl rand -hex 32)")
  }
  for (const entry of config.insecureGitHosts) {
    const problem = insecureGitHostProblem(entry)
    if (problem !== undefined) throw new ConfigError(`SLIPWAY_INSECURE_GIT_HOSTS: ${problem}`)
  }
  if (config.requestTimeoutMs > 0 && config.headersTimeoutMs > config.requestTimeoutMs) {
    throw new ConfigError(`SLIPWAY_HEADERS_TIMEOUT_MS (${config.headersTimeoutMs}) must not exceed SLIPWAY_REQUEST_TIMEOUT_MS (${config.requestTimeoutMs})`)
  }
  return config
}

/** Why a start on PostgreSQL with the local runtime is refused without `name`. */
export const sharedRuntimeNeeds = (name: "SLIPWAY_INTERNAL_TOKEN" | "SLIPWAY_DEPLOYMENT_POSTGRES_URL"): string =>
  name === "SLIPWAY_INTERNAL_TOKEN"
    ? "SLIPWAY_INTERNAL_TOKEN is required on PostgreSQL (DATABASE_URL) with the local runtime: replicas forward requests for the boxes and deployments they do not run to the replica that does, authenticated with this shared secret; set the same value (e.g. openssl rand -hex 32) on every replica (docs/replicas.md)"
    : "SLIPWAY_DEPLOYMENT_POSTGRES_URL is required on PostgreSQL (DATABASE_URL) with the local runtime: a deployment may be served by any replica, so its database must live on a PostgreSQL server every replica reaches (docs/replicas.md)"

const logLevels: ReadonlyArray<LogLevel> = ["debug", "info", "warn", "error", "silent"]

/** An API key given in the environment: at least 16 visible ASCII characters, as sent in a header (keys the server mints are `slw_` and 43 more). */
const apiKeyProblem = (value: string): string | undefined =>
  /^[\x21-\x7e]{16,}$/.test(value) ? undefined : "SLIPWAY_API_KEY must be at least 16 visible ASCII characters without spaces (e.g. slw_$(openssl rand -hex 24))"

/** Reads the documented variables; anything unset keeps its default. Bad values fail fast with a clear message. */
export const configFromEnv = (env: NodeJS.ProcessEnv = process.env): ServerConfig => {
  const pick = (name: string) => (env[name] === undefined || env[name] === "" ? undefined : env[name])
  const apiKey = pick("SLIPWAY_API_KEY")
  if (apiKey !== undefined && apiKeyProblem(apiKey) !== undefined) throw new ConfigError(apiKeyProblem(apiKey)!)
  // Any passphrase is accepted (docs/deployments.md), but blanks would be the empty one.
  const secretsKey = pick("SLIPWAY_SECRETS_KEY")
  if (secretsKey !== undefined && secretsKey.trim() === "") throw new ConfigError("SLIPWAY_SECRETS_KEY is blank: unset it (a key file is then used) or give a key, e.g. openssl rand -hex 32")
  const logLevel = (pick("LOG_LEVEL") ?? defaultConfig.logLevel).toLowerCase() as LogLevel
  if (!logLevels.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${logLevels.join(", ")}, got "${logLevel}"`)
  const setting = (name: string, min: number, max: number, fallback: number) => (pick(name) ? integer(name, pick(name)!, min, max) : fallback)
  const runtime = (pick("SLIPWAY_RUNTIME") ?? "auto").toLowerCase() as RuntimeName
  if (!runtimeNames.includes(runtime)) throw new ConfigError(`SLIPWAY_RUNTIME must be one of ${runtimeNames.join(", ")}, got "${runtime}"`)
  return validateConfig({
    port: pick("PORT") ? integer("PORT", pick("PORT")!, 0, 65535) : defaultConfig.port,
    host: pick("HOST") ?? defaultConfig.host,
    databasePath: pick("DATABASE_PATH") ?? defaultConfig.databasePath,
    databaseUrl: pick("DATABASE_URL"),
    leaseMs: pick("SLIPWAY_LEASE_MS") ? integer("SLIPWAY_LEASE_MS", pick("SLIPWAY_LEASE_MS")!, 300, 3_600_000) : defaultConfig.leaseMs,
    apiKey,
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
    secretsKey,
    previousSecretsKeys: [],
    runtime,
    headersTimeoutMs: setting("SLIPWAY_HEADERS_TIMEOUT_MS", 1, 3_600_000, defaultConfig.headersTimeoutMs),
    requestTimeoutMs: setting("SLIPWAY_REQUEST_TIMEOUT_MS", 1, 86_400_000, defaultConfig.requestTimeoutMs),
    maxConnections: setting("SLIPWAY_MAX_CONNECTIONS", 1, 1_000_000, defaultConfig.maxConnections),
    unauthenticatedMaxBody: setting("SLIPWAY_UNAUTHENTICATED_MAX_BODY", 1024, 1024 * 1024, defaultConfig.unauthenticatedMaxBody),
    shutdownGraceMs: setting("SLIPWAY_SHUTDOWN_GRACE_MS", 0, 3_600_000, defaultConfig.shutdownGraceMs),
    metricsToken: pick("SLIPWAY_METRICS_TOKEN"),
    internalUrl: pick("SLIPWAY_INTERNAL_URL")?.replace(/\/+$/, ""),
    internalToken: pick("SLIPWAY_INTERNAL_TOKEN"),
    insecureGitHosts: (pick("SLIPWAY_INSECURE_GIT_HOSTS") ?? "")
      .split(",")
      .map((entry) => entry.trim())
      .filter((entry) => entry !== "")
  })
}
