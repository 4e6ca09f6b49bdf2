/**
 * The `LogStore` in PostgreSQL (`deployment_logs`), for servers on PostgreSQL: every replica
 * writes the lines of the revisions it runs and reads everyone's, so a log endpoint answers the
 * same through any replica, and a revision's earlier lines survive the replica that wrote them.
 *
 * Writes are batched: lines wait in one queue and go in multi-row INSERTs (at most `MAX_BATCH`
 * lines each), one at a time, so a chatty process costs a statement per batch, not per line (a
 * batch is whatever arrived while the previous one was written). A process faster than the
 * database loses lines past `MAX_QUEUE` waiting ones, and its log says how many. `append` and
 * `appendText` answer once their lines are stored, `pipe` once its stream ended and its lines
 * are stored, and a read first writes what is waiting, so a read after a write on the same
 * replica sees it. The bound per (revision, kind) is kept by
 * deleting the oldest lines down to half of it once the log passes it.
 */
import { Clock, Effect, Layer, Semaphore } from "effect"
import type { LogEntry, LogLevel } from "../../../core/api/logs.ts"
import type { PgError } from "../../store/postgres/client.ts"
import { PostgresDatabase, type PgStoreKit } from "../../store/postgres/PostgresDatabase.ts"
import {
  type AppendEntry,
  attempt,
  checkLog,
  entryFrom,
  type Key,
  kindIndex,
  type Line,
  lineOf,
  linesOf,
  type LogKind,
  type LogLimits,
  LogStore,
  LogStoreError,
  type LogStream,
  limitsOf,
  pageOf,
  planRead,
  readLines,
  segment,
  severity,
  toEntry,
  unavailable
} from "./LogStore.ts"

/** Lines per INSERT. */
const MAX_BATCH = 2_000
/**
 * Lines of process output waiting for the database, at most: past it a stream's lines are dropped
 * (and counted in a line of its log) rather than held in memory or the process slowed down.
 */
const MAX_QUEUE = 50_000

/** What a stored line costs against the bound besides its message (the row's other columns). */
const ROW_OVERHEAD = 64

const levelBySeverity = new Map(Object.entries(severity).map(([level, n]) => [n, level as LogLevel]))

interface Pending {
  readonly deploymentId: string
  readonly revisionId: string
  readonly kind: LogKind
  readonly t: number
  readonly line: Line
  readonly bytes: number
  /** Set once written. */
  entry?: LogEntry
  failure?: LogStoreError
}

interface LogRow {
  readonly seq: bigint
  readonly revision_id: string
  readonly t: bigint
  readonly level: number
  readonly message: string
  readonly stream: LogStream
  readonly replica: string | null
}

const INSERT = `
  INSERT INTO deployment_logs (deployment_id, revision_id, kind, t, level, message, stream, replica, bytes)
  SELECT d, r, k, t, l, m, s, rp, b
  FROM unnest($1::text[], $2::text[], $3::smallint[], $4::bigint[], $5::smallint[], $6::text[], $7::text[], $8::text[], $9::int[])
    WITH ORDINALITY AS i(d, r, k, t, l, m, s, rp, b, ord)
  ORDER BY ord
  RETURNING seq`

const STORED = "SELECT coalesce(sum(bytes), 0)::bigint AS stored FROM deployment_logs WHERE deployment_id = $1 AND revision_id = $2 AND kind = $3"

/** Deletes the oldest lines of one log until at most $4 bytes are left; answers the bytes removed. */
const TRIM = `
  WITH ranked AS (
    SELECT seq, sum(bytes) OVER (ORDER BY seq DESC) AS newer
    FROM deployment_logs WHERE deployment_id = $1 AND revision_id = $2 AND kind = $3
  ), gone AS (
    DELETE FROM deployment_logs WHERE seq IN (SELECT seq FROM ranked WHERE newer > $4) RETURNING bytes
  )
  SELECT coalesce(sum(bytes), 0)::bigint AS removed FROM gone`

