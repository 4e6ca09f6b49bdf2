/**
 * The HTTP pipeline: route, authenticate, read and decode the request against its endpoint
 * description, run the handler, and answer. Every failure goes through `toErrorResponse`, the
 * one error mapper, so bodies always have the spec's shapes.
 *
 * Requests run through `makeRequestRunner`, the server's one request runner (the sandbox
 * dataplane's URLs use it too): a request's program is a fiber run with the server's services,
 * synchronously up to its first suspension (most handlers answer within it: SQLite), and
 * interrupted when its client goes away before the answer (a `wait_for_ready` that only waits);
 * work a handler has committed to the store goes on in the controllers, which run their own fibers.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http"
import { randomUUID } from "node:crypto"
import type { Duplex } from "node:stream"
import { Cause, Context, Effect, Exit, Result, type Schema } from "effect"
import * as SchemaJITCompiler from "effect/schema/SchemaJITCompiler"
import {
  type ApiError,
  type DecodedInput,
  decodeWithIssues,
  type Endpoint,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  type SuccessEncoded,
  toErrorResponse,
  UnsupportedMediaType,
  ValidationError,
  ValidationIssue
} from "../../core/index.ts"
import type { AuthContext } from "../store/KeyStore.ts"
import { StoreError } from "../store/StoreError.ts"
import type { Logger } from "../log.ts"
import { fastParams, type ParamsDecoder } from "./params.ts"
import { makeRouter } from "./router.ts"

export const MAX_BODY_BYTES = 1024 * 1024

/** The control plane's path prefix on self-hosted LangSmith: `/api-host/v2/deployments` is `/v2/deployments`. */
export const apiHostPrefix = "/api-host/"

/** The sandbox area's prefix on the real API (the `langsmith` clients' default base): `/api/v2/sandboxes/boxes` is `/v2/sandboxes/boxes`. */
export const apiSandboxPrefix = "/api/"

/**
 * Endpoints without an API key (the push webhook, checked by its signature over the whole body)
 * read at most this much: before the signature is checked the caller is anyone, so what it can
 * make the server hold stays small. GitHub push payloads are far below it.
 */
export const UNAUTHENTICATED_MAX_BODY_BYTES = 256 * 1024

/**
 * Bodies nested deeper than this are refused (422). Free-form objects in the schemas accept any
 * depth, but JSON.stringify overflows the stack on deep input and SQLite's JSON functions stop
 * at 1000 levels: either was a 500.
 */
export const MAX_JSON_DEPTH = 100

/** Iterative, so the check itself cannot overflow the stack. */
const nestedDeeperThan = (value: unknown, limit: number): boolean => {
  const pending: Array<[unknown, number]> = [[value, 1]]
  while (pending.length > 0) {
    const [node, depth] = pending.pop()!
    if (depth > limit) return true
    for (const child of Array.isArray(node) ? node : Object.values(node as object)) {
      if (child !== null && typeof child === "object") pending.push([child, depth + 1])
    }
  }
  return false
}

export interface RequestContext {
  /** Present on every endpoint whose description has `auth: true`. */
  readonly auth: AuthContext
  readonly requestId: string
  readonly headers: IncomingHttpHeaders
  /** The body exactly as received (webhook signatures are computed over it). */
  readonly rawBody: Buffer
  /** The peer's address (`request.socket.remoteAddress`): /metrics serves loopback peers only by default. */
  readonly remoteAddress?: string | undefined
}

/** A handler may answer something other than JSON (the /docs page, the console's files), with its own status and headers. */
export class RawResponse {
  readonly contentType: string
  readonly body: string | Uint8Array
  /** Overrides the endpoint's success status (a redirect, 304 Not Modified). */
  readonly status: number | undefined
  readonly headers: Readonly<Record<string, string>> | undefined
  constructor(contentType: string, body: string | Uint8Array, options?: { readonly status?: number; readonly headers?: Readonly<Record<string, string>> }) {
    this.contentType = contentType
    this.body = body
    this.status = options?.status
    this.headers = options?.headers
  }
}

/** Fails with the core's tagged errors (answered through the one error mapper) or a `StoreError` (503 when busy, else 500). */
export type Handler<E extends Endpoint> = (
  input: DecodedInput<E>,
  context: RequestContext
) => Effect.Effect<SuccessEncoded<E> | RawResponse, ApiError | StoreError>

