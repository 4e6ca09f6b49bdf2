/**
 * The links the access endpoints mint, served outside the API table (no API key: the token is
 * the credential):
 *
 * - `GET|HEAD {public}/sandbox-downloads/{token}`: the pinned file of the box, through the
 *   dataplane's `/download` (Range, If-None-Match, HEAD), with the content type and disposition
 *   the link was minted with. A stopped box is started first.
 * - `{public}/sandbox-services/{box id}/{port}/…` (any method, and WebSocket upgrades): proxied to
 *   that port inside the box, path after the prefix, with the token in the header
 *   `X-Langsmith-Sandbox-Service-Token` or the cookie `browser_url` sets. The token and the cookie
 *   are removed before the request reaches the box.
 * - `GET {public}/sandbox-service-login?token=…` (`browser_url`): sets that cookie (HttpOnly,
 *   SameSite=Lax, scoped to the service's path, as long as the token lives) and redirects.
 *
 * With several replicas, a link's request for a box another replica runs is forwarded there as
 * it came (that replica checks the token again).
 *
 * A missing, malformed, expired or withdrawn token is 401; a valid token for another box or
 * port is 403 (another tenant's token never names this box). Answers of a box are served with a
 * `Content-Security-Policy: sandbox` (an opaque origin): they share Slipway's origin, and must not
 * read what the console keeps there.
 */
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from "node:http"
import { connect } from "node:net"
import { posix } from "node:path"
import type { Duplex } from "node:stream"
import { Cause, Effect, Exit } from "effect"
import { clientGone, makeRequestRunner, type RequestRunner } from "../../http/app.ts"
import type { RawHttp } from "../../module.ts"
import { DataplaneError, failedBox, rejectUpgrade, sendError } from "../dataplane/protocol.ts"
import { type BoxLocation, replicaGoneMessage } from "../controller.ts"
import {
  type AccessContext,
  DOWNLOAD_PREFIX,
  makeAccessContext,
  SERVICE_COOKIE,
  SERVICE_LOGIN_PATH,
  SERVICE_PREFIX,
  SERVICE_TOKEN_HEADER,
  servicePath
} from "./context.ts"
import { type DownloadClaims, type ServiceClaims, unexpired } from "./tokens.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** How long a link waits for a stopped box it woke to be ready. */
const WAKE_MS = 60_000
/** Browsers get the service in an opaque origin: scripts, forms and popups work; Slipway's storage and cookies are out of reach. */
const SERVICE_CSP = "sandbox allow-scripts allow-forms allow-popups allow-popups-to-escape-sandbox allow-modals allow-downloads allow-pointer-lock allow-presentation"

const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "host"])

/** `{sandboxId, port, rest}` of a service URL path, or undefined. */
export const parseServicePath = (url: string): { readonly sandboxId: string; readonly port: number; readonly rest: string | undefined } | undefined => {
  if (!url.startsWith(SERVICE_PREFIX)) return undefined
  const match = /^([0-9a-fA-F-]{36})\/([0-9]{1,5})(\/[^]*|\?[^]*)?$/.exec(url.slice(SERVICE_PREFIX.length))
  if (!match || !UUID.test(match[1]!.toLowerCase())) return undefined
  const port = Number(match[2])
  if (port < 1 || port > 65535) return undefined
  const tail = match[3]
  return { sandboxId: match[1]!.toLowerCase(), port, rest: tail === undefined || tail.startsWith("?") ? undefined : tail }
}

const cookieToken = (header: string | undefined): string | undefined => {
  if (!header) return undefined
  for (const part of header.split(";")) {
    const eq = part.indexOf("=")
    if (eq !== -1 && part.slice(0, eq).trim() === SERVICE_COOKIE) return part.slice(eq + 1).trim()
  }
  return undefined
}

/** The Cookie header without Slipway's cookie (the box never sees the token). */
const withoutOurCookie = (header: string | undefined): string | undefined => {
  if (!header) return undefined
  const kept = header
    .split(";")
    .map((part) => part.trim())
    .filter((part) => part !== "" && part.split("=")[0]!.trim() !== SERVICE_COOKIE)
  return kept.length > 0 ? kept.join("; ") : undefined
}

