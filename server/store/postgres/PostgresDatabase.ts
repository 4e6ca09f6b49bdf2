/**
 * The server's PostgreSQL database as a service: a pool from DATABASE_URL, migrated at start
 * under the advisory lock, drained with the scope. Also the store-side plumbing every Postgres
 * store shares: the ambient transaction (store calls inside `transaction(...)` join it), and the
 * translation of driver errors into `StoreError` (the only place besides client.ts that reads them).
 *
 * `transaction` runs SERIALIZABLE: the store contract says what the effect reads cannot change
 * before it writes (SQLite gets that from BEGIN IMMEDIATE, one writer at a time). Postgres lets
 * transactions run side by side and aborts one of two whose reads and writes cross (40001); the
 * whole effect then runs again on a fresh transaction. The effects the routes and controllers
 * pass are store calls and pure decisions, so running one again is safe; work outside the
 * database (announcing a revision to a driver) happens after the transaction.
 */
import { Context, Effect, Layer } from "effect"
import { StoreError } from "../StoreError.ts"
import { type Transactional, Transactions } from "../Transactions.ts"
import type { QueryResult } from "pg"
import { isPgError, makeClient, makePool, type PgClientShape, type PgError, type PoolOptions, request, results, retryableFailure, type Sql } from "./client.ts"
import { migrate } from "./migrations.ts"

/** The transaction the current fiber runs in, if any (store calls join it). */
export const CurrentTransaction = Context.Reference<Sql | undefined>("slipway/store/postgres/CurrentTransaction", { defaultValue: () => undefined })

export const toStoreError = (error: PgError | StoreError): StoreError => {
  if (error instanceof StoreError) return error
  switch (error._tag) {
    case "StoreBusy":
    case "StoreUnavailable":
      return new StoreError({ message: "Database busy, retry shortly", busy: true, cause: error })
    case "UniqueViolation":
      return new StoreError({ message: `Postgres: unique violation on ${error.constraint ?? "?"}`, busy: false, cause: error })
    case "QueryFailed":
      return new StoreError({ message: `Postgres: ${error.message}`, busy: false, cause: error })
  }
}

export interface PgStoreKit {
  readonly client: PgClientShape
  /** The statements of the current transaction, or the pool (autocommit) outside one. */
  readonly sql: Effect.Effect<Sql>
  readonly query: <R extends object>(text: string, params?: ReadonlyArray<unknown>) => Effect.Effect<Array<R>, StoreError>
  readonly one: <R extends object>(text: string, params?: ReadonlyArray<unknown>) => Effect.Effect<R | undefined, StoreError>
  readonly execute: (text: string, params?: ReadonlyArray<unknown>) => Effect.Effect<number, StoreError>
  /** The rows mapped by `map`, in the driver's callback (no Effect node per mapping). */
  readonly queryMap: <R extends object, A>(text: string, params: ReadonlyArray<unknown> | undefined, map: (row: R) => A) => Effect.Effect<Array<A>, StoreError>
  /** The first row mapped by `map`, or undefined. */
  readonly oneMap: <R extends object, A>(text: string, params: ReadonlyArray<unknown> | undefined, map: (row: R) => A) => Effect.Effect<A | undefined, StoreError>
  /** Like `execute`, but a UNIQUE violation fails with `conflict()` (a lost race on a name). */
  readonly executeNaming: <C>(text: string, params: ReadonlyArray<unknown>, conflict: () => C) => Effect.Effect<number, StoreError | C>
  readonly transaction: Transactional
}

