/**
 * Which runtime drives deployments and sandboxes (`SLIPWAY_RUNTIME`): `local` runs images under
 * bubblewrap; `simulated` runs nothing; `auto` (the default) takes `local` when this host can
 * (root, and bwrap, skopeo, umoci, nsenter, a static busybox and mkfs.btrfs installed), else
 * `simulated`, and says why in the start-up log.
 */
import { Effect } from "effect"
import { ServerEnv } from "../module.ts"
import { localRuntimeUnavailable } from "./local/LocalRuntime.ts"
import { runtimeRoot } from "./local/RuntimeRoot.ts"

export interface RuntimeChoice {
  readonly name: "local" | "simulated"
  readonly reason: string
}

const cache = new WeakMap<object, RuntimeChoice>()

export const chooseRuntime = Effect.gen(function* () {
  const env = yield* ServerEnv
  const known = cache.get(env)
  if (known) return known
  const { config, log } = env
  const unavailable = config.runtime === "simulated" ? null : localRuntimeUnavailable(runtimeRoot(config.databasePath))
  let choice: RuntimeChoice
  if (config.runtime === "simulated") choice = { name: "simulated", reason: "SLIPWAY_RUNTIME=simulated" }
  else if (unavailable === null) choice = { name: "local", reason: config.runtime === "local" ? "SLIPWAY_RUNTIME=local" : "bwrap, skopeo and umoci are present" }
  else if (config.runtime === "local") return yield* Effect.die(new Error(`SLIPWAY_RUNTIME=local, but ${unavailable}`))
  else choice = { name: "simulated", reason: `local runtime unavailable: ${unavailable}` }
  cache.set(env, choice)
  log.info("runtime", { runtime: choice.name, reason: choice.reason })
  return choice
})
