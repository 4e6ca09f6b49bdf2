/**
 * The HTTP pipeline: route, authenticate, read and decode the request against its endpoint
 * description, run the handler, and answer. Every failure goes through `toErrorResponse`, the
 * one error mapper, so bodies always have the spec's shapes.
 */
// @ts-nocheck

import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http"
import { randomUUID } from "node:crypto"
import { Cause, Effect, Exit, Result } from "effect"
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
import type { AuthContext } from "../auth/keys.ts"
import type { Logger } from "../log.ts"
import { makeRouter } from "./router.ts"

export const MAX_BODY_BYTES = 1024 * 1024

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
}

/** A handler may answer something other than JSON (the /docs page). */
export class RawResponse {
  readonly contentType: string
  readonly body: string
  constructor(contentType: string, body: string) {
    this.contentType = contentType
    this.body = body
  }
}

export type Handler<E extends Endpoint> = (
  input: DecodedInput<E>,
  context: RequestContext
) => Effect.Effect<SuccessEncoded<E> | RawResponse, ApiError>

export interface Route {
  readonly endpoint: Endpoint
  readonly handler: Handler<any>
}

export interface AppOptions {
  readonly routes: ReadonlyArray<Route>
  readonly authenticate: (key: string | undefined, tenant: string | undefined) => AuthContext | ApiError
  readonly log: Logger
}

interface CompiledRoute {
  readonly endpoint: Endpoint
  readonly handler: Handler<any>
  readonly decodeParams: ((input: unknown) => Result.Result<any, Array<ValidationIssue>>) | undefined
  readonly decodeQuery: ((input: unknown) => Result.Result<any, Array<ValidationIssue>>) | undefined
  readonly decodeBody: ((input: unknown) => Result.Result<any, Array<ValidationIssue>>) | undefined
}

const compile = ({ endpoint, handler }: Route): CompiledRoute => ({
  endpoint,
  handler,
  decodeParams: endpoint.params && decodeWithIssues(endpoint.params, ["path"]),
  // Unknown query parameters are ignored, as FastAPI does.
  decodeQuery: endpoint.query && decodeWithIssues(endpoint.query, ["query"], { excess: "ignore" }),
  decodeBody: endpoint.body && decodeWithIssues(endpoint.body, ["body"])
})

const apiKeyOf = (headers: IncomingHttpHeaders): string | undefined => {
  const direct = headers["x-api-key"]
  if (typeof direct === "string" && direct !== "") return direct
  const authorization = headers.authorization
  if (typeof authorization === "string") {
    const match = /^Bearer\s+(.+)$/i.exec(authorization.trim())
    if (match) return match[1]
  }
  return undefined
}

const readBody = (request: IncomingMessage): Promise<Buffer | PayloadTooLarge> =>
  new Promise((resolve, reject) => {
    const declared = Number(request.headers["content-length"] ?? 0)
    if (declared > MAX_BODY_BYTES) {
      request.resume()
      return resolve(new PayloadTooLarge({ message: "Request body too large" }))
    }
    const chunks: Array<Buffer> = []
    let size = 0
    request.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        chunks.length = 0
        request.removeAllListeners("data")
        request.resume()
        resolve(new PayloadTooLarge({ message: "Request body too large" }))
      } else chunks.push(chunk)
    })
    request.on("end", () => resolve(Buffer.concat(chunks)))
    request.on("error", reject)
  })

const isJsonContentType = (value: string | undefined) => value === undefined || /^application\/([\w.+-]+\+)?json\b/i.test(value.trim())

const queryObject = (search: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [key, value] of new URLSearchParams(search)) if (!(key in out)) out[key] = value
  return out
}

const jsonPosition = (error: unknown): number => {
  const match = /position (\d+)/.exec(String((error as Error)?.message ?? ""))
  return match ? Number(match[1]) : 0
}

/** Parses and validates the JSON body of a request; `undefined` stands for "no body expected". */
const decodeBody = (route: CompiledRoute, raw: Buffer, contentType: string | undefined): Result.Result<unknown, ApiError> => {
  if (!route.decodeBody) return Result.succeed(undefined)
  if (raw.length === 0) return Result.fail(ValidationError.single(["body"], "Field required", "missing"))
  if (!isJsonContentType(contentType)) {
    return Result.fail(new UnsupportedMediaType({ message: `Unsupported media type ${JSON.stringify(contentType)}: send application/json` }))
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(raw))
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
  const decodedQuery = take(route.decodeQuery?.(queryObject(search)), {})
  const body = decodeBody(route, raw, contentType)
  if (Result.isFailure(body)) {
    if (body.failure._tag !== "ValidationError") return Result.fail(body.failure)
    issues.push(...body.failure.issues)
  }
  if (issues.length > 0) return Result.fail(new ValidationError({ issues }) as ApiError)
  return Result.succeed({ params: decodedParams, query: decodedQuery, body: Result.isSuccess(body) ? body.success : undefined })
}

const emptyBody = Buffer.alloc(0)

/** Most handlers are synchronous (SQLite): take their result at once, and await only those that suspend. */
const runHandler = <A, E>(effect: Effect.Effect<A, E>): Exit.Exit<A, E> | Promise<Exit.Exit<A, E>> => {
  const fiber = Effect.runFork(effect)
  return fiber.pollUnsafe() ?? new Promise((resolve) => fiber.addObserver(resolve))
}

