/**
 * Every environment variable Slipway reads, in one table: the server's (`npm start`), the key
 * tool's (`npm run keys`), the CLI's (`slipway`) and the few that only the host setup and the
 * tests read. `test/server/settings.test.ts` fails when a file of server/, cli/, bin/, core/ or
 * scripts/ reads a `SLIPWAY_*` variable missing here.
 *
 * At start the server (`server/main.ts`) checks the environment against it: a set value that a
 * setting refuses stops the start with one line naming the variable (`checkSettings`), and an
 * unknown `SLIPWAY_*` name (a typo) gets a warning naming the closest known one
 * (`unknownSettings`). Most server settings are parsed, and so checked, by `configFromEnv`
 * (server/config.ts); the table's `check` covers those read elsewhere (the runtimes), so that none
 * of them is found wrong only at the first pull or the first deployment.
 */
import { existsSync, readFileSync, statSync } from "node:fs"
import { buildSettingsFromEnv } from "./builds/settings.ts"
import { postgresUrlProblem } from "./config.ts"
import { localDeploymentOptionsFromEnv } from "./deployments/drivers/local.ts"
import { imageStoreOptionsFromEnv } from "./runtime/local/images/config.ts"
import { isolationSettingsFromEnv } from "./runtime/local/isolation.ts"
import { parseReference } from "./runtime/local/reference.ts"
import { registrySettingsFromEnv } from "./registry/settings.ts"
import { uploadSettingsFromEnv } from "./uploads/SourceUploads.ts"

/** Who reads a variable. */
export type SettingReader = "server" | "key tool" | "cli" | "host setup" | "tests"

export interface Setting {
  readonly name: string
  readonly readBy: ReadonlyArray<SettingReader>
  /** For a set, non-empty value: the problem (naming the variable), or undefined when it is fine. */
  readonly check?: (value: string) => string | undefined
}

const messageOf = (error: unknown) => String((error as Error)?.message ?? error)

/** Runs a reader that throws on a bad value; its message becomes the problem, prefixed with the name when it lacks it. */
const throwing = (name: string, read: (value: string) => unknown) => (value: string) => {
  try {
    read(value)
    return undefined
  } catch (error) {
    const message = messageOf(error)
    return message.includes(name) ? message : `${name}: ${message}`
  }
}

const integerBetween = (name: string, min: number, max: number) => (value: string) =>
  /^\s*\d+\s*$/.test(value) && Number(value) >= min && Number(value) <= max ? undefined : `${name} must be an integer between ${min} and ${max}, got ${JSON.stringify(value)}`

const oneOf = (name: string, values: ReadonlyArray<string>) => (value: string) =>
  values.includes(value) ? undefined : `${name} must be ${values.map((v) => `"${v}"`).join(" or ")}, got ${JSON.stringify(value)}`

const imageSetting = (name: string) => throwing(name, (value) => imageStoreOptionsFromEnv({ [name]: value }))
const deploymentSetting = (name: string) => throwing(name, (value) => localDeploymentOptionsFromEnv({ [name]: value }))

const isolationSetting = (name: string) => throwing(name, (value) => isolationSettingsFromEnv({ [name]: value }))
const registrySetting = (name: string) => throwing(name, (value) => registrySettingsFromEnv({ [name]: value }))
const uploadSetting = (name: string) => throwing(name, (value) => uploadSettingsFromEnv({ [name]: value }))
const buildSetting = (name: string) => throwing(name, (value) => buildSettingsFromEnv("/", "check", { [name]: value }))

const readableJsonFile = (name: string) => (value: string) => {
  if (!existsSync(value) || !statSync(value).isFile()) return `${name}: ${value} is not a file`
  try {
    JSON.parse(readFileSync(value, "utf8"))
    return undefined
  } catch (error) {
    return `${name}: ${value} is not a readable JSON file (${messageOf(error)})`
  }
}

const server: ReadonlyArray<SettingReader> = ["server"]
const serverAndKeyTool: ReadonlyArray<SettingReader> = ["server", "key tool"]