const headerValue = (value: string | ReadonlyArray<string> | undefined) => (Array.isArray(value) ? value[0] : (value as string | undefined))

/** What the box receives: the client's headers without hop-by-hop ones, the token or Slipway's cookie; with X-Forwarded-*. */
const forwardedHeaders = (request: IncomingMessage, prefix: string, keepUpgrade: boolean): OutgoingHttpHeaders => {
  const out: OutgoingHttpHeaders = {}
  const connectionTokens = new Set(
    String(request.headers.connection ?? "")
      .split(",")
      .map((token) => token.trim().toLowerCase())
  )
  for (const [name, value] of Object.entries(request.headers as IncomingHttpHeaders)) {
    if (value === undefined || name === SERVICE_TOKEN_HEADER || name === "cookie") continue
    if (!keepUpgrade && (HOP_BY_HOP.has(name) || connectionTokens.has(name))) continue
    if (keepUpgrade && name === "host") continue
    out[name] = value
  }
  const cookie = withoutOurCookie(headerValue(request.headers.cookie))
  if (cookie) out.cookie = cookie
  out.host = headerValue(request.headers.host) ?? "localhost"
  out["x-forwarded-prefix"] = prefix
  out["x-forwarded-host"] = headerValue(request.headers.host) ?? ""
  out["x-forwarded-for"] = request.socket.remoteAddress ?? ""
  return out
}

const fail = (status: number, type: string, message: string, headers?: Record<string, string>) => Effect.fail(new DataplaneError(status, type, message, headers))

/** What a link's handling stops with when its client went away meanwhile: nothing to answer. */
class ClientGone {}

/**
 * The links' raw HTTP. Each step that needs the server's services (a store, the controller, the
 * dataplane) runs through `runRequest`, the server's request runner (http/app.ts): a step still
 * waiting (a box being woken) is interrupted when the client goes away.
 */
