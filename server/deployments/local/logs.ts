/**
 * `LogStore`: per-revision build and deploy logs on disk, bounded in size, and the reads behind
 * the log endpoints the langgraph CLI calls (core/api/logs.ts describes them).
 *
 * Layout: `<root>/<deployment id>/<revision id>/<kind>.jsonl` (+ `<kind>.jsonl.1`), one JSON
 * object per line. When the current file passes half the bound it becomes `.1` (replacing the
 * older one), so each (revision, kind) keeps at most `maxBytesPerLog` bytes: always the newest.
 * Appends are synchronous writes to an open descriptor, so a read right after sees them and a
 * crash loses at most the line being written. Timestamps come from Effect's `Clock`. The files
 * are leaf Node code; every operation is an Effect, and closing the layer closes the descriptors.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { Readable } from "node:stream"
import { Clock, Context, Data, Effect, Layer, type Scope } from "effect"
import { defaultLogLimit, maxLogLimit, logLevels, type LogEntry, type LogLevel, type LogsRequest, type LogsResponse } from "../../../core/api/logs.ts"
import { RuntimeRoot } from "../../runtime/local/RuntimeRoot.ts"

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

export interface LogStoreOptions {
  readonly root: string
  /** Bytes kept per (revision, kind). Default 1 MiB. */
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
    /** Appends a process's output line by line; completes when the stream ends (interrupting it stops reading). */
    readonly pipe: (readable: Readable, deploymentId: string, revisionId: string, kind: LogKind, source: LineSource) => Effect.Effect<void, LogStoreError>
    readonly read: (deploymentId: string, options: ReadOptions) => Effect.Effect<LogsResponse, LogStoreError>
    /** Revision ids that have logs, oldest directory first. */
    readonly revisions: (deploymentId: string) => Effect.Effect<ReadonlyArray<string>, LogStoreError>
    readonly removeRevision: (deploymentId: string, revisionId: string) => Effect.Effect<void, LogStoreError>
    readonly removeDeployment: (deploymentId: string) => Effect.Effect<void, LogStoreError>
  }
>()("slipway/LogStore") {}

/** Bad input to the store (an id that is not a safe path segment, a malformed offset), or a file it could not write. */
export class LogStoreError extends Data.TaggedError("LogStoreError")<{ readonly message: string }> {}

const invalid = (message: string) => new LogStoreError({ message })

interface StoredLine {
  readonly s: number
  readonly t: number
  readonly l: LogLevel
  readonly m: string
  readonly st: LogStream
  readonly rp?: string
}

interface OpenLog {
  readonly file: string
  fd: number
  size: number
  seq: number
  lastTime: number
}

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/
const severity: Record<LogLevel, number> = { DEBUG: 10, INFO: 20, WARNING: 30, ERROR: 40, CRITICAL: 50 }

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

const parseTime = (v: string | number | null | undefined): number | undefined => {
  if (v === null || v === undefined) return undefined
  if (typeof v === "number") return v
  const t = Date.parse(v)
  return Number.isNaN(t) ? undefined : t
}

/** Sort key of an entry: time, then revision, then kind, then sequence. */
type Key = readonly [number, string, number, number]
const kindIndex = (k: LogKind) => (k === "build" ? 0 : 1)
const compareKeys = (a: Key, b: Key): number =>
  a[0] !== b[0] ? a[0] - b[0] : a[1] !== b[1] ? (a[1] < b[1] ? -1 : 1) : a[2] !== b[2] ? a[2] - b[2] : a[3] - b[3]

const encodeCursor = (k: Key): string => Buffer.from(JSON.stringify(k)).toString("base64url")
const decodeCursor = (raw: string): Key => {
  try {
    const k = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"))
    if (Array.isArray(k) && k.length === 4 && typeof k[0] === "number" && typeof k[1] === "string" && typeof k[2] === "number" && typeof k[3] === "number") return k as unknown as Key
  } catch {}
  throw invalid(`offset ${JSON.stringify(raw)} is not a next_offset this server returned`)
}

