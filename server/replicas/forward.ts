/**
 * Forwarding a request to the replica that runs its workload: a streaming reverse proxy
 * (`http-proxy-3`, which the deployment URL already uses for WebSocket upgrades) over keep-alive
 * connections. The request goes as the client sent it (method, path, Host, headers, body streamed
 * with back-pressure both ways; WebSocket upgrades piped as raw bytes), plus the replicas' shared
 * secret and this replica's id, so the owner serves it as if it had come to it (it authenticates
 * the client again) and never forwards it further. A client that goes away aborts the forwarded
 * request. Nothing is retried: a request may have had effects on the owner.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import * as http from "node:http"
import type { Duplex } from "node:stream"
import { createProxyServer } from "http-proxy-3"

/** The header carrying the replicas' shared secret (`SLIPWAY_INTERNAL_TOKEN`). */
export const TOKEN_HEADER = "x-slipway-internal-token"
/** The header naming the replica that forwarded a request. */
export const FORWARDED_BY_HEADER = "x-slipway-forwarded-by"

/** A replica a request goes to. */
export interface Peer {
  readonly id: string
  /** Its `SLIPWAY_INTERNAL_URL`. */
  readonly url: string
}

export interface Forwarder {
  /** Proxies the request to `peer`; `onError` answers when the peer could not be reached (a code: ECONNREFUSED, ETIMEDOUT...). */
  readonly http: (request: http.IncomingMessage, response: http.ServerResponse, peer: Peer, onError: (code: string) => void) => void
  /** The same for an upgrade (WebSocket): the socket is piped to the peer's once it accepts. */
  readonly upgrade: (request: http.IncomingMessage, socket: Duplex, head: Buffer, peer: Peer, onError: (code: string) => void) => void
  readonly close: () => void
}

/** The code of a failed forward (a socket error's, else its message). */
const codeOf = (error: unknown): string => {
  const e = error as { code?: unknown; cause?: { code?: unknown }; message?: unknown }
  if (typeof e?.code === "string") return e.code
  if (typeof e?.cause?.code === "string") return e.cause.code
  return typeof e?.message === "string" ? e.message : String(error)
}

export const makeForwarder = (options: { readonly token: string; readonly selfId: string; readonly connectTimeoutMs?: number }): Forwarder => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 512 })
  // No response timeout: a command may stream for minutes (the client's side is bounded by the server's own timeouts).
  const proxy = createProxyServer({ xfwd: true, ws: true, connectTimeout: options.connectTimeoutMs ?? 2000 })
  // Errors are answered through each call's callback; this keeps an unexpected one from being uncaught.
  proxy.on("error", () => {})
  const headers = { [TOKEN_HEADER]: options.token, [FORWARDED_BY_HEADER]: options.selfId }
  const settings = (peer: Peer) => ({ target: peer.url, headers, ...(peer.url.startsWith("https:") ? {} : { agent }) })
  return {
    http: (request, response, peer, onError) => {
      proxy.web(request, response, settings(peer), (error) => {
        if (response.headersSent) response.destroy()
        else onError(codeOf(error))
      })
    },
    upgrade: (request, socket, head, peer, onError) => {
      // An upgraded connection leaves any pool: no keep-alive agent (as the deployment URL's upgrades).
      proxy.ws(request, socket as never, head, { target: peer.url, headers }, (error) => onError(codeOf(error)))
    },
    close: () => {
      agent.destroy()
      proxy.close()
    }
  }
}

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

/** Compares a presented token with the expected one in constant time (whatever their lengths). */
export const tokenMatches = (expected: string | undefined, given: string | undefined): boolean => {
  if (expected === undefined || given === undefined) return false
  return timingSafeEqual(digest(expected), digest(given))
}

/**
 * The internal headers of a request, read from its raw headers (cheap: every request passes
 * here): `undefined` when it has neither, which is every request a client sends.
 */
export const internalHeadersOf = (request: http.IncomingMessage): { readonly token: string | undefined; readonly by: string | undefined } | undefined => {
  const raw = request.rawHeaders
  let token: string | undefined
  let by: string | undefined
  let found = false
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!
    if (name.length === TOKEN_HEADER.length && name.toLowerCase() === TOKEN_HEADER) {
      token = raw[i + 1]
      found = true
    } else if (name.length === FORWARDED_BY_HEADER.length && name.toLowerCase() === FORWARDED_BY_HEADER) {
      by = raw[i + 1]
      found = true
    }
  }
  return found ? { token, by } : undefined
}

/** Removes the internal headers from a request before anything reads it (a box or an agent server never sees the shared secret). */
export const stripInternalHeaders = (request: http.IncomingMessage): void => {
  // `headers` first: Node builds it lazily from the raw headers and their original count.
  const headers = request.headers
  delete headers[TOKEN_HEADER]
  delete headers[FORWARDED_BY_HEADER]
  const raw = request.rawHeaders
  for (let i = raw.length - 2; i >= 0; i -= 2) {
    const name = raw[i]!.toLowerCase()
    if (name === TOKEN_HEADER || name === FORWARDED_BY_HEADER) raw.splice(i, 2)
  }
}
