/**
 * Kubernetes resource quantities ("10Gi", "500m", "1.5", "1e3"), parsed and computed EXACTLY.
 *
 * Every quantity the grammar can express is a decimal fraction times a power of 1024, which is
 * again a decimal fraction, so a value is stored as `coefficient × 10^exponent` with a bigint
 * coefficient. No floating point is involved anywhere: quotas, resizes and sums must never be
 * off by one byte.
 *
 * Unlike Kubernetes, which silently rounds values finer than 1n up, we keep every digit; the
 * schemas decide which precision a field accepts (whole bytes, whole millicores).
 */
import { Result, Schema, SchemaTransformation } from "effect"
import { issueTypeKey } from "../api/validation.ts"

/** How the quantity was written; printing prefers binary suffixes only for binary inputs. */
export type QuantityFormat = "BinarySI" | "DecimalSI"

export interface Quantity {
  /** value = coefficient × 10^exponent; normalized: no trailing zero digits, zero has exponent 0. */
  readonly coefficient: bigint
  readonly exponent: number
  readonly format: QuantityFormat
}

/** Kubernetes' own bound: no quantity may exceed 2^63-1 in magnitude (it has to fit an int64). */
export const maxQuantityMagnitude = 2n ** 63n - 1n

/** Bounds that keep a hostile input ("1e999999999", a megabyte of digits) from costing real work. */
const maxQuantityLength = 64
const maxExponentMagnitude = 64

const binarySuffixes = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"] as const
const binaryPowers: Readonly<Record<string, number>> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 }
const decimalSuffixExponents: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, "": 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 }
const decimalSuffixByExponent = new Map(Object.entries(decimalSuffixExponents).map(([suffix, exponent]) => [exponent, suffix]))

const suffixHelp = "a suffix Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3"

const pow10 = (n: number): bigint => 10n ** BigInt(n)

/** Strips trailing zeros so that equal values have one representation. */
const normalize = (coefficient: bigint, exponent: number, format: QuantityFormat): Quantity => {
  if (coefficient === 0n) return { coefficient: 0n, exponent: 0, format }
  while (coefficient % 10n === 0n) {
    coefficient /= 10n
    exponent += 1
  }
  return { coefficient, exponent, format }
}

const makeQuantity = normalize

// Stryker disable next-line EqualityOperator: -0n is 0n, so `n <= 0n` gives the same result (the `>=` flip is excluded with it; the negative-limit tests kill it)
const abs = (n: bigint): bigint => (n < 0n ? -n : n)

/** |value| ≤ bound, compared exactly (the value may have a fractional part). */
const magnitudeAtMost = (q: Quantity, bound: bigint): boolean =>
  abs(q.coefficient) * pow10(Math.max(q.exponent, 0)) <= bound * pow10(Math.max(-q.exponent, 0))

/** The input as a message quotes it: control characters escaped as in JSON ("10Gi\\n"), so a message stays one line. */
const shown = (input: string): string => input.replace(/[\u0000-\u001f\u007f]/g, (character) => JSON.stringify(character).slice(1, -1))

const invalid = (input: string, reason: string) => Result.fail(`Invalid quantity '${shown(input)}': ${reason}`)

// `[\s\S]*`, not `.*`: the suffix takes everything left, line breaks included ("10Gi\n" is an
// unknown suffix, not a failed match).
const quantityPattern = /^([+-]?)([0-9]*)(?:\.([0-9]*))?([\s\S]*)$/

/** Reads the suffix into a power of 1024 or of 10, or says why it is not one. */
const readSuffix = (suffix: string): { readonly binary: number; readonly decimal: number } | string => {
  if (suffix in binaryPowers) return { binary: binaryPowers[suffix]!, decimal: 0 }
  if (suffix in decimalSuffixExponents) return { binary: 0, decimal: decimalSuffixExponents[suffix]! }
  const exponent = /^[eE]([+-]?[0-9]+)$/.exec(suffix)
  if (exponent) {
    const value = Number(exponent[1])
    return Math.abs(value) <= maxExponentMagnitude ? { binary: 0, decimal: value } : `exponent ${exponent[1]} is out of range (-${maxExponentMagnitude} to ${maxExponentMagnitude})`
  }
  return `unknown suffix '${shown(suffix)}'; expected ${suffixHelp}`
}

