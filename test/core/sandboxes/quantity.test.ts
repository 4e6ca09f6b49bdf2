import { Result } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { decodeWithIssues } from "../../../core/api/validation.ts"
import {
  add,
  compare,
  CpuQuantity,
  formatQuantity,
  fromBytes,
  fromMillis,
  MemoryQuantity,
  parseQuantity,
  StorageQuantity,
  subtract,
  toBytes,
  toMillis,
  VolumeSize
} from "../../../core/sandboxes/quantity.ts"
import type { Quantity } from "../../../core/sandboxes/quantity.ts"

const parse = (text: string): Quantity => Result.getOrThrow(parseQuantity(text))
const canonical = (text: string): string => formatQuantity(parse(text))
const bytes = (q: Quantity): bigint => Result.getOrThrow(toBytes(q))
const millis = (q: Quantity): bigint => Result.getOrThrow(toMillis(q))
const parseError = (text: string): string => Result.match(parseQuantity(text), { onFailure: (message) => message, onSuccess: () => "parsed" })

describe("parseQuantity", () => {
  it("answers a text it parsed before the same, however many other texts came between (its cache is bounded)", () => {
    const first = parseQuantity("1025Mi")
    for (let i = 1; i <= 5000; i++) expect(Result.getOrThrow(Result.flatMap(parseQuantity(`${i}Ki`), toBytes))).toBe(BigInt(i) * 1024n)
    expect(parseQuantity("1025Mi")).toEqual(first)
    expect(Result.getOrThrow(Result.flatMap(parseQuantity("1025Mi"), toBytes))).toBe(1025n << 20n)
    for (let i = 0; i < 2; i++) expect(Result.isFailure(parseQuantity("10Zi"))).toBe(true)
  })

  it.each([
    ["10Gi", 10n * 1024n ** 3n],
    ["1536Mi", 1536n * 1024n ** 2n],
    ["1.5Gi", 1536n * 1024n ** 2n],
    ["0.5Ki", 512n],
    ["1Ki", 1024n],
    ["1Ei", 1024n ** 6n],
    ["1k", 1000n],
    ["1M", 1_000_000n],
    ["1E", 10n ** 18n],
    ["1e3", 1000n],
    ["1E3", 1000n],
    ["12e+2", 1200n],
    ["5.", 5n],
    ["+7", 7n],
    ["-2Ki", -2048n],
    ["0", 0n]
  ])("%s is exactly %s bytes", (text, expected) => {
    expect(bytes(parse(text))).toBe(expected)
  })

  it.each([
    ["2", 2000n],
    ["0.5", 500n],
    [".5", 500n],
    ["500m", 500n],
    ["1500m", 1500n],
    ["0.001", 1n],
    ["2e-3", 2n],
    ["1000000n", 1n],
    ["1000u", 1n]
  ])("%s is exactly %s millicores", (text, expected) => {
    expect(millis(parse(text))).toBe(expected)
  })

  it("keeps digits beyond what floating point could hold", () => {
    expect(bytes(parse("9007199254740993"))).toBe(9007199254740993n)
    expect(compare(parse("0.1"), parse("100m"))).toBe(0)
  })

  it.each([
    ["", "Invalid quantity '': must not be empty"],
    ["10GB", "Invalid quantity '10GB': unknown suffix 'GB'; expected a suffix Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3"],
    ["Gi", "Invalid quantity 'Gi': expected a number such as 1.5, optionally followed by a suffix Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3"],
    [".", "Invalid quantity '.': expected a number such as 1.5, optionally followed by a suffix Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3"],
    ["1.2.3", "Invalid quantity '1.2.3': unknown suffix '.3'; expected a suffix Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3"],
    [" 1", "Invalid quantity ' 1': expected a number such as 1.5, optionally followed by a suffix Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3"],
    ["1ki", "Invalid quantity '1ki': unknown suffix 'ki'; expected a suffix Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3"],
    ["1e99", "Invalid quantity '1e99': exponent 99 is out of range (-64 to 64)"],
    ["8Ei", "Invalid quantity '8Ei': is too large; quantities must be at most 2^63-1 in magnitude"],
    ["9223372036854775808", "Invalid quantity '9223372036854775808': is too large; quantities must be at most 2^63-1 in magnitude"]
  ])("rejects %j with a message naming it", (text, message) => {
    expect(parseError(text)).toBe(message)
  })

  it("accepts the largest int64 and rejects overly long inputs without parsing them", () => {
    expect(bytes(parse("9223372036854775807"))).toBe(2n ** 63n - 1n)
    expect(parseError("1".repeat(65))).toBe(`Invalid quantity '${"1".repeat(20)}...': must be at most 64 characters`)
  })
})

