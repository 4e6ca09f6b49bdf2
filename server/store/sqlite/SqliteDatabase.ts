/** The server's SQLite file as a service: opened with its pragmas and migrations, checkpointed and closed with the scope. */
import { Context, Effect, Layer } from "effect"
import { closeDatabase, type Db, openDatabase } from "./database.ts"
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