export const makeKit = (client: PgClientShape): PgStoreKit => {
  const current = Effect.withFiberSucceed((fiber) => fiber.getRef(CurrentTransaction))
  const sql = Effect.withFiberSucceed((fiber): Sql => fiber.getRef(CurrentTransaction) ?? client)
  /**
   * A statement on the current transaction's connection, or the pool outside one: one Effect
   * whose driver callback resumes with the mapped rows or the StoreError (the read path's cost
   * per statement, see `request`).
   */
  const on = <A>(text: string, params: ReadonlyArray<unknown> | undefined, ok: (result: QueryResult<any>) => A): Effect.Effect<A, StoreError> =>
    Effect.withFiber((fiber) => request((fiber.getRef(CurrentTransaction) ?? client).target, text, params, ok, toStoreError))
  const transaction: Transactional = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreError, R> =>
    Effect.flatMap(current, (tx) =>
      tx !== undefined
        ? effect
        : Effect.mapError(
            client.transaction((tx) => Effect.provideService(effect, CurrentTransaction, tx), { isolation: "serializable", retries: 30 }),
            (error): E | StoreError => (isPgError(error) ? toStoreError(error) : retryableFailure(error) ? busy(error) : (error as E))
          )
    )
  return {
    client,
    sql,
    query: <R extends object>(text: string, params?: ReadonlyArray<unknown>) => on<Array<R>>(text, params, results.rows),
    one: <R extends object>(text: string, params?: ReadonlyArray<unknown>) => on<R | undefined>(text, params, results.first),
    queryMap: <R extends object, A>(text: string, params: ReadonlyArray<unknown> | undefined, map: (row: R) => A) =>
      on(text, params, (result) => (result.rows as Array<R>).map(map)),
    oneMap: <R extends object, A>(text: string, params: ReadonlyArray<unknown> | undefined, map: (row: R) => A) =>
      on(text, params, (result) => (result.rows.length === 0 ? undefined : map(result.rows[0] as R))),
    execute: (text, params) => on(text, params, results.count),
    executeNaming: <C>(text: string, params: ReadonlyArray<unknown>, conflict: () => C): Effect.Effect<number, StoreError | C> =>
      Effect.flatMap(sql, (s) => s.execute(text, params)).pipe(
        Effect.catch((error: PgError): Effect.Effect<never, StoreError | C> => (error._tag === "UniqueViolation" ? Effect.fail(conflict()) : Effect.fail(toStoreError(error))))
      ),
    transaction
  }
}

/** A store error whose cause was a retryable failure, after the retries ran out. */
const busy = (error: unknown) => new StoreError({ message: "Database busy, retry shortly", busy: true, cause: error })

/** `host:port` (or the socket directory) a connection URL points at; never its credentials. */
const serverOf = (url: string): string => {
  if (!URL.canParse(url)) return "DATABASE_URL"
  const parsed = new URL(url)
  const host = parsed.searchParams.get("host") ?? (parsed.hostname || "localhost")
  return host.startsWith("/") ? host : `${host}:${parsed.port || 5432}`
}

const connectFailures: Record<string, string> = {
  ECONNREFUSED: "connection refused (is PostgreSQL running there?)",
  ENOTFOUND: "host not found",
  ETIMEDOUT: "no answer (timed out)",
  ECONNRESET: "connection reset"
}

/** The first connection at start failed: say why and to which server, instead of "busy, retry" (nothing would retry). */
const connectError = (url: string, error: PgError): StoreError =>
  error._tag === "StoreUnavailable"
    ? new StoreError({
        message: `cannot connect to PostgreSQL at ${serverOf(url)}: ${connectFailures[error.code] ?? error.message}`,
        busy: false,
        cause: error
      })
    : toStoreError(error)

export class PostgresDatabase extends Context.Service<PostgresDatabase, PgStoreKit>()("slipway/PostgresDatabase") {}

/** A store of the PostgreSQL backend, made from the server's database. */
export const onPostgres = <A>(make: (kit: PgStoreKit) => A): Effect.Effect<A, never, PostgresDatabase> => Effect.map(PostgresDatabase, make)

/** The transactions of the server's database (SERIALIZABLE, run again on conflict), shared by every store. */
export const PostgresTransactions = Layer.effect(Transactions, onPostgres((kit) => Transactions.of({ transaction: kit.transaction })))

export interface PostgresOptions extends PoolOptions {
  readonly url: string
}

/** The pool (checked), migrated under the advisory lock, closed with the scope; failing to reach the database fails the layer. */
export const PostgresDatabaseLive = ({ url, ...options }: PostgresOptions) =>
  Layer.effect(
    PostgresDatabase,
    Effect.gen(function* () {
      const client = yield* Effect.acquireRelease(
        Effect.sync(() => makeClient(makePool(url, options))),
        (client) => Effect.promise(() => client.pool.end())
      )
      yield* Effect.mapError(client.execute("SELECT 1"), (error) => connectError(url, error))
      yield* Effect.mapError(migrate(client), toStoreError)
      return makeKit(client)
    })
  )
