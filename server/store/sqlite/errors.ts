/** SQLite's failures in the store's terms: the only place that reads better-sqlite3 error codes. */
import { Effect } from "effect"
import { StoreError } from "../StoreError.ts"

const codeOf = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === "string" ? code : undefined
}

/** Extended codes too (SQLITE_BUSY_SNAPSHOT, SQLITE_LOCKED_SHAREDCACHE, ...): contention, not a bug. */
export const isBusy = (error: unknown): boolean => {
  const code = codeOf(error)
  return code !== undefined && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"))
}

/** SQLite refusing a duplicate of a UNIQUE index; `index` narrows to one constraint (e.g. "deployments.name"). */
export const isUniqueViolation = (error: unknown, index?: string): boolean =>
  codeOf(error) === "SQLITE_CONSTRAINT_UNIQUE" && (index === undefined || String((error as Error).message).includes(index))

export const toStoreError = (error: unknown): StoreError =>
  error instanceof StoreError
    ? error
    : new StoreError({
        message: isBusy(error) ? "Database busy, retry shortly" : `SQLite: ${(error as Error)?.message ?? String(error)}`,
        busy: isBusy(error),
        cause: error
      })

/** Runs synchronous SQLite work as an Effect that completes within its first poll (no promise hop). */
export const op = <A>(work: () => A): Effect.Effect<A, StoreError> => Effect.try({ try: work, catch: toStoreError })

/**
 * Synchronous work that may take a name already taken (a lost race the UNIQUE index still
 * guards): the index's refusal (of `index`, or of any UNIQUE index) fails with `conflict()`.
 */
export const opNaming = <A, C>(conflict: () => C, work: () => A, index?: string): Effect.Effect<A, C | StoreError> =>
  Effect.suspend((): Effect.Effect<A, C | StoreError> => {
    try {
      return Effect.succeed(work())
    } catch (error) {
      return Effect.fail(isUniqueViolation(error, index) ? conflict() : toStoreError(error))
    }
  })