/**
 * Parses `[+-]<digits>[.<digits>]<suffix>` (Kubernetes grammar, which also allows "5." and ".5").
 * The failure is a message that names the input and says what is wrong with it.
 */
export const parseQuantity = (input: string): Result.Result<Quantity, string> => {
  const known = parsed.get(input)
  if (known !== undefined) return known
  const result = parseUncached(input)
  // Bounded: a client sending new texts forever only ever refills it.
  if (parsed.size >= parsedCacheSize) parsed.clear()
  parsed.set(input, result)
  return result
}

/**
 * Recent parses, by text: a request reads the same few texts several times (a body's size is
 * checked, constrained and decoded; the stored size and the quota are read again), and a parse is
 * BigInt arithmetic. Results are immutable values, so sharing them is safe.
 */
const parsed = new Map<string, Result.Result<Quantity, string>>()
const parsedCacheSize = 1024

const parseUncached = (input: string): Result.Result<Quantity, string> => {
  if (input.length === 0) return Result.fail("Invalid quantity '': must not be empty")
  if (input.length > maxQuantityLength) return invalid(`${input.slice(0, 20)}...`, `must be at most ${maxQuantityLength} characters`)
  // The pattern matches every string; only the fraction group is optional.
  const [, sign, whole, fraction = "", suffix] = quantityPattern.exec(input)! as unknown as [string, string, string, string | undefined, string]
  if (whole === "" && fraction === "") return invalid(input, `expected a number such as 1.5, optionally followed by ${suffixHelp}`)
  const scale = readSuffix(suffix)
  if (typeof scale === "string") return invalid(input, scale)
  const digits = BigInt(`${whole}${fraction}`)
  const signed = sign === "-" ? -digits : digits
  const quantity = normalize(signed * 1024n ** BigInt(scale.binary), scale.decimal - fraction.length, scale.binary > 0 ? "BinarySI" : "DecimalSI")
  if (!magnitudeAtMost(quantity, maxQuantityMagnitude)) return invalid(input, "is too large; quantities must be at most 2^63-1 in magnitude")
  return Result.succeed(quantity)
}

/** −1, 0 or 1, comparing exact values (the format plays no part). */
export const compare = (a: Quantity, b: Quantity): -1 | 0 | 1 => {
  const exponent = Math.min(a.exponent, b.exponent)
  const left = a.coefficient * pow10(a.exponent - exponent)
  const right = b.coefficient * pow10(b.exponent - exponent)
  return left < right ? -1 : left > right ? 1 : 0
}

export const equals = (a: Quantity, b: Quantity): boolean => compare(a, b) === 0

/** Binary wins when either side is binary, so sums of Gi sizes keep printing in Gi when exact. */
const combinedFormat = (a: Quantity, b: Quantity): QuantityFormat => (a.format === "BinarySI" || b.format === "BinarySI" ? "BinarySI" : "DecimalSI")

export const add = (a: Quantity, b: Quantity): Quantity => {
  const exponent = Math.min(a.exponent, b.exponent)
  return normalize(a.coefficient * pow10(a.exponent - exponent) + b.coefficient * pow10(b.exponent - exponent), exponent, combinedFormat(a, b))
}

export const negate = (q: Quantity): Quantity => ({ ...q, coefficient: -q.coefficient })

export const subtract = (a: Quantity, b: Quantity): Quantity => add(a, negate(b))

export const isNegative = (q: Quantity): boolean => q.coefficient < 0n
export const isZero = (q: Quantity): boolean => q.coefficient === 0n

/** The value scaled by 10^decimals as an integer, or undefined when that would drop digits. */
const scaledInteger = (q: Quantity, decimals: number): bigint | undefined => {
  const exponent = q.exponent + decimals
  return exponent >= 0 ? q.coefficient * pow10(exponent) : undefined
}

