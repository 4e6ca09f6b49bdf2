/**
 * The connection layer of the Postgres backend: one `pg` pool per process (from DATABASE_URL),
 * typed query helpers as Effects, a transaction combinator and the mapping of Postgres error
 * codes to the store's errors. Nothing outside `server/store/postgres/` sees a Postgres error
 * code: the stores turn `UniqueViolation` into the domain's Conflict, and `StoreBusy` /
 * `StoreUnavailable` answer 503 with Retry-After.
 *
 * Values on the wire stay those of the SQLite backend:
 * - `timestamptz` columns come back as ISO 8601 UTC strings with milliseconds
 *   (`2026-11-23T15:34:39.123Z`), the text the SQLite rows hold;
 * - `json`/`jsonb` columns come back as their JSON text, as SQLite's TEXT columns do (the stores
 *   parse where they parse today);
 * - `bigint` (int8) comes back as a JS `bigint` (exact quantities: bytes, millicores), `integer`
 *   as a number. Write `count(*)::int` where a number is wanted.
 *
 * Statements are prepared once per connection: each query is sent as a named statement whose
 * name is a hash of its text, so the server parses and plans it once per pooled connection.
 */
import { createHash } from "node:crypto"
import { Context, Data, Duration, Effect, Exit, Layer } from "effect"
import pg from "pg"

// ---------------------------------------------------------------------------------------------
// Errors

/** A UNIQUE (or PRIMARY KEY) constraint refused a row: a lost race on a name. 23505. */
export class UniqueViolation extends Data.TaggedError("UniqueViolation")<{
  readonly constraint: string | undefined
  readonly table: string | undefined
  readonly detail: string | undefined
}> {}

/**
 * Contention that outlived the transaction's retries: serialization failure (40001), deadlock
 * (40P01) or a lock wait that timed out (55P03). Answer 503 with Retry-After.
 */
export class StoreBusy extends Data.TaggedError("StoreBusy")<{ readonly code: string; readonly message: string }> {
  /** Read by the HTTP layer's busy check, like SQLITE_BUSY. */
  readonly busy = true
}

/** The database cannot be reached or refuses connections (08xxx, 53300, 57P0x, ECONNREFUSED...). Answer 503. */
export class StoreUnavailable extends Data.TaggedError("StoreUnavailable")<{ readonly code: string; readonly message: string }> {
  readonly busy = true
}

/** Anything else Postgres refused: a bug in a statement, not bad input. Raised as a defect by the stores. */
export class QueryFailed extends Data.TaggedError("QueryFailed")<{
  readonly code: string | undefined
  readonly message: string
  readonly statement: string
}> {}

export type PgError = UniqueViolation | StoreBusy | StoreUnavailable | QueryFailed

/**
 * SQLSTATEs that mean "run the transaction again": nothing it did was committed. 23503
 * (foreign_key_violation) is here because a row read in the transaction's snapshot can be gone
 * by the time its child row is inserted (a deployment deleted by another replica while a PATCH
 * adds a revision): run again, the work sees the deletion and answers 404.
 */
const RETRYABLE = new Set(["40001", "40P01", "23503"])