/** Every variable, with who reads it. The README's settings tables and docs/ describe each one. */
export const knownSettings: ReadonlyArray<Setting> = [
  // server/config.ts (configFromEnv checks these)
  { name: "PORT", readBy: server },
  { name: "HOST", readBy: server },
  { name: "DATABASE_PATH", readBy: ["server", "key tool", "cli"] },
  { name: "DATABASE_URL", readBy: ["server", "key tool", "cli"] },
  { name: "LOG_LEVEL", readBy: server },
  { name: "SLIPWAY_LEASE_MS", readBy: server },
  { name: "SLIPWAY_API_KEY", readBy: ["server", "cli"] },
  { name: "SLIPWAY_TENANT_ID", readBy: ["server", "cli"] },
  { name: "SLIPWAY_ORGANIZATION_ID", readBy: server },
  { name: "SLIPWAY_STORAGE_QUOTA", readBy: server },
  { name: "SLIPWAY_STORAGE_CLASSES", readBy: server },
  { name: "SLIPWAY_REVISION_STEP_MS", readBy: server },
  { name: "SLIPWAY_PUBLIC_URL", readBy: server },
  { name: "SLIPWAY_SECRETS_KEY", readBy: serverAndKeyTool },
  { name: "SLIPWAY_RUNTIME", readBy: server },
  { name: "SLIPWAY_HEADERS_TIMEOUT_MS", readBy: server },
  { name: "SLIPWAY_REQUEST_TIMEOUT_MS", readBy: server },
  { name: "SLIPWAY_MAX_CONNECTIONS", readBy: server },
  { name: "SLIPWAY_UNAUTHENTICATED_MAX_BODY", readBy: server },
  { name: "SLIPWAY_SHUTDOWN_GRACE_MS", readBy: server },
  { name: "SLIPWAY_METRICS_TOKEN", readBy: server },
  { name: "SLIPWAY_INSECURE_GIT_HOSTS", readBy: server },
  { name: "SLIPWAY_INTERNAL_URL", readBy: server },
  { name: "SLIPWAY_INTERNAL_TOKEN", readBy: server },
  // server/gcTuning.ts (tuneGc checks it, first thing)
  { name: "SLIPWAY_HEAP_GROWING_PERCENT", readBy: server },
  // sandboxes and the local runtime
  { name: "SLIPWAY_DEFAULT_SANDBOX_IMAGE", readBy: server, check: throwing("SLIPWAY_DEFAULT_SANDBOX_IMAGE", parseReference) },
  { name: "SLIPWAY_SANDBOX_SWEEP_MS", readBy: server, check: integerBetween("SLIPWAY_SANDBOX_SWEEP_MS", 50, 3_600_000) },
  { name: "SLIPWAY_EXEC_HELPER", readBy: server, check: oneOf("SLIPWAY_EXEC_HELPER", ["on", "off"]) },
  // the boxes' isolation (docs/runtime-isolation.md): whether gVisor can run is checked when the runtime starts
  ...["SLIPWAY_SANDBOX_ISOLATION", "SLIPWAY_DEPLOYMENT_ISOLATION", "SLIPWAY_GVISOR_PLATFORM", "SLIPWAY_GVISOR_FILE_ACCESS"].map(
    (name): Setting => ({ name, readBy: server, check: isolationSetting(name) })
  ),
  { name: "SLIPWAY_REGISTRY_MIRROR", readBy: server, check: imageSetting("SLIPWAY_REGISTRY_MIRROR") },
  { name: "SLIPWAY_INSECURE_REGISTRIES", readBy: server, check: imageSetting("SLIPWAY_INSECURE_REGISTRIES") },
  { name: "SLIPWAY_REGISTRY_AUTH_FILE", readBy: server, check: readableJsonFile("SLIPWAY_REGISTRY_AUTH_FILE") },
  { name: "SLIPWAY_IMAGE_PULL_TIMEOUT_S", readBy: server, check: imageSetting("SLIPWAY_IMAGE_PULL_TIMEOUT_S") },
  // builds (docs/builds-runtime.md)
  ...[
    "SLIPWAY_BUILD_CONCURRENCY",
    "SLIPWAY_BUILD_TIMEOUT_S",
    "SLIPWAY_BUILD_MEMORY",
    "SLIPWAY_BUILD_CPUS",
    "SLIPWAY_BUILD_PIDS",
    "SLIPWAY_BUILD_DISK",
    "SLIPWAY_BUILD_CACHE_MAX",
    "SLIPWAY_BUILD_KEEP_IMAGES"
  ].map((name): Setting => ({ name, readBy: server, check: buildSetting(name) })),
  // deployments of the local runtime (docs/deployments-local.md)
  { name: "SLIPWAY_DEPLOY_HEALTH_CHECK", readBy: server, check: deploymentSetting("SLIPWAY_DEPLOY_HEALTH_CHECK") },
  { name: "SLIPWAY_DEPLOY_HEALTH_PATH", readBy: server, check: deploymentSetting("SLIPWAY_DEPLOY_HEALTH_PATH") },
  { name: "SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS", readBy: server, check: deploymentSetting("SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS") },
  { name: "SLIPWAY_DEPLOY_DRAIN_MS", readBy: server, check: deploymentSetting("SLIPWAY_DEPLOY_DRAIN_MS") },
  {
    name: "SLIPWAY_DEPLOYMENT_POSTGRES_URL",
    readBy: server,
    check: (value) => postgresUrlProblem("SLIPWAY_DEPLOYMENT_POSTGRES_URL", value)
  },
  // the registry Slipway fronts and source uploads (docs/registry.md)
  ...["SLIPWAY_REGISTRY", "SLIPWAY_REGISTRY_ADDR", "SLIPWAY_REGISTRY_HOST", "SLIPWAY_REGISTRY_URL", "SLIPWAY_REGISTRY_TOKEN_TTL", "SLIPWAY_REGISTRY_GC"].map(
    (name): Setting => ({ name, readBy: server, check: registrySetting(name) })
  ),
  ...["SLIPWAY_UPLOAD_URL_TTL", "SLIPWAY_UPLOAD_MAX_BYTES", "SLIPWAY_UPLOAD_MAX_UNPACKED", "SLIPWAY_UPLOAD_MAX_FILES"].map(
    (name): Setting => ({ name, readBy: server, check: uploadSetting(name) })
  ),
  // the key tool: `secrets rotate` with SLIPWAY_SECRETS_KEY set takes the new key from here
  { name: "SLIPWAY_NEW_SECRETS_KEY", readBy: ["key tool"] },
  // the CLI (docs/cli.md)
  { name: "SLIPWAY_URL", readBy: ["cli"] },
  { name: "SLIPWAY_CONFIG", readBy: ["cli"] },
  { name: "SLIPWAY_CLI_SOURCES", readBy: ["cli"] },
  // scripts/setup-host.sh and the tests
  { name: "SLIPWAY_SKIP_HOST_SETUP", readBy: ["host setup"] },
  { name: "SLIPWAY_REFERENCE_DIR", readBy: ["tests"] }
]