/** Exact bytes of a memory or storage quantity; fails for fractions of a byte ("0.5"). */
export const toBytes = (q: Quantity): Result.Result<bigint, string> => {
  const bytes = scaledInteger(q, 0)
  return bytes === undefined ? Result.fail(`${formatQuantity(q)} is not a whole number of bytes`) : Result.succeed(bytes)
}

/** Exact millicores of a CPU quantity ("2" → 2000, "500m" → 500); fails below 1m precision. */
export const toMillis = (q: Quantity): Result.Result<bigint, string> => {
  const millis = scaledInteger(q, 3)
  return millis === undefined ? Result.fail(`${formatQuantity(q)} is not a whole number of millicores`) : Result.succeed(millis)
}

/** Rebuilds a byte quantity as stored (integers in the database); binary so it prints as Gi/Mi. */
export const fromBytes = (bytes: bigint | number, format: QuantityFormat = "BinarySI"): Quantity => makeQuantity(BigInt(bytes), 0, format)

/** Rebuilds a CPU quantity from millicores; prints as "500m" or "2". */
export const fromMillis = (millis: bigint | number): Quantity => makeQuantity(BigInt(millis), -3, "DecimalSI")

/** Largest k ≤ 6 with 1024^k dividing n (n ≠ 0). */
const binaryPowerDividing = (n: bigint): number => {
  let power = 0
  while (power < binarySuffixes.length - 1 && n % binaryPowerValues[power + 1]! === 0n) power += 1
  return power
}

/** 1024^k for every suffix's k. */
const binaryPowerValues = binarySuffixes.map((_, k) => 1024n ** BigInt(k))

/**
 * Decimal canonical form: the largest SI suffix that keeps the mantissa an integer
 * (1500 → "1500", 2000 → "2k", 0.5 → "500m"). Values finer than 1n have no suffix that does,
 * so they print with an exponent ("15e-11") rather than being rounded as Kubernetes would.
 */
const formatDecimal = (q: Quantity): string => {
  if (q.exponent < -9) return `${q.coefficient}e${q.exponent}`
  const suffixExponent = Math.min(18, Math.floor(q.exponent / 3) * 3)
  return `${q.coefficient * pow10(q.exponent - suffixExponent)}${decimalSuffixByExponent.get(suffixExponent)}`
}

/**
 * Canonical text, Kubernetes style: a binary input that is an exact multiple of 1Ki prints
 * with the largest binary suffix that divides it (10Gi, 1536Mi); everything else prints in
 * decimal form. Parsing the result gives back the same value, and printing is idempotent.
 */
export const formatQuantity = (q: Quantity): string => {
  if (q.coefficient === 0n) return "0"
  if (q.format === "BinarySI" && q.exponent >= 0) {
    const value = q.coefficient * pow10(q.exponent)
    const power = binaryPowerDividing(value)
    if (power > 0) return `${value / binaryPowerValues[power]!}${binarySuffixes[power]}`
  }
  return formatDecimal(q)
}

/** Parses and reprints; for inputs already known to be valid (e.g. configuration defaults). */
export const canonicalQuantity = (input: string): Result.Result<string, string> => Result.map(parseQuantity(input), formatQuantity)

export const isQuantity = (u: unknown): u is Quantity =>
  typeof u === "object" &&
  u !== null &&
  typeof (u as Quantity).coefficient === "bigint" &&
  typeof (u as Quantity).exponent === "number" &&
  ((u as Quantity).format === "BinarySI" || (u as Quantity).format === "DecimalSI")

// ---------------------------------------------------------------------------------------------
// Schemas for request bodies: JSON strings that decode to exact quantities and encode back to
// their canonical text. Failures become 422 entries whose message names the offending value.

/** A check whose message is computed from the value (`rule` only takes a fixed message). */
const describedCheck = <T>(problem: (value: T) => string | undefined, type: string) =>
  Schema.makeFilter<T>((value) => problem(value), { [issueTypeKey]: type } as any)

const QuantityValue = Schema.declare(isQuantity)

/** A constraint on a parsed quantity: the reason it is unacceptable, and its 422 `type`. */
interface QuantityConstraint {
  readonly problem: (q: Quantity) => string | undefined
  readonly type: string
}