export const makeAccessHttp = (context: AccessContext, runRequest: RequestRunner): RawHttp => {
  const { sandboxStore, grantStore, controller, dataplane, tokens, log, secure, replicas } = context

  /**
   * Where the box runs (several replicas): here, or the peer to forward the link's request to
   * (it checks the token again); a box whose replica is gone is an error saying so.
   */
  const whereRuns = Effect.fnUntraced(function* (sandboxId: string, forwarded: boolean) {
    const location: BoxLocation = yield* controller.locate(sandboxId)
    if (location._tag === "gone") return yield* fail(502, "ReplicaUnavailable", `the sandbox is not available: ${replicaGoneMessage(location.replicaId, location.replica)}; it is being marked failed`)
    if (location._tag === "peer" && forwarded) return yield* fail(503, "ServiceUnavailable", `the sandbox moved to replica ${location.peer.id} while this request was forwarded; retry`, { "retry-after": "1" })
    if (location._tag === "peer" && !replicas.forwarder) return yield* fail(503, "ServiceUnavailable", "the sandbox runs on another replica, and this one cannot forward to it: set SLIPWAY_INTERNAL_TOKEN on every replica")
    return location
  })

  /** Hands the request to the replica that runs the box, as it came. */
  const forwardTo = (request: IncomingMessage, connection: ServerResponse | Duplex, head: Buffer | undefined, location: Extract<BoxLocation, { _tag: "peer" }>) =>
    new Promise<void>((resolve) => {
      const unreachable = (code: string) => {
        const error = new DataplaneError(502, "ReplicaUnavailable", `the sandbox runs on replica ${location.peer.id} (${location.peer.url}), which does not answer (${code}); if it stopped, the sandbox is marked failed once its lease expires`)
        if (head === undefined) sendError(request, connection as ServerResponse, error)
        else rejectUpgrade(connection as Duplex, error.status, error.type, error.message)
        resolve()
      }
      if (head === undefined) {
        ;(connection as ServerResponse).once("close", () => resolve())
        replicas.forwarder!.http(request, connection as ServerResponse, location.peer, unreachable)
      } else {
        connection.once("close", () => resolve())
        replicas.forwarder!.upgrade(request, connection as Duplex, head, location.peer, unreachable)
      }
    })

  /** The box of the token's tenant, started (and awaited) when it is stopped. */
  const runningBox = Effect.fnUntraced(function* (tenantId: string, sandboxId: string) {
    let box = yield* sandboxStore.sandboxById(tenantId, sandboxId)
    if (!box) return yield* fail(404, "NotFound", "the sandbox of this link no longer exists")
    if (box.status === "stopped") box = yield* controller.request(box, { _tag: "Start" })
    if (box.status !== "ready" && box.status !== "failed") box = (yield* controller.awaitSettled(tenantId, sandboxId, WAKE_MS)) ?? box
    // A box that failed is not started again by a link: it would fail the same way.
    if (box.status === "failed") return yield* Effect.fail(failedBox(box.name, box.status_message))
    if (box.status !== "ready") return yield* fail(503, "ServiceUnavailable", `the sandbox is ${box.status}; retry shortly`, { "retry-after": "2" })
    return box
  })

  /** Checks a service token against the box and port asked for. */
  const authorizeService = Effect.fnUntraced(function* (token: string | undefined, sandboxId: string, port: number) {
    if (!token) return yield* fail(401, "Unauthorized", `missing ${SERVICE_TOKEN_HEADER} header (or open browser_url first)`)
    const claims = tokens.verify(token)
    if (!claims || claims.k !== "s") return yield* fail(401, "Unauthorized", "invalid service token")
    if (claims.b !== sandboxId || claims.p !== port) return yield* fail(403, "Forbidden", "this service token is for another sandbox or port")
    if (!unexpired(claims.e)) return yield* fail(401, "Unauthorized", "the service token has expired: mint a new service URL")
    const grant = yield* grantStore.serviceGrantById(claims.g)
    if (!grant || grant.sandbox_id !== claims.b || grant.port !== claims.p || grant.tenant_id !== claims.t) {
      return yield* fail(401, "Unauthorized", "this port is no longer shared: mint a new service URL")
    }
    return claims
  })

  /** Runs a step of the request on `connection`: its value, or its error (`ClientGone` when the client left). */
  const run = async <A>(effect: Effect.Effect<A, DataplaneError | { readonly _tag: string; readonly message: string }>, connection: ServerResponse | Duplex): Promise<A> => {
    const exit = await runRequest(
      Effect.mapError(effect, (error) => (error instanceof DataplaneError ? error : new DataplaneError(503, "ServiceUnavailable", error.message, { "retry-after": "1" }))),
      connection
    )
    if (Exit.isSuccess(exit)) return exit.value
    throw clientGone(exit) ? new ClientGone() : Cause.squash(exit.cause)
  }

  const asDataplaneError = (error: unknown) => (error instanceof DataplaneError ? error : new DataplaneError(500, "InternalError", "the link could not be served"))

  // ------------------------------------------------------------------ downloads

  const download = async (request: IncomingMessage, response: ServerResponse, token: string) => {
    if (request.method !== "GET" && request.method !== "HEAD") throw new DataplaneError(405, "MethodNotAllowed", "a download link accepts GET and HEAD", { allow: "GET, HEAD" })
    const claims = tokens.verify(token)
    if (!claims || claims.k !== "d") throw new DataplaneError(401, "Unauthorized", "invalid download link")
    if (!unexpired(claims.e)) throw new DataplaneError(401, "Unauthorized", "this download link has expired")
    if (!dataplane.handle) throw new DataplaneError(503, "ServiceUnavailable", "download links need a runtime that runs sandboxes (SLIPWAY_RUNTIME=local)")
    const box = await run(runningBox(claims.t, claims.b), response)
    const location = await run(whereRuns(box.id, replicas.isForwarded(request)), response)
    if (location._tag === "peer") return forwardTo(request, response, undefined, location)
    overrideDownloadHeaders(response, claims)
    request.resume()
    dataplane.handle(request, response, {
      sandboxId: box.id,
      subpath: `/download?path=${encodeURIComponent(claims.f)}`,
      auth: { keyId: "download-link", organizationId: "", tenantId: claims.t }
    })
  }

  // ------------------------------------------------------------------ service URLs

  const login = async (request: IncomingMessage, response: ServerResponse) => {
    if (request.method !== "GET" && request.method !== "HEAD") throw new DataplaneError(405, "MethodNotAllowed", "browser_url accepts GET", { allow: "GET" })
    const token = new URL(request.url ?? "/", "http://slipway.invalid").searchParams.get("token") ?? ""
    const claims = tokens.verify(token)
    if (!claims || claims.k !== "s") throw new DataplaneError(401, "Unauthorized", "invalid service token")
    await run(authorizeService(token, claims.b, claims.p), response)
    const path = servicePath(claims.b, claims.p)
    const maxAge = Math.max(0, claims.e - Math.floor(Date.now() / 1000))
    request.resume()
    response.writeHead(303, {
      location: path,
      "set-cookie": `${SERVICE_COOKIE}=${token}; Path=${path}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`,
      "referrer-policy": "no-referrer",
      "cache-control": "no-store",
      "content-length": "0"
    })
    response.end()
  }

  /** The unix socket of the box's port (a relay in its network namespace). */
  const reach = (sandboxId: string, port: number, connection: ServerResponse | Duplex) => run(dataplane.connectPort!(sandboxId, port), connection)

  const serviceToken = (request: IncomingMessage) => headerValue(request.headers[SERVICE_TOKEN_HEADER]) ?? cookieToken(headerValue(request.headers.cookie))

  const proxy = async (request: IncomingMessage, response: ServerResponse, target: { sandboxId: string; port: number; rest: string }) => {
    const claims: ServiceClaims = await run(authorizeService(serviceToken(request), target.sandboxId, target.port), response)
    if (!dataplane.connectPort) throw new DataplaneError(503, "ServiceUnavailable", "service URLs need a runtime that runs sandboxes (SLIPWAY_RUNTIME=local)")
    await run(runningBox(claims.t, claims.b), response)
    const location = await run(whereRuns(target.sandboxId, replicas.isForwarded(request)), response)
    if (location._tag === "peer") return forwardTo(request, response, undefined, location)
    const socketPath = await reach(target.sandboxId, target.port, response)
    const prefix = servicePath(target.sandboxId, target.port).slice(0, -1)
    await new Promise<void>((resolve) => {
      const upstream = httpRequest({ socketPath, method: request.method, path: target.rest, headers: forwardedHeaders(request, prefix, false), setHost: false })
      upstream.on("response", (answer) => {
        const headers: OutgoingHttpHeaders = {}
        for (const [name, value] of Object.entries(answer.headers)) {
          if (value !== undefined && !HOP_BY_HOP.has(name) && name !== "content-security-policy") headers[name] = value
        }
        headers["content-security-policy"] = SERVICE_CSP
        response.writeHead(answer.statusCode ?? 502, headers)
        answer.pipe(response)
        answer.on("end", resolve)
        answer.on("error", () => response.destroy())
      })
      upstream.on("error", (error) => {
        if (!response.headersSent) {
          sendError(request, response, new DataplaneError(502, "BadGateway", `nothing answered on port ${target.port} in the sandbox (${(error as NodeJS.ErrnoException).code ?? error.message})`))
        } else response.destroy()
        resolve()
      })
      response.on("close", () => {
        if (!response.writableFinished) upstream.destroy()
        resolve()
      })
      request.pipe(upstream)
    })
  }

  const proxyUpgrade = async (request: IncomingMessage, socket: Duplex, head: Buffer, target: { sandboxId: string; port: number; rest: string }) => {
    const claims = await run(authorizeService(serviceToken(request), target.sandboxId, target.port), socket)
    if (!dataplane.connectPort) throw new DataplaneError(503, "ServiceUnavailable", "service URLs need a runtime that runs sandboxes (SLIPWAY_RUNTIME=local)")
    await run(runningBox(claims.t, claims.b), socket)
    const location = await run(whereRuns(target.sandboxId, replicas.isForwarded(request)), socket)
    if (location._tag === "peer") return forwardTo(request, socket, head, location)
    const socketPath = await reach(target.sandboxId, target.port, socket)
    const headers = forwardedHeaders(request, servicePath(target.sandboxId, target.port).slice(0, -1), true)
    const upstream = connect(socketPath)
    const lines = [`${request.method ?? "GET"} ${target.rest} HTTP/1.1`]
    for (const [name, value] of Object.entries(headers)) {
      for (const one of Array.isArray(value) ? value : [value]) if (one !== undefined && !/[\r\n]/.test(String(one))) lines.push(`${name}: ${one}`)
    }
    upstream.write(`${lines.join("\r\n")}\r\n\r\n`)
    if (head.length > 0) upstream.write(head)
    upstream.on("error", () => socket.destroy())
    socket.on("error", () => upstream.destroy())
    socket.on("close", () => upstream.destroy())
    upstream.on("close", () => socket.destroy())
    socket.pipe(upstream).pipe(socket)
  }

  const answerError = (request: IncomingMessage, response: ServerResponse) => (error: unknown) => {
    if (error instanceof ClientGone) return
    const known = asDataplaneError(error)
    // The URL holds the token (download links, browser_url): only the kind of link is logged.
    if (!(error instanceof DataplaneError)) log.warn("sandbox link failed", { link: (request.url ?? "").split("/")[1]!.split("?")[0], error: (error as Error)?.message })
    if (!request.readableEnded) request.resume()
    if (response.headersSent) return void response.destroy()
    sendError(request, response, known)
  }

  return {
    request: (request, response) => {
      const url = request.url ?? "/"
      if (url.startsWith(DOWNLOAD_PREFIX)) {
        const token = url.slice(DOWNLOAD_PREFIX.length).split(/[/?]/)[0]!
        // Tokens are base64url and '.': nothing to decode (a stray '%' just fails verification).
        void download(request, response, token).catch(answerError(request, response))
        return true
      }
      if (url === SERVICE_LOGIN_PATH || url.startsWith(`${SERVICE_LOGIN_PATH}?`)) {
        void login(request, response).catch(answerError(request, response))
        return true
      }
      if (!url.startsWith(SERVICE_PREFIX)) return false
      const target = parseServicePath(url)
      if (!target) {
        sendError(request, response, new DataplaneError(404, "NotFound", "not a service URL"))
        return true
      }
      if (target.rest === undefined) {
        // The service's root is the prefix with its slash: relative links in its pages resolve under it.
        const query = url.includes("?") ? url.slice(url.indexOf("?")) : ""
        request.resume()
        response.writeHead(308, { location: `${servicePath(target.sandboxId, target.port)}${query}`, "content-length": "0" })
        response.end()
        return true
      }
      void proxy(request, response, { ...target, rest: target.rest }).catch(answerError(request, response))
      return true
    },
    upgrade: (request, socket, head) => {
      const target = parseServicePath(request.url ?? "/")
      if (!target) return false
      void proxyUpgrade(request, socket, head, { ...target, rest: target.rest ?? "/" }).catch((error) => {
        if (error instanceof ClientGone) return
        const known = asDataplaneError(error)
        rejectUpgrade(socket, known.status, known.type, known.message, known.fields)
      })
      return true
    }
  }
}

