/** The server's SQLite file as a service: opened with its pragmas and migrations, checkpointed and closed with the scope. */
import { Context, Effect, Layer } from "effect"
import { Transactions } from "../Transactions.ts"
import { closeDatabase, type Db, openDatabase, sqliteTransactional } from "./database.ts"
import { sqliteMigrations } from "./migrations.ts"

export class SqliteDatabase extends Context.Service<SqliteDatabase, { readonly db: Db; readonly path: string }>()("slipway/SqliteDatabase") {}

export interface SqliteOptions {
  readonly path: string
  readonly synchronous?: "NORMAL" | "FULL"
}

export const SqliteDatabaseLive = ({ path, synchronous }: SqliteOptions) =>
  Layer.effect(
    SqliteDatabase,
    Effect.acquireRelease(
      Effect.sync(() => ({ db: openDatabase(path, sqliteMigrations, synchronous), path })),
      ({ db }) => Effect.sync(() => closeDatabase(db))
    )
  )

/** A store of the SQLite backend, made from the server's connection. */
export const onSqlite = <A>(make: (db: Db) => A): Effect.Effect<A, never, SqliteDatabase> => Effect.map(SqliteDatabase, ({ db }) => make(db))

/** The transactions of the server's SQLite file: `BEGIN IMMEDIATE`, shared by every store. */
export const SqliteTransactions = Layer.effect(Transactions, onSqlite((db) => Transactions.of({ transaction: sqliteTransactional(db) })))
