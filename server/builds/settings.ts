/**
 * The settings of builds (source checkouts and image builds), from the environment:
 *
 *   SLIPWAY_BUILD_CONCURRENCY      builds at once (default 1; more queue)
 *   SLIPWAY_BUILD_TIMEOUT_S        one build's time limit (default 1800)
 *   SLIPWAY_BUILD_MEMORY           memory limit of a build (a quantity: 4Gi, 512Mi, bytes; default 4Gi)
 *   SLIPWAY_BUILD_CPUS             CPU limit of a build in cores (default 2; 500m = half a core)
 *   SLIPWAY_BUILD_PIDS             process limit of a build (default 4096)
 *   SLIPWAY_BUILD_DISK             disk of one deployment's build cache and build (default 20Gi)
 *   SLIPWAY_BUILD_CACHE_MAX        all build caches together (default 20Gi; least recently used go first)
 *   SLIPWAY_BUILD_KEEP_IMAGES      built images kept per deployment in its cache (default 3)
 *
 * plus the registry settings the image store reads (SLIPWAY_REGISTRY_MIRROR,
 * SLIPWAY_INSECURE_REGISTRIES, SLIPWAY_REGISTRY_AUTH_FILE): base images are pulled as
 * deployments pull theirs; and the server's SLIPWAY_INSECURE_GIT_HOSTS (its configuration,
 * `ServerConfig.insecureGitHosts`), the plain-HTTP git hosts a checkout may fetch from.
 */
import { join } from "node:path"
import { Context, Effect, Layer, Result } from "effect"
import { parseQuantity, toBytes, toMillis } from "../../core/index.ts"
import { ServerEnv } from "../module.ts"
import { imageStoreOptionsFromEnv } from "../runtime/local/ImageStore.ts"
import { RuntimeRoot } from "../runtime/local/RuntimeRoot.ts"

const GiB = 1024 ** 3

export interface BuildLimits {
  readonly memoryBytes: number
  /** CPU in millicores (1000 = one core). */
  readonly cpuMillis: number
  readonly pids: number
  /** Size of a deployment's build disk (its layer cache, package caches and the build under way). */
  readonly diskBytes: number
}

export interface BuildConfig {
  /** Where builds keep their caches and work directories (`<runtime root>/builds`). */
  readonly root: string
  /** The cgroup parent of builds (beside the boxes', never inside it). */
  readonly cgroupParent: string
  /** Git hosts that may be reached over plain HTTP (`host:port`, a bare host meaning port 80): SLIPWAY_INSECURE_GIT_HOSTS. */
  readonly insecureGitHosts: ReadonlyArray<string>
  readonly concurrency: number
  readonly timeoutMs: number
  readonly limits: BuildLimits
  /** All deployments' build caches together; least recently used caches are removed beyond it. */
  readonly cacheMaxBytes: number
  /** Successful images kept per deployment in its cache. */
  readonly keepImages: number
  /** Registry settings shared with the image store. */
  readonly registries: {
    readonly mirror?: string | undefined
    readonly insecureRegistries?: ReadonlyArray<string> | undefined
    readonly authFile?: string | undefined
  }
}

export class BuildSettings extends Context.Service<BuildSettings, BuildConfig>()("slipway/BuildSettings") {}

export class BuildSettingsError extends Error {}

/** A Kubernetes quantity (`4Gi`, `512Mi`, `1073741824`) as whole bytes. */
export const parseSize = (name: string, value: string): number => {
  const bytes = Result.flatMap(parseQuantity(value.trim()), toBytes)
  if (Result.isFailure(bytes)) throw new BuildSettingsError(`${name}: ${bytes.failure}`)
  return Number(bytes.success)
}

