/**
 * A revision's build and deploy logs: `POST /v1/projects/{deployment_id}/revisions/{revision_id}/build_logs`
 * and `…/deploy_logs` (the real service's names; a deployment is a "project" there).
 *
 * These endpoints are not in the API description (core/api) yet, so this module calls them with
 * the client's connection settings and reads their answer leniently: a list of entries, or an
 * object holding one under `logs`, `resources`, `entries` or `lines`; each entry a string or an
 * object with `message` (or `text`, `line`) and optional `timestamp` and `level`. A server that
 * does not serve them (404 "Not Found" for the route itself, 405, 501) answers `available: false`,
 * so callers fall back to the revision's `status_message`.
 */
import { Effect, Result } from "effect"
import { type Endpoint, type Method } from "../api/endpoint.ts"
import { fromErrorResponse } from "../api/errors.ts"
import { defaultTimeoutMs, defaultUserAgent } from "../client/client.ts"
import { type ClientError, TransportError } from "../client/errors.ts"
import { type Fetch, prepareRequest } from "../client/http.ts"

export type LogKind = "build" | "deploy"

export interface LogLine {
  readonly message: string
  /** As the server gave it: epoch milliseconds (Slipway), or text. */
  readonly timestamp?: string | number | undefined
  readonly level?: string | undefined
}

export type LogsResult =
  | { readonly available: true; readonly lines: ReadonlyArray<LogLine>; /** Pass as `cursor` to read on after these lines. */ readonly next: string | null }
  | { readonly available: false; readonly reason: string }

export interface LogConnection {
  readonly baseUrl: string
  readonly apiKey?: string | undefined
  readonly tenantId?: string | undefined
  readonly userAgent?: string | undefined
  readonly timeoutMs?: number | undefined
  readonly fetch?: Fetch | undefined
}

export interface LogQuery {
  /** Where to go on from: the `next` of an earlier read (the server's `next_offset` cursor). */
  readonly cursor?: string | null | undefined
  readonly limit?: number | undefined
  readonly order?: "asc" | "desc" | undefined
}

export const logsPath = (kind: LogKind) => `/v1/projects/{deployment_id}/revisions/{revision_id}/${kind}_logs`

const logsEndpoint = (kind: LogKind): Endpoint =>
  ({ name: `${kind}Logs`, method: "POST" as Method, path: logsPath(kind), auth: true }) as unknown as Endpoint

const asLine = (entry: unknown): LogLine | undefined => {
  if (typeof entry === "string") return { message: entry }
  if (entry === null || typeof entry !== "object") return undefined
  const record = entry as Record<string, unknown>
  const text = record.message ?? record.text ?? record.line ?? record.msg
  const message = typeof text === "string" ? text : JSON.stringify(entry)
  const time = record.timestamp ?? record.time ?? record.ts
  const level = record.level ?? record.severity
  return {
    message,
    ...(typeof time === "string" || typeof time === "number" ? { timestamp: time } : {}),
    ...(typeof level === "string" ? { level } : {})
  }
}

/** The entries of a log answer, whatever envelope it uses; undefined when it holds none. */
export const parseLogAnswer = (body: unknown): Array<LogLine> | undefined => {
  const list = Array.isArray(body)
    ? body
    : body !== null && typeof body === "object"
      ? ["logs", "resources", "entries", "lines"].map((key) => (body as Record<string, unknown>)[key]).find(Array.isArray)
      : undefined
  if (list === undefined) return undefined
  return (list as Array<unknown>).map(asLine).filter((line): line is LogLine => line !== undefined)
}

