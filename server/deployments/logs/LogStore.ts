/**
 * `LogStore`: a deployment's build and deploy logs, per revision, bounded in size, and the reads
 * behind the log endpoints the langgraph CLI calls (core/api/logs.ts describes them).
 *
 * Two backends, one contract (test/deployments-local/logs.test.ts runs the same suite on both):
 * - `files.ts`: files under the local runtime's root, for one server on SQLite;
 * - `postgres.ts`: a table of the PostgreSQL database, for servers on PostgreSQL, so that every
 *   replica reads every revision's logs, whichever replica ran it (docs/replicas.md).
 * `LogStoreLive` (index.ts) takes the database's.
 *
 * What both share is here: the entry shape and its id, the order of entries and the cursor
 * (`next_offset`) a read hands out, the filters of a read, levels read from a line, the cut of an
 * overlong line, and the splitting of a process's output into lines.
 */
import type { Readable } from "node:stream"
import { Context, Data, Effect } from "effect"
import { defaultLogLimit, maxLogLimit, logLevels, type LogEntry, type LogLevel, type LogsRequest, type LogsResponse } from "../../../core/api/logs.ts"

export type LogKind = "build" | "deploy"
export type LogStream = "stdout" | "stderr" | "system"

export interface AppendEntry {
  readonly message: string
  /** Default: read from the line (JSON `level`/`levelname`/`severity`, or a leading `ERROR:`/`[warn]`...), else INFO. */
  readonly level?: LogLevel
  /** Default `system`. */
  readonly stream?: LogStream
  readonly replica?: string
  /** Epoch ms; default now (the `Clock`). */
  readonly timestamp?: number
}

export interface LineSource {
  readonly stream: Exclude<LogStream, "system">
  readonly replica?: string
}

/** The bounds every backend keeps. */
export interface LogLimits {
  /** Bytes kept per (revision, kind): always the newest. Default 1 MiB. */
  readonly maxBytesPerLog?: number
  /** Longer lines are cut. Default 16 KiB. */
  readonly maxLineBytes?: number
}

export interface ReadOptions extends LogsRequest {
  readonly kind: LogKind
  /** One revision; all of the deployment's revisions when absent. */
  readonly revisionId?: string
}

export class LogStore extends Context.Service<
  LogStore,
  {
    readonly append: (deploymentId: string, revisionId: string, kind: LogKind, entry: AppendEntry) => Effect.Effect<LogEntry, LogStoreError>
    /** Splits text into lines (`\n`, `\r\n` or `\r`, as progress bars write) and appends each. */
    readonly appendText: (deploymentId: string, revisionId: string, kind: LogKind, text: string, source: LineSource) => Effect.Effect<void, LogStoreError>
    /** Appends a process's output line by line; completes when the stream ends and its lines are stored (interrupting it stops reading). */
    readonly pipe: (readable: Readable, deploymentId: string, revisionId: string, kind: LogKind, source: LineSource) => Effect.Effect<void, LogStoreError>
    readonly read: (deploymentId: string, options: ReadOptions) => Effect.Effect<LogsResponse, LogStoreError>
    /** Revision ids that have logs, the first written first. */
    readonly revisions: (deploymentId: string) => Effect.Effect<ReadonlyArray<string>, LogStoreError>
    readonly removeRevision: (deploymentId: string, revisionId: string) => Effect.Effect<void, LogStoreError>
    readonly removeDeployment: (deploymentId: string) => Effect.Effect<void, LogStoreError>
  }
>()("slipway/LogStore") {}

/**
 * Bad input to the store (an id that is not a safe path segment, a malformed offset), or, with
 * `unavailable`, storage that did not answer (the disk, the database): the caller may retry.
 */
export class LogStoreError extends Data.TaggedError("LogStoreError")<{ readonly message: string; readonly unavailable?: boolean }> {}

export const invalid = (message: string) => new LogStoreError({ message })

export const unavailable = (message: string) => new LogStoreError({ message, unavailable: true })

export const limitsOf = (limits: LogLimits) => ({
  maxBytes: Math.max(4096, limits.maxBytesPerLog ?? 1024 * 1024),
  maxLine: Math.max(256, limits.maxLineBytes ?? 16 * 1024)
})

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/

/** A deployment or revision id, checked: it names a directory of the files backend. */
export const segment = (what: string, value: string): string => {
  if (typeof value !== "string" || !SEGMENT.test(value)) throw invalid(`invalid ${what} ${JSON.stringify(value)}`)
  return value
}

export const isSegment = (value: string) => SEGMENT.test(value)

export const checkKind = (kind: LogKind): LogKind => {
  if (kind !== "build" && kind !== "deploy") throw invalid(`invalid log kind ${JSON.stringify(kind)}`)
  return kind
}

