/**
 * Refusals out of synchronous work: repository code runs inside better-sqlite3 transactions,
 * which roll back on a throw. A `Refusal` is the throw that carries the API error to answer.
 */
// @ts-nocheck

import { Effect, Result } from "effect"
import type { ApiError } from "../core/index.ts"

/** Thrown inside synchronous work (and a transaction, which it rolls back) to answer `error`. */
export class Refusal {
  readonly error: ApiError
  constructor(error: ApiError) {
    this.error = error
  }
}

export const refuse = (error: ApiError): never => {
  throw new Refusal(error)
}

/** The success of a core decision, or a refusal. */
export const orRefuse = <A, E extends ApiError>(result: Result.Result<A, E>): A =>
  Result.isSuccess(result) ? result.success : refuse(result.failure)

/**
 * Runs synchronous work: a `Refusal` becomes the typed failure, `recover` may name the API error
 * for another throw (e.g. a UNIQUE violation), anything else is a defect (500, or 503 when busy).
 */
export const refusable = <A>(work: () => A, recover?: (error: unknown) => ApiError | undefined): Effect.Effect<A, ApiError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(work())
    } catch (error) {
      if (error instanceof Refusal) return Effect.fail(error.error)
      const recovered = recover?.(error)
      if (recovered) return Effect.fail(recovered)
      throw error
    }
  })
