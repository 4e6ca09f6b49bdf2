/**
 * Turns effect/Schema decode failures into the FastAPI-style 422 issue list
 * (`{loc, msg, type}`) that the spec mandates, so every layer reports bad input the same way.
 */
import { Exit, Result, Schema, SchemaAST, SchemaIssue } from "effect"

export type Loc = ReadonlyArray<string | number>

/** A check on an object that reports each problem at its own path below the object. */
export interface PathIssue {
  readonly path: Loc
  readonly message: string
}

export class ValidationIssue extends Schema.Class<ValidationIssue>("ValidationIssue")({
  loc: Schema.Array(Schema.Union([Schema.String, Schema.Number])),
  msg: Schema.String,
  type: Schema.String
}) {}

/** Annotation key a check can carry to name its pydantic-style error `type`. */
export const issueTypeKey = "slipway/issueType"

const formatLeaf = SchemaIssue.makeFormatterDefault()

const literalText = (value: unknown) => (typeof value === "string" ? `'${value}'` : String(value))

const typeNameOf = (ast: SchemaAST.AST): { type: string; msg: string } => {
  switch (ast._tag) {
    case "String":
      return { type: "string_type", msg: "Input should be a valid string" }
    case "Number":
      return isIntegerAst(ast)
        ? { type: "int_type", msg: "Input should be a valid integer" }
        : { type: "float_type", msg: "Input should be a valid number" }
    case "Boolean":
      return { type: "bool_type", msg: "Input should be a valid boolean" }
    case "Arrays":
      return { type: "list_type", msg: "Input should be a valid list" }
    case "Objects":
    case "Declaration":
      return { type: "model_type", msg: "Input should be a valid dictionary or object" }
    case "Literal":
      return { type: "literal_error", msg: `Input should be ${literalText(ast.literal)}` }
    case "Null":
      return { type: "none_required", msg: "Input should be None" }
    default:
      return { type: "value_error", msg: `Invalid value` }
  }
}

const isIntegerAst = (ast: SchemaAST.AST): boolean =>
  (ast.checks ?? []).some((check) => filterType(check) === "int_from_float")

/** A union of literals reads as an enum; `X | null` reads as X. */
const describeUnion = (ast: SchemaAST.Union): { type: string; msg: string } => {
  const members = ast.types.filter((member) => member._tag !== "Null")
  if (members.length > 0 && members.every((member) => member._tag === "Literal")) {
    const names = members.map((member) => literalText((member as SchemaAST.Literal).literal))
    const expected = names.length === 1 ? names[0] : `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]}`
    return { type: "enum", msg: `Input should be ${expected}` }
  }
  if (members.length === 1) return typeNameOf(members[0]!)
  return { type: "union_type", msg: "Input does not match any allowed type" }
}

const filterType = (filter: SchemaAST.Filter<unknown> | SchemaAST.FilterGroup<unknown>): string => {
  const annotated = (filter.annotations as Record<string, unknown> | undefined)?.[issueTypeKey]
  return typeof annotated === "string" ? annotated : "value_error"
}

/** Walks the issue tree, collecting one entry per leaf with its full path. */
export const toValidationIssues = (issue: SchemaIssue.Issue, prefix: Loc = []): Array<ValidationIssue> => {
  const out: Array<ValidationIssue> = []
  const push = (loc: Loc, type: string, msg: string): void => void out.push(new ValidationIssue({ loc: [...loc], type, msg }))
  const walk = (node: SchemaIssue.Issue, loc: Loc, filterHint?: string): void => {
    switch (node._tag) {
      case "Pointer":
        return walk(node.issue, [...loc, ...node.path.map((key) => (typeof key === "number" ? key : String(key)))], filterHint)
      case "Composite":
        return node.issues.forEach((child) => walk(child, loc, filterHint))
      case "Encoding":
        return walk(node.issue, loc, filterHint)
      case "Filter":
        return walk(node.issue, loc, filterType(node.filter))
      case "MissingKey":
        return push(loc, "missing", "Field required")
      case "UnexpectedKey":
        return push(loc, "extra_forbidden", "Extra inputs are not permitted")
      case "InvalidType": {
        const described = typeNameOf(node.ast)
        return push(loc, described.type, described.msg)
      }
      case "AnyOf": {
        // A union where one member got further than a type mismatch reports that member's issues.
        const deep = node.issues.filter((child) => child._tag !== "InvalidType")
        if (deep.length === 1) return walk(deep[0]!, loc, filterHint)
        const described = describeUnion(node.ast)
        return push(loc, described.type, described.msg)
      }
      case "InvalidValue":
      case "Forbidden":
      case "OneOf":
        return push(loc, filterHint ?? "value_error", formatLeaf(node))
    }
  }
  walk(issue, prefix)
  return out
}