/** The files: synchronous leaf code, which throws `LogStoreError` (bad input) or a Node error (the disk). */
const makeFiles = (options: LogStoreOptions) => {
  const root = path.resolve(options.root)
  const maxBytes = Math.max(4096, options.maxBytesPerLog ?? 1024 * 1024)
  const maxLine = Math.max(256, options.maxLineBytes ?? 16 * 1024)
  const open = new Map<string, OpenLog>()

  const seg = (what: string, v: string): string => {
    if (typeof v !== "string" || !SEGMENT.test(v)) throw invalid(`invalid ${what} ${JSON.stringify(v)}`)
    return v
  }
  const revDir = (dep: string, rev: string) => path.join(root, seg("deployment id", dep), seg("revision id", rev))
  const fileOf = (dep: string, rev: string, kind: LogKind) => path.join(revDir(dep, rev), `${kind}.jsonl`)

  const readLines = (file: string): StoredLine[] => {
    let text: string
    try {
      text = fs.readFileSync(file, "utf8")
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return []
      throw e
    }
    const out: StoredLine[] = []
    for (const line of text.split("\n")) {
      if (line === "") continue
      try {
        out.push(JSON.parse(line) as StoredLine)
      } catch {
        // A line cut by a crash mid-write: skipped.
      }
    }
    return out
  }

  const openLog = (dep: string, rev: string, kind: LogKind): OpenLog => {
    const file = fileOf(dep, rev, kind)
    let log = open.get(file)
    if (log !== undefined) return log
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
    // Continue the sequence after what is on disk (a restart appends to the same logs).
    const existing = readLines(file)
    const older = existing.length === 0 ? readLines(`${file}.1`) : []
    const last = existing[existing.length - 1] ?? older[older.length - 1]
    const fd = fs.openSync(file, "a", 0o600)
    log = { file, fd, size: fs.fstatSync(fd).size, seq: last?.s ?? 0, lastTime: last?.t ?? 0 }
    open.set(file, log)
    return log
  }

  const rotate = (log: OpenLog) => {
    fs.closeSync(log.fd)
    fs.renameSync(log.file, `${log.file}.1`)
    log.fd = fs.openSync(log.file, "a", 0o600)
    log.size = 0
  }

  const cut = (message: string): string => {
    if (Buffer.byteLength(message) <= maxLine) return message
    const buf = Buffer.from(message).subarray(0, maxLine)
    // Drop a partial UTF-8 sequence at the end.
    return buf.toString("utf8").replace(/\uFFFD+$/, "") + " …[truncated]"
  }

  const toEntry = (rev: string, kind: LogKind, l: StoredLine): LogEntry => ({
    id: `${rev}:${kind}:${l.s}`,
    timestamp: l.t,
    level: l.l,
    message: l.m,
    revision_id: rev,
    stream: l.st,
    ...(l.rp === undefined ? {} : { replica: l.rp })
  })

  const append = (now: number, dep: string, rev: string, kind: LogKind, entry: AppendEntry): LogEntry => {
    if (kind !== "build" && kind !== "deploy") throw invalid(`invalid log kind ${JSON.stringify(kind)}`)
    const log = openLog(dep, rev, kind)
    const message = cut(String(entry.message))
    const stream = entry.stream ?? "system"
    const level = entry.level ?? levelOfLine(message) ?? "INFO"
    // Time never goes backwards within one log, so sequence order and time order agree.
    const t = Math.max(entry.timestamp ?? now, log.lastTime)
    const stored: StoredLine = { s: log.seq + 1, t, l: level, m: message, st: stream, ...(entry.replica === undefined ? {} : { rp: entry.replica }) }
    const line = JSON.stringify(stored) + "\n"
    const bytes = Buffer.byteLength(line)
    if (log.size > 0 && log.size + bytes > maxBytes / 2) rotate(log)
    fs.writeSync(log.fd, line)
    log.size += bytes
    log.seq = stored.s
    log.lastTime = t
    return toEntry(rev, kind, stored)
  }

  const appendText = (now: number, dep: string, rev: string, kind: LogKind, text: string, source: LineSource) => {
    for (const line of text.split(/\r\n|\n|\r/)) {
      if (line.trim() === "") continue
      append(now, dep, rev, kind, { message: line, stream: source.stream, ...(source.replica === undefined ? {} : { replica: source.replica }) })
    }
  }

  /** Reads `readable` line by line until it ends (`resolve`); answers the function that stops reading. */
  const pipe = (now: () => number, readable: Readable, dep: string, rev: string, kind: LogKind, source: LineSource, resolve: () => void): (() => void) => {
    // Validate now, not on the first chunk.
    revDir(dep, rev)
    let pending = ""
    let skipping = false
    const emit = (line: string) => {
      if (line.trim() === "") return
      try {
        append(now(), dep, rev, kind, { message: line, stream: source.stream, ...(source.replica === undefined ? {} : { replica: source.replica }) })
      } catch {
        // A line the disk did not take is lost; the process's output goes on.
      }
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
        emit(p)
      }
      if (Buffer.byteLength(pending) > maxLine) {
        // A line without end: log its start once, drop the rest until the next newline.
        if (!skipping) emit(pending)
        skipping = true
        pending = ""
      }
    }
    let finished = false
    const detach = () => {
      readable.off("data", onData)
      readable.off("end", finish)
      readable.off("close", finish)
      readable.off("error", finish)
    }
    const finish = () => {
      if (finished) return
      finished = true
      detach()
      if (pending !== "" && !skipping) emit(pending)
      pending = ""
      resolve()
    }
    // Never unhandled, also once this pipe has stopped reading.
    readable.on("error", () => {})
    readable.on("data", onData)
    readable.once("end", finish)
    readable.once("close", finish)
    readable.once("error", finish)
    return () => {
      finished = true
      detach()
    }
  }

  const revisions = (dep: string): string[] => {
    const dir = path.join(root, seg("deployment id", dep))
    try {
      return fs
        .readdirSync(dir, { withFileTypes: true })
        .filter((d) => d.isDirectory() && SEGMENT.test(d.name))
        .map((d) => ({ name: d.name, at: fs.statSync(path.join(dir, d.name)).birthtimeMs }))
        .sort((a, b) => a.at - b.at || (a.name < b.name ? -1 : 1))
        .map((d) => d.name)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return []
      throw e
    }
  }

  const read = (dep: string, o: ReadOptions): LogsResponse => {
    const limit = o.limit ?? defaultLogLimit
    if (!Number.isInteger(limit) || limit < 1 || limit > maxLogLimit) throw invalid(`limit must be an integer from 1 to ${maxLogLimit}`)
    const order = o.order ?? "desc"
    const minLevel = o.level === null || o.level === undefined ? 0 : severity[o.level]
    if (minLevel === undefined) throw invalid(`level must be one of ${logLevels.join(", ")}`)
    const needle = o.query === null || o.query === undefined || o.query === "" ? undefined : o.query.toLowerCase()
    const start = parseTime(o.start_time)
    const end = parseTime(o.end_time)
    const after = o.offset === null || o.offset === undefined || o.offset === "" ? undefined : decodeCursor(o.offset)
    const revs = o.revisionId === undefined ? revisions(dep) : [seg("revision id", o.revisionId)]
    const matches: Array<{ key: Key; entry: LogEntry }> = []
    for (const rev of revs) {
      const file = fileOf(dep, rev, o.kind)
      for (const l of [...readLines(`${file}.1`), ...readLines(file)]) {
        if (severity[l.l] < minLevel) continue
        if (start !== undefined && l.t < start) continue
        if (end !== undefined && l.t > end) continue
        if (needle !== undefined && !l.m.toLowerCase().includes(needle)) continue
        const key: Key = [l.t, rev, kindIndex(o.kind), l.s]
        if (after !== undefined && (order === "asc" ? compareKeys(key, after) <= 0 : compareKeys(key, after) >= 0)) continue
        matches.push({ key, entry: toEntry(rev, o.kind, l) })
      }
    }
    matches.sort((a, b) => (order === "asc" ? compareKeys(a.key, b.key) : compareKeys(b.key, a.key)))
    const page = matches.slice(0, limit)
    const last = page[page.length - 1]
    return { logs: page.map((m) => m.entry), next_offset: last === undefined ? (o.offset ?? null) : encodeCursor(last.key) }
  }

  const closeUnder = (prefix: string) => {
    for (const [file, log] of open) {
      if (file.startsWith(prefix)) {
        fs.closeSync(log.fd)
        open.delete(file)
      }
    }
  }

  return {
    append,
    appendText,
    pipe,
    read,
    revisions,
    removeRevision: (dep: string, rev: string) => {
      const dir = revDir(dep, rev)
      closeUnder(dir + path.sep)
      fs.rmSync(dir, { recursive: true, force: true })
    },
    removeDeployment: (dep: string) => {
      const dir = path.join(root, seg("deployment id", dep))
      closeUnder(dir + path.sep)
      fs.rmSync(dir, { recursive: true, force: true })
    },
    close: () => {
      for (const log of open.values()) fs.closeSync(log.fd)
      open.clear()
    }
  }
}