describe("formatQuantity (canonical form)", () => {
  it.each([
    ["10Gi", "10Gi"],
    ["10240Mi", "10Gi"],
    ["1.5Gi", "1536Mi"],
    ["1024Ki", "1Mi"],
    ["1Ki", "1Ki"],
    ["0.5Ki", "512"],
    ["1.5Ki", "1536"],
    ["0.1Ki", "102400m"],
    ["0Gi", "0"],
    ["-2Ki", "-2Ki"],
    ["0.5", "500m"],
    ["2", "2"],
    ["2000m", "2"],
    ["1500m", "1500m"],
    ["1000", "1k"],
    ["1500", "1500"],
    ["1e3", "1k"],
    ["1048576", "1048576"],
    ["1e6", "1M"],
    ["1E", "1E"],
    ["0.000000001", "1n"],
    ["1e-12", "1e-12"],
    ["15e-11", "15e-11"]
  ])("%s prints as %s", (text, expected) => {
    expect(canonical(text)).toBe(expected)
  })
})

describe("arithmetic and conversions", () => {
  it("adds and subtracts exactly, keeping binary suffixes when exact", () => {
    expect(formatQuantity(add(parse("95Gi"), parse("10Gi")))).toBe("105Gi")
    expect(formatQuantity(subtract(parse("20Gi"), parse("10Gi")))).toBe("10Gi")
    expect(formatQuantity(add(parse("0.1"), parse("0.2")))).toBe("300m")
    expect(formatQuantity(subtract(parse("1Gi"), parse("1")))).toBe("1073741823")
  })

  it("orders by value regardless of notation", () => {
    expect(compare(parse("1Gi"), parse("1G"))).toBe(1)
    expect(compare(parse("1G"), parse("1Gi"))).toBe(-1)
    expect(compare(parse("1024Mi"), parse("1Gi"))).toBe(0)
    expect(compare(parse("-1"), parse("0"))).toBe(-1)
  })

  it("refuses conversions that would drop digits", () => {
    expect(toBytes(parse("0.5"))).toStrictEqual(Result.fail("500m is not a whole number of bytes"))
    expect(toMillis(parse("0.0005"))).toStrictEqual(Result.fail("500u is not a whole number of millicores"))
  })

  it("rebuilds stored integers", () => {
    expect(formatQuantity(fromBytes(10n * 1024n ** 3n))).toBe("10Gi")
    expect(formatQuantity(fromBytes(1000, "DecimalSI"))).toBe("1k")
    expect(formatQuantity(fromMillis(500))).toBe("500m")
    expect(formatQuantity(fromMillis(2000n))).toBe("2")
  })
})

// ---------------------------------------------------------------------------------------------
// Properties

const suffixes = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E", "e3", "e-2", "E5", "e0"]

/** Any text of the grammar, valid or too large (those are filtered out by parsing). */
const quantityText = fc
  .tuple(
    fc.constantFrom("", "-", "+"),
    fc.bigInt({ min: 0n, max: 10n ** 12n }),
    fc.option(fc.stringMatching(/^[0-9]{0,6}$/), { nil: undefined }),
    fc.constantFrom(...suffixes)
  )
  .map(([sign, whole, fraction, suffix]) => `${sign}${whole}${fraction === undefined ? "" : `.${fraction}`}${suffix}`)

const anyQuantity = quantityText.map(parseQuantity).filter(Result.isSuccess).map((result) => result.success)

/** Byte quantities as a user writes them: whole bytes in any notation. */
const byteQuantity = fc
  .tuple(fc.bigInt({ min: 0n, max: 2n ** 30n }), fc.constantFrom("", "Ki", "Mi", "Gi", "k", "M", "G"))
  .map(([n, suffix]) => parse(`${n}${suffix}`))

