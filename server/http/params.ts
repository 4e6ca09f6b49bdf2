/**
 * Path parameters without a schema decode on the hot path. Most routes' parameters are uuids
 * (`/v2/deployments/{deployment_id}/revisions/{revision_id}`): for a params struct whose every
 * field is the core's `Uuid`, one regex per segment and `toLowerCase` give exactly what the schema
 * decode gives (the decoded `Uuid` is lowercase), at a tenth of its cost. Anything the regex
 * refuses goes through the schema decode, which reports the 422 issues, so errors are unchanged.
 */
import type { Result as ResultType } from "effect"
import { Result } from "effect"
import { type Endpoint, isUuid, Uuid, type ValidationIssue } from "../../core/index.ts"

export type ParamsDecoder = (input: Record<string, string>) => ResultType.Result<any, Array<ValidationIssue>>

/** The names of a path template's parameters, in order (`/a/{x}/b/{y}` → `["x", "y"]`). */
const templateParams = (path: string): Array<string> => [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!)

/**
 * `slow` (the schema decode) behind a uuid check when the endpoint's params are all `Uuid` fields
 * named as in its path template; `slow` itself otherwise.
 */
export const fastParams = (endpoint: Endpoint, slow: ParamsDecoder): ParamsDecoder => {
  const fields = (endpoint.params as { readonly fields?: Readonly<Record<string, unknown>> } | undefined)?.fields
  if (fields === undefined) return slow
  const names = Object.keys(fields)
  const inPath = templateParams(endpoint.path)
  const allUuids = names.length > 0 && names.every((name) => fields[name] === Uuid)
  if (!allUuids || names.length !== inPath.length || !names.every((name) => inPath.includes(name))) return slow
  if (names.length === 1) {
    const [name] = names as [string]
    return (input) => {
      const value = input[name]!
      return isUuid(value) ? Result.succeed({ [name]: value.toLowerCase() }) : slow(input)
    }
  }
  return (input) => {
    const out: Record<string, string> = {}
    for (const name of names) {
      const value = input[name]!
      if (!isUuid(value)) return slow(input)
      out[name] = value.toLowerCase()
    }
    return Result.succeed(out)
  }
}