/** The headers a download link was minted with, set on the dataplane's 200/206 answer; every answer is sandboxed and never sniffed. */
const overrideDownloadHeaders = (response: ServerResponse, claims: DownloadClaims) => {
  const original = response.writeHead.bind(response) as (status: number, ...rest: Array<unknown>) => ServerResponse
  const name = posix.basename(claims.f).replace(/[^\x20-\x7e]|["\\]/g, "_") || "download"
  const disposition = `${claims.cd ?? "attachment"}; filename="${name}"; filename*=UTF-8''${encodeURIComponent(posix.basename(claims.f) || "download")}`
  ;(response as { writeHead: unknown }).writeHead = (status: number, ...rest: Array<unknown>) => {
    const reason = typeof rest[0] === "string" ? (rest[0] as string) : undefined
    const given = (typeof rest[0] === "string" ? rest[1] : rest[0]) as Record<string, string | number> | undefined
    const headers: Record<string, string | number> = { ...given, "x-content-type-options": "nosniff", "content-security-policy": "sandbox" }
    if (status === 200 || status === 206) {
      if (claims.ct) headers["content-type"] = claims.ct
      headers["content-disposition"] = disposition
    }
    return reason === undefined ? original(status, headers) : original(status, reason, headers)
  }
}

export const accessHttp = Effect.gen(function* () {
  const context = yield* makeAccessContext
  return makeAccessHttp(context, makeRequestRunner(yield* Effect.context<never>()))
})
