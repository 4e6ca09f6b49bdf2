/**
 * Log endpoints the langgraph CLI calls (`langgraph deploy` while building, `langgraph deploy
 * logs`). The public control-plane document omits them; their shapes follow what the CLI sends
 * and reads (langchain-ai/langgraph, libs/cli/langgraph_cli/host_backend.py and deploy.py):
 *
 * - `POST /v1/projects/{deployment_id}/revisions/{revision_id}/build_logs`
 * - `POST /v1/projects/{deployment_id}/deploy_logs` (every revision of the deployment)
 * - `POST /v1/projects/{deployment_id}/revisions/{revision_id}/deploy_logs`
 *
 * The body is a JSON object: `{limit, order, offset?, level?, query?, start_time?, end_time?}`
 * (the CLI sends `{"order": "asc", "limit": 50, "offset": <next_offset>}` while following a build,
 * `{"order": "desc", "limit": 30}` for the last lines of a failed build, and
 * `{"limit": N, "order": "desc", "level": "ERROR", "query": "...", "start_time": "<ISO 8601>"}` for
 * `deploy logs`, then `order: "asc"` with `start_time` = the newest timestamp seen, deduplicating
 * by `id`). The answer is `{logs: [{id, timestamp, level, message, ...}], next_offset}` where
 * `timestamp` is epoch milliseconds (the CLI formats numbers as epoch ms) and `next_offset` an
 * opaque cursor after the last entry returned (the CLI keeps its previous offset when it is null).
 * Every field has a default, so a request without a body (`curl -X POST …/build_logs`) asks for
 * the defaults (`bodyOptional`), as FastAPI does for an optional body.
 *
 * The lead adds `logEndpoints` to the API table (core/api/index.ts).
 */
import { Schema } from "effect"
import { doc, Uuid } from "./common.ts"
import { endpoint } from "./endpoint.ts"
import { atLeast, atMost, Int, rule } from "./validation.ts"

const control = { area: "control" } as const

export const logLevels = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] as const
export const LogLevel = Schema.Literals(logLevels)
export type LogLevel = typeof LogLevel.Type

export const LogOrder = Schema.Literals(["asc", "desc"])

/** An ISO 8601 date-time (`2026-03-08T00:00:00Z`, Python's `isoformat()`), or epoch milliseconds. */
export const LogTime = Schema.Union([
  Schema.String.check(rule((s: string) => !Number.isNaN(Date.parse(s)), "Input should be a valid datetime", "datetime_parsing")).annotate({
    format: "date-time"
  }),
  Schema.Number.check(rule((n: number) => Number.isFinite(n) && n >= 0, "Input should be epoch milliseconds", "datetime_parsing"))
])

export const maxLogLimit = 1000
export const defaultLogLimit = 100

export const LogsRequest = Schema.Struct({
  limit: Schema.optionalKey(doc(Int.check(atLeast(1)).check(atMost(maxLogLimit)), `Entries to return, 1-${maxLogLimit}; default ${defaultLogLimit}`, [defaultLogLimit])),
  order: Schema.optionalKey(doc(LogOrder, "desc (newest first, the default) or asc", ["desc"])),
  offset: Schema.optionalKey(
    Schema.NullOr(doc(Schema.String, "A next_offset from an earlier answer: continue after that entry, in this request's order", ["1767268800000-42"]))
  ),
  level: Schema.optionalKey(Schema.NullOr(doc(LogLevel, "Only entries at this level or more severe", ["WARNING"]))),
  query: Schema.optionalKey(Schema.NullOr(doc(Schema.String, "Only entries whose message contains this text (case-insensitive)", ["error"]))),
  start_time: Schema.optionalKey(Schema.NullOr(doc(LogTime, "Only entries at or after this time (ISO 8601 or epoch milliseconds)", ["2026-01-01T00:00:00Z"]))),
  end_time: Schema.optionalKey(Schema.NullOr(doc(LogTime, "Only entries at or before this time (ISO 8601 or epoch milliseconds)", ["2026-01-02T00:00:00Z"])))
})
export type LogsRequest = typeof LogsRequest.Type

export const LogEntry = Schema.Struct({
  id: doc(Schema.String, "Unique across the deployment's logs; stable", ["1767268800000-42"]),
  timestamp: doc(Schema.Finite, "Epoch milliseconds", [1767268800000]),
  level: doc(LogLevel, "The entry's severity"),
  message: doc(Schema.String, "The line", ["Application started"]),
  revision_id: doc(Schema.String, "The revision whose process wrote the line", ["6f1c2a3e-8b0d-4c5e-9f7a-1b2c3d4e5f60"]),
  stream: doc(Schema.Literals(["stdout", "stderr", "system"]), "stdout / stderr of a process, or system for Slipway's own lines (pull progress, health results)"),
  replica: Schema.optionalKey(doc(Schema.String, "The replica (or init container, sidecar) a process line came from", ["replica-0"]))
})
export type LogEntry = typeof LogEntry.Type

export const LogsResponse = Schema.Struct({
  logs: Schema.Array(LogEntry),
  next_offset: Schema.NullOr(doc(Schema.String, "Cursor after the last entry returned; the request's own offset (or null) when none was", ["1767268800000-42"]))
})
export type LogsResponse = typeof LogsResponse.Type

const DeploymentParams = Schema.Struct({ deployment_id: Uuid })
const RevisionParams = Schema.Struct({ deployment_id: Uuid, revision_id: Uuid })

export const logEndpoints = {
  getBuildLogs: endpoint({
    ...control,
    name: "getBuildLogs",
    method: "POST",
    path: "/v1/projects/{deployment_id}/revisions/{revision_id}/build_logs",
    tag: "logs",
    summary: "A revision's build log (image pull and unpack), filtered and paged",
    params: RevisionParams,
    body: LogsRequest,
    bodyOptional: true,
    success: LogsResponse,
    errors: [404, 422]
  }),
  getDeployLogs: endpoint({
    ...control,
    name: "getDeployLogs",
    method: "POST",
    path: "/v1/projects/{deployment_id}/deploy_logs",
    tag: "logs",
    summary: "The deployment's runtime logs (process output, health results) across its revisions, filtered and paged",
    params: DeploymentParams,
    body: LogsRequest,
    bodyOptional: true,
    success: LogsResponse,
    errors: [404, 422]
  }),
  getRevisionDeployLogs: endpoint({
    ...control,
    name: "getRevisionDeployLogs",
    method: "POST",
    path: "/v1/projects/{deployment_id}/revisions/{revision_id}/deploy_logs",
    tag: "logs",
    summary: "One revision's runtime logs, filtered and paged",
    params: RevisionParams,
    body: LogsRequest,
    bodyOptional: true,
    success: LogsResponse,
    errors: [404, 422]
  })
} as const
