/**
 * One HTTP exchange of the client, without retries: build the request from an endpoint
 * description and the caller's input, send it through the injected `fetch` under a timeout,
 * and turn the answer into the decoded success value or an `AttemptFailure`.
 */
// @ts-nocheck

import { Effect, Schema } from "effect"
import { type Endpoint, renderPath } from "../api/endpoint.ts"
import { fromErrorResponse } from "../api/errors.ts"
import { DecodeError, TransportError } from "./errors.ts"
import { type AttemptFailure, parseRetryAfter } from "./retry.ts"

/** The subset of the WHATWG fetch the client needs, so tests and other runtimes can inject theirs. */
export type Fetch = (input: string, init: RequestInit) => Promise<Response>

export interface Connection {
  readonly baseUrl: string
  readonly apiKey?: string | undefined
  readonly tenantId?: string | undefined
  readonly userAgent: string
  readonly timeoutMs: number
  readonly fetch: Fetch
}

export interface RequestInput {
  readonly params?: Record<string, unknown>
  readonly query?: Record<string, unknown>
  readonly body?: unknown
}

export interface PreparedRequest {
  readonly method: string
  readonly url: string
  readonly headers: Record<string, string>
  readonly body?: string
}

/** `?a=1&b=x`; undefined and null values are left out, arrays repeat their key. */
export const encodeQuery = (query: Record<string, unknown> | undefined): string => {
  const search = new URLSearchParams()
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue
    for (const item of Array.isArray(value) ? value : [value]) search.append(key, String(item))
  }
  const text = search.toString()
  return text === "" ? "" : `?${text}`
}

export const prepareRequest = (endpoint: Endpoint, input: RequestInput, connection: Connection): PreparedRequest => {
  const url = connection.baseUrl.replace(/\/+$/, "") + renderPath(endpoint.path, input.params) + encodeQuery(input.query)
  const headers: Record<string, string> = { accept: "application/json", "user-agent": connection.userAgent }
  if (endpoint.auth && connection.apiKey !== undefined) headers["x-api-key"] = connection.apiKey
  if (connection.tenantId !== undefined) headers["x-tenant-id"] = connection.tenantId
  if (input.body === undefined) return { method: endpoint.method, url, headers }
  headers["content-type"] = "application/json"
  return { method: endpoint.method, url, headers, body: JSON.stringify(input.body) }
}

/** What came back, read fully inside the timeout so a stalled body cannot hang the caller. */
interface RawResponse {
  readonly status: number
  readonly retryAfter: string | null
  readonly text: string
}

const describeCause = (cause: unknown): string => {
  if (!(cause instanceof Error)) return String(cause)
  // undici reports "fetch failed" and keeps the useful part (ECONNREFUSED, ...) in `cause`.
  const inner = (cause as { cause?: unknown }).cause
  return inner instanceof Error ? `${cause.message}: ${inner.message}` : cause.message
}

const exchange = (request: PreparedRequest, connection: Connection): Effect.Effect<RawResponse, TransportError> => {
  const transportError = (reason: "network" | "timeout", message: string) =>
    new TransportError({ reason, method: request.method, url: request.url, message })
  return Effect.tryPromise({
    try: async (signal) => {
      const response = await connection.fetch(request.url, {
        method: request.method,
        headers: request.headers,
        ...(request.body === undefined ? {} : { body: request.body }),
        signal
      })
      return { status: response.status, retryAfter: response.headers.get("retry-after"), text: await response.text() }
    },
    catch: (cause) => transportError("network", describeCause(cause))
  }).pipe(
    Effect.timeoutOrElse({
      duration: connection.timeoutMs,
      orElse: () => Effect.fail(transportError("timeout", `no answer within ${connection.timeoutMs} ms`))
    })
  )
}

const parseJson = (text: string): { ok: true; value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/** Non-2xx: the one mapping in core/api/errors.ts; a non-JSON body (e.g. from a proxy) becomes its detail text. */
const errorFailure = (raw: RawResponse): AttemptFailure => {
  const parsed = parseJson(raw.text)
  const body = parsed.ok ? parsed.value : { detail: raw.text.trim() || `HTTP ${raw.status}` }
  const retryAfterMs = parseRetryAfter(raw.retryAfter)
  return { error: fromErrorResponse(raw.status, body), status: raw.status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) }
}

const decodeSuccess = <A>(endpoint: Endpoint, request: PreparedRequest, raw: RawResponse): Effect.Effect<A, AttemptFailure> => {
  const failure = (message: string): AttemptFailure => ({
    error: new DecodeError({ method: request.method, url: request.url, status: raw.status, message }),
    status: raw.status
  })
  if (endpoint.success === undefined || raw.status === 204) return Effect.succeed(undefined as A)
  const parsed = parseJson(raw.text)
  if (!parsed.ok) return Effect.fail(failure(`response body is not JSON: ${raw.text.slice(0, 200)}`))
  const decode = Schema.decodeUnknownEffect(endpoint.success as Schema.Codec<A, unknown, never, never>)
  return decode(parsed.value).pipe(Effect.mapError((error) => failure(error.message)))
}

/** Sends one attempt of `endpoint` and decodes its answer. */
export const attempt = <A>(endpoint: Endpoint, request: PreparedRequest, connection: Connection): Effect.Effect<A, AttemptFailure> =>
  exchange(request, connection).pipe(
    Effect.mapError((error): AttemptFailure => ({ error })),
    Effect.flatMap((raw) => (raw.status >= 200 && raw.status < 300 ? decodeSuccess<A>(endpoint, request, raw) : Effect.fail(errorFailure(raw))))
  )