export interface Route {
  readonly endpoint: Endpoint
  readonly handler: Handler<any>
}

export interface AppOptions {
  readonly routes: ReadonlyArray<Route>
  readonly authenticate: (key: string | undefined, tenant: string | undefined) => Effect.Effect<AuthContext, ApiError | StoreError>
  /**
   * The same check answered at once (a synchronous key store: SQLite); may throw a `StoreError`.
   * With it a request runs no effect until its handler: no fiber for authentication, none waiting
   * for the body, and the handler's fiber runs once the body is in.
   */
  readonly authenticateNow?: ((key: string | undefined, tenant: string | undefined) => AuthContext | ApiError) | undefined
  readonly log: Logger
  /** Body limit of endpoints without `auth` (default `UNAUTHENTICATED_MAX_BODY_BYTES`). */
  readonly unauthenticatedMaxBody?: number
  /**
   * Per-route metrics (server/metrics.ts): called once per route when the app is built (and once
   * with `undefined` for requests no route matches); each request then reports its status and
   * duration to its route's observer.
   */
  readonly observe?: (endpoint: Endpoint | undefined) => { readonly observe: (status: number, seconds: number) => void }
  /** The server's services: every request's fiber runs with them (default: none). */
  readonly services?: Context.Context<never> | undefined
}

interface Observer {
  readonly observe: (status: number, seconds: number) => void
}

const noObserver: Observer = { observe: () => undefined }

interface CompiledRoute {
  readonly endpoint: Endpoint
  readonly handler: Handler<any>
  readonly decodeParams: ParamsDecoder | undefined
  readonly decodeQuery: ((input: unknown) => Result.Result<any, Array<ValidationIssue>>) | undefined
  readonly decodeBody: ((input: unknown) => Result.Result<any, Array<ValidationIssue>>) | undefined
  readonly observer: Observer
}

/**
 * Body and query schemas get effect's JIT-compiled decoders (`effect/schema/SchemaJITCompiler`):
 * code generated per schema, so V8 sees one object shape per property read instead of the
 * interpreter's walk, whose reads are shared by every schema and megamorphic. What the compiler
 * does not cover (transformations, custom checks) and every invalid input go to the interpreter,
 * which reports the issues: a 422 reads as before (test/server/compiledDecoders.test.ts compares
 * both on the fuzz suite's inputs). Where `new Function` is blocked the interpreter does it all.
 * Path schemas are not compiled: they refuse unknown keys, so their decode never takes the fast
 * path a compiled decoder has (and `fastParams` answers most of them without a decode).
 */
const compiled = <S extends Schema.Top | undefined>(schema: S): S => {
  if (schema !== undefined) SchemaJITCompiler.enable(schema.ast)
  return schema
}

const compile = ({ endpoint, handler }: Route, observer: Observer): CompiledRoute => ({
  endpoint,
  handler,
  observer,
  // Uuid parameters (most routes) are checked by one regex each; the schema decode reports the rest.
  decodeParams: endpoint.params && fastParams(endpoint, decodeWithIssues(endpoint.params, ["path"])),
  // Unknown query parameters and body fields are ignored, as FastAPI (and the real API) does.
  decodeQuery: endpoint.query && decodeWithIssues(compiled(endpoint.query), ["query"], { excess: "ignore" }),
  decodeBody: endpoint.body && decodeWithIssues(compiled(endpoint.body), ["body"], { excess: "ignore" })
})

/** The API key of a request: `X-Api-Key`, or `Authorization: Bearer`. */
export const apiKeyOf = (headers: IncomingHttpHeaders): string | undefined => {
  const direct = headers["x-api-key"]
  if (typeof direct === "string" && direct !== "") return direct
  const authorization = headers.authorization
  if (typeof authorization === "string") {
    const match = /^Bearer\s+(.+)$/i.exec(authorization.trim())
    if (match) return match[1]
  }
  return undefined
}

const readBody = (request: IncomingMessage, limit: number): Effect.Effect<Buffer, PayloadTooLarge> =>
  Effect.flatMap(
    Effect.callback<Buffer | PayloadTooLarge, never>((resume) => {
      readBodyInto(request, limit, (body) => resume(Effect.succeed(body)), (error) => resume(Effect.die(error)))
    }),
    (body) => (body instanceof PayloadTooLarge ? Effect.fail(body) : Effect.succeed(body))
  )