const byName = new Map(knownSettings.map((setting) => [setting.name, setting]))

export const isKnownSetting = (name: string): boolean => byName.has(name)

/** Optimal string alignment distance (Levenshtein with adjacent swaps): how far a typo is from a name. */
const distance = (a: string, b: string): number => {
  const d: Array<Array<number>> = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) d[0]![j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1)
    }
  }
  return d[a.length]![b.length]!
}

/** The known `SLIPWAY_*` name closest to `name`. */
export const closestSetting = (name: string): string => {
  let best = ""
  let bestDistance = Infinity
  for (const setting of knownSettings) {
    if (!setting.name.startsWith("SLIPWAY_")) continue
    const d = distance(name, setting.name)
    if (d < bestDistance) [best, bestDistance] = [setting.name, d]
  }
  return best
}

/** One warning line per `SLIPWAY_*` variable that no part of Slipway reads, naming the closest known one. */
export const unknownSettings = (env: Readonly<Record<string, string | undefined>>): Array<string> =>
  Object.keys(env)
    .filter((name) => name.startsWith("SLIPWAY_") && !byName.has(name))
    .sort()
    .map((name) => `unknown setting ${name} (ignored); did you mean ${closestSetting(name)}?`)

/** The first problem of a set value whose setting has a `check`, or undefined. */
export const settingProblem = (env: Readonly<Record<string, string | undefined>>): string | undefined => {
  for (const setting of knownSettings) {
    // Unset and empty are the same (the default), as everywhere; anything else is checked as the reader will read it.
    const value = env[setting.name]
    if (setting.check === undefined || value === undefined || value === "") continue
    const problem = setting.check(value)
    if (problem !== undefined) return problem
  }
  return undefined
}