/** A thrown `LogStoreError` as it is; any other error (the disk) as a `LogStoreError` with its message. */
const attempt = <A>(f: () => A): Effect.Effect<A, LogStoreError> =>
  Effect.try({ try: f, catch: (error) => (error instanceof LogStoreError ? error : invalid(String((error as Error)?.message ?? error))) })

/** The store over `options.root`; its open files are closed with the scope. */
export const makeLogStore = (options: LogStoreOptions): Effect.Effect<LogStore["Service"], never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => makeFiles(options)),
      (files) => Effect.sync(files.close)
    ),
    (files) =>
      LogStore.of({
        append: (dep, rev, kind, entry) => Clock.clockWith((clock) => attempt(() => files.append(clock.currentTimeMillisUnsafe(), dep, rev, kind, entry))),
        appendText: (dep, rev, kind, text, source) => Clock.clockWith((clock) => attempt(() => files.appendText(clock.currentTimeMillisUnsafe(), dep, rev, kind, text, source))),
        pipe: (readable, dep, rev, kind, source) =>
          Clock.clockWith((clock) =>
            Effect.callback<void, LogStoreError>((resume) => {
              try {
                const stop = files.pipe(() => clock.currentTimeMillisUnsafe(), readable, dep, rev, kind, source, () => resume(Effect.void))
                return Effect.sync(stop)
              } catch (error) {
                resume(Effect.fail(error instanceof LogStoreError ? error : invalid(String(error))))
              }
            })
          ),
        read: (dep, o) => attempt(() => files.read(dep, o)),
        revisions: (dep) => attempt(() => files.revisions(dep)),
        removeRevision: (dep, rev) => attempt(() => files.removeRevision(dep, rev)),
        removeDeployment: (dep) => attempt(() => files.removeDeployment(dep))
      })
  )

export const layerLogStore = (options: LogStoreOptions) => Layer.effect(LogStore, makeLogStore(options))

/** The server's: `deployment-logs/` under the local runtime's root. */
export const LogStoreLive = Layer.unwrap(Effect.map(RuntimeRoot, ({ root }) => layerLogStore({ root: path.join(root, "deployment-logs") })))

// ---- the endpoint reads (the routes decode the body with core's LogsRequest, check that the
// deployment and revision exist and belong to the tenant, then call these) ----

/** `POST /v1/projects/{deployment_id}/revisions/{revision_id}/build_logs` */
export const buildLogs = (store: LogStore["Service"], deploymentId: string, revisionId: string, body: LogsRequest) =>
  store.read(deploymentId, { ...body, kind: "build", revisionId })

/** `POST /v1/projects/{deployment_id}/deploy_logs` and `.../revisions/{revision_id}/deploy_logs` */
export const deployLogs = (store: LogStore["Service"], deploymentId: string, body: LogsRequest, revisionId?: string) =>
  store.read(deploymentId, { ...body, kind: "deploy", ...(revisionId === undefined ? {} : { revisionId }) })