describe("quantity algebra (properties)", () => {
  it("parse ∘ print is the identity on values", () => {
    fc.assert(fc.property(anyQuantity, (q) => compare(parse(formatQuantity(q)), q) === 0))
  })

  it("the canonical form is stable: printing a reparsed canonical text gives the same text", () => {
    fc.assert(fc.property(anyQuantity, (q) => formatQuantity(parse(formatQuantity(q))) === formatQuantity(q)))
  })

  it("order agrees with the exact byte count", () => {
    fc.assert(
      fc.property(byteQuantity, byteQuantity, (a, b) => {
        const [x, y] = [bytes(a), bytes(b)]
        return compare(a, b) === (x < y ? -1 : x > y ? 1 : 0)
      })
    )
  })

  it("addition and subtraction are exact in bytes", () => {
    fc.assert(
      fc.property(byteQuantity, byteQuantity, (a, b) => bytes(add(a, b)) === bytes(a) + bytes(b) && bytes(subtract(a, b)) === bytes(a) - bytes(b))
    )
  })

  it("addition is exact in millicores for CPU quantities", () => {
    const cpu = fc.tuple(fc.integer({ min: 0, max: 1_000_000 }), fc.boolean()).map(([n, inMillis]) => parse(inMillis ? `${n}m` : `${n}`))
    fc.assert(fc.property(cpu, cpu, (a, b) => millis(add(a, b)) === millis(a) + millis(b)))
  })

  it("subtracting what was added gives back the original value", () => {
    fc.assert(fc.property(anyQuantity, anyQuantity, (a, b) => compare(subtract(add(a, b), b), a) === 0))
  })
})

// ---------------------------------------------------------------------------------------------
// Schemas

describe("quantity schemas", () => {
  const decode = decodeWithIssues(StorageQuantity, ["body", "size"])

  it("decodes text to the exact value and encodes back in canonical form", () => {
    const decoded = Result.getOrThrow(decode("10240Mi"))
    expect(bytes(decoded)).toBe(10n * 1024n ** 3n)
    expect(formatQuantity(decoded)).toBe("10Gi")
  })

  it("reports unparseable text as quantity_parsing, naming the value", () => {
    expect(Result.getOrThrow(Result.flip(decode("10GB")))).toStrictEqual([
      expect.objectContaining({
        loc: ["body", "size"],
        type: "quantity_parsing",
        msg: "Invalid quantity '10GB': unknown suffix 'GB'; expected a suffix Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3"
      })
    ])
  })

  it.each([
    ["StorageQuantity", StorageQuantity, "-1Gi", "Invalid quantity '-1Gi': must not be negative", "greater_than_equal"],
    ["StorageQuantity", StorageQuantity, "0.5", "Invalid quantity '0.5': must be a whole number of bytes", "value_error"],
    ["VolumeSize", VolumeSize, "0", "Invalid quantity '0': must be greater than zero", "greater_than"],
    ["MemoryQuantity", MemoryQuantity, "0", "Invalid quantity '0': must be greater than zero", "greater_than"],
    ["MemoryQuantity", MemoryQuantity, "1.5", "Invalid quantity '1.5': must be a whole number of bytes", "value_error"],
    ["CpuQuantity", CpuQuantity, "0.0001", "Invalid quantity '0.0001': must be a whole number of millicores (at most 3 decimal places)", "value_error"],
    ["CpuQuantity", CpuQuantity, "-1", "Invalid quantity '-1': must be greater than zero", "greater_than"],
    ["CpuQuantity", CpuQuantity, "9223372036854775807", "Invalid quantity '9223372036854775807': must be at most 9223372036854775807m", "less_than_equal"]
  ] as const)("%s rejects %j", (_name, schema, text, msg, type) => {
    expect(Result.getOrThrow(Result.flip(decodeWithIssues(schema, ["body", "x"])(text)))).toStrictEqual([expect.objectContaining({ loc: ["body", "x"], msg, type })])
  })

  it("accepts zero storage, CPU in cores or millicores, and rejects non-strings", () => {
    expect(Result.isSuccess(decode("0"))).toBe(true)
    expect(millis(Result.getOrThrow(decodeWithIssues(CpuQuantity)("0.5")))).toBe(500n)
    expect(millis(Result.getOrThrow(decodeWithIssues(CpuQuantity)("250m")))).toBe(250n)
    expect(Result.getOrThrow(Result.flip(decode(10)))).toStrictEqual([expect.objectContaining({ loc: ["body", "size"], type: "string_type" })])
  })
})
