/**
 * Forwarding a request to the replica that runs its workload: a streaming reverse proxy
 * (`http-proxy-3`, which the deployment URL already uses for WebSocket upgrades) over keep-alive
 * connections. The request goes as the client sent it (method, path, Host, headers, body streamed
 * with back-pressure both ways; upgrades, WebSocket or any other, piped as raw bytes on a
 * connection of their own, as the service URLs pipe them into a box), plus the replicas' shared
 * secret and this replica's id, so the owner serves it as if it had come to it (it authenticates
 * the client again) and never forwards it further. A client that goes away aborts the forwarded
 * request. Nothing is retried: a request may have had effects on the owner.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import * as http from "node:http"
import * as net from "node:net"
import * as tls from "node:tls"
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
  const connectTimeoutMs = options.connectTimeoutMs ?? 2000
  const proxy = createProxyServer({ xfwd: true, connectTimeout: connectTimeoutMs })
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
    // Any upgrade (WebSocket or another protocol, as a box's service may speak): the request
    // line and headers as they came plus ours, then raw bytes both ways. A connection of its own.
    upgrade: (request, socket, head, peer, onError) => {
      const target = new URL(peer.url)
      const secure = target.protocol === "https:"
      const port = Number(target.port || (secure ? 443 : 80))
      const host = target.hostname.replace(/^\[|\]$/g, "")
      const upstream = secure ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host }) : net.connect(port, host)
      let connected = false
      const timer = setTimeout(() => upstream.destroy(Object.assign(new Error("connect timeout"), { code: "ETIMEDOUT" })), connectTimeoutMs)
      upstream.once(secure ? "secureConnect" : "connect", () => {
        connected = true
        clearTimeout(timer)
        const lines = [`${request.method ?? "GET"} ${request.url ?? "/"} HTTP/1.1`]
        const raw = request.rawHeaders
        let forwardedFor: string | undefined
        for (let i = 0; i < raw.length; i += 2) {
          if (/[\r\n]/.test(raw[i + 1]!)) continue
          if (raw[i]!.toLowerCase() === "x-forwarded-for") forwardedFor = forwardedFor === undefined ? raw[i + 1] : `${forwardedFor},${raw[i + 1]}`
          else lines.push(`${raw[i]}: ${raw[i + 1]}`)
        }
        const client = request.socket.remoteAddress ?? ""
        lines.push(`x-forwarded-for: ${forwardedFor === undefined ? client : `${forwardedFor},${client}`}`)
        lines.push(`${TOKEN_HEADER}: ${options.token}`, `${FORWARDED_BY_HEADER}: ${options.selfId}`)
        upstream.write(`${lines.join("\r\n")}\r\n\r\n`)
        if (head.length > 0) upstream.write(head)
        socket.pipe(upstream).pipe(socket)
      })
      upstream.on("error", (error) => {
        clearTimeout(timer)
        if (connected) socket.destroy()
        else onError(codeOf(error))
      })
      socket.on("error", () => upstream.destroy())
      socket.on("close", () => upstream.destroy())
      upstream.on("close", () => connected && socket.destroy())
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
