/**
 * Where a box's dataplane is reached: `{SLIPWAY_PUBLIC_URL}/sandboxes/{id}/...`, HTTP and
 * WebSocket upgrades. Same credentials as the API (`X-Api-Key` or Bearer, `X-Tenant-Id`), and a
 * tenant only ever reaches its own boxes (another tenant's box is answered as absent). A request
 * to a stopped box wakes it (the clients retry the 503 "Sandbox is starting"); a box that failed
 * answers 400 `NotReady` with its `status_message` and is not started (it would fail again). With
 * several replicas, a request for a box another replica runs is forwarded there, streaming both
 * ways (the owner authenticates it again); a box whose replica is gone answers 502 saying so.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Duplex } from "node:stream"
import { Effect, Exit } from "effect"
import { apiKeyOf, clientGone, makeRequestRunner } from "../../http/app.ts"
import type { RawHttp } from "../../module.ts"
import { KeyStore } from "../../store/KeyStore.ts"
import { SandboxStore } from "../../store/SandboxStore.ts"
import { Replicas } from "../../replicas/Replicas.ts"
import { type BoxLocation, replicaGoneMessage, SandboxController } from "../controller.ts"
import { Dataplane, type DataplaneRequest } from "./Dataplane.ts"
import { DataplaneError, failedBox, sendError } from "./errors.ts"
import { refuseInFrame, rejectUpgrade } from "./ws.ts"

const PREFIX = "/sandboxes/"
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/

/** `{id, subpath}` of a dataplane URL, or undefined when the URL is not one. */
const parse = (url: string): { readonly sandboxId: string; readonly subpath: string } | undefined => {
  if (!url.startsWith(PREFIX)) return undefined
  const rest = url.slice(PREFIX.length)
  const slash = rest.search(/[/?]/)
  const id = slash === -1 ? rest : rest.slice(0, slash)
  if (!UUID.test(id)) return undefined
  const subpath = slash === -1 ? "/" : rest[slash] === "?" ? `/${rest.slice(slash)}` : rest.slice(slash)
  return { sandboxId: id.toLowerCase(), subpath }
}