/** One statement per order: the entries after the cursor, filtered, in the order of the key (time, revision, sequence). */
const readStatement = (order: "asc" | "desc") => {
  const [after, direction] = order === "asc" ? [">", "ASC"] : ["<", "DESC"]
  return `
    SELECT seq, revision_id, t, level, message, stream, replica FROM deployment_logs
    WHERE deployment_id = $1 AND kind = $2
      AND ($3::text IS NULL OR revision_id = $3)
      AND level >= $4
      AND ($5::text IS NULL OR strpos(lower(message), $5) > 0)
      AND ($6::bigint IS NULL OR t >= $6)
      AND ($7::bigint IS NULL OR t <= $7)
      AND ($8::bigint IS NULL OR (t, revision_id, seq) ${after} ($8, $9::text, $10::bigint))
    ORDER BY t ${direction}, revision_id ${direction}, seq ${direction}
    LIMIT $11`
}
const READ = { asc: readStatement("asc"), desc: readStatement("desc") } as const

const failed = (what: string) => (error: PgError) => unavailable(`the deployment logs could not be ${what}: ${error.message}`)

export const makePostgresLogStore = (kit: PgStoreKit, limits: LogLimits = {}) =>
  Effect.gen(function* () {
    const { maxBytes, maxLine } = limitsOf(limits)
    // Always the pool: a log line is never part of the caller's transaction.
    const sql = kit.client
    /** Per log on this replica: the bytes it holds (read at its first write here) and the time of its last line. */
    const logs = new Map<string, { stored: number | undefined; lastTime: number }>()
    const logKey = (deploymentId: string, revisionId: string, kind: LogKind) => `${deploymentId}/${revisionId}/${kind}`
    let queue: Array<Pending> = []
    /** Lines of streams not queued because the queue was full, by log: how many, and when the first was. */
    const dropped = new Map<string, { readonly at: number; count: number }>()
    const writer = yield* Semaphore.make(1)

    /** A line of a log `checkLog` accepted, timed and sized for the queue. */
    const pending = (now: number, deploymentId: string, revisionId: string, kind: LogKind, entry: AppendEntry): Pending => {
      const line = lineOf(entry, maxLine)
      // PostgreSQL's text holds no NUL.
      const stored: Line = line.message.includes("\u0000") ? { ...line, message: line.message.replaceAll("\u0000", "\uFFFD") } : line
      const key = logKey(deploymentId, revisionId, kind)
      let log = logs.get(key)
      if (log === undefined) logs.set(key, (log = { stored: undefined, lastTime: 0 }))
      // Time never goes backwards within one log (on this replica), so sequence order and time order agree.
      const t = Math.max(entry.timestamp ?? now, log.lastTime)
      log.lastTime = t
      return { deploymentId, revisionId, kind, t, line: stored, bytes: Buffer.byteLength(stored.message) + ROW_OVERHEAD }
    }

    /** Keeps each log of the batch within the bound: past it, the oldest lines go until half is left. */
    const trim = (batch: ReadonlyArray<Pending>) =>
      Effect.gen(function* () {
        const added = new Map<string, { readonly first: Pending; bytes: number }>()
        for (const p of batch) {
          const key = logKey(p.deploymentId, p.revisionId, p.kind)
          const seen = added.get(key)
          if (seen) seen.bytes += p.bytes
          else added.set(key, { first: p, bytes: p.bytes })
        }
        for (const [key, { first, bytes }] of added) {
          const log = logs.get(key)
          if (log === undefined) continue
          const params = [first.deploymentId, first.revisionId, kindIndex(first.kind)]
          if (log.stored === undefined) log.stored = Number((yield* sql.one<{ stored: bigint }>(STORED, params))?.stored ?? 0)
          else log.stored += bytes
          if (log.stored <= maxBytes) continue
          const removed = yield* sql.one<{ removed: bigint }>(TRIM, [...params, Math.floor(maxBytes / 2)])
          log.stored -= Number(removed?.removed ?? 0)
        }
      })

    const write = (batch: ReadonlyArray<Pending>) =>
      Effect.gen(function* () {
        const rows = yield* sql.query<{ seq: bigint }>(INSERT, [
          batch.map((p) => p.deploymentId),
          batch.map((p) => p.revisionId),
          batch.map((p) => kindIndex(p.kind)),
          batch.map((p) => p.t),
          batch.map((p) => severity[p.line.level]),
          batch.map((p) => p.line.message),
          batch.map((p) => p.line.stream),
          batch.map((p) => p.line.replica ?? null),
          batch.map((p) => p.bytes)
        ])
        // The sequence is drawn in the batch's order: the smallest number is the first line's.
        const seqs = rows.map((row) => row.seq).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
        batch.forEach((p, i) => (p.entry = toEntry(p.revisionId, p.kind, seqs[i]!, p.t, p.line)))
        yield* trim(batch)
      })

    /** Writes what waits (and a notice per stream that lost lines), `MAX_BATCH` lines per INSERT; the lines of a batch that failed carry the failure. */
    const writeWaiting = Effect.suspend(() => {
      if (queue.length === 0 && dropped.size === 0) return Effect.void
      const waiting = queue
      queue = []
      // What a stream lost while the queue was full, said in its log where the gap is.
      for (const [key, { at, count }] of dropped) {
        const [deploymentId, revisionId, kind] = key.split("/") as [string, string, LogKind]
        const notice = `${count} line${count === 1 ? "" : "s"} of output dropped: the log database did not keep up`
        waiting.push(pending(at, deploymentId, revisionId, kind, { message: notice, level: "WARNING" }))
      }
      dropped.clear()
      const batches: Array<Array<Pending>> = []
      for (let i = 0; i < waiting.length; i += MAX_BATCH) batches.push(waiting.slice(i, i + MAX_BATCH))
      return Effect.forEach(
        batches,
        (batch) =>
          write(batch).pipe(
            Effect.mapError(failed("written")),
            Effect.catch((failure) =>
              Effect.sync(() => {
                for (const p of batch) if (p.entry === undefined) p.failure = failure
              })
            )
          ),
        { discard: true }
      )
    })
    /** Everything queued before this call is written (or failed) when it completes. */
    const flush = writer.withPermits(1)(writeWaiting)

    /** For lines that arrive from a stream: one write scheduled at a time; lines that arrive meanwhile join it. */
    let scheduled = false
    const schedule = () => {
      if (scheduled) return
      scheduled = true
      Effect.runFork(
        writer.withPermits(1)(
          Effect.suspend(() => {
            scheduled = false
            return writeWaiting
          })
        )
      )
    }

    const enqueue = (lines: ReadonlyArray<Pending>) =>
      Effect.andThen(
        Effect.sync(() => queue.push(...lines)),
        Effect.andThen(flush, () => {
          const failure = lines.find((p) => p.failure !== undefined)?.failure
          return failure ? Effect.fail(failure) : Effect.void
        })
      )

    const forget = (deploymentId: string, revisionId?: string) =>
      Effect.sync(() => {
        queue = queue.filter((p) => p.deploymentId !== deploymentId || (revisionId !== undefined && p.revisionId !== revisionId))
        const prefix = revisionId === undefined ? `${deploymentId}/` : `${deploymentId}/${revisionId}/`
        for (const key of logs.keys()) if (key.startsWith(prefix)) logs.delete(key)
      })

    // Lines still waiting are written before the pool closes.
    yield* Effect.addFinalizer(() => flush)

    return LogStore.of({
      append: (deploymentId, revisionId, kind, entry) =>
        Clock.clockWith((clock) =>
          Effect.flatMap(
            attempt(() => {
              checkLog(deploymentId, revisionId, kind)
              return pending(clock.currentTimeMillisUnsafe(), deploymentId, revisionId, kind, entry)
            }),
            (line) => Effect.map(enqueue([line]), () => line.entry!)
          )
        ),
      appendText: (deploymentId, revisionId, kind, text, source) =>
        Clock.clockWith((clock) =>
          Effect.flatMap(
            attempt(() => {
              checkLog(deploymentId, revisionId, kind)
              return linesOf(text).map((message) => pending(clock.currentTimeMillisUnsafe(), deploymentId, revisionId, kind, entryFrom(message, source)))
            }),
            enqueue
          )
        ),
      pipe: (readable, deploymentId, revisionId, kind, source) =>
        Clock.clockWith((clock) =>
          Effect.callback<void, LogStoreError>((resume) => {
            try {
              // Validate now, not on the first chunk (nor on every line).
              checkLog(deploymentId, revisionId, kind)
            } catch (error) {
              return resume(Effect.fail(error as LogStoreError))
            }
            const stop = readLines(
              readable,
              maxLine,
              (message) => {
                const now = clock.currentTimeMillisUnsafe()
                if (queue.length < MAX_QUEUE) queue.push(pending(now, deploymentId, revisionId, kind, entryFrom(message, source)))
                else {
                  // The database is slower than the process: its output goes on, the lines are counted.
                  const key = logKey(deploymentId, revisionId, kind)
                  const gap = dropped.get(key)
                  if (gap) gap.count++
                  else dropped.set(key, { at: now, count: 1 })
                }
                schedule()
              },
              // Its last lines are stored before the pipe completes (a line the database did not take is lost; the output went on).
              () => resume(flush)
            )
            return Effect.sync(stop)
          })
        ),
      read: (deploymentId, options) =>
        Effect.gen(function* () {
          const plan = yield* attempt(() => planRead(deploymentId, options))
          // What this replica has not written yet is part of what it answers.
          yield* flush
          const after = plan.after
          const rows = yield* sql
            .query<LogRow>(READ[plan.order], [
              deploymentId,
              kindIndex(plan.kind),
              plan.revisionId ?? null,
              plan.minLevel,
              plan.needle ?? null,
              plan.start ?? null,
              plan.end ?? null,
              after?.[0] ?? null,
              after?.[1] ?? null,
              after?.[3] ?? null,
              plan.limit
            ])
            .pipe(Effect.mapError(failed("read")))
          return pageOf(
            plan,
            rows.map((row) => {
              const t = Number(row.t)
              const key: Key = [t, row.revision_id, kindIndex(plan.kind), Number(row.seq)]
              const line: Line = { message: row.message, level: levelBySeverity.get(row.level) ?? "INFO", stream: row.stream, replica: row.replica ?? undefined }
              return { key, entry: toEntry(row.revision_id, plan.kind, row.seq, t, line) }
            })
          )
        }),
      revisions: (deploymentId) =>
        Effect.flatMap(attempt(() => segment("deployment id", deploymentId)), () =>
          Effect.andThen(
            flush,
            sql.query<{ revision_id: string }>("SELECT revision_id FROM deployment_logs WHERE deployment_id = $1 GROUP BY revision_id ORDER BY min(seq)", [deploymentId]).pipe(
              Effect.map((rows) => rows.map((row) => row.revision_id)),
              Effect.mapError(failed("read"))
            )
          )
        ),
      removeRevision: (deploymentId, revisionId) =>
        Effect.flatMap(attempt(() => [segment("deployment id", deploymentId), segment("revision id", revisionId)]), () =>
          writer.withPermits(1)(
            Effect.andThen(
              forget(deploymentId, revisionId),
              sql.execute("DELETE FROM deployment_logs WHERE deployment_id = $1 AND revision_id = $2", [deploymentId, revisionId]).pipe(Effect.asVoid, Effect.mapError(failed("removed")))
            )
          )
        ),
      removeDeployment: (deploymentId) =>
        Effect.flatMap(attempt(() => segment("deployment id", deploymentId)), () =>
          writer.withPermits(1)(
            Effect.andThen(
              forget(deploymentId),
              sql.execute("DELETE FROM deployment_logs WHERE deployment_id = $1", [deploymentId]).pipe(Effect.asVoid, Effect.mapError(failed("removed")))
            )
          )
        )
    })
  })

/**
 * Deletes the lines of deployments that no longer exist: the driver's teardown removes a
 * deployment's logs, but a replica that died before its teardown leaves them behind. Answers the
 * lines removed. The server runs it at start and every hour (`LogStoreLive`).
 */
export const sweepOrphanLogs = (kit: PgStoreKit): Effect.Effect<number, LogStoreError> =>
  kit.client
    .execute("DELETE FROM deployment_logs l WHERE NOT EXISTS (SELECT 1 FROM deployments d WHERE d.id = l.deployment_id)")
    .pipe(Effect.mapError(failed("swept")))

export const layerPostgresLogStore = (limits: LogLimits = {}) => Layer.effect(LogStore, Effect.flatMap(PostgresDatabase, (kit) => makePostgresLogStore(kit, limits)))
