/**
 * `slipway backup <file>` and `slipway restore <file>`: the SQLite database of a local server
 * (DATABASE_PATH or --database), through server/store/sqlite/backup.ts (docs/backup.md). Loaded only when
 * used, so the other commands never open SQLite.
 */
import { CliError, ExitCode } from "./errors.ts"
import type { Output } from "./output.ts"

export interface BackupOptions {
  readonly database?: string
  readonly force?: boolean
  readonly createDatabase?: boolean
}

const databaseOf = (options: BackupOptions): string => {
  if (process.env.DATABASE_URL && !options.database) {
    throw new CliError(ExitCode.usage, "UsageError", "DATABASE_URL is set: backup and restore work on the SQLite file; back up PostgreSQL with pg_dump (docs/backup.md)")
  }
  const path = options.database ?? process.env.DATABASE_PATH ?? "./data/slipway.db"
  if (path === ":memory:") throw new CliError(ExitCode.usage, "UsageError", "an in-memory database (:memory:) cannot be backed up or restored")
  return path
}

const exitCodes = { missing: ExitCode.notFound, exists: ExitCode.failure, busy: ExitCode.failure, invalid: ExitCode.usage } as const

const load = async () => {
  const module = await import("../server/store/sqlite/backup.ts")
  const translate = (error: unknown): never => {
    if (error instanceof module.BackupError) throw new CliError(exitCodes[error.reason], `Backup${error.reason[0]!.toUpperCase()}${error.reason.slice(1)}`, error.message)
    throw error
  }
  return { ...module, translate }
}

export const backup = async (output: Output, file: string, options: BackupOptions) => {
  const database = databaseOf(options)
  const { backupDatabase, translate } = await load()
  const result = await backupDatabase(database, file, { force: Boolean(options.force) }).catch(translate)
  output.result(
    { database: result.database, backup: result.backup, bytes: result.bytes, pages: result.pages, secrets_key: result.secretsKey ?? null, milliseconds: result.milliseconds },
    () =>
      [
        `backed up ${result.database} to ${result.backup} (${result.bytes} bytes, ${result.pages} pages, ${result.milliseconds} ms)`,
        result.secretsKey ? `the secrets key is in ${result.secretsKey} (mode 0600): keep it with the backup` : "no secrets key file beside the database (SLIPWAY_SECRETS_KEY?): keep that key with the backup"
      ].join("\n")
  )
}

export const restore = async (output: Output, file: string, options: BackupOptions) => {
  const database = databaseOf(options)
  const { restoreDatabase, translate } = await load()
  let result: ReturnType<typeof restoreDatabase>
  try {
    result = restoreDatabase(file, database, { create: Boolean(options.createDatabase) })
  } catch (error) {
    return translate(error)
  }
  output.result(
    { database: result.database, backup: result.backup, previous: result.previous ?? null, secrets_key: result.secretsKey ?? null },
    () =>
      [
        `restored ${result.database} from ${result.backup}`,
        ...(result.previous ? [`the database it replaced is ${result.previous}`] : []),
        ...(result.secretsKey ? [`the secrets key was restored to ${result.secretsKey}`] : [])
      ].join("\n")
  )
}
