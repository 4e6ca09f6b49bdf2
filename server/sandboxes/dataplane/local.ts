/**
 * The local runtime's dataplane: the protocol of `shared/spec/sandbox-dataplane.md`
 * (`protocol.ts`) served for each running box at `{SLIPWAY_PUBLIC_URL}/sandboxes/{id}`, executing
 * inside the box. The boxes come from the `BoxRegistry` (the local sandbox driver registers
 * them); each command the protocol starts lives in a scope of its own inside the box's scope,
 * closed when it exits, so a box that stops takes its commands with it.
 */
import { Effect, Layer } from "effect"
import { ServerEnv } from "../../module.ts"
import { startNow } from "./box.ts"
import { BoxRegistry, type RegisteredBox } from "../BoxRegistry.ts"
import type { BoxExec } from "./box.ts"
import { Dataplane } from "./Dataplane.ts"
import { DataplaneError } from "./errors.ts"
import { makePortRelays } from "./ports.ts"
import { makeDataplaneProtocol, rejectUpgrade, sendError } from "./protocol.ts"

const NOT_RUNNING = "Sandbox is starting: it is not running yet (or was stopped); retry shortly"

/** The box as the protocol's stream code holds it: each command started at once, in a scope of its own inside the box's. */
const boxExecOf = (entry: RegisteredBox): BoxExec => ({
  exec: (argv, options) => startNow(entry.box.exec(argv, options), entry.scope),
  execShell: (shell, options) => startNow(entry.box.execShell(shell, options), entry.scope),
  // A relay straight into the client's socket needs a box the host can enter (bwrap).
  ...(entry.box.execInto ? { execInto: (argv, sink, options) => startNow(entry.box.execInto!(argv, sink, options), entry.scope) } : {})
})

export const LocalDataplane = Layer.effect(
  Dataplane,
  Effect.gen(function* () {
    const { publicUrl, log } = yield* ServerEnv
    const registry = yield* BoxRegistry
    const protocol = makeDataplaneProtocol({ log: (message) => log.warn("dataplane", { message }) })
    yield* Effect.addFinalizer(() => Effect.promise(() => protocol.close()))
    const relays = yield* makePortRelays
    /** The protocol's view of each registered box, made once per box. */
    const views = new WeakMap<RegisteredBox, BoxExec>()
    const viewOf = (entry: RegisteredBox) => {
      let view = views.get(entry)
      if (!view) views.set(entry, (view = boxExecOf(entry)))
      return view
    }
    return Dataplane.of({
      name: "local",
      urlFor: (sandboxId) => `${publicUrl}/sandboxes/${sandboxId}`,
      handle: (request, response, target) => {
        const entry = registry.get(target.sandboxId)
        if (!entry) return sendError(request, response, new DataplaneError(503, "ServiceUnavailable", NOT_RUNNING))
        void protocol.handle(request, response, viewOf(entry), target.subpath, target.sandboxId)
      },
      upgrade: (request, socket, head, target) => {
        const entry = registry.get(target.sandboxId)
        if (!entry) return rejectUpgrade(socket, 503, "ServiceUnavailable", NOT_RUNNING)
        protocol.upgrade(request, socket, head, viewOf(entry), target.subpath, target.sandboxId)
      },
      connectPort: (sandboxId, port) =>
        Effect.suspend(() => {
          const entry = registry.get(sandboxId)
          return entry ? relays.socketFor(sandboxId, entry, port) : Effect.fail(new DataplaneError(503, "ServiceUnavailable", NOT_RUNNING))
        }),
      release: (sandboxId) => Effect.andThen(Effect.promise(() => protocol.closeBox(sandboxId)), relays.release(sandboxId))
    })
  })
)