/** Reads one page of a revision's logs. */
export const readRevisionLogs = (
  connection: LogConnection,
  deploymentId: string,
  revisionId: string,
  kind: LogKind,
  query: LogQuery = {}
): Effect.Effect<LogsResult, ClientError> =>
  Effect.suspend(() => {
    const fetch: Fetch = connection.fetch ?? ((input, init) => globalThis.fetch(input, init))
    const timeoutMs = connection.timeoutMs ?? defaultTimeoutMs
    const prepared = prepareRequest(
      logsEndpoint(kind),
      {
        params: { deployment_id: deploymentId, revision_id: revisionId },
        body: { order: query.order ?? "asc", ...(query.limit === undefined ? {} : { limit: query.limit }), ...(query.cursor == null ? {} : { offset: query.cursor }) }
      },
      { baseUrl: connection.baseUrl, dialect: "slipway", apiKey: connection.apiKey, tenantId: connection.tenantId, userAgent: connection.userAgent ?? defaultUserAgent, timeoutMs, fetch }
    )
    if (Result.isFailure(prepared)) return Effect.fail(prepared.failure as ClientError)
    const request = prepared.success
    return Effect.tryPromise({
      try: async (signal) => {
        const response = await fetch(request.url, { method: request.method, headers: request.headers, ...(request.body ? { body: request.body } : {}), signal })
        return { status: response.status, text: await response.text() }
      },
      catch: (cause) => new TransportError({ reason: "network", method: request.method, url: request.url, message: cause instanceof Error ? cause.message : String(cause) })
    }).pipe(
      Effect.timeoutOrElse({
        duration: timeoutMs,
        orElse: () => Effect.fail(new TransportError({ reason: "timeout", method: request.method, url: request.url, message: `no answer within ${timeoutMs} ms` }))
      }),
      Effect.flatMap(({ status, text }): Effect.Effect<LogsResult, ClientError> => {
        let body: unknown
        try {
          body = text === "" ? undefined : JSON.parse(text)
        } catch {
          body = { detail: text.trim() }
        }
        const detail = (body as { detail?: unknown } | undefined)?.detail
        if ((status === 404 && detail === "Not Found") || status === 405 || status === 501) {
          return Effect.succeed({ available: false, reason: `this server does not serve ${kind} logs (${request.method} ${logsPath(kind)} answered ${status})` })
        }
        if (status < 200 || status >= 300) return Effect.fail(fromErrorResponse(status, body ?? { detail: `HTTP ${status}` }))
        const lines = parseLogAnswer(body)
        if (lines === undefined) return Effect.succeed({ available: false, reason: `the ${kind} logs answer holds no list of entries` })
        const next = (body as { next_offset?: unknown } | undefined)?.next_offset
        return Effect.succeed({ available: true, lines, next: typeof next === "string" ? next : (query.cursor ?? null) })
      })
    )
  })

/** The last `count` lines of the logs that explain a failure: the build's for BUILD_FAILED, else the deploy's. */
export const failureLogTail = (
  connection: LogConnection,
  deploymentId: string,
  revisionId: string,
  status: string,
  count = 30
): Effect.Effect<{ readonly kind: LogKind; readonly result: LogsResult }, ClientError> => {
  const kind: LogKind = status === "BUILD_FAILED" ? "build" : "deploy"
  return readRevisionLogs(connection, deploymentId, revisionId, kind, { order: "asc" }).pipe(
    Effect.map((result) => ({ kind, result: result.available ? { ...result, lines: result.lines.slice(-count) } : result }))
  )
}

/**
 * A timestamp for people: epoch milliseconds (what Slipway's log endpoints answer) or seconds as
 * ISO 8601 in UTC (`2026-11-23T15:00:00.123Z`); any other text as given.
 */
export const formatLogTime = (timestamp: string | number): string => {
  if (!/^\d{9,16}(\.\d+)?$/.test(String(timestamp))) return String(timestamp)
  const number = Number(timestamp)
  const date = new Date(number < 1e11 ? number * 1000 : number)
  return Number.isNaN(date.getTime()) ? String(timestamp) : date.toISOString()
}

/** `2026-11-23T15:00:00.000Z [error] message` (timestamp and level when known). */
export const formatLogLine = (line: LogLine): string =>
  [line.timestamp === undefined ? undefined : formatLogTime(line.timestamp), line.level ? `[${line.level}]` : undefined, line.message]
    .filter((part) => part !== undefined && part !== "")
    .join(" ")
