/** Opens the SQLite file with the pragmas the server relies on and applies pending migrations. */
import Database from "better-sqlite3"
import { dirname } from "node:path"
import { Effect, Exit } from "effect"
import { makeDirectory } from "../../directories.ts"
import type { StoreError } from "../StoreError.ts"
import type { Transactional } from "../Transactions.ts"
import { toStoreError } from "./errors.ts"

export type Db = Database.Database

/**
 * WAL with synchronous=NORMAL: every committed transaction is in the WAL before the call
 * returns, so a killed process (SIGKILL, crash) loses nothing it acknowledged; only a power loss
 * of the host can drop the last commits. FULL would fsync on every commit, which on this class of
 * disk costs an order of magnitude in write throughput (see bench/). `synchronous: "FULL"` (for
 * an embedder; no setting of `npm start` sets it) trades that speed for power-loss durability.
 */
/** A schema change, applied once (by id) in its own transaction. */
export interface Migration {
  readonly id: string
  readonly sql: string
}

export const openDatabase = (path: string, migrations: ReadonlyArray<Migration>, synchronous: "NORMAL" | "FULL" = "NORMAL"): Db => {
  if (path !== ":memory:" && !path.startsWith("file:")) makeDirectory(dirname(path))
  const db = new Database(path)
  applyPragmas(db, synchronous)
  migrate(db, migrations)
  return db
}

/** The connection settings every process on the file uses (the benchmark's floor too, so it measures the same SQLite). */
export const applyPragmas = (db: Db, synchronous: "NORMAL" | "FULL" = "NORMAL"): void => {
  db.pragma("journal_mode = WAL")
  db.pragma(`synchronous = ${synchronous}`)
  db.pragma("foreign_keys = ON")
  db.pragma("busy_timeout = 5000")
}

/** Runs a callback in one transaction (a savepoint when already inside one); a throw rolls back. */
export type Transaction = <A>(work: () => A) => A

interface Modes {
  readonly deferred: Transaction
  readonly immediate: Transaction
}

const transactions = new WeakMap<Db, Modes>()

/** One wrapper per connection: `db.transaction(fn)` builds four wrappers per call, a cost on every request. */
const transactionsOf = (db: Db): Modes => {
  let found = transactions.get(db)
  if (!found) {
    const run = db.transaction((work: () => unknown) => work())
    found = { deferred: run.deferred as Transaction, immediate: run.immediate as Transaction }
    transactions.set(db, found)
  }
  return found
}

/**
 * `BEGIN IMMEDIATE`: the write lock is taken before the first read, so what the work reads
 * cannot change (in this or another process) before it writes.
 */
export const immediate = (db: Db): Transaction => transactionsOf(db).immediate

/** `BEGIN DEFERRED`: several reads that see one state of the database. */
export const deferred = (db: Db): Transaction => transactionsOf(db).deferred

/**
 * Applies the migrations not applied yet. Whether one is applied is read INSIDE its
 * `BEGIN IMMEDIATE` transaction: several processes starting at once on a fresh file queue on the
 * write lock, and each one that gets it after another's migration sees it applied and skips it
 * (read outside the lock, 1–3 of 6 concurrent first starts failed on "table ... already exists").
 */
export const migrate = (db: Db, migrations: ReadonlyArray<Migration>): ReadonlyArray<string> => {
  db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
  const isApplied = db.prepare("SELECT 1 FROM schema_migrations WHERE id = ?").pluck()
  const record = db.prepare("INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)")
  // Outside the lock only to skip what is surely applied (an applied migration stays applied).
  const known = new Set(db.prepare("SELECT id FROM schema_migrations").pluck().all() as Array<string>)
  const applied: Array<string> = []
  for (const migration of [...migrations].sort((a, b) => a.id.localeCompare(b.id)).filter((migration) => !known.has(migration.id))) {
    immediate(db)(() => {
      if (isApplied.get(migration.id) !== undefined) return
      db.exec(migration.sql)
      record.run(migration.id, new Date().toISOString())
      applied.push(migration.id)
    })
  }
  return applied
}

/** Flushes the WAL into the main file and closes; used on graceful shutdown. */
/**
 * `make(db)` once per connection: a repository's statements are prepared once however many
 * stores use them.
 */
export const perDatabase = <A>(make: (db: Db) => A): ((db: Db) => A) => {
  const made = new WeakMap<Db, A>()
  return (db) => {
    let found = made.get(db)
    if (found === undefined) {
      found = make(db)
      made.set(db, found)
    }
    return found
  }
}

export const closeDatabase = (db: Db): void => {
  if (!db.open) return
  db.pragma("wal_checkpoint(TRUNCATE)")
  db.close()
}

/**
 * The store's transaction combinator over one connection: `BEGIN IMMEDIATE` before the effect,
 * `COMMIT` when it succeeds, `ROLLBACK` when it fails or dies. A call inside a running
 * transaction joins it. SQLite work is synchronous, so the effect runs to its end within the
 * same turn of the event loop and no other request's statements interleave with it.
 */
export const sqliteTransactional = perDatabase((db: Db): Transactional => {
  const begin = db.prepare("BEGIN IMMEDIATE")
  const commit = db.prepare("COMMIT")
  const rollback = db.prepare("ROLLBACK")
  const rollbackQuietly = () => {
    if (db.inTransaction) rollback.run()
  }
  return <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreError, R> =>
    Effect.suspend(() => {
      if (db.inTransaction) return effect
      try {
        begin.run()
      } catch (error) {
        return Effect.fail(toStoreError(error))
      }
      return Effect.flatMap(Effect.exit(effect), (exit): Effect.Effect<A, E | StoreError> => {
        if (Exit.isFailure(exit)) {
          rollbackQuietly()
          return exit
        }
        try {
          commit.run()
        } catch (error) {
          rollbackQuietly()
          return Effect.fail(toStoreError(error))
        }
        return exit
      })
    })
})
