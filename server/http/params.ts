/**
 * Path parameters without a schema decode on the hot path. Most routes' parameters are uuids
 * (`/v2/deployments/{deployment_id}/revisions/{revision_id}`) or plain names: for a params struct
 * whose every field is the core's `Uuid` or a plain string (no checks, no transformation), one
 * regex per uuid segment and `toLowerCase` (what the decoded `Uuid` is), or the lone-surrogate
 * check for a name, give exactly what the schema decode gives, at a tenth of its cost. A value the
 * quick check refuses goes through the schema decode, which reports the 422 issues: errors are
 * unchanged.
 */
import type { Result as ResultType } from "effect"
import { Result } from "effect"
import { type Endpoint, isUuid, Uuid, type ValidationIssue } from "../../core/index.ts"

export type ParamsDecoder = (input: Record<string, string>) => ResultType.Result<any, Array<ValidationIssue>>

/** What a field's quick check answers: the decoded value, or `undefined` for "ask the schema". */
type Quick = (value: string) => string | undefined

const quickUuid: Quick = (value) => (isUuid(value) ? value.toLowerCase() : undefined)
const quickString: Quick = (value) => ((value as string & { isWellFormed(): boolean }).isWellFormed() ? value : undefined)

interface FieldSchema {
  readonly ast: { readonly _tag: string; readonly checks?: unknown; readonly encoding?: unknown; readonly context?: unknown }
}

const quickOf = (field: unknown): Quick | undefined => {
  if (field === Uuid) return quickUuid
  const ast = (field as FieldSchema | undefined)?.ast
  if (ast?._tag === "String" && ast.checks === undefined && ast.encoding === undefined && ast.context === undefined) return quickString
  return undefined
}

/** The names of a path template's parameters (`/a/{x}/b/{y}` → `["x", "y"]`). */
const templateParams = (path: string): Array<string> => [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!)

/**
 * `slow` (the schema decode) behind quick checks when every field of the endpoint's params has
 * one and the fields are exactly its path template's parameters; `slow` itself otherwise.
 */
export const fastParams = (endpoint: Endpoint, slow: ParamsDecoder): ParamsDecoder => {
  const fields = (endpoint.params as { readonly fields?: Readonly<Record<string, unknown>> } | undefined)?.fields
  if (fields === undefined) return slow
  const names = Object.keys(fields)
  const inPath = templateParams(endpoint.path)
  if (names.length === 0 || names.length !== inPath.length || !names.every((name) => inPath.includes(name))) return slow
  const checks = names.map((name) => quickOf(fields[name]))
  if (checks.some((check) => check === undefined)) return slow
  const quick = checks as Array<Quick>
  return (input) => {
    const out: Record<string, string> = {}
    for (let index = 0; index < names.length; index++) {
      const name = names[index]!
      const value = input[name]
      const decoded = typeof value === "string" ? quick[index]!(value) : undefined
      if (decoded === undefined) return slow(input)
      out[name] = decoded
    }
    return Result.succeed(out)
  }
}
