/**
 * The one failure a store reports besides the domain's own errors: the backend could not do the
 * work. `busy` marks contention (a lock held too long by another writer, a serialization
 * failure): the client may retry, and the HTTP layer answers 503 with Retry-After. Anything else
 * is a fault of the backend and answers 500. Backend details (SQLite codes, Postgres SQLSTATEs)
 * are translated into this inside each backend's folder and nowhere else.
 */
import { Data, type Effect } from "effect"

export class StoreError extends Data.TaggedError("StoreError")<{
  readonly message: string
  readonly busy: boolean
  readonly cause?: unknown
}> {}

/** A store call: its answer, or the backend's failure (or one of the domain's, `E`). */
export type StoreOp<A, E = never> = Effect.Effect<A, StoreError | E>