const readBodyInto = (request: IncomingMessage, limit: number, resolve: (body: Buffer | PayloadTooLarge) => void, reject: (error: unknown) => void): void => {
  {
    const declared = Number(request.headers["content-length"] ?? 0)
    if (declared > limit) {
      request.resume()
      return resolve(new PayloadTooLarge({ message: "Request body too large" }))
    }
    const chunks: Array<Buffer> = []
    let size = 0
    request.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        chunks.length = 0
        request.removeAllListeners("data")
        request.resume()
        resolve(new PayloadTooLarge({ message: "Request body too large" }))
      } else chunks.push(chunk)
    })
    request.on("end", () => resolve(Buffer.concat(chunks)))
    request.on("error", reject)
  }
}

const isJsonContentType = (value: string | undefined) => value === undefined || /^application\/([\w.+-]+\+)?json\b/i.test(value.trim())

/** The first value of each key; keys in `arrays` (FastAPI list parameters) keep every value, in order. */
export const queryObject = (search: string, arrays: ReadonlyArray<string> = []): Record<string, string | Array<string>> => {
  const out: Record<string, string | Array<string>> = {}
  for (const [key, value] of new URLSearchParams(search)) {
    if (arrays.includes(key)) ((out[key] ??= []) as Array<string>).push(value)
    else if (!(key in out)) out[key] = value
  }
  return out
}

const jsonPosition = (error: unknown): number => {
  const match = /position (\d+)/.exec(String((error as Error)?.message ?? ""))
  return match ? Number(match[1]) : 0
}

/** Strict UTF-8 (invalid bytes are a 422, not U+FFFD); without `stream` a decode keeps no state, so one decoder serves every request. */
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/** Parses and validates the JSON body of a request; `undefined` stands for "no body expected". */
const decodeBody = (route: CompiledRoute, raw: Buffer, contentType: string | undefined): Result.Result<unknown, ApiError> => {
  if (!route.decodeBody) return Result.succeed(undefined)
  if (raw.length === 0) {
    // A body whose every field has a default may be left out: that is asking for the defaults.
    return route.endpoint.bodyOptional ? Result.mapError(route.decodeBody({}), (issues) => new ValidationError({ issues })) : Result.fail(ValidationError.single(["body"], "Field required", "missing"))
  }
  if (!isJsonContentType(contentType)) {
    return Result.fail(new UnsupportedMediaType({ message: `Unsupported media type ${JSON.stringify(contentType)}: send application/json` }))
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(utf8.decode(raw))
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_ENCODING_INVALID_ENCODED_DATA") return Result.fail(ValidationError.single(["body"], "Invalid UTF-8 in the request body", "json_invalid"))
    return Result.fail(ValidationError.single(["body", jsonPosition(error)], "JSON decode error", "json_invalid"))
  }
  // A body of n bytes nests at most n/2 levels: small bodies skip the walk.
  if (raw.length > 2 * MAX_JSON_DEPTH && parsed !== null && typeof parsed === "object" && nestedDeeperThan(parsed, MAX_JSON_DEPTH)) {
    return Result.fail(ValidationError.single(["body"], `JSON nested too deeply (more than ${MAX_JSON_DEPTH} levels)`, "value_error"))
  }
  return Result.mapError(route.decodeBody(parsed), (issues) => new ValidationError({ issues }))
}

/** Decodes path, query and body together so one 422 lists every problem. */
const decodeRequest = (route: CompiledRoute, params: Record<string, string>, search: string, raw: Buffer, contentType: string | undefined) => {
  // Reads by id (the polling path): path parameters only.
  if (route.decodeQuery === undefined && route.decodeBody === undefined) {
    if (route.decodeParams === undefined) return Result.succeed({ params, query: {}, body: undefined })
    const decoded = route.decodeParams(params)
    return Result.isSuccess(decoded)
      ? Result.succeed({ params: decoded.success, query: {}, body: undefined })
      : Result.fail(new ValidationError({ issues: decoded.failure }) as ApiError)
  }
  const issues: Array<ValidationIssue> = []
  const take = (result: Result.Result<any, Array<ValidationIssue>> | undefined, fallback: unknown) => {
    if (!result) return fallback
    if (Result.isFailure(result)) {
      issues.push(...result.failure)
      return fallback
    }
    return result.success
  }
  const decodedParams = take(route.decodeParams?.(params), params)
  const decodedQuery = take(route.decodeQuery?.(queryObject(search, route.endpoint.queryArrays)), {})
  const body = decodeBody(route, raw, contentType)
  if (Result.isFailure(body)) {
    if (body.failure._tag !== "ValidationError") return Result.fail(body.failure)
    issues.push(...body.failure.issues)
  }
  if (issues.length > 0) return Result.fail(new ValidationError({ issues }) as ApiError)
  return Result.succeed({ params: decodedParams, query: decodedQuery, body: Result.isSuccess(body) ? body.success : undefined })
}