/** True for a string with an unpaired UTF-16 surrogate (`"\ud800"` in JSON), which no UTF-8 text can hold. */
export const hasLoneSurrogate = (text: string): boolean => !(text as string & { isWellFormed(): boolean }).isWellFormed()

const loneSurrogateMessage = "Input should be a valid string: it contains an unpaired UTF-16 surrogate, which is not Unicode text"

/** True for an object whose values are all scalars and whose keys and strings are well-formed; false means "walk it". */
const isFlatAndWellFormed = (input: unknown): boolean => {
  if (input === null || typeof input !== "object" || Array.isArray(input)) return false
  for (const key in input) {
    if (!Object.hasOwn(input, key)) continue
    const value = (input as Record<string, unknown>)[key]
    if (hasLoneSurrogate(key)) return false
    if (typeof value === "string") {
      if (hasLoneSurrogate(value)) return false
    } else if (value !== null && typeof value === "object") return false
  }
  return true
}

/** True when no string or key anywhere in `input` holds a lone surrogate: one pass, no allocation per value. */
const isWellFormedDeep = (input: unknown): boolean => {
  const pending: Array<unknown> = [input]
  while (pending.length > 0) {
    const value = pending.pop()
    if (typeof value === "string") {
      if (hasLoneSurrogate(value)) return false
    } else if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) pending.push(value[index])
    } else if (value !== null && typeof value === "object") {
      for (const key in value) {
        if (!Object.hasOwn(value, key)) continue
        if (hasLoneSurrogate(key)) return false
        pending.push((value as Record<string, unknown>)[key])
      }
    }
  }
  return true
}

/**
 * Every string (and object key) in a decoded JSON value holding a lone surrogate, at its path.
 * One shared check rather than one per string field: a lone surrogate cannot be stored as
 * UTF-8 (SQLite, logs, git, a registry would each rewrite or refuse it differently), so it is
 * refused wherever a string is accepted. Iterative, so a deeply nested body costs no stack.
 */
export const loneSurrogateIssues = (input: unknown, prefix: Loc = []): Array<ValidationIssue> => {
  // Path parameters and query strings are flat objects of strings: checked without the walk's allocations.
  if (isFlatAndWellFormed(input)) return []
  // Bodies are nested: one walk without paths finds nothing in nearly every request; paths are
  // built only when there is something to report.
  if (isWellFormedDeep(input)) return []
  // Paths are linked lists, built into a `loc` only for an issue: copying a path per value would
  // cost depth² on deep input.
  interface Path {
    readonly key: string | number
    readonly parent: Path | undefined
  }
  const locOf = (path: Path | undefined): Loc => {
    const keys: Array<string | number> = []
    for (let node = path; node !== undefined; node = node.parent) keys.push(node.key)
    return [...prefix, ...keys.reverse()]
  }
  const out: Array<ValidationIssue> = []
  const report = (path: Path | undefined) => out.push(new ValidationIssue({ loc: [...locOf(path)], msg: loneSurrogateMessage, type: "string_unicode" }))
  const stack: Array<readonly [unknown, Path | undefined]> = [[input, undefined]]
  while (stack.length > 0) {
    const [value, path] = stack.pop()!
    if (typeof value === "string") {
      if (hasLoneSurrogate(value)) report(path)
    } else if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index--) stack.push([value[index], { key: index, parent: path }])
    } else if (value !== null && typeof value === "object") {
      const entries = Object.entries(value)
      for (let index = entries.length - 1; index >= 0; index--) {
        const [key, inner] = entries[index]!
        if (hasLoneSurrogate(key)) report({ key, parent: path })
        else stack.push([inner, { key, parent: path }])
      }
    }
  }
  return out
}

/**
 * Decodes `input` with `schema`, collecting every issue (not just the first) and, unless told
 * to ignore them (query strings), rejecting unknown keys as FastAPI models with `extra="forbid"` do.
 * Strings with a lone surrogate are refused first, wherever they are (`loneSurrogateIssues`).
 */
export const decodeWithIssues = <S extends Schema.Top>(schema: S, prefix: Loc = [], options: { readonly excess?: "error" | "ignore" } = {}) => {
  const excess = options.excess ?? "error"
  const detailed = Schema.decodeUnknownExit(schema as any, { errors: "all", onExcessProperty: excess })
  // effect's struct parsers (interpreted or JIT-compiled) take their fast path only with the
  // default options: stop at the first issue, ignore unknown keys. Where unknown keys are ignored
  // anyway, a valid input is decoded there, and only an invalid one again, collecting every issue.
  const fast = excess === "ignore" ? Schema.decodeUnknownExit(schema as any) : detailed
  return (input: unknown): Result.Result<S["Type"], Array<ValidationIssue>> => {
    const surrogates = loneSurrogateIssues(input, prefix)
    if (surrogates.length > 0) return Result.fail(surrogates)
    const exit = fast(input)
    return decodedOrIssues<S["Type"]>(Exit.isFailure(exit) && fast !== detailed ? detailed(input) : exit, prefix)
  }
}

