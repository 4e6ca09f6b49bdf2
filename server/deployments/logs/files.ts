/**
 * The `LogStore` on files, for a server on SQLite: `<root>/<deployment id>/<revision id>/<kind>.jsonl`
 * (+ `<kind>.jsonl.1`), one JSON object per line. When the current file passes half the bound it
 * becomes `.1` (replacing the older one), so each (revision, kind) keeps at most `maxBytesPerLog`
 * bytes: always the newest. Appends are synchronous writes to an open descriptor, so a read right
 * after sees them and a crash loses at most the line being written. Timestamps come from
 * Effect's `Clock`. The files are leaf Node code; every operation is an Effect, and closing the
 * layer closes the descriptors.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Clock, Effect, Layer, type Scope } from "effect"
import type { LogEntry, LogLevel } from "../../../core/api/logs.ts"
import {
  type AppendEntry,
  attempt,
  checkKind,
  checkLog,
  compareKeys,
  entryFrom,
  invalid,
  isSegment,
  type Key,
  kindIndex,
  lineOf,
  type LineSource,
  linesOf,
  type LogKind,
  type LogLimits,
  LogStore,
  LogStoreError,
  type LogStream,
  limitsOf,
  pageOf,
  planRead,
  type ReadOptions,
  readLines,
  segment,
  severity,
  toEntry,
  unavailable
} from "./LogStore.ts"

export interface FileLogStoreOptions extends LogLimits {
  readonly root: string
}

/** A line as stored: sequence, time, level, message, stream, replica. */
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

const entryOf = (rev: string, kind: LogKind, l: StoredLine): LogEntry => toEntry(rev, kind, l.s, l.t, { message: l.m, level: l.l, stream: l.st, replica: l.rp })

