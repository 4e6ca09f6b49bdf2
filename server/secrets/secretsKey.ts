/**
 * The key that seals secrets at rest (deployment secret values, integrations' webhook secrets).
 *
 * `SLIPWAY_SECRETS_KEY` wins when set (and is required on PostgreSQL, `secretsKeyProblem`). Otherwise the server encrypts by default: on first start
 * it generates a random 256-bit key and stores it beside the database file as
 * `<database>.secrets-key` (mode 0600, created exclusively so processes starting together agree
 * on one key), and logs once where it is (never the key). An in-memory database gets a key that
 * lives as long as the process, like the data.
 *
 * Rotation (`npm run keys -- secrets rotate`) writes the new key to `<key file>.next` first,
 * re-seals every stored value in one transaction, then renames `.next` over the key file: should
 * it stop between the commit and the rename, both keys open values (see `makeSecretBox`) until
 * the next rotation finishes the job.
 */
import { randomBytes } from "node:crypto"
import { chmodSync, existsSync, linkSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs"
import { dirname } from "node:path"
import { isFileDatabase } from "../dataDir.ts"
import { makeDirectory } from "../directories.ts"

export interface SecretsKeys {
  /** The key new values are sealed with. */
  readonly key: string
  /** Keys that may still have sealed stored values (an unfinished rotation). */
  readonly previous: ReadonlyArray<string>
  readonly source: "env" | "file" | "memory"
  /** The key file, when the key lives in one. */
  readonly path: string | undefined
  /** True when this call created the key file. */
  readonly created: boolean
}

export const secretsKeyPath = (databasePath: string): string => `${databasePath}.secrets-key`

export const newSecretsKey = (): string => randomBytes(32).toString("hex")

const readKey = (path: string): string => {
  const text = readFileSync(path, "utf8").trim()
  if (text.length === 0) throw new Error(`the secrets key file ${path} is empty`)
  return text
}

/** Writes `key` to `path` with mode 0600, only if `path` does not exist yet (atomic: link of a complete temporary file). */
export const createExclusive = (path: string, key: string): boolean => {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`
  writeFileSync(temporary, `${key}\n`, { mode: 0o600, flag: "wx" })
  try {
    linkSync(temporary, path)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false
    throw error
  } finally {
    unlinkSync(temporary)
  }
}

/** Writes `key` to `path` with mode 0600, replacing what is there. */
export const writeKeyFile = (path: string, key: string): void => {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`
  writeFileSync(temporary, `${key}\n`, { mode: 0o600, flag: "wx" })
  renameSync(temporary, path)
}

export interface SecretsKeySettings {
  readonly databasePath: string
  /** Set: the data is in PostgreSQL, which several replicas may share. */
  readonly databaseUrl?: string | undefined
  readonly secretsKey: string | undefined
}

/**
 * Why the key cannot be had, or undefined. On PostgreSQL (`DATABASE_URL`) every replica must
 * seal and open secrets with the same key, so it comes from `SLIPWAY_SECRETS_KEY`: a key file
 * generated beside `DATABASE_PATH` would be one machine's alone (a key file an earlier version
 * made there is still read, never created).
 */
export const secretsKeyProblem = (settings: SecretsKeySettings): string | undefined =>
  settings.secretsKey || settings.databaseUrl === undefined || (isFileDatabase(settings.databasePath) && existsSync(secretsKeyPath(settings.databasePath)))
    ? undefined
    : "DATABASE_URL is set, so SLIPWAY_SECRETS_KEY must be too: every replica of a PostgreSQL database seals and opens secrets with the same key (generate one with `openssl rand -hex 32`; keep it with the database's backups)"

export const resolveSecretsKeys = (options: SecretsKeySettings): SecretsKeys => {
  if (options.secretsKey) return { key: options.secretsKey, previous: [], source: "env", path: undefined, created: false }
  const problem = secretsKeyProblem(options)
  if (problem !== undefined) throw new Error(problem)
  if (!isFileDatabase(options.databasePath)) return { key: newSecretsKey(), previous: [], source: "memory", path: undefined, created: false }
  const path = secretsKeyPath(options.databasePath)
  makeDirectory(dirname(path))
  const created = existsSync(path) ? false : createExclusive(path, newSecretsKey())
  const mode = statSync(path).mode & 0o777
  if (mode & 0o077) chmodSync(path, 0o600)
  const next = `${path}.next`
  const previous = existsSync(next) ? [readKey(next)] : []
  return { key: readKey(path), previous, source: "file", path, created }
}

/** Finishes a file rotation after its transaction committed: the new key becomes the key. */
export const promoteNextKey = (path: string): void => renameSync(`${path}.next`, path)
