/**
 * Reaching a port inside a box from the host, for service URLs: a box has only its own loopback
 * (bwrap: its network namespace; gVisor: the sandbox's network stack), so for each (box, port) a
 * relay listens on a unix socket in a private directory (0700, root's) and pipes each connection
 * to `box.connect(port)` (the box's exec helper dials the port inside the box): no TCP port opens
 * on the host, so nothing reaches the box's service without passing the service URL's token
 * check. Each relay lives in a scope of its own inside the box's scope: it ends when the box
 * stops, when the dataplane releases the box, or at shutdown.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Scope } from "effect"
import { makeKeyedLock } from "../../runtime/keyedLock.ts"
import { pipeServer } from "../../runtime/local/boxes/forward.ts"
import type { RegisteredBox } from "../BoxRegistry.ts"
import { DataplaneError } from "./errors.ts"

interface Relay {
  readonly sandboxId: string
  readonly socket: string
  readonly scope: Scope.Closeable
}

export interface PortRelays {
  /** The unix socket that reaches `port` inside the running box (its relay started on first use). */
  readonly socketFor: (sandboxId: string, entry: RegisteredBox, port: number) => Effect.Effect<string, DataplaneError>
  /** Ends the relays of one box. */
  readonly release: (sandboxId: string) => Effect.Effect<void>
}

export const makePortRelays =
  Effect.gen(function* () {
    // Short (a socket path has at most 107 bytes) and private: only root may connect.
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "slipway-ports-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    )
    let counter = 0
    const relays = new Map<string, Relay>()
    const lock = yield* makeKeyedLock<string>()
    const close = (key: string, relay: Relay) =>
      Effect.suspend(() => {
        if (relays.get(key) === relay) relays.delete(key)
        return Scope.close(relay.scope, Exit.void)
      })
    yield* Effect.addFinalizer(() => Effect.forEach([...relays], ([key, relay]) => close(key, relay), { discard: true }))

    const start = (key: string, sandboxId: string, entry: RegisteredBox, port: number) =>
      Effect.gen(function* () {
        const scope = yield* Scope.fork(entry.scope)
        const socket = join(dir, `${++counter}.sock`)
        yield* Effect.gen(function* () {
          yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(socket, { force: true })))
          yield* pipeServer(
            () => entry.box.connect(port),
            (server) => server.listen(socket)
          )
        }).pipe(Scope.provide(scope), Effect.onError(() => Scope.close(scope, Exit.void)))
        const relay: Relay = { sandboxId, socket, scope }
        relays.set(key, relay)
        // Gone with the box (its scope closes this one).
        yield* Scope.addFinalizer(scope, Effect.sync(() => relays.get(key) === relay && relays.delete(key)))
        return socket
      })

    const notRunning = (sandboxId: string) => new DataplaneError(503, "ServiceUnavailable", `the sandbox ${sandboxId} is not running; retry shortly`, { "retry-after": "1" })

    const relays_: PortRelays = {
      socketFor: (sandboxId, entry, port) => {
        const key = `${sandboxId}:${entry.box.pid}:${port}`
        return lock(key)(
          Effect.gen(function* () {
            const existing = relays.get(key)
            if (existing && entry.box.isRunning()) return existing.socket
            if (existing) yield* close(key, existing)
            if (!entry.box.isRunning()) return yield* Effect.fail(notRunning(sandboxId))
            return yield* start(key, sandboxId, entry, port)
          })
        ).pipe(
          Effect.mapError((error) =>
            error instanceof DataplaneError ? error : new DataplaneError(503, "ServiceUnavailable", `the sandbox's port ${port} cannot be reached yet; retry shortly`, { "retry-after": "1" })
          )
        )
      },
      release: (sandboxId) => Effect.forEach([...relays].filter(([, relay]) => relay.sandboxId === sandboxId), ([key, relay]) => close(key, relay), { discard: true })
    }
    return relays_
  })