/** One log's address, checked (throws `LogStoreError`): what every write checks once, before its first line. */
export const checkLog = (deploymentId: string, revisionId: string, kind: LogKind): void => {
  segment("deployment id", deploymentId)
  segment("revision id", revisionId)
  checkKind(kind)
}

export const severity: Record<LogLevel, number> = { DEBUG: 10, INFO: 20, WARNING: 30, ERROR: 40, CRITICAL: 50 }

const levelWords: Record<string, LogLevel> = {
  debug: "DEBUG",
  trace: "DEBUG",
  info: "INFO",
  notice: "INFO",
  warn: "WARNING",
  warning: "WARNING",
  error: "ERROR",
  err: "ERROR",
  critical: "CRITICAL",
  fatal: "CRITICAL",
  panic: "CRITICAL"
}

/** The level a process line states, if any: structured JSON first, then a leading word. */
export const levelOfLine = (line: string): LogLevel | undefined => {
  const trimmed = line.trimStart()
  if (trimmed.startsWith("{")) {
    try {
      const o = JSON.parse(trimmed) as Record<string, unknown>
      for (const key of ["level", "levelname", "severity", "log.level"]) {
        const v = o[key]
        if (typeof v === "string" && levelWords[v.toLowerCase()] !== undefined) return levelWords[v.toLowerCase()]
      }
    } catch {}
  }
  const m = /^\[?(debug|trace|info|notice|warn|warning|error|err|critical|fatal|panic)\]?(?::|\s|$)/i.exec(trimmed) ?? /\blevel=(debug|info|warn|warning|error|critical|fatal)\b/i.exec(trimmed)
  return m === null ? undefined : levelWords[m[1]!.toLowerCase()]
}

/** An entry as appended: the message cut to the bound, its stream and level settled. */
export interface Line {
  readonly message: string
  readonly level: LogLevel
  readonly stream: LogStream
  readonly replica: string | undefined
}

/** Cuts an overlong message (at a character boundary) and settles its level and stream. */
export const lineOf = (entry: AppendEntry, maxLine: number): Line => {
  let message = String(entry.message)
  if (Buffer.byteLength(message) > maxLine) {
    // Drop a partial UTF-8 sequence at the end.
    message = Buffer.from(message).subarray(0, maxLine).toString("utf8").replace(/\uFFFD+$/, "") + " …[truncated]"
  }
  return { message, level: entry.level ?? levelOfLine(message) ?? "INFO", stream: entry.stream ?? "system", replica: entry.replica }
}

/** The entry's id: unique across the deployment's logs, stable. */
export const entryId = (revisionId: string, kind: LogKind, seq: number | bigint | string) => `${revisionId}:${kind}:${seq}`

export const toEntry = (revisionId: string, kind: LogKind, seq: number | bigint | string, timestamp: number, line: Line): LogEntry => ({
  id: entryId(revisionId, kind, seq),
  timestamp,
  level: line.level,
  message: line.message,
  revision_id: revisionId,
  stream: line.stream,
  ...(line.replica === undefined ? {} : { replica: line.replica })
})

/** Sort key of an entry: time, then revision, then kind, then sequence. A cursor is the key of the last entry returned. */
export type Key = readonly [number, string, number, number]
export const kindIndex = (k: LogKind) => (k === "build" ? 0 : 1)
export const compareKeys = (a: Key, b: Key): number =>
  a[0] !== b[0] ? a[0] - b[0] : a[1] !== b[1] ? (a[1] < b[1] ? -1 : 1) : a[2] !== b[2] ? a[2] - b[2] : a[3] - b[3]

export const encodeCursor = (k: Key): string => Buffer.from(JSON.stringify(k)).toString("base64url")
const decodeCursor = (raw: string): Key => {
  try {
    const k = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"))
    if (Array.isArray(k) && k.length === 4 && typeof k[0] === "number" && typeof k[1] === "string" && typeof k[2] === "number" && typeof k[3] === "number") return k as unknown as Key
  } catch {}
  throw invalid(`offset ${JSON.stringify(raw)} is not a next_offset this server returned`)
}

const parseTime = (v: string | number | null | undefined): number | undefined => {
  if (v === null || v === undefined) return undefined
  if (typeof v === "number") return v
  const t = Date.parse(v)
  return Number.isNaN(t) ? undefined : t
}

/** A read's options, checked (throws `LogStoreError`): what every backend filters and pages by. */
export interface ReadPlan {
  readonly kind: LogKind
  readonly revisionId: string | undefined
  readonly limit: number
  readonly order: "asc" | "desc"
  /** Entries at least this severe. */
  readonly minLevel: number
  /** Lower-cased text the message must contain (case-insensitive). */
  readonly needle: string | undefined
  readonly start: number | undefined
  readonly end: number | undefined
  /** Entries strictly after this key, in the read's order. */
  readonly after: Key | undefined
  readonly offset: string | null
}

