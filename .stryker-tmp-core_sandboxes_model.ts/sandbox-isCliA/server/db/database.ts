/** Opens the SQLite file with the pragmas the server relies on and applies pending migrations. */
// @ts-nocheck

import Database from "better-sqlite3"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import type { Migration } from "./migrations.ts"

export type Db = Database.Database

/**
 * WAL with synchronous=NORMAL: every committed transaction is in the WAL before the call
 * returns, so a killed process (SIGKILL, crash) loses nothing it acknowledged; only a power loss
 * of the host can drop the last commits. FULL would fsync on every commit, which on this class of
 * disk costs an order of magnitude in write throughput (see bench/). SLIPWAY_SYNCHRONOUS=FULL
 * trades that speed for power-loss durability.
 */
export const openDatabase = (path: string, migrations: ReadonlyArray<Migration>, synchronous: "NORMAL" | "FULL" = "NORMAL"): Db => {
  if (path !== ":memory:" && !path.startsWith("file:")) mkdirSync(dirname(path), { recursive: true })
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

interface Transactions {
  readonly deferred: Transaction
  readonly immediate: Transaction
}

const transactions = new WeakMap<Db, Transactions>()

/** One wrapper per connection: `db.transaction(fn)` builds four wrappers per call, a cost on every request. */
const transactionsOf = (db: Db): Transactions => {
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

export const migrate = (db: Db, migrations: ReadonlyArray<Migration>): ReadonlyArray<string> => {
  db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
  const applied = new Set(db.prepare("SELECT id FROM schema_migrations").pluck().all() as Array<string>)
  const record = db.prepare("INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)")
  const pending = [...migrations].sort((a, b) => a.id.localeCompare(b.id)).filter((migration) => !applied.has(migration.id))
  for (const migration of pending) {
    immediate(db)(() => {
      db.exec(migration.sql)
      record.run(migration.id, new Date().toISOString())
    })
  }
  return pending.map((migration) => migration.id)
}

/** Flushes the WAL into the main file and closes; used on graceful shutdown. */
export const closeDatabase = (db: Db): void => {
  if (!db.open) return
  db.pragma("wal_checkpoint(TRUNCATE)")
  db.close()
}
