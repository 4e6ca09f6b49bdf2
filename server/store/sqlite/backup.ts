/**
 * Backup and restore of the SQLite database (docs/backup.md), used by `slipway backup` and
 * `slipway restore`.
 *
 * Backup uses SQLite's online backup API (better-sqlite3's `db.backup`) on a connection of its
 * own: it copies the database as one read transaction sees it, so the copy is consistent while
 * the server keeps serving and writing (WAL readers do not block writers, and the writer does not
 * wait for the copy). All pages are copied in one step, so a busy writer cannot make it restart
 * forever. The copy is written beside the target, checked (`PRAGMA quick_check`), switched to a
 * rollback journal (one self-contained file) and only then renamed into place. The secrets key
 * file (`<database>.secrets-key`), without which stored secrets cannot be opened, is copied
 * with it as `<backup>.secrets-key` (mode 0600).
 *
 * Restore refuses while anything holds the database: it takes SQLite's exclusive lock on it
 * (`locking_mode=EXCLUSIVE`, `BEGIN EXCLUSIVE`), which a running server's open connection
 * prevents, and keeps that lock until the restored file is in place. The current database (and
 * its key file) is moved aside to `<database>.pre-restore-<time>`, never deleted.
 */
import { chmodSync, copyFileSync, existsSync, fsyncSync, openSync, closeSync, renameSync, rmSync, statSync } from "node:fs"
import { dirname, resolve } from "node:path"
import Database from "better-sqlite3"
import { secretsKeyPath } from "../../secrets/secretsKey.ts"

export class BackupError extends Error {
  override readonly name = "BackupError"
  /** `missing`: a file named does not exist; `exists`: the target exists (use force); `busy`: a server holds the database; `invalid`: not a Slipway database. */
  readonly reason: "missing" | "exists" | "busy" | "invalid"
  constructor(reason: BackupError["reason"], message: string) {
    super(message)
    this.reason = reason
  }
}

export interface BackupResult {
  readonly database: string
  readonly backup: string
  readonly bytes: number
  readonly pages: number
  /** The copied secrets key file, when the database has one. */
  readonly secretsKey: string | undefined
  readonly milliseconds: number
}

export interface RestoreResult {
  readonly database: string
  readonly backup: string
  /** Where the database that was replaced now is (undefined when there was none). */
  readonly previous: string | undefined
  readonly secretsKey: string | undefined
}