export const makeApp = (options: AppOptions) => {
  const router = makeRouter(options.routes.map(compile).map((route) => ({ endpoint: route.endpoint, handler: route })))
  const { log } = options

  const send = (response: ServerResponse, status: number, body: unknown, requestId: string, extraHeaders?: Record<string, string>) => {
    if (response.headersSent) return
    const headers: Record<string, string> = { "x-request-id": requestId, ...extraHeaders }
    if (status === 204 || body === undefined) {
      response.writeHead(status, headers).end()
      return
    }
    const raw = body instanceof RawResponse
    const text = raw ? body.body : JSON.stringify(body)
    headers["content-type"] = raw ? body.contentType : "application/json"
    // A known length spares the chunked framing (and the client's parsing of it).
    headers["content-length"] = String(Buffer.byteLength(text))
    response.writeHead(status, headers).end(text)
  }

  const sendError = (response: ServerResponse, error: ApiError, requestId: string, headers?: Record<string, string>) => {
    const { status, body } = toErrorResponse(error)
    send(response, status, body, requestId, headers)
    return status
  }

  /** Decodes, runs the handler and answers; stays synchronous unless the handler suspends. */
  const respond = (
    request: IncomingMessage,
    response: ServerResponse,
    requestId: string,
    route: CompiledRoute,
    params: Record<string, string>,
    search: string,
    auth: AuthContext | undefined,
    raw: Buffer | PayloadTooLarge
  ): number | Promise<number> => {
    if (raw instanceof PayloadTooLarge) return sendError(response, raw, requestId)
    const decoded = decodeRequest(route, params, search, raw, request.headers["content-type"])
    if (Result.isFailure(decoded)) return sendError(response, decoded.failure, requestId)
    const context: RequestContext = { auth: auth!, requestId, headers: request.headers, rawBody: raw }
    const finish = (exit: Exit.Exit<unknown, ApiError>): number => {
      if (Exit.isSuccess(exit)) {
        send(response, route.endpoint.status, route.endpoint.status === 204 ? undefined : exit.value, requestId)
        return route.endpoint.status
      }
      const failure = Cause.findErrorOption(exit.cause)
      if (failure._tag === "Some") return sendError(response, failure.value, requestId)
      return unexpected(response, Cause.squash(exit.cause), requestId)
    }
    const exit = runHandler(route.handler(decoded.success as DecodedInput<any>, context))
    return exit instanceof Promise ? exit.then(finish) : finish(exit)
  }

  const handle = (request: IncomingMessage, response: ServerResponse, requestId: string): number | Promise<number> => {
    const url = request.url ?? "/"
    const queryStart = url.indexOf("?")
    const path = queryStart === -1 ? url : url.slice(0, queryStart)
    const search = queryStart === -1 ? "" : url.slice(queryStart + 1)
    const method = request.method ?? "GET"

    const match = router.match(method === "HEAD" ? "GET" : method, path)
    if (match._tag === "NotFound") return sendError(response, new NotFound({ message: "Not Found" }), requestId)
    if (match._tag === "MethodNotAllowed") {
      return sendError(response, new MethodNotAllowed({ message: "Method Not Allowed" }), requestId, { allow: match.allowed.join(", ") })
    }
    const route = match.handler
    let auth: AuthContext | undefined
    if (route.endpoint.auth) {
      const tenant = request.headers["x-tenant-id"]
      const result = options.authenticate(apiKeyOf(request.headers), typeof tenant === "string" ? tenant : undefined)
      if ("_tag" in result) {
        request.resume()
        return sendError(response, result, requestId)
      }
      auth = result
    }
    if (route.decodeBody) {
      return readBody(request).then((raw) => respond(request, response, requestId, route, match.params, search, auth, raw))
    }
    request.resume()
    return respond(request, response, requestId, route, match.params, search, auth, emptyBody)
  }

  const unexpected = (response: ServerResponse, defect: unknown, requestId: string): number => {
    const code = (defect as { code?: string })?.code
    // Extended codes too (SQLITE_BUSY_SNAPSHOT, SQLITE_LOCKED_SHAREDCACHE, ...).
    if (typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"))) {
      // Contention, not a bug: ask the client to retry.
      send(response, 503, { detail: "Database busy, retry shortly" }, requestId, { "retry-after": "1" })
      return 503
    }
    log.error("unhandled error", { request_id: requestId, error: String((defect as Error)?.stack ?? defect) })
    send(response, 500, { detail: "Internal Server Error", request_id: requestId }, requestId)
    return 500
  }

  return (request: IncomingMessage, response: ServerResponse): void => {
    const started = performance.now()
    const incomingId = request.headers["x-request-id"]
    const requestId = typeof incomingId === "string" && /^[\w.-]{1,64}$/.test(incomingId) ? incomingId : randomUUID()
    const logRequest = (status: number) => {
      if (!log.enabled("info")) return
      log[status >= 500 ? "error" : "info"]("request", {
        request_id: requestId,
        method: request.method,
        path: (request.url ?? "").split("?")[0],
        status,
        duration_ms: Math.round((performance.now() - started) * 100) / 100
      })
    }
    const failed = (defect: unknown) => logRequest(unexpected(response, defect, requestId))
    try {
      const outcome = handle(request, response, requestId)
      if (typeof outcome === "number") logRequest(outcome)
      else outcome.then(logRequest, failed)
    } catch (defect) {
      failed(defect)
    }
  }
}