/**
 * Constraints run on the text (reparsing it, which is cheap) so that their messages can quote
 * exactly what the client sent; an unparseable text is left to the parse check.
 */
const constraintCheck = ({ problem, type }: QuantityConstraint) =>
  describedCheck((text: string) => {
    const parsed = parseQuantity(text)
    if (Result.isFailure(parsed)) return undefined
    const reason = problem(parsed.success)
    return reason === undefined ? undefined : `Invalid quantity '${text}': ${reason}`
  }, type)

/**
 * The grammar `parseQuantity` reads, as a JSON Schema pattern for /openapi.json: a decimal number
 * and an optional suffix (binary Ki…Ei, decimal n…E, or an exponent e3).
 */
export const quantityJsonPattern = "^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$"

const parses = Schema.makeFilter<string>((text) => Result.match(parseQuantity(text), { onFailure: (message) => message, onSuccess: () => undefined }), {
  [issueTypeKey]: "quantity_parsing",
  toJsonSchema: () => ({ pattern: quantityJsonPattern, maxLength: maxQuantityLength })
} as any)

const quantitySchema = (description: string, example: string, constraints: ReadonlyArray<QuantityConstraint>) =>
  Schema.String.annotate({ description, examples: [example] })
    .check(parses, ...constraints.map(constraintCheck))
    .pipe(
      Schema.decodeTo(
        QuantityValue,
        SchemaTransformation.transform({ decode: (text: string) => Result.getOrThrow(parseQuantity(text)), encode: formatQuantity })
      )
    )

const notNegative: QuantityConstraint = { problem: (q) => (isNegative(q) ? "must not be negative" : undefined), type: "greater_than_equal" }
const positive: QuantityConstraint = { problem: (q) => (isNegative(q) || isZero(q) ? "must be greater than zero" : undefined), type: "greater_than" }
const wholeBytes: QuantityConstraint = { problem: (q) => (Result.isFailure(toBytes(q)) ? "must be a whole number of bytes" : undefined), type: "value_error" }
const wholeMillicores: QuantityConstraint = {
  problem: (q) => (Result.isFailure(toMillis(q)) ? "must be a whole number of millicores (at most 3 decimal places)" : undefined),
  type: "value_error"
}
/**
 * Millicores are stored as an int64 as well, so CPU is bounded 1000 times tighter than bytes:
 * the value in millicores (the quantity × 10^3, exact) must fit, so "9223372036854775.807" is
 * the largest CPU quantity (not 9223372036854775, as a truncated bound/1000 would say).
 */
const millicoresFitInt64: QuantityConstraint = {
  problem: (q) => (magnitudeAtMost({ ...q, exponent: q.exponent + 3 }, maxQuantityMagnitude) ? undefined : `must be at most ${maxQuantityMagnitude}m`),
  type: "less_than_equal"
}

/** Any quantity: `"10Gi"` ⇄ its exact value; encodes to the canonical text. */
export const QuantityFromString = quantitySchema("Kubernetes quantity, e.g. 10Gi, 512Mi, 500m, 2", "10Gi", [])
/** Storage size: non-negative whole bytes ("10Gi", "1536Mi"). */
export const StorageQuantity = quantitySchema("Storage size in bytes as a Kubernetes quantity, e.g. 10Gi", "10Gi", [notNegative, wholeBytes])
/** Memory: positive whole bytes ("512Mi"); a sandbox with no memory cannot start. */
export const MemoryQuantity = quantitySchema("Memory in bytes as a Kubernetes quantity, e.g. 512Mi", "512Mi", [positive, wholeBytes])
/** CPU: positive, in cores ("2", "0.5") or millicores ("500m"), at most 1m precision as in Kubernetes. */
export const CpuQuantity = quantitySchema("CPU in cores (2, 0.5) or millicores (500m)", "500m", [positive, wholeMillicores, millicoresFitInt64])
/** A volume's size: positive whole bytes; an empty volume cannot be provisioned. */
export const VolumeSize = quantitySchema("Volume size as a Kubernetes quantity with a binary suffix, e.g. 10Gi", "10Gi", [positive, wholeBytes])