const fsyncFile = (path: string) => {
  const fd = openSync(path, "r")
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** The directory entry of a rename is durable only once the directory is synced. */
const fsyncDirectory = (path: string) => {
  try {
    fsyncFile(dirname(path))
  } catch {
    // Some file systems refuse to open a directory for syncing; the rename is still atomic.
  }
}

const removeSidecars = (path: string) => {
  for (const suffix of ["-wal", "-shm", "-journal"]) rmSync(`${path}${suffix}`, { force: true })
}

/** Opens `path` read-only as a SQLite file and checks it: a readable, intact Slipway database. */
const checkDatabase = (path: string): { readonly pages: number } => {
  let db: Database.Database
  try {
    db = new Database(path, { readonly: true, fileMustExist: true })
  } catch (error) {
    throw new BackupError("invalid", `${path} is not a SQLite database: ${(error as Error).message}`)
  }
  try {
    const check = db.pragma("quick_check", { simple: true })
    if (check !== "ok") throw new BackupError("invalid", `${path} fails SQLite's integrity check: ${String(check)}`)
    const tables = new Set((db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((row) => row.name))
    if (!tables.has("schema_migrations") || !tables.has("deployments") || !tables.has("api_keys")) throw new BackupError("invalid", `${path} is a SQLite file but not a Slipway database (no deployments or api_keys table)`)
    return { pages: Number(db.pragma("page_count", { simple: true })) }
  } catch (error) {
    if (error instanceof BackupError) throw error
    throw new BackupError("invalid", `${path} is not a readable SQLite database: ${(error as Error).message}`)
  } finally {
    db.close()
  }
}

/** Copies the database at `databasePath` (which may be serving) to `backupPath`. */
export const backupDatabase = async (databasePath: string, backupPath: string, options: { readonly force?: boolean } = {}): Promise<BackupResult> => {
  const started = performance.now()
  const source = resolve(databasePath)
  const target = resolve(backupPath)
  if (!existsSync(source)) throw new BackupError("missing", `no database at ${databasePath}`)
  if (source === target) throw new BackupError("exists", "the backup cannot be the database itself")
  if (existsSync(target) && !options.force) throw new BackupError("exists", `${backupPath} exists (pass --force to replace it)`)
  if (!existsSync(dirname(target))) throw new BackupError("missing", `the directory ${dirname(backupPath)} does not exist`)
  const partial = `${target}.partial-${process.pid}`
  removeSidecars(partial)
  rmSync(partial, { force: true })
  const db = new Database(source, { fileMustExist: true, timeout: 10_000 })
  try {
    // One step copies every page: a step holds one read transaction, so the copy is one consistent
    // snapshot, and writes by the server (another connection) cannot restart it.
    await db.backup(partial, { progress: () => 0x7fffffff })
  } catch (error) {
    rmSync(partial, { force: true })
    throw error
  } finally {
    db.close()
  }
  try {
    // The copy keeps the source's WAL flag: make it one self-contained file.
    const copy = new Database(partial, { fileMustExist: true })
    try {
      copy.pragma("journal_mode = DELETE")
    } finally {
      copy.close()
    }
    removeSidecars(partial)
    const { pages } = checkDatabase(partial)
    fsyncFile(partial)
    renameSync(partial, target)
    fsyncDirectory(target)
    let secretsKey: string | undefined
    if (existsSync(secretsKeyPath(source))) {
      secretsKey = secretsKeyPath(target)
      copyFileSync(secretsKeyPath(source), `${secretsKey}.partial`)
      chmodSync(`${secretsKey}.partial`, 0o600)
      fsyncFile(`${secretsKey}.partial`)
      renameSync(`${secretsKey}.partial`, secretsKey)
    }
    return { database: source, backup: target, bytes: statSync(target).size, pages, secretsKey, milliseconds: Math.round(performance.now() - started) }
  } catch (error) {
    rmSync(partial, { force: true })
    removeSidecars(partial)
    throw error
  }
}

/**
 * Replaces the database at `databasePath` with the backup at `backupPath`; refuses while a server
 * (or anything else) has the database open. Without an existing database, `create` must be set.
 */
export const restoreDatabase = (backupPath: string, databasePath: string, options: { readonly create?: boolean } = {}): RestoreResult => {
  const backup = resolve(backupPath)
  const target = resolve(databasePath)
  if (!existsSync(backup)) throw new BackupError("missing", `no backup at ${backupPath}`)
  checkDatabase(backup)
  const exists = existsSync(target)
  if (!exists && !options.create) throw new BackupError("missing", `no database at ${databasePath} (pass --create-database to restore into a new file)`)
  if (!existsSync(dirname(target))) throw new BackupError("missing", `the directory ${dirname(databasePath)} does not exist`)

  // Hold the exclusive lock from the check until the restored file is in place: a server that
  // has the database open prevents it, and one starting meanwhile waits for it.
  let lock: Database.Database | undefined
  if (exists) {
    lock = new Database(target, { fileMustExist: true, timeout: 0 })
    try {
      lock.pragma("locking_mode = EXCLUSIVE")
      lock.exec("BEGIN EXCLUSIVE")
      lock.exec("COMMIT")
      // Everything the WAL holds goes into the file that is moved aside, which becomes one
      // self-contained file (no -wal left behind under the database's name).
      lock.pragma("wal_checkpoint(TRUNCATE)")
      lock.pragma("journal_mode = DELETE")
    } catch (error) {
      lock.close()
      if ((error as { code?: string }).code === "SQLITE_BUSY" || (error as { code?: string }).code === "SQLITE_LOCKED") {
        throw new BackupError("busy", `${databasePath} is in use (a Slipway server has it open): stop the server, then restore`)
      }
      throw error
    }
  }
  const staged = `${target}.restore-${process.pid}`
  try {
    copyFileSync(backup, staged)
    fsyncFile(staged)
    const stamp = new Date().toISOString().replace(/[:.]/g, "-")
    const previous = exists ? `${target}.pre-restore-${stamp}` : undefined
    if (previous) renameSync(target, previous)
    removeSidecars(target)
    renameSync(staged, target)
    fsyncDirectory(target)
    let secretsKey: string | undefined
    if (existsSync(secretsKeyPath(backup))) {
      secretsKey = secretsKeyPath(target)
      if (existsSync(secretsKey) && previous) renameSync(secretsKey, secretsKeyPath(previous))
      copyFileSync(secretsKeyPath(backup), secretsKey)
      chmodSync(secretsKey, 0o600)
    }
    return { database: target, backup, previous, secretsKey }
  } catch (error) {
    rmSync(staged, { force: true })
    throw error
  } finally {
    // The lock's connection is on the moved-aside file (in rollback-journal mode now): closing it
    // touches nothing under the database's name.
    lock?.close()
  }
}