/** The files: synchronous leaf code, which throws `LogStoreError` (bad input) or a Node error (the disk). */
const makeFiles = (options: FileLogStoreOptions) => {
  const root = path.resolve(options.root)
  const { maxBytes, maxLine } = limitsOf(options)
  const open = new Map<string, OpenLog>()

  const revDir = (dep: string, rev: string) => path.join(root, segment("deployment id", dep), segment("revision id", rev))
  const fileOf = (dep: string, rev: string, kind: LogKind) => path.join(revDir(dep, rev), `${kind}.jsonl`)

  const readStored = (file: string): StoredLine[] => {
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
    const existing = readStored(file)
    const older = existing.length === 0 ? readStored(`${file}.1`) : []
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

  const append = (now: number, dep: string, rev: string, kind: LogKind, entry: AppendEntry): LogEntry => {
    const log = openLog(dep, rev, checkKind(kind))
    const line = lineOf(entry, maxLine)
    // Time never goes backwards within one log, so sequence order and time order agree.
    const t = Math.max(entry.timestamp ?? now, log.lastTime)
    const stored: StoredLine = { s: log.seq + 1, t, l: line.level, m: line.message, st: line.stream, ...(line.replica === undefined ? {} : { rp: line.replica }) }
    const text = JSON.stringify(stored) + "\n"
    const bytes = Buffer.byteLength(text)
    if (log.size > 0 && log.size + bytes > maxBytes / 2) rotate(log)
    fs.writeSync(log.fd, text)
    log.size += bytes
    log.seq = stored.s
    log.lastTime = t
    return entryOf(rev, kind, stored)
  }

  const appendText = (now: number, dep: string, rev: string, kind: LogKind, text: string, source: LineSource) => {
    for (const line of linesOf(text)) append(now, dep, rev, kind, entryFrom(line, source))
  }

  const revisions = (dep: string): string[] => {
    const dir = path.join(root, segment("deployment id", dep))
    try {
      return fs
        .readdirSync(dir, { withFileTypes: true })
        .filter((d) => d.isDirectory() && isSegment(d.name))
        .map((d) => ({ name: d.name, at: fs.statSync(path.join(dir, d.name)).birthtimeMs }))
        .sort((a, b) => a.at - b.at || (a.name < b.name ? -1 : 1))
        .map((d) => d.name)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return []
      throw e
    }
  }

  const read = (dep: string, o: ReadOptions) => {
    const plan = planRead(dep, o)
    const revs = plan.revisionId === undefined ? revisions(dep) : [plan.revisionId]
    const matches: Array<{ key: Key; entry: LogEntry }> = []
    for (const rev of revs) {
      const file = fileOf(dep, rev, plan.kind)
      for (const l of [...readStored(`${file}.1`), ...readStored(file)]) {
        if (severity[l.l] < plan.minLevel) continue
        if (plan.start !== undefined && l.t < plan.start) continue
        if (plan.end !== undefined && l.t > plan.end) continue
        if (plan.needle !== undefined && !l.m.toLowerCase().includes(plan.needle)) continue
        const key: Key = [l.t, rev, kindIndex(plan.kind), l.s]
        if (plan.after !== undefined && (plan.order === "asc" ? compareKeys(key, plan.after) <= 0 : compareKeys(key, plan.after) >= 0)) continue
        matches.push({ key, entry: entryOf(rev, plan.kind, l) })
      }
    }
    matches.sort((a, b) => (plan.order === "asc" ? compareKeys(a.key, b.key) : compareKeys(b.key, a.key)))
    return pageOf(plan, matches.slice(0, plan.limit))
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
    read,
    revisions,
    maxLine,
    removeRevision: (dep: string, rev: string) => {
      const dir = revDir(dep, rev)
      closeUnder(dir + path.sep)
      fs.rmSync(dir, { recursive: true, force: true })
    },
    removeDeployment: (dep: string) => {
      const dir = path.join(root, segment("deployment id", dep))
      closeUnder(dir + path.sep)
      fs.rmSync(dir, { recursive: true, force: true })
    },
    close: () => {
      for (const log of open.values()) fs.closeSync(log.fd)
      open.clear()
    }
  }
}

/** A thrown `LogStoreError` as it is; any other error (the disk) as an unavailable store with its message. */
const onDisk = <A>(f: () => A): Effect.Effect<A, LogStoreError> => attempt(f, unavailable)

/** The store over `options.root`; its open files are closed with the scope. */
export const makeFileLogStore = (options: FileLogStoreOptions): Effect.Effect<LogStore["Service"], never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => makeFiles(options)),
      (files) => Effect.sync(files.close)
    ),
    (files) =>
      LogStore.of({
        append: (dep, rev, kind, entry) => Clock.clockWith((clock) => onDisk(() => files.append(clock.currentTimeMillisUnsafe(), dep, rev, kind, entry))),
        appendText: (dep, rev, kind, text, source) => Clock.clockWith((clock) => onDisk(() => files.appendText(clock.currentTimeMillisUnsafe(), dep, rev, kind, text, source))),
        pipe: (readable, dep, rev, kind, source) =>
          Clock.clockWith((clock) =>
            Effect.callback<void, LogStoreError>((resume) => {
              try {
                // Validate now, not on the first chunk.
                checkLog(dep, rev, kind)
                const stop = readLines(
                  readable,
                  files.maxLine,
                  (message) => {
                    try {
                      files.append(clock.currentTimeMillisUnsafe(), dep, rev, kind, entryFrom(message, source))
                    } catch {
                      // A line the disk did not take is lost; the process's output goes on.
                    }
                  },
                  () => resume(Effect.void)
                )
                return Effect.sync(stop)
              } catch (error) {
                resume(Effect.fail(error instanceof LogStoreError ? error : invalid(String(error))))
              }
            })
          ),
        read: (dep, o) => onDisk(() => files.read(dep, o)),
        revisions: (dep) => onDisk(() => files.revisions(dep)),
        removeRevision: (dep, rev) => onDisk(() => files.removeRevision(dep, rev)),
        removeDeployment: (dep) => onDisk(() => files.removeDeployment(dep))
      })
  )

export const layerFileLogStore = (options: FileLogStoreOptions) => Layer.effect(LogStore, makeFileLogStore(options))
