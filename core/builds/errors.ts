/** The one error of the build's pure part: a langgraph.json (or its project) the CLI would refuse, with the CLI's message. */
import { Result, Schema } from "effect"

/** Why a langgraph.json cannot become a Dockerfile: the message the langgraph CLI gives (paths relative to the repository). */
export class LanggraphConfigError extends Schema.TaggedError<LanggraphConfigError>()("LanggraphConfigError", {
  message: Schema.String
}) {}

/** Thrown inside this module's pure functions, turned into a `LanggraphConfigError` result at their boundary. */
class ConfigProblem {
  readonly message: string
  constructor(message: string) {
    this.message = message
  }
}

/** Stops the current check with the CLI's message. */
export const refuse = (message: string): never => {
  throw new ConfigProblem(message)
}

/** Runs a check that may `refuse`; anything else thrown is a defect and propagates. */
export const attempt = <A>(run: () => A): Result.Result<A, LanggraphConfigError> => {
  try {
    return Result.succeed(run())
  } catch (error) {
    if (error instanceof ConfigProblem) return Result.fail(new LanggraphConfigError({ message: error.message }))
    throw error
  }
}

/** The value of a result, or `refuse` with its message (to compose checks that return results). */
export const orRefuse = <A>(result: Result.Result<A, LanggraphConfigError>): A => (Result.isFailure(result) ? refuse(result.failure.message) : result.success)
