/**
 * The replicas' raw HTTP, asked before every other hook: a request that carries the internal
 * headers (`x-slipway-internal-token`, `x-slipway-forwarded-by`) is refused (403) unless the
 * token is this replica's `SLIPWAY_INTERNAL_TOKEN` (compared in constant time), so a client
 * cannot pass for a replica. A forwarded request with the right token is marked (served here,
 * never forwarded again) and the internal headers removed before anything else reads it; a nudge
 * (`POST /internal/replicas/nudge?topic=`) runs the controllers' listeners. Requests without
 * these headers (every client's) cost one scan of the raw header names.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Duplex } from "node:stream"
import { Effect } from "effect"
import { ServerEnv, type RawHttp, type ServerModule } from "../module.ts"
import { internalHeadersOf, stripInternalHeaders, tokenMatches } from "./forward.ts"
import { NUDGE_PATH, type NudgeTopic, Replicas } from "./Replicas.ts"

const REFUSED = "internal request refused: missing or wrong SLIPWAY_INTERNAL_TOKEN"

const answer = (response: ServerResponse, status: number, detail: string) => {
  const body = JSON.stringify({ detail })
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), "cache-control": "no-store" })
  response.end(body)
}

const topics: ReadonlyArray<NudgeTopic> = ["boxes", "deployments"]

export const replicasHttp = Effect.gen(function* () {
  const replicas = yield* Replicas
  const { config, log } = yield* ServerEnv
  const token = config.internalToken

  /** Checks a request's internal headers: true when it may go on (none, or the right token), false when it was refused. */
  const admit = (request: IncomingMessage): boolean | "internal" => {
    const internal = internalHeadersOf(request)
    if (internal === undefined) return true
    if (!tokenMatches(token, internal.token)) {
      log.warn("internal request refused", { path: (request.url ?? "").split("?")[0], from: request.socket.remoteAddress, forwarded_by: internal.by })
      return false
    }
    stripInternalHeaders(request)
    replicas.markForwarded(request)
    return "internal"
  }

  return {
    request: (request: IncomingMessage, response: ServerResponse) => {
      const admitted = admit(request)
      if (admitted === true) return false
      if (admitted === false) {
        request.resume()
        answer(response, 403, REFUSED)
        return true
      }
      const url = request.url ?? "/"
      if (url === NUDGE_PATH || url.startsWith(`${NUDGE_PATH}?`)) {
        request.resume()
        const topic = new URLSearchParams(url.slice(NUDGE_PATH.length + 1)).get("topic") as NudgeTopic | null
        if (request.method !== "POST" || topic === null || !topics.includes(topic)) answer(response, 400, `a nudge is POST ${NUDGE_PATH}?topic=boxes|deployments`)
        else {
          replicas.nudged(topic)
          response.writeHead(204).end()
        }
        return true
      }
      // A forwarded request: served here by the other hooks and routes.
      return false
    },
    upgrade: (request: IncomingMessage, socket: Duplex) => {
      if (admit(request) !== false) return false
      const body = JSON.stringify({ detail: REFUSED })
      socket.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`)
      return true
    }
  } satisfies RawHttp
})

export const replicasModule: ServerModule<Replicas | ServerEnv> = {
  name: "replicas",
  routes: Effect.succeed([]),
  http: replicasHttp
}