export const dataplaneHttp = Effect.gen(function* () {
  const keys = yield* KeyStore
  const sandboxStore = yield* SandboxStore
  const controller = yield* SandboxController
  const dataplane = yield* Dataplane
  const replicas = yield* Replicas
  if (!dataplane.handle || !dataplane.upgrade) return {} satisfies RawHttp

  /** Authenticates and finds the caller's box; answers the target or a dataplane error. */
  const resolve = (request: IncomingMessage, sandboxId: string, subpath: string) =>
    Effect.gen(function* () {
      const tenant = request.headers["x-tenant-id"]
      const auth = yield* keys.authenticate(apiKeyOf(request.headers), typeof tenant === "string" ? tenant : undefined)
      // The light lookup (one table, by id) on every request; the whole record only to wake a box.
      const access = yield* sandboxStore.sandboxAccess(auth.tenantId, sandboxId)
      if (!access) return yield* Effect.fail(new DataplaneError(404, "NotFound", `sandbox ${sandboxId} not found`))
      controller.touch(access.id)
      if (access.status === "stopped" || access.status === "failed") {
        const box = yield* sandboxStore.sandboxById(auth.tenantId, sandboxId)
        if (!box) return yield* Effect.fail(new DataplaneError(404, "NotFound", `sandbox ${sandboxId} not found`))
        // A failed box stays failed until someone starts it: retrying would fail the same way.
        if (box.status === "failed") return yield* Effect.fail(failedBox(box.name, box.status_message))
        yield* controller.request(box, { _tag: "Start" })
        return yield* Effect.fail(new DataplaneError(503, "ServiceUnavailable", `Sandbox is starting: ${box.name} was ${box.status}; retry shortly`))
      }
      // Several replicas: the box may run on another one, which serves the request.
      const location = yield* controller.locate(sandboxId)
      if (location._tag === "gone") {
        return yield* Effect.fail(new DataplaneError(502, "ReplicaUnavailable", `sandbox ${sandboxId} is not available: ${replicaGoneMessage(location.replicaId, location.replica)}; it is being marked failed`))
      }
      if (location._tag === "peer" && replicas.isForwarded(request)) {
        // Forwarded here, but another replica runs it now: it moved meanwhile.
        return yield* Effect.fail(new DataplaneError(503, "ServiceUnavailable", `sandbox ${sandboxId} moved to replica ${location.peer.id} while this request was forwarded; retry`, { "retry-after": "1" }))
      }
      return { target: { sandboxId, subpath, auth } satisfies DataplaneRequest, location }
    }).pipe(
      Effect.mapError((error) =>
        error instanceof DataplaneError
          ? error
          : error._tag === "Unauthorized"
            ? new DataplaneError(401, "Unauthorized", error.message)
            : error._tag === "Forbidden"
              ? new DataplaneError(403, "Forbidden", error.message)
              : new DataplaneError(503, "ServiceUnavailable", error.message)
      )
    )

  // The server's one request runner: this request's fiber is interrupted when its client goes away.
  const runRequest = makeRequestRunner(yield* Effect.context<never>())
  const run = <A>(effect: Effect.Effect<A, DataplaneError>, connection: ServerResponse | Duplex, done: (exit: Exit.Exit<A, DataplaneError>) => void) => {
    const exit = runRequest(effect, connection)
    if (exit instanceof Promise) void exit.then((exit) => clientGone(exit) || done(exit))
    else done(exit)
  }

  /** Why a request for a box on another replica could not be handed over. */
  const unreachable = (sandboxId: string, location: Extract<BoxLocation, { _tag: "peer" }>, code: string) =>
    new DataplaneError(
      502,
      "ReplicaUnavailable",
      `sandbox ${sandboxId} runs on replica ${location.peer.id} (${location.peer.url}), which does not answer (${code}); if it stopped, the sandbox is marked failed once its lease expires`
    )
  const noForwarder = new DataplaneError(503, "ServiceUnavailable", "this sandbox runs on another replica, and this one cannot forward to it: set SLIPWAY_INTERNAL_TOKEN on every replica")

  return {
    request: (request: IncomingMessage, response: ServerResponse) => {
      const target = parse(request.url ?? "")
      if (!target) return false
      run(resolve(request, target.sandboxId, target.subpath), response, (exit) => {
        if (Exit.isSuccess(exit)) {
          const { location } = exit.value
          if (location._tag !== "peer") return dataplane.handle!(request, response, exit.value.target)
          if (!replicas.forwarder) return sendError(request, response, noForwarder)
          replicas.forwarder.http(request, response, location.peer, (code) => sendError(request, response, unreachable(target.sandboxId, location, code)))
        } else {
          request.resume()
          sendError(request, response, Exit.isFailure(exit) ? (exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error ?? exit.cause) : exit)
        }
      })
      return true
    },
    upgrade: (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      const target = parse(request.url ?? "")
      if (!target) return false
      run(resolve(request, target.sandboxId, target.subpath), socket, (exit) => {
        if (Exit.isSuccess(exit)) {
          const { location } = exit.value
          if (location._tag !== "peer") return dataplane.upgrade!(request, socket, head, exit.value.target)
          if (!replicas.forwarder) return rejectUpgrade(socket, noForwarder.status, noForwarder.type, noForwarder.message)
          replicas.forwarder.upgrade(request, socket, head, location.peer, (code) => {
            const error = unreachable(target.sandboxId, location, code)
            rejectUpgrade(socket, error.status, error.type, error.message)
          })
        } else {
          const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error
          const known = error instanceof DataplaneError ? error : new DataplaneError(500, "InternalError", "The dataplane failed")
          // A failed box's reason reaches a command socket's client only in a frame.
          if (known.type === "NotReady" && /^\/execute\/ws\/?(\?|$)/.test(target.subpath)) refuseInFrame(request, socket, head, known)
          else rejectUpgrade(socket, known.status, known.type, known.message, known.fields)
        }
      })
      return true
    }
  } satisfies RawHttp
})
