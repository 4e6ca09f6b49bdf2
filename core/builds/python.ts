/**
 * The few Python standard-library behaviours the langgraph CLI's Dockerfile text depends on,
 * ported so that Slipway writes the same bytes: `json.dumps` with its defaults (the `ENV …='…'`
 * lines), `shlex.quote` (the faux-package loop), Python truthiness (which optional sections
 * appear) and `difflib.get_close_matches` (the "did you mean" of unknown keys).
 */

// ---------------------------------------------------------------------------------------------
// json.dumps(value): separators ", " and ": ", ensure_ascii, keys in insertion order

/** Python's `repr(float)`: the shortest round-trip digits, in exponent form below 1e-4 or from 1e16 up. */
const floatRepr = (value: number): string => {
  const [mantissa, exponentText] = value.toExponential().split("e") as [string, string]
  const exponent = Number(exponentText)
  if (exponent < -4 || exponent >= 16) {
    const sign = exponent < 0 ? "-" : "+"
    return `${mantissa}e${sign}${String(Math.abs(exponent)).padStart(2, "0")}`
  }
  const negative = mantissa.startsWith("-")
  const digits = mantissa.replace("-", "").replace(".", "")
  const point = exponent + 1
  const text =
    point <= 0 ? `0.${"0".repeat(-point)}${digits}` : point >= digits.length ? `${digits}${"0".repeat(point - digits.length)}.0` : `${digits.slice(0, point)}.${digits.slice(point)}`
  return negative ? `-${text}` : text
}

const numberText = (value: number): string => {
  if (!Number.isFinite(value)) return Number.isNaN(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity"
  // A JSON number without a fraction is an int to Python; JavaScript cannot tell `1` from `1.0`
  // once parsed, so integral values print as ints (docs/builds.md).
  return Number.isInteger(value) ? BigInt(value).toString() : floatRepr(value)
}

/** `json.dumps` of a string with `ensure_ascii`: JSON's escapes, then DEL and every non-ASCII UTF-16 unit as `\uXXXX`. */
const stringText = (value: string): string =>
  JSON.stringify(value).replace(/[\u007f-\uffff]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`)

/**
 * Python's `json.dumps(value)` for a value parsed from JSON: `{"a": 1, "b": [true, null]}`.
 * Object keys keep their order, except that JavaScript lists integer-like keys first.
 */
export const pythonJsonDumps = (value: unknown): string => {
  if (value === null || value === undefined) return "null"
  if (typeof value === "boolean") return value ? "true" : "false"
  if (typeof value === "number") return numberText(value)
  if (typeof value === "string") return stringText(value)
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(", ")}]`
  if (typeof value === "object") {
    return `{${Object.entries(value).map(([key, item]) => `${stringText(key)}: ${pythonJsonDumps(item)}`).join(", ")}}`
  }
  throw new TypeError(`not a JSON value: ${typeof value}`)
}

// ---------------------------------------------------------------------------------------------
// shlex.quote

/** Characters `shlex.quote` leaves unquoted (Python's `[\w@%+=:,./-]` with re.ASCII). */
const shellUnsafe = /[^\w@%+=:,./-]/

/** Python's `shlex.quote`: the word as is when it is safe, else single-quoted with `'` spelled `'"'"'`. */
export const shellQuote = (word: string): string => {
  if (word === "") return "''"
  if (!shellUnsafe.test(word)) return word
  return `'${word.replaceAll("'", `'"'"'`)}'`
}

// ---------------------------------------------------------------------------------------------
// Truthiness

/** Python's `bool(value)` for a value parsed from JSON: null, false, 0, "", [] and {} are false. */
export const truthy = (value: unknown): boolean => {
  if (value === null || value === undefined || value === false || value === 0 || value === "") return false
  if (Array.isArray(value)) return value.length > 0
  if (typeof value === "object") return Object.keys(value).length > 0
  return true
}

// ---------------------------------------------------------------------------------------------
// difflib.get_close_matches(word, possibilities, n=1, cutoff=0.6)

/** `SequenceMatcher(None, a, b).ratio()` for short strings (no junk, no popular-element pruning below 200 characters). */
const sequenceRatio = (a: string, b: string): number => {
  const positions = new Map<string, Array<number>>()
  for (let j = 0; j < b.length; j++) {
    const list = positions.get(b[j]!) ?? []
    list.push(j)
    positions.set(b[j]!, list)
  }
  const longestMatch = (alo: number, ahi: number, blo: number, bhi: number) => {
    let best = { i: alo, j: blo, size: 0 }
    let lengths = new Map<number, number>()
    for (let i = alo; i < ahi; i++) {
      const next = new Map<number, number>()
      for (const j of positions.get(a[i]!) ?? []) {
        if (j < blo) continue
        if (j >= bhi) break
        const k = (lengths.get(j - 1) ?? 0) + 1
        next.set(j, k)
        if (k > best.size) best = { i: i - k + 1, j: j - k + 1, size: k }
      }
      lengths = next
    }
    return best
  }
  let matched = 0
  const queue: Array<[number, number, number, number]> = [[0, a.length, 0, b.length]]
  while (queue.length > 0) {
    const [alo, ahi, blo, bhi] = queue.pop()!
    const { i, j, size } = longestMatch(alo, ahi, blo, bhi)
    if (size === 0) continue
    matched += size
    if (alo < i && blo < j) queue.push([alo, i, blo, j])
    if (i + size < ahi && j + size < bhi) queue.push([i + size, ahi, j + size, bhi])
  }
  const total = a.length + b.length
  return total === 0 ? 1 : (2 * matched) / total
}

/** The closest of `possibilities` to `word` with a similarity of at least 0.6, as difflib picks it (ties: the greatest string). */
export const closestMatch = (word: string, possibilities: Iterable<string>): string | undefined => {
  let best: { score: number; candidate: string } | undefined
  for (const candidate of possibilities) {
    const score = sequenceRatio(candidate, word)
    if (score < 0.6) continue
    if (!best || score > best.score || (score === best.score && candidate > best.candidate)) best = { score, candidate }
  }
  return best?.candidate
}
