/**
 * The one failure a store reports besides the domain's own errors: the backend could not do the
 * work. `busy` marks contention (a lock held too long by another writer, a serialization
 * failure): the client may retry, and the HTTP layer answers 503 with Retry-After. Anything else
 * is a fault of the backend and answers 500. Backend details (SQLite codes, Postgres SQLSTATEs)
 * are translated into this inside each backend's folder and nowhere else.
 */
import { Data } from "effect"

export class StoreError extends Data.TaggedError("StoreError")<{
  readonly message: string
  readonly busy: boolean
  readonly cause?: unknown
}> {}

/**
 * The transaction combinator every store offers. The effect runs in one transaction of the
 * backend: its writes commit together when it succeeds and roll back when it fails, dies or is
 * interrupted. What it reads cannot change (in this or another process) before it writes.
 * Nested calls join the outer transaction.
 */
export type Transactional = <A, E, R>(effect: import("effect").Effect.Effect<A, E, R>) => import("effect").Effect.Effect<A, E | StoreError, R>