export const planRead = (deploymentId: string, o: ReadOptions): ReadPlan => {
  segment("deployment id", deploymentId)
  const limit = o.limit ?? defaultLogLimit
  if (!Number.isInteger(limit) || limit < 1 || limit > maxLogLimit) throw invalid(`limit must be an integer from 1 to ${maxLogLimit}`)
  const minLevel = o.level === null || o.level === undefined ? 0 : severity[o.level]
  if (minLevel === undefined) throw invalid(`level must be one of ${logLevels.join(", ")}`)
  return {
    kind: checkKind(o.kind),
    revisionId: o.revisionId === undefined ? undefined : segment("revision id", o.revisionId),
    limit,
    order: o.order ?? "desc",
    minLevel,
    needle: o.query === null || o.query === undefined || o.query === "" ? undefined : o.query.toLowerCase(),
    start: parseTime(o.start_time),
    end: parseTime(o.end_time),
    after: o.offset === null || o.offset === undefined || o.offset === "" ? undefined : decodeCursor(o.offset),
    offset: o.offset ?? null
  }
}

/** A page: the entries (in the read's order, at most its limit) and the cursor after the last one. */
export const pageOf = (plan: ReadPlan, page: ReadonlyArray<{ readonly key: Key; readonly entry: LogEntry }>): LogsResponse => {
  const last = page[page.length - 1]
  return { logs: page.map((m) => m.entry), next_offset: last === undefined ? plan.offset : encodeCursor(last.key) }
}

/** A process's line as an entry of its source (stream, replica). */
export const entryFrom = (message: string, source: LineSource): AppendEntry => ({
  message,
  stream: source.stream,
  ...(source.replica === undefined ? {} : { replica: source.replica })
})

/** `f` run now: a `LogStoreError` it throws (bad input) as it is, anything else as `other(message)`. */
export const attempt = <A>(f: () => A, other: (message: string) => LogStoreError = invalid): Effect.Effect<A, LogStoreError> =>
  Effect.try({ try: f, catch: (error) => (error instanceof LogStoreError ? error : other(String((error as Error)?.message ?? error))) })

/** Splits text into its non-blank lines (`\n`, `\r\n` or `\r`). */
export const linesOf = (text: string): Array<string> => text.split(/\r\n|\n|\r/).filter((line) => line.trim() !== "")

/**
 * Reads `readable` line by line, calling `emit` for each non-blank line, until it ends
 * (`finished`); answers the function that stops reading. A line longer than `maxLine` without an
 * end is emitted once (cut later) and the rest dropped until the next newline.
 */
export const readLines = (readable: Readable, maxLine: number, emit: (line: string) => void, finished: () => void): (() => void) => {
  let pending = ""
  let skipping = false
  const line = (text: string) => {
    if (text.trim() !== "") emit(text)
  }
  readable.setEncoding("utf8")
  const onData = (chunk: string) => {
    pending += chunk
    const parts = pending.split(/\r\n|\n|\r/)
    // A chunk may end between \r and \n: keep a trailing \r for the next chunk.
    pending = parts.pop() ?? ""
    for (const p of parts) {
      if (skipping) {
        skipping = false
        continue
      }
      line(p)
    }
    if (Buffer.byteLength(pending) > maxLine) {
      if (!skipping) line(pending)
      skipping = true
      pending = ""
    }
  }
  let done = false
  const detach = () => {
    readable.off("data", onData)
    readable.off("end", finish)
    readable.off("close", finish)
    readable.off("error", finish)
  }
  const finish = () => {
    if (done) return
    done = true
    detach()
    if (pending !== "" && !skipping) line(pending)
    pending = ""
    finished()
  }
  // Never unhandled, also once this pipe has stopped reading.
  readable.on("error", () => {})
  readable.on("data", onData)
  readable.once("end", finish)
  readable.once("close", finish)
  readable.once("error", finish)
  return () => {
    done = true
    detach()
  }
}

// ---- the endpoint reads (the routes decode the body with core's LogsRequest, check that the
// deployment and revision exist and belong to the tenant, then call these) ----

/** `POST /v1/projects/{deployment_id}/revisions/{revision_id}/build_logs` */
export const buildLogs = (store: LogStore["Service"], deploymentId: string, revisionId: string, body: LogsRequest) =>
  store.read(deploymentId, { ...body, kind: "build", revisionId })

/** `POST /v1/projects/{deployment_id}/deploy_logs` and `.../revisions/{revision_id}/deploy_logs` */
export const deployLogs = (store: LogStore["Service"], deploymentId: string, body: LogsRequest, revisionId?: string) =>
  store.read(deploymentId, { ...body, kind: "deploy", ...(revisionId === undefined ? {} : { revisionId }) })
