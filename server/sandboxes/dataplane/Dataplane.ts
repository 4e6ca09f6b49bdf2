/**
 * The sandbox dataplane's seam: where a box's dataplane answers (`dataplane_url`) and how its
 * requests are served. `unavailable` (below) is the backend while no runtime that can execute is
 * configured: answers carry `dataplane_url: null`, which the official clients report as
 * "dataplane not configured". The local runtime's backend (`local.ts`) serves the protocol of
 * `shared/spec/sandbox-dataplane.md` (`protocol.ts` and the files it uses) at
 * `{SLIPWAY_PUBLIC_URL}/sandboxes/{id}`; `http.ts` routes those URLs to it.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Duplex } from "node:stream"
import { Context, Effect, Layer } from "effect"
import type { AuthContext } from "../../store/KeyStore.ts"
import type { DataplaneError } from "./errors.ts"

export interface DataplaneRequest {
  readonly sandboxId: string
  /** The path after `/sandboxes/{id}` with its query (e.g. `/download?path=%2Fx`). */
  readonly subpath: string
  readonly auth: AuthContext
}

export class Dataplane extends Context.Service<
  Dataplane,
  {
    readonly name: string
    /** The box's dataplane URL, or null when boxes cannot be reached. */
    readonly urlFor: (sandboxId: string) => string | null
    /** Serves an HTTP request to a box's dataplane (authenticated; the box belongs to `auth.tenantId`). */
    readonly handle?: (request: IncomingMessage, response: ServerResponse, target: DataplaneRequest) => void
    /** Serves a WebSocket upgrade (`/execute/ws`). */
    readonly upgrade?: (request: IncomingMessage, socket: Duplex, head: Buffer, target: DataplaneRequest) => void
    /** A unix socket that reaches `port` inside the running box (service URLs); absent when boxes cannot be reached. */
    readonly connectPort?: (sandboxId: string, port: number) => Effect.Effect<string, DataplaneError>
    /** Ends what the dataplane runs for a box (its commands, sessions and port relays) when the box stops or goes. */
    readonly release: (sandboxId: string) => Effect.Effect<void>
  }
>()("slipway/Dataplane") {}

export const UnavailableDataplane = Layer.succeed(Dataplane, Dataplane.of({ name: "unavailable", urlFor: () => null, release: () => Effect.void }))
