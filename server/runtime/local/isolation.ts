/**
 * Which isolation each area's boxes run under: `SLIPWAY_SANDBOX_ISOLATION` (default `auto`: gVisor
 * where it can run, else bubblewrap) and `SLIPWAY_DEPLOYMENT_ISOLATION` (default `bwrap`: a
 * deployment runs its owner's own code), with runsc's settings `SLIPWAY_GVISOR_PLATFORM` and
 * `SLIPWAY_GVISOR_FILE_ACCESS`. See docs/runtime-isolation.md.
 */
import type { GvisorSettings } from "./boxes/gvisor.ts"
import type { Isolation } from "./boxes/model.ts"

export type IsolationSetting = "auto" | Isolation

export interface IsolationSettings {
  readonly sandboxes: IsolationSetting
  readonly deployments: IsolationSetting
  readonly gvisor: GvisorSettings
}

const ISOLATIONS: ReadonlyArray<IsolationSetting> = ["auto", "bwrap", "gvisor"]
/** The platforms runsc has had; which ones the installed runsc knows is checked when the runner starts. */
export const GVISOR_PLATFORMS: ReadonlyArray<string> = ["ptrace", "kvm", "systrap"]
const FILE_ACCESS: ReadonlyArray<GvisorSettings["fileAccess"]> = ["exclusive", "shared"]

const oneOf = <A extends string>(env: Readonly<Record<string, string | undefined>>, name: string, values: ReadonlyArray<A>, fallback: A): A => {
  const value = env[name]?.trim()
  if (value === undefined || value === "") return fallback
  if (!(values as ReadonlyArray<string>).includes(value)) throw new Error(`${name} must be ${values.map((v) => `"${v}"`).join(", ")}, got ${JSON.stringify(value)}`)
  return value as A
}

/** The settings of the environment; throws, naming the variable, on a value it does not know. */
export const isolationSettingsFromEnv = (env: Readonly<Record<string, string | undefined>>): IsolationSettings => ({
  sandboxes: oneOf(env, "SLIPWAY_SANDBOX_ISOLATION", ISOLATIONS, "auto"),
  deployments: oneOf(env, "SLIPWAY_DEPLOYMENT_ISOLATION", ISOLATIONS, "bwrap"),
  gvisor: {
    platform: oneOf(env, "SLIPWAY_GVISOR_PLATFORM", GVISOR_PLATFORMS, "ptrace"),
    fileAccess: oneOf(env, "SLIPWAY_GVISOR_FILE_ACCESS", FILE_ACCESS, "exclusive")
  }
})

/** An area's isolation and why (for the start-up log). */
export interface ResolvedIsolation {
  readonly isolation: Isolation
  readonly why: string
}

/**
 * Resolves one area's setting (`variable`'s value) against what this host offers: `gvisorProblem`
 * is why gVisor cannot run here (undefined: it can). Answers an error message when the setting asks
 * for gVisor and it cannot run.
 */
export const resolveIsolation = (variable: string, setting: IsolationSetting, gvisorProblem: string | undefined): ResolvedIsolation | { readonly error: string } => {
  if (setting === "bwrap") return { isolation: "bwrap", why: `${variable}=bwrap` }
  if (setting === "gvisor")
    return gvisorProblem === undefined ? { isolation: "gvisor", why: `${variable}=gvisor` } : { error: `${variable}=gvisor, but gVisor cannot run here: ${gvisorProblem}` }
  return gvisorProblem === undefined
    ? { isolation: "gvisor", why: `${variable}=auto and runsc can run boxes here` }
    : { isolation: "bwrap", why: `${variable}=auto and gVisor cannot run here (${gvisorProblem})` }
}