/** A schema decode's outcome as the API reports it: the decoded value, or the 422 list of issues. */
export const decodedOrIssues = <A>(exit: Exit.Exit<unknown, unknown>, prefix: Loc = []): Result.Result<A, Array<ValidationIssue>> => {
  if (Exit.isSuccess(exit)) return Result.succeed(exit.value as A)
  const error = findSchemaError(exit.cause)
  return Result.fail(
    error ? toValidationIssues(error.issue, prefix) : [new ValidationIssue({ loc: [...prefix], msg: "Invalid input", type: "value_error" })]
  )
}

const findSchemaError = (cause: unknown): Schema.SchemaError | undefined => {
  for (const reason of (cause as { reasons?: ReadonlyArray<{ error?: unknown }> }).reasons ?? []) {
    if (Schema.isSchemaError(reason.error)) return reason.error
  }
  return undefined
}

/**
 * What a check shows in the OpenAPI document: the JSON Schema keywords that state it exactly
 * (`{ pattern }`, `{ minLength }`), or nothing (`undefined`), in which case the check is marked a
 * looser approximation. Either way the check keeps its annotations (a `description` or
 * `examples` given by `.annotate()` after the checks lands on the last check), which effect
 * drops from a filter that has no `toJsonSchema` at all.
 */
export type CheckJsonSchema = Readonly<Record<string, unknown>> | undefined

const jsonSchemaOf = (fragment: CheckJsonSchema) => () => (fragment === undefined ? ([{}, true] as const) : fragment)

/** A check that fails with `msg` and reports `type` in the 422 list; `jsonSchema` is how /openapi.json states it. */
export const rule = <T>(predicate: (value: T) => boolean, msg: string, type = "value_error", jsonSchema?: CheckJsonSchema) =>
  Schema.makeFilter<T>((value) => (predicate(value) ? undefined : msg), { message: msg, [issueTypeKey]: type, toJsonSchema: jsonSchemaOf(jsonSchema) } as any)

/** A check whose message depends on the value: `problem` answers why it is refused, or undefined. */
export const ruleOf = <T>(problem: (value: T) => string | undefined, type = "value_error", jsonSchema?: CheckJsonSchema) =>
  Schema.makeFilter<T>((value) => problem(value), { [issueTypeKey]: type, toJsonSchema: jsonSchemaOf(jsonSchema) } as any)

/**
 * An integer whose 422 entry reads like pydantic's (`int_from_float`, `int_type`). Only safe
 * integers (|n| ≤ 2^53-1): a JSON number beyond that has already been rounded by the parser
 * (9007199254740993 reads as …992), so it is refused rather than stored as another value.
 */
export const Int = Schema.Finite.check(
  Schema.makeFilter<number>((n) => (Number.isInteger(n) ? undefined : "Input should be a valid integer"), {
    message: "Input should be a valid integer",
    [issueTypeKey]: "int_from_float",
    toJsonSchema: () => ({ type: "integer" })
  } as any).abort(),
  // Aborting: a bound checked on a rounded value would only repeat the problem.
  rule(
    (n: number) => Number.isSafeInteger(n),
    `Input should be an integer from ${-Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}: larger integers cannot be represented exactly`,
    "int_parsing_size"
  ).abort()
)

/** A lower bound worded and typed as pydantic does (`greater_than_equal`); shown as `minimum` in OpenAPI. */
export const atLeast = (min: number) =>
  Schema.makeFilter<number>((n) => (n >= min ? undefined : `Input should be greater than or equal to ${min}`), {
    message: `Input should be greater than or equal to ${min}`,
    [issueTypeKey]: "greater_than_equal",
    toJsonSchema: () => ({ minimum: min })
  } as any)

/** An upper bound worded and typed as pydantic does (`less_than_equal`); shown as `maximum` in OpenAPI. */
export const atMost = (max: number) =>
  Schema.makeFilter<number>((n) => (n <= max ? undefined : `Input should be less than or equal to ${max}`), {
    message: `Input should be less than or equal to ${max}`,
    [issueTypeKey]: "less_than_equal",
    toJsonSchema: () => ({ maximum: max })
  } as any)

/** A strict lower bound (`greater_than`); shown as `exclusiveMinimum` in OpenAPI. */
export const above = (min: number) =>
  Schema.makeFilter<number>((n) => (n > min ? undefined : `Input should be greater than ${min}`), {
    message: `Input should be greater than ${min}`,
    [issueTypeKey]: "greater_than",
    toJsonSchema: () => ({ exclusiveMinimum: min })
  } as any)
