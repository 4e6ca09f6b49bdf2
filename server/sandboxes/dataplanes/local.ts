/**
 * The local runtime's dataplane: the protocol of `shared/spec/sandbox-dataplane.md`
 * (`server/sandboxes/dataplane/`) served for each running box at
 * `{SLIPWAY_PUBLIC_URL}/sandboxes/{id}`, executing inside the box through the box runner.
 */
import { Effect, Layer } from "effect"
import { ServerEnv } from "../../module.ts"
import { LocalHost } from "../../runtime/local/LocalHost.ts"
import { Dataplane } from "../Dataplane.ts"
import { DataplaneError, makeDataplane, rejectUpgrade, sendError } from "../dataplane/index.ts"
import { makePortRelays } from "./ports.ts"

const NOT_RUNNING = "Sandbox is starting: it is not running yet (or was stopped); retry shortly"

export const LocalDataplane = Layer.effect(
  Dataplane,
  Effect.gen(function* () {
    const { publicUrl, log } = yield* ServerEnv
    const host = yield* LocalHost
    const protocol = makeDataplane({ log: (message) => log.warn("dataplane", { message }) })
    const relays = makePortRelays()
    yield* Effect.addFinalizer(() => Effect.promise(() => protocol.close().finally(() => relays.close())))
    return Dataplane.of({
      name: "local",
      urlFor: (sandboxId) => `${publicUrl}/sandboxes/${sandboxId}`,
      handle: (request, response, target) => {
        const box = host.running.get(target.sandboxId)
        if (!box) return sendError(request, response, new DataplaneError(503, "ServiceUnavailable", NOT_RUNNING))
        void protocol.handle(request, response, box, target.subpath, target.sandboxId)
      },
      upgrade: (_request, socket, head, target) => {
        const box = host.running.get(target.sandboxId)
        if (!box) return rejectUpgrade(socket, 503, "ServiceUnavailable", NOT_RUNNING)
        protocol.upgrade(_request, socket, head, box, target.subpath, target.sandboxId)
      },
      connectPort: (sandboxId, port) => {
        const box = host.running.get(sandboxId)
        return box ? relays.socketFor(box, port) : Promise.reject(new DataplaneError(503, "ServiceUnavailable", NOT_RUNNING))
      },
      release: (sandboxId) => Effect.promise(() => protocol.closeBox(sandboxId).finally(() => relays.release(sandboxId)))
    })
  })
)