export const defaultBuildSettings = (root: string, cgroupParent = "slipway-builds"): BuildConfig => ({
  root,
  cgroupParent,
  insecureGitHosts: [],
  concurrency: 1,
  timeoutMs: 30 * 60_000,
  limits: { memoryBytes: 4 * GiB, cpuMillis: 2000, pids: 4096, diskBytes: 20 * GiB },
  cacheMaxBytes: 20 * GiB,
  keepImages: 3,
  registries: {}
})

/**
 * The build settings from the environment; `root` is where builds keep their state. Throws
 * BuildSettingsError on a bad value. `insecureGitHosts` is the server's configuration's.
 */
export const buildSettingsFromEnv = (
  root: string,
  cgroupParent: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
  insecureGitHosts: ReadonlyArray<string> = []
): BuildConfig => {
  const base = defaultBuildSettings(root, cgroupParent)
  const pick = (name: string) => {
    const value = env[name]?.trim()
    return value ? value : undefined
  }
  const integer = (name: string, min: number, max: number, fallback: number) => {
    const raw = pick(name)
    if (raw === undefined) return fallback
    const n = Number(raw)
    if (!Number.isInteger(n) || n < min || n > max) throw new BuildSettingsError(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`)
    return n
  }
  const size = (name: string, min: number, fallback: number) => {
    const raw = pick(name)
    if (raw === undefined) return fallback
    const n = parseSize(name, raw)
    if (n < min) throw new BuildSettingsError(`${name} must be at least ${min} bytes, got ${JSON.stringify(raw)}`)
    return n
  }
  const cpusRaw = pick("SLIPWAY_BUILD_CPUS")
  let cpuMillis = base.limits.cpuMillis
  if (cpusRaw !== undefined) {
    const millis = Result.flatMap(parseQuantity(cpusRaw), toMillis)
    if (Result.isFailure(millis)) throw new BuildSettingsError(`SLIPWAY_BUILD_CPUS: ${millis.failure}`)
    if (millis.success < 100n || millis.success > 1_024_000n) throw new BuildSettingsError(`SLIPWAY_BUILD_CPUS must be from 100m (a tenth of a core) to 1024 cores, got ${JSON.stringify(cpusRaw)}`)
    cpuMillis = Number(millis.success)
  }
  let registries: BuildConfig["registries"]
  try {
    const { mirror, insecureRegistries, authFile } = imageStoreOptionsFromEnv(env)
    registries = { mirror, insecureRegistries, authFile }
  } catch (error) {
    throw new BuildSettingsError(error instanceof Error ? error.message : String(error))
  }
  return {
    root,
    cgroupParent,
    insecureGitHosts,
    concurrency: integer("SLIPWAY_BUILD_CONCURRENCY", 1, 64, base.concurrency),
    timeoutMs: integer("SLIPWAY_BUILD_TIMEOUT_S", 1, 24 * 3600, base.timeoutMs / 1000) * 1000,
    limits: {
      memoryBytes: size("SLIPWAY_BUILD_MEMORY", 64 * 1024 ** 2, base.limits.memoryBytes),
      cpuMillis,
      pids: integer("SLIPWAY_BUILD_PIDS", 64, 4_194_304, base.limits.pids),
      diskBytes: size("SLIPWAY_BUILD_DISK", 256 * 1024 ** 2, base.limits.diskBytes)
    },
    cacheMaxBytes: size("SLIPWAY_BUILD_CACHE_MAX", 0, base.cacheMaxBytes),
    keepImages: integer("SLIPWAY_BUILD_KEEP_IMAGES", 1, 100, base.keepImages),
    registries
  }
}

/** The settings from the server's environment, with the state under `<runtime root>/builds`. */
export const BuildSettingsLive = Layer.effect(
  BuildSettings,
  Effect.gen(function* () {
    const { root, cgroupParent } = yield* RuntimeRoot
    const { config } = yield* ServerEnv
    return BuildSettings.of(buildSettingsFromEnv(join(root, "builds"), `${cgroupParent}-builds`, process.env, config.insecureGitHosts))
  })
)