const unavailableCodes = new Set(["53300", "57P01", "57P02", "57P03", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND"])

/** Maps a driver error to the store's errors. */
export const classify = (error: unknown, statement: string): PgError => {
  const e = error as { code?: string; constraint?: string; table?: string; detail?: string; message?: string }
  const code = typeof e?.code === "string" ? e.code : undefined
  const message = String(e?.message ?? error)
  if (code === "23505") return new UniqueViolation({ constraint: e.constraint, table: e.table, detail: e.detail })
  if (code !== undefined && (RETRYABLE.has(code) || code === "55P03")) return new StoreBusy({ code, message })
  if (code !== undefined && (code.startsWith("08") || unavailableCodes.has(code))) return new StoreUnavailable({ code, message })
  if (/Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message)) {
    return new StoreUnavailable({ code: code ?? "CONNECTION", message })
  }
  return new QueryFailed({ code, message, statement: statement.slice(0, 500) })
}

export const isRetryable = (error: PgError): boolean => error._tag === "StoreBusy" && RETRYABLE.has(error.code)

// ---------------------------------------------------------------------------------------------
// Types of values

const TIMESTAMPTZ = 1184
const TIMESTAMP = 1114
const JSON_OID = 114
const JSONB = 3802
const INT8 = 20

const parseDate = pg.types.getTypeParser(TIMESTAMPTZ) as (text: string) => Date | number

/**
 * What Postgres writes for a `timestamptz` in a UTC session, years 1000-9999:
 * `2026-11-23 15:34:39+00`, `2026-11-23 15:34:39.1+00`, `2026-11-23 15:34:39.123456+00`.
 */
const UTC_TEXT = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?\+00$/

/**
 * `2026-11-23 15:34:39.1+00` -> `2026-11-23T15:34:39.100Z` (infinity stays as Postgres wrote it).
 * The common form is rewritten as text (fraction truncated to milliseconds, as `Date` does):
 * every row of every read carries two timestamps, and a `Date` per value cost a measurable share
 * of a read. Any other form (another offset, BC, year > 9999) goes through `Date`.
 */
export const isoFromTimestamptz = (text: string): string => {
  const match = UTC_TEXT.exec(text)
  if (match !== null) return `${match[1]}T${match[2]}.${((match[3] ?? "") + "000").slice(0, 3)}Z`
  const parsed = parseDate(text)
  return parsed instanceof Date && !Number.isNaN(parsed.getTime()) ? parsed.toISOString() : text
}

const typeParsers = (oid: number, format?: string): ((text: string) => unknown) => {
  if (format === "binary") return pg.types.getTypeParser(oid as never, "binary" as never) as never
  switch (oid) {
    case TIMESTAMPTZ:
    case TIMESTAMP:
      return isoFromTimestamptz
    case JSON_OID:
    case JSONB:
      return (text) => text
    case INT8:
      return (text) => BigInt(text)
    default:
      return pg.types.getTypeParser(oid as never) as never
  }
}

// ---------------------------------------------------------------------------------------------
// Queries

export type Row = Record<string, unknown>

/** Statements on one connection (a transaction's) or on the pool (each statement on its own). */
export interface Sql {
  /** The pool (autocommit) or the transaction's connection the statements go to. */
  readonly target: Queryable
  /** All rows. */
  readonly query: <R extends object = Row>(text: string, params?: ReadonlyArray<unknown>) => Effect.Effect<Array<R>, PgError>
  /** The first row, or undefined. */
  readonly one: <R extends object = Row>(text: string, params?: ReadonlyArray<unknown>) => Effect.Effect<R | undefined, PgError>
  /** The number of rows written (INSERT/UPDATE/DELETE). */
  readonly execute: (text: string, params?: ReadonlyArray<unknown>) => Effect.Effect<number, PgError>
}

export type Queryable = Pick<pg.PoolClient, "query">

/** One name per distinct statement text: prepared once per connection, reused after. */
const statementNames = new Map<string, string>()
const statementName = (text: string): string => {
  let name = statementNames.get(text)
  if (name === undefined) {
    name = `s_${createHash("sha1").update(text).digest("hex").slice(0, 24)}`
    statementNames.set(text, name)
  }
  return name
}

/**
 * One statement as one Effect: the driver's callback resumes the fiber with the result already
 * mapped by `ok`, or the classified error mapped by `failed`. This is the whole per-statement
 * cost on the read path, so it is one primitive: no promise (a callback, not `await`: no
 * microtask hop), no `map`/`mapError` nodes around it. Statements without parameters may hold
 * several commands (migrations): those go unnamed.
 */
export const request = <A, E>(
  target: Queryable,
  text: string,
  params: ReadonlyArray<unknown> | undefined,
  ok: (result: pg.QueryResult<any>) => A,
  failed: (error: PgError) => E
): Effect.Effect<A, E> =>
  Effect.callback<A, E>((resume) => {
    const done = (error: Error | null | undefined, result: pg.QueryResult<any>) => {
      if (error) return resume(Effect.fail(failed(classify(error, text))))
      let value: A
      try {
        value = ok(result)
      } catch (defect) {
        return resume(Effect.die(defect))
      }
      resume(Effect.succeed(value))
    }
    try {
      if (params === undefined || params.length === 0) (target.query as (text: string, callback: typeof done) => void)(text, done)
      else (target.query as (config: pg.QueryConfig, callback: typeof done) => void)({ name: statementName(text), text, values: params as Array<unknown> }, done)
    } catch (error) {
      resume(Effect.fail(failed(classify(error, text))))
    }
  })

const rowsOf = (result: pg.QueryResult<any>) => result.rows
const firstOf = (result: pg.QueryResult<any>) => result.rows[0]
const countOf = (result: pg.QueryResult<any>) => result.rowCount ?? 0
const same = <E>(error: E) => error

/** Maps a result to what `query` / `one` / `execute` answer. */
export const results = { rows: rowsOf, first: firstOf, count: countOf } as const

export const makeSql = (target: Queryable): Sql => ({
  target,
  query: (text, params) => request(target, text, params, rowsOf, same),
  one: (text, params) => request(target, text, params, firstOf, same),
  execute: (text, params) => request(target, text, params, countOf, same)
})

// ---------------------------------------------------------------------------------------------
// Transactions

export type Isolation = "read committed" | "repeatable read" | "serializable"

export interface TransactionOptions {
  /**
   * READ COMMITTED (default) for work that takes explicit row locks (`SELECT ... FOR UPDATE`,
   * `pg_advisory_xact_lock`) before it decides; SERIALIZABLE for work that decides on reads it
   * cannot lock (a sum over rows, the absence of a row): Postgres then aborts one of two
   * transactions whose reads and writes cross (40001), and the combinator runs it again.
   */
  readonly isolation?: Isolation
  readonly readOnly?: boolean
  /** Runs again after 40001/40P01 at most this many times (default 8), then fails with StoreBusy. */
  readonly retries?: number
}

export interface PgClientShape extends Sql {
  readonly pool: pg.Pool
  /**
   * Runs `work` in one transaction on one connection: BEGIN, the work, COMMIT. A failure, a
   * defect or an interruption of the work rolls back (a connection whose ROLLBACK fails is
   * discarded, never returned to the pool mid-transaction). A serialization failure or deadlock,
   * in the work or at COMMIT, runs the whole work again with a fresh transaction (backoff with
   * jitter): `work` must be safe to run more than once (no effects outside the database).
   */
  readonly transaction: <A, E, R>(work: (sql: Sql) => Effect.Effect<A, E, R>, options?: TransactionOptions) => Effect.Effect<A, E | PgError, R>
}

const beginStatement = ({ isolation = "read committed", readOnly = false }: TransactionOptions): string =>
  `BEGIN ISOLATION LEVEL ${isolation.toUpperCase()}${readOnly ? " READ ONLY" : ""}`

const guarded = new WeakSet<pg.PoolClient>()

/**
 * A checked-out connection. A connection that breaks while checked out (server restart, network)
 * emits "error" on the client: with no listener that would crash the process, so one is added;
 * the statement in flight fails on its own and the broken connection is discarded at release.
 */
export const connect = (pool: pg.Pool): Effect.Effect<pg.PoolClient, PgError> =>
  Effect.tryPromise({
    try: async () => {
      const client = await pool.connect()
      if (!guarded.has(client)) {
        guarded.add(client)
        client.on("error", () => undefined)
      }
      return client
    },
    catch: (error) => classify(error, "connect")
  })

/** One attempt: a connection, BEGIN, work, COMMIT; ROLLBACK and release on any other exit. */
const attempt = <A, E, R>(pool: pg.Pool, work: (sql: Sql) => Effect.Effect<A, E, R>, options: TransactionOptions) =>
  Effect.acquireUseRelease(
    connect(pool),
    (client) => {
      const sql = makeSql(client)
      return Effect.gen(function* () {
        yield* sql.execute(beginStatement(options))
        const value = yield* work(sql)
        yield* sql.execute("COMMIT")
        return value
      })
    },
    (client, exit) =>
      Exit.isSuccess(exit)
        ? Effect.sync(() => client.release())
        : // Queued behind any statement still running on this connection (an interrupted query).
          Effect.promise(() =>
            client.query("ROLLBACK").then(
              () => client.release(),
              (error: Error) => client.release(error)
            )
          )
  )

export const transactionOn =
  (pool: pg.Pool) =>
  <A, E, R>(work: (sql: Sql) => Effect.Effect<A, E, R>, options: TransactionOptions = {}): Effect.Effect<A, E | PgError, R> => {
    const retries = options.retries ?? 8
    const loop = (n: number): Effect.Effect<A, E | PgError, R> =>
      Effect.catch(attempt(pool, work, options), (error: E | PgError) => {
        if (n < retries && retryableFailure(error)) {
          // 2, 4, 8 ... ms, capped at 100, with full jitter: contenders spread out.
          const delay = Math.random() * Math.min(100, 2 ** (n + 1))
          return Effect.flatMap(Effect.sleep(Duration.millis(delay)), () => loop(n + 1))
        }
        return Effect.fail(error)
      })
    return loop(0)
  }

/** A retryable PgError, also when a store wrapped it (as the `cause` of its own error). */
export const retryableFailure = (error: unknown): boolean =>
  (isPgError(error) && isRetryable(error)) || (typeof error === "object" && error !== null && "cause" in error && isPgError(error.cause) && isRetryable(error.cause))

const pgTags = new Set(["UniqueViolation", "StoreBusy", "StoreUnavailable", "QueryFailed"])
export const isPgError = (error: unknown): error is PgError =>
  typeof error === "object" && error !== null && pgTags.has((error as { _tag?: string })._tag ?? "")

// ---------------------------------------------------------------------------------------------
// The pool

export interface PoolOptions {
  /** Most connections this process opens (default 10; PGPOOL_MAX). */
  readonly max?: number
  /** Application name shown in pg_stat_activity (default "slipway"). */
  readonly applicationName?: string
  /** Statement timeout in ms (default 30 s): a runaway statement fails instead of holding locks. */
  readonly statementTimeoutMs?: number
  /** How long a checkout may wait for a free connection (default 10 s). */
  readonly connectionTimeoutMs?: number
}

/** True when `url` names a PostgreSQL database (postgres:// or postgresql://). */
export const isPostgresUrl = (url: string | undefined): url is string => url !== undefined && /^postgres(ql)?:\/\//i.test(url)

/** A pool for `url`: UTC session, ISO timestamps, JSON as text, int8 as bigint. */
export const makePool = (url: string, options: PoolOptions = {}): pg.Pool => {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? "slipway",
    statement_timeout: options.statementTimeoutMs ?? 30_000,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 10_000,
    idleTimeoutMillis: 30_000,
    options: "-c TimeZone=UTC",
    types: { getTypeParser: typeParsers as never }
  })
  // An idle connection the server dropped (restart, failover) must not crash the process: the
  // pool discards it and the next checkout opens a new one.
  pool.on("error", () => undefined)
  return pool
}

export const makeClient = (pool: pg.Pool): PgClientShape => ({ pool, ...makeSql(pool), transaction: transactionOn(pool) })

export class PgClient extends Context.Service<PgClient, PgClientShape>()("slipway/store/postgres/PgClient") {}

/**
 * The pool as a scoped Layer: opened (and checked with `SELECT 1`) when the layer is built,
 * drained and closed when its scope closes.
 */
export const layer = (url: string, options: PoolOptions = {}): Layer.Layer<PgClient, PgError> =>
  Layer.effect(
    PgClient,
    Effect.acquireRelease(
      Effect.gen(function* () {
        const pool = makePool(url, options)
        const client = makeClient(pool)
        yield* Effect.onError(client.execute("SELECT 1"), () => Effect.promise(() => pool.end()))
        return client
      }),
      (client) => Effect.promise(() => client.pool.end())
    )
  )