const emptyBody = Buffer.alloc(0)

const headerValue = (value: string | Array<string> | undefined): string | undefined => (typeof value === "string" ? value : undefined)

/**
 * Runs a request's program (`run(effect, connection)`) with the server's services: its exit at once
 * when the program never suspends (most handlers are synchronous: SQLite), else a Promise of it. A
 * program still running when `connection` (the response, or an upgrade's socket) closes before
 * the answer is interrupted: its client is gone (read effect's `NodeHttpServer.makeHandler`).
 */
export const makeRequestRunner = (services: Context.Context<never>) => {
  const runFork = Effect.runForkWith(services)
  return <A, E>(effect: Effect.Effect<A, E>, connection: ServerResponse | Duplex): Exit.Exit<A, E> | Promise<Exit.Exit<A, E>> => {
    const fiber = runFork(effect)
    const exit = fiber.pollUnsafe()
    if (exit) return exit
    const gone = () => {
      if (!connection.writableEnded) fiber.interruptUnsafe()
    }
    connection.once("close", gone)
    return new Promise((resolve) =>
      fiber.addObserver((done) => {
        connection.off("close", gone)
        resolve(done)
      })
    )
  }
}

/** The server's request runner (`makeRequestRunner`): what raw HTTP hooks run their steps with. */
export type RequestRunner = ReturnType<typeof makeRequestRunner>

/** Whether a request's program ended because its client went away (nothing to answer, nothing to log as an error). */
export const clientGone = <A, E>(exit: Exit.Exit<A, E>): boolean => Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)

