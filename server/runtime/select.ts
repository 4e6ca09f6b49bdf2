/**
 * Which runtime drives deployments and sandboxes (`SLIPWAY_RUNTIME`): `local` runs images under
 * bubblewrap; `simulated` runs nothing; `auto` (the default) takes `local` when this host can
 * (root, and bwrap, skopeo, umoci, nsenter, a static busybox and mkfs.btrfs installed), else
 * `simulated`, and says why in the start-up log. The choice is a base service of the server
 * (`RuntimeChoiceLive`, built once per server on `ServerEnv`): both areas' runtimes and the
 * routes that depend on it read the same answer.
 */
import { Context, Effect, Layer } from "effect"
import { ServerEnv } from "../module.ts"
import { localRuntimeUnavailable } from "./local/LocalRuntime.ts"
import { runtimeRoot } from "./local/RuntimeRoot.ts"

export class RuntimeChoice extends Context.Service<
  RuntimeChoice,
  {
    readonly name: "local" | "simulated"
    /** Why, for the start-up log. */
    readonly reason: string
  }
>()("slipway/RuntimeChoice") {}

/** The server's choice, from its configuration and this host; `SLIPWAY_RUNTIME=local` on a host that cannot run it fails the start. */
export const RuntimeChoiceLive = Layer.effect(
  RuntimeChoice,
  Effect.gen(function* () {
    const { config, log } = yield* ServerEnv
    const unavailable = config.runtime === "simulated" ? null : localRuntimeUnavailable(runtimeRoot(config.databasePath))
    let choice: RuntimeChoice["Service"]
    if (config.runtime === "simulated") choice = { name: "simulated", reason: "SLIPWAY_RUNTIME=simulated" }
    else if (unavailable === null) choice = { name: "local", reason: config.runtime === "local" ? "SLIPWAY_RUNTIME=local" : "bwrap, skopeo and umoci are present" }
    else if (config.runtime === "local") return yield* Effect.die(new Error(`SLIPWAY_RUNTIME=local, but ${unavailable}`))
    else choice = { name: "simulated", reason: `local runtime unavailable: ${unavailable}` }
    log.info("runtime", { runtime: choice.name, reason: choice.reason })
    return RuntimeChoice.of(choice)
  })
)