export const makeApp = (options: AppOptions) => {
  const observerOf = options.observe ?? (() => noObserver)
  const router = makeRouter(options.routes.map((route) => compile(route, observerOf(route.endpoint))).map((route) => ({ endpoint: route.endpoint, handler: route })))
  const unmatched = observerOf(undefined)
  /**
   * The observer of the request `handle` was last called with: set synchronously by `handle`
   * before it returns (even when the answer is still pending), read right after, so no object is
   * allocated per request to carry it.
   */
  let matched: Observer = unmatched
  const { log, authenticateNow } = options
  const runRequest = makeRequestRunner(options.services ?? Context.empty())
  const unauthenticatedLimit = Math.min(options.unauthenticatedMaxBody ?? UNAUTHENTICATED_MAX_BODY_BYTES, MAX_BODY_BYTES)

  /** Answers; returns the status sent (a `RawResponse` may set its own). */
  const send = (response: ServerResponse, status: number, body: unknown, requestId: string, extraHeaders?: Record<string, string>): number => {
    if (response.headersSent) return status
    const raw = body instanceof RawResponse
    if (!raw && extraHeaders === undefined && body !== undefined && status !== 204 && status !== 304) {
      // The common answer (JSON, no extra headers): one object literal, no spread.
      const text = JSON.stringify(body)
      // A known length spares the chunked framing (and the client's parsing of it).
      response.writeHead(status, { "x-request-id": requestId, "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) }).end(text)
      return status
    }
    const headers: Record<string, string> = { "x-request-id": requestId, ...extraHeaders }
    if (raw) {
      status = body.status ?? status
      Object.assign(headers, body.headers)
    }
    if (status === 204 || status === 304 || body === undefined) {
      response.writeHead(status, headers).end()
      return status
    }
    const text = raw ? body.body : JSON.stringify(body)
    headers["content-type"] = raw ? body.contentType : "application/json"
    // A known length spares the chunked framing (and the client's parsing of it).
    headers["content-length"] = String(Buffer.byteLength(text))
    response.writeHead(status, headers).end(text)
    return status
  }

  const sendError = (response: ServerResponse, error: ApiError, requestId: string, headers?: Record<string, string>) => {
    const { status, body } = toErrorResponse(error)
    send(response, status, body, requestId, headers)
    return status
  }

  /** Authenticates, reads and decodes the request and runs the handler: one Effect, one fiber per request. */
  const program = (
    request: IncomingMessage,
    requestId: string,
    route: CompiledRoute,
    params: Record<string, string>,
    search: string
  ): Effect.Effect<unknown, ApiError | StoreError> => {
    const authenticated: Effect.Effect<AuthContext | undefined, ApiError | StoreError> = route.endpoint.auth
      ? options.authenticate(apiKeyOf(request.headers), headerValue(request.headers["x-tenant-id"]))
      : Effect.succeed(undefined)
    return Effect.flatMap(authenticated, (auth) => {
      if (!route.decodeBody) {
        request.resume()
        return run(request, requestId, route, params, search, auth, emptyBody)
      }
      const limit = route.endpoint.auth ? MAX_BODY_BYTES : unauthenticatedLimit
      return Effect.flatMap(readBody(request, limit), (raw) => run(request, requestId, route, params, search, auth, raw))
    }).pipe(Effect.tapError(() => Effect.sync(() => request.resume())))
  }

  const run = (
    request: IncomingMessage,
    requestId: string,
    route: CompiledRoute,
    params: Record<string, string>,
    search: string,
    auth: AuthContext | undefined,
    raw: Buffer
  ): Effect.Effect<unknown, ApiError | StoreError> => {
    const decoded = decodeRequest(route, params, search, raw, request.headers["content-type"])
    if (Result.isFailure(decoded)) return Effect.fail(decoded.failure)
    const context: RequestContext = { auth: auth!, requestId, headers: request.headers, rawBody: raw, remoteAddress: request.socket.remoteAddress }
    return route.handler(decoded.success as DecodedInput<any>, context)
  }

  /** Runs a request's program in one fiber and answers its outcome: at once unless the program suspends. */
  const execute = (response: ServerResponse, requestId: string, route: CompiledRoute, program: Effect.Effect<unknown, ApiError | StoreError>): number | Promise<number> => {
    const exit = runRequest(program, response)
    return exit instanceof Promise ? exit.then((done) => respond(response, requestId, route, done)) : respond(response, requestId, route, exit)
  }

  /** The path of a synchronous key store: authentication and body reading outside any effect. */
  const handleNow = (
    authenticateNow: NonNullable<AppOptions["authenticateNow"]>,
    request: IncomingMessage,
    response: ServerResponse,
    requestId: string,
    route: CompiledRoute,
    params: Record<string, string>,
    search: string
  ): number | Promise<number> => {
    let auth: AuthContext | undefined
    if (route.endpoint.auth) {
      let result: AuthContext | ApiError
      try {
        result = authenticateNow(apiKeyOf(request.headers), headerValue(request.headers["x-tenant-id"]))
      } catch (error) {
        request.resume()
        throw error
      }
      if ("_tag" in result) {
        request.resume()
        return sendError(response, result, requestId)
      }
      auth = result
    }
    if (!route.decodeBody) {
      request.resume()
      return execute(response, requestId, route, run(request, requestId, route, params, search, auth, emptyBody))
    }
    const limit = route.endpoint.auth ? MAX_BODY_BYTES : unauthenticatedLimit
    return new Promise<number>((resolve, reject) => {
      // The reader may report twice (a body over the limit, then its end): the first report counts.
      let settled = false
      readBodyInto(
        request,
        limit,
        (raw) => {
          if (settled) return
          settled = true
          if (raw instanceof PayloadTooLarge) return resolve(sendError(response, raw, requestId))
          try {
            resolve(execute(response, requestId, route, run(request, requestId, route, params, search, auth, raw)))
          } catch (error) {
            reject(error)
          }
        },
        (error) => {
          if (settled) return
          settled = true
          reject(error)
        }
      )
    })
  }

  /** Answers the outcome of a request's program; stays synchronous unless the program suspended. */
  const respond = (response: ServerResponse, requestId: string, route: CompiledRoute, exit: Exit.Exit<unknown, ApiError | StoreError>): number => {
    // The client went away: nobody to answer (499, nginx's "client closed request", in the access log).
    if (clientGone(exit) && response.destroyed) return 499
    if (Exit.isSuccess(exit)) {
      return send(response, route.endpoint.status, route.endpoint.status === 204 ? undefined : exit.value, requestId)
    }
    const failure = Cause.findErrorOption(exit.cause)
    if (failure._tag === "Some") {
      const error = failure.value
      return error._tag === "StoreError" ? unexpected(response, error, requestId) : sendError(response, error, requestId)
    }
    return unexpected(response, Cause.squash(exit.cause), requestId)
  }

  const handle = (request: IncomingMessage, response: ServerResponse, requestId: string): number | Promise<number> => {
    const url = request.url ?? "/"
    const queryStart = url.indexOf("?")
    const path = queryStart === -1 ? url : url.slice(0, queryStart)
    const search = queryStart === -1 ? "" : url.slice(queryStart + 1)
    const method = request.method ?? "GET"

    // Self-hosted LangSmith serves the control plane under /api-host (docs/real-api.md), and the
    // real API the sandbox area under /api/v2/sandboxes: the same routes, each only for its area.
    const hosted = path.startsWith(apiHostPrefix)
    const sandboxApi = path.startsWith(apiSandboxPrefix)
    const routed = hosted ? path.slice(apiHostPrefix.length - 1) : sandboxApi ? path.slice(apiSandboxPrefix.length - 1) : path
    const match = router.match(method === "HEAD" ? "GET" : method, routed)
    matched = match._tag === "Found" ? match.handler.observer : unmatched
    if (
      match._tag === "NotFound" ||
      (hosted && match._tag === "Found" && match.endpoint.area === "sandbox") ||
      (sandboxApi && !/^\/v2\/sandboxes(\/|$)/.test(routed))
    ) {
      return sendError(response, new NotFound({ message: "Not Found" }), requestId)
    }
    if (match._tag === "MethodNotAllowed") {
      return sendError(response, new MethodNotAllowed({ message: "Method Not Allowed" }), requestId, { allow: match.allowed.join(", ") })
    }
    const route = match.handler
    if (authenticateNow) return handleNow(authenticateNow, request, response, requestId, route, match.params, search)
    return execute(response, requestId, route, program(request, requestId, route, match.params, search))
  }

  const unexpected = (response: ServerResponse, defect: unknown, requestId: string): number => {
    if (defect instanceof StoreError && defect.busy) {
      // Contention, not a bug: ask the client to retry.
      send(response, 503, { detail: defect.message }, requestId, { "retry-after": "1" })
      return 503
    }
    const cause = defect instanceof StoreError ? (defect.cause ?? defect) : defect
    log.error("unhandled error", { request_id: requestId, error: String((cause as Error)?.stack ?? cause) })
    send(response, 500, { detail: "Internal Server Error", request_id: requestId }, requestId)
    return 500
  }

  /** Metrics and the access log of one answered request. */
  const logRequest = (request: IncomingMessage, requestId: string, started: number, observer: Observer, status: number) => {
    const elapsed = performance.now() - started
    observer.observe(status, elapsed / 1000)
    if (!logInfo) return
    log[status >= 500 ? "error" : "info"]("request", {
      request_id: requestId,
      method: request.method,
      path: (request.url ?? "").split("?")[0],
      status,
      duration_ms: Math.round(elapsed * 100) / 100
    })
  }
  // The level is fixed when the logger is made: asked once, not per request.
  const logInfo = log.enabled("info")

  return (request: IncomingMessage, response: ServerResponse): void => {
    const started = performance.now()
    const incomingId = request.headers["x-request-id"]
    const requestId = typeof incomingId === "string" && /^[\w.-]{1,64}$/.test(incomingId) ? incomingId : randomUUID()
    let outcome: number | Promise<number>
    try {
      matched = unmatched
      outcome = handle(request, response, requestId)
    } catch (defect) {
      return logRequest(request, requestId, started, unmatched, unexpected(response, defect, requestId))
    }
    const observer = matched
    if (typeof outcome === "number") return logRequest(request, requestId, started, observer, outcome)
    outcome.then(
      (status) => logRequest(request, requestId, started, observer, status),
      (defect) => logRequest(request, requestId, started, observer, unexpected(response, defect, requestId))
    )
  }
}
