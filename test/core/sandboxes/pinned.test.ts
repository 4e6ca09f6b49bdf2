/**
 * Behaviours of the sandbox core that mutation testing (npm run mutate) found unpinned, each
 * tested on its own: quantity limits, the binary-unit rule for sums, the suffix grammar's
 * anchors, storage class resolution.
 */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { decodeWithIssues } from "../../../core/api/validation.ts"
import { CreateTemplate, CreateVolume } from "../../../core/sandboxes/model.ts"
import {
  add,
  canonicalQuantity,
  compare,
  CpuQuantity,
  equals,
  formatQuantity,
  fromBytes,
  fromMillis,
  isQuantity,
  isNegative,
  isZero,
  negate,
  parseQuantity,
  subtract,
  toBytes,
  VolumeSize
} from "../../../core/sandboxes/quantity.ts"
import type { Quantity } from "../../../core/sandboxes/quantity.ts"
import { generateSandboxName } from "../../../core/sandboxes/names.ts"
import { parseEnvReferences, ProxyConfigInput } from "../../../core/sandboxes/proxy.ts"
import { resolveStorageClass } from "../../../core/sandboxes/rules.ts"

const parse = (text: string): Quantity => Result.getOrThrow(parseQuantity(text))
const parseError = (text: string): string => Result.match(parseQuantity(text), { onFailure: (message) => message, onSuccess: () => "parsed" })
const tooLarge = (text: string) => `Invalid quantity '${text}': is too large; quantities must be at most 2^63-1 in magnitude`
const bytes = (q: Quantity): bigint => Result.getOrThrow(toBytes(q))

describe("parseQuantity: a line break or other control character", () => {
  it("is an unknown suffix, quoted escaped, not a TypeError", () => {
    expect(parseError("10Gi\n")).toBe(
      "Invalid quantity '10Gi\\n': unknown suffix 'Gi\\n'; expected a suffix Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3"
    )
    expect(parseError("\n10Gi")).toMatch(/^Invalid quantity '\\n10Gi': expected a number/)
    expect(parseError("1\u0000")).toMatch(/^Invalid quantity '1\\u0000': unknown suffix '\\u0000'/)
    expect(parseError("1e3\n")).toMatch(/unknown suffix 'e3\\n'/)
  })

  it("answers a quantity error at body.size through the schema", () => {
    const issues = Result.getOrThrow(Result.flip(decodeWithIssues(CreateVolume, ["body"])({ name: "v", size: "10Gi\n" })))
    expect(issues.map(({ loc, type }) => ({ loc, type }))).toStrictEqual([{ loc: ["body", "size"], type: "quantity_parsing" }])
  })
})

describe("parseQuantity: the 2^63 limit", () => {
  it("holds for negative values too, at the exact boundary", () => {
    expect(bytes(parse("-9223372036854775807"))).toBe(-(2n ** 63n - 1n))
    expect(parseError("-9223372036854775808")).toBe(tooLarge("-9223372036854775808"))
    expect(parseError("-8Ei")).toBe(tooLarge("-8Ei"))
    expect(bytes(parse("-7Ei"))).toBe(-7n * 1024n ** 6n)
  })

  it("holds for values written with an exponent", () => {
    expect(bytes(parse("9.223372036854775807e18"))).toBe(2n ** 63n - 1n)
    expect(parseError("9.223372036854775808e18")).toBe(tooLarge("9.223372036854775808e18"))
    expect(parseError("-9.223372036854775808e18")).toBe(tooLarge("-9.223372036854775808e18"))
    expect(parseError("1e19")).toBe(tooLarge("1e19"))
    expect(compare(parse("9e18"), parse("9E"))).toBe(0)
  })

  it("holds for values with a fraction, compared exactly", () => {
    expect(compare(parse("9223372036854775806.5"), parse("9223372036854775806"))).toBe(1)
    expect(parseError("9223372036854775807.5")).toBe(tooLarge("9223372036854775807.5"))
    expect(parseError("-9223372036854775807.1")).toBe(tooLarge("-9223372036854775807.1"))
    expect(Result.isSuccess(parseQuantity("-9223372036854775806.9"))).toBe(true)
  })

  it("holds for CPU in millicores, whose own limit is 1000 times tighter", () => {
    const decode = decodeWithIssues(CpuQuantity, ["body", "cpu"])
    expect(Result.isSuccess(decode("9223372036854775.807"))).toBe(true)
    expect(Result.isSuccess(decode("9223372036854775807m"))).toBe(true)
    const issues = Result.getOrThrow(Result.flip(decode("9223372036854775.808")))
    expect(issues.map(({ msg, type }) => ({ msg, type }))).toStrictEqual([
      { msg: "Invalid quantity '9223372036854775.808': must be at most 9223372036854775807m", type: "less_than_equal" }
    ])
    expect(Result.isFailure(decode("9223372036854776"))).toBe(true)
    expect(Result.isFailure(decode("9.223372036854776e15"))).toBe(true)
  })

  it("accepts inputs of exactly 64 characters and refuses 65", () => {
    expect(Result.isSuccess(parseQuantity(`0.${"1".repeat(62)}`))).toBe(true)
    expect(parseError(`0.${"1".repeat(63)}`)).toMatch(/must be at most 64 characters/)
  })
})

describe("parseQuantity: the exponent suffix", () => {
  it("is anchored at both ends", () => {
    expect(parseError("1xe3")).toMatch(/unknown suffix 'xe3'/)
    expect(parseError("1e3x")).toMatch(/unknown suffix 'e3x'/)
    expect(parseError("1e")).toMatch(/unknown suffix 'e'/)
    expect(parseError("1e+")).toMatch(/unknown suffix 'e\+'/)
  })

  it("accepts exponents up to ±64 and no further, either case, either sign", () => {
    // 64 is in range (so the value decides: too large), 65 is not.
    expect(parseError("1e64")).toBe(tooLarge("1e64"))
    expect(bytes(parse("0.0000000000000000000000000000000000000000000000000001e64"))).toBe(10n ** 12n)
    expect(Result.isSuccess(parseQuantity("1e-64"))).toBe(true)
    expect(parseError("1e65")).toBe("Invalid quantity '1e65': exponent 65 is out of range (-64 to 64)")
    expect(parseError("1e-65")).toBe("Invalid quantity '1e-65': exponent -65 is out of range (-64 to 64)")
    expect(bytes(parse("2E2"))).toBe(200n)
    expect(bytes(parse("2e+2"))).toBe(200n)
    expect(formatQuantity(parse("5e-1"))).toBe("500m")
  })

  it("is decimal: an exponent never makes a binary quantity", () => {
    expect(parse("1e3").format).toBe("DecimalSI")
    expect(parse("1Ki").format).toBe("BinarySI")
    expect(parse("1k").format).toBe("DecimalSI")
    expect(parse("1").format).toBe("DecimalSI")
    expect(formatQuantity(parse("1024e0"))).toBe("1024")
  })
})

describe("sums: the binary-unit rule", () => {
  it("is binary when either side is binary, whichever side it is", () => {
    expect(formatQuantity(add(parse("1024"), parse("1Ki")))).toBe("2Ki")
    expect(formatQuantity(add(parse("1Ki"), parse("1024")))).toBe("2Ki")
    expect(formatQuantity(add(parse("1Ki"), parse("1Ki")))).toBe("2Ki")
  })

  it("is decimal when both sides are decimal", () => {
    expect(formatQuantity(add(parse("1024"), parse("1024")))).toBe("2048")
    expect(add(parse("1k"), parse("1k")).format).toBe("DecimalSI")
  })

  it("subtracting keeps the rule", () => {
    expect(formatQuantity(subtract(parse("3Ki"), parse("1024")))).toBe("2Ki")
    expect(formatQuantity(subtract(parse("3072"), parse("1024")))).toBe("2048")
  })

  it("a binary value that is not a multiple of 1Ki prints in decimal", () => {
    expect(formatQuantity(add(parse("1Ki"), parse("1")))).toBe("1025")
    expect(formatQuantity(parse("0.5Ki"))).toBe("512")
  })
})

describe("quantity helpers", () => {
  it("sign and zero tests", () => {
    expect(isNegative(parse("-1m"))).toBe(true)
    expect(isNegative(parse("0"))).toBe(false)
    expect(isNegative(parse("1m"))).toBe(false)
    expect(isZero(parse("0Gi"))).toBe(true)
    expect(isZero(parse("1n"))).toBe(false)
    expect(formatQuantity(negate(parse("2Ki")))).toBe("-2Ki")
    expect(equals(parse("1Gi"), parse("1024Mi"))).toBe(true)
    expect(equals(parse("1Gi"), parse("1G"))).toBe(false)
  })

  it("normalizes: equal values have one representation", () => {
    expect(parse("1000")).toStrictEqual({ coefficient: 1n, exponent: 3, format: "DecimalSI" })
    expect(parse("0.0")).toStrictEqual({ coefficient: 0n, exponent: 0, format: "DecimalSI" })
    expect(parse("-0Ki")).toStrictEqual({ coefficient: 0n, exponent: 0, format: "BinarySI" })
    expect(fromBytes(2048)).toStrictEqual({ coefficient: 2048n, exponent: 0, format: "BinarySI" })
  })

  it("formats the largest decimal suffix and values below 1n", () => {
    expect(formatQuantity(fromBytes(10n ** 21n, "DecimalSI"))).toBe("1000E")
    expect(formatQuantity(parse("1e-9"))).toBe("1n")
    expect(formatQuantity(parse("1e-10"))).toBe("1e-10")
    expect(formatQuantity(parse("12e-10"))).toBe("12e-10")
    expect(formatQuantity(parse("1Ei"))).toBe("1Ei")
    expect(formatQuantity(fromBytes(1024n ** 7n))).toBe("1024Ei")
  })

  it("canonicalQuantity reprints or fails", () => {
    expect(canonicalQuantity("1024Mi")).toStrictEqual(Result.succeed("1Gi"))
    expect(Result.isFailure(canonicalQuantity("x"))).toBe(true)
  })

  it("isQuantity checks every field", () => {
    expect(isQuantity(parse("1"))).toBe(true)
    expect(isQuantity(null)).toBe(false)
    expect(isQuantity("1")).toBe(false)
    expect(isQuantity({ coefficient: 1, exponent: 0, format: "DecimalSI" })).toBe(false)
    expect(isQuantity({ coefficient: 1n, exponent: "0", format: "DecimalSI" })).toBe(false)
    expect(isQuantity({ coefficient: 1n, exponent: 0, format: "Other" })).toBe(false)
    expect(isQuantity({ coefficient: 1n, exponent: 0, format: "BinarySI" })).toBe(true)
  })

  it("a volume size of zero is refused, a positive one decoded exactly", () => {
    const decode = decodeWithIssues(VolumeSize, ["body", "size"])
    expect(Result.isFailure(decode("0"))).toBe(true)
    expect(bytes(Result.getOrThrow(decode("1")))).toBe(1n)
  })
})

describe("resolveStorageClass: every case", () => {
  it("omitted: standard when allowed, else the first allowed, and standard when nothing is configured", () => {
    expect(resolveStorageClass(undefined, ["fast", "standard"])).toStrictEqual(Result.succeed("standard"))
    expect(resolveStorageClass(undefined, ["ssd", "hdd"])).toStrictEqual(Result.succeed("ssd"))
    expect(resolveStorageClass(undefined, [])).toStrictEqual(Result.succeed("standard"))
  })

  it("requested: itself when allowed, in any position", () => {
    expect(resolveStorageClass("hdd", ["ssd", "hdd"])).toStrictEqual(Result.succeed("hdd"))
    expect(resolveStorageClass("standard", ["standard"])).toStrictEqual(Result.succeed("standard"))
  })

  it.each([
    [[], "Input should be a configured storage class"],
    [["fast"], "Input should be 'fast'"],
    [["a", "b"], "Input should be 'a' or 'b'"],
    [["a", "b", "c"], "Input should be 'a', 'b' or 'c'"]
  ])("refused with %j allowed: %s, at body.storage_class", (allowed, msg) => {
    const error = Result.getOrThrow(Result.flip(resolveStorageClass("gold", allowed)))
    expect(error.issues.map(({ loc, msg, type }) => ({ loc, msg, type }))).toStrictEqual([{ loc: ["body", "storage_class"], msg, type: "enum" }])
  })

  it("standard is not allowed when the operator removed it", () => {
    expect(Result.isFailure(resolveStorageClass("standard", ["ssd"]))).toBe(true)
  })
})

describe("template images follow the OCI reference grammar", () => {
  const decode = decodeWithIssues(CreateTemplate, ["body"])
  it.each([
    ["--privileged", "image must not start with '-' (a tool would read it as an option)"],
    ["python:3.12\n", "image must not contain control characters (such as a line break or NUL)"],
    ["Python:3.12", "image's repository path must be lowercase (only the registry host may use uppercase)"]
  ])("refuses %j", (image, msg) => {
    const issues = Result.getOrThrow(Result.flip(decode({ name: "t", image })))
    expect(issues.map(({ loc, msg, type }) => ({ loc, msg, type }))).toStrictEqual([{ loc: ["body", "image"], msg, type: "value_error" }])
  })

  it("refuses a lone surrogate instead of rewriting it", () => {
    const issues = Result.getOrThrow(Result.flip(decode({ name: "t", image: "python:3.12\ud800" })))
    expect(issues.map(({ loc, type }) => ({ loc, type }))).toStrictEqual([{ loc: ["body", "image"], type: "string_unicode" }])
  })

  it("accepts registries with ports and digests", () => {
    expect(Result.isSuccess(decode({ name: "t", image: "127.0.0.1:5055/acme/tiny:1" }))).toBe(true)
    expect(Result.isSuccess(decode({ name: "t", image: `acme/x@sha256:${"a".repeat(64)}` }))).toBe(true)
  })
})

describe("found by mutation testing in quantity.ts", () => {
  it("fromMillis builds a decimal quantity", () => {
    expect(fromMillis(500)).toStrictEqual({ coefficient: 5n, exponent: -1, format: "DecimalSI" })
    expect(isQuantity(fromMillis(500))).toBe(true)
  })

  it("a binary value that no power of 1024 divides prints in decimal form", () => {
    expect(formatQuantity(fromBytes(1000))).toBe("1k")
    expect(formatQuantity(add(parse("1Ki"), parse("-24")))).toBe("1k")
  })

  it("isQuantity wants an object, not a function carrying the fields", () => {
    expect(isQuantity(Object.assign(() => 1, { coefficient: 1n, exponent: 0, format: "BinarySI" }))).toBe(false)
  })
})

describe("generated sandbox names (names.ts)", () => {
  const zero = () => 0
  it("collapse each run of invalid characters to one '-'", () => {
    expect(generateSandboxName("My__Template", zero)).toBe("my-template-bbbbbb")
  })

  it("trim every leading and trailing '-'", () => {
    expect(generateSandboxName("x-_-", zero)).toBe("x-bbbbbb")
    expect(generateSandboxName("-_-x", zero)).toBe("x-bbbbbb")
  })
})

describe("found by mutation testing in proxy.ts", () => {
  const decode = decodeWithIssues(ProxyConfigInput, ["body", "proxy_config"])
  const named = (name: string) => decode({ rules: [{ name, match_hosts: ["api.example.com"] }] })

  it("a rule name has 1 to 63 characters", () => {
    expect(Result.isSuccess(named("a".repeat(63)))).toBe(true)
    expect(Result.getOrThrow(Result.flip(named("a".repeat(64)))).map(({ loc, type }) => ({ loc, type }))).toStrictEqual([
      { loc: ["body", "proxy_config", "rules", 0, "name"], type: "string_too_long" }
    ])
    expect(Result.getOrThrow(Result.flip(named(""))).map(({ loc, type }) => ({ loc, type }))).toStrictEqual([
      { loc: ["body", "proxy_config", "rules", 0, "name"], type: "string_too_short" }
    ])
  })

  it("references right after one another are all found", () => {
    expect(parseEnvReferences("${A}${B}")).toStrictEqual(Result.succeed(["A", "B"]))
    expect(parseEnvReferences("${A}}${B}")).toStrictEqual(Result.succeed(["A", "B"]))
  })
})

describe("found by mutation testing in model.ts", () => {
  const mount = (mount_path: string) => decodeWithIssues(CreateTemplate, ["body"])({ name: "t", image: "a:1", volume_mounts: [{ volume_name: "v", mount_path }] })
  it("a mount path may end with '/', but no run of slashes alone is allowed (it is the root)", () => {
    expect(Result.isSuccess(mount("/data/"))).toBe(true)
    for (const root of ["/", "//", "///"]) {
      expect(Result.getOrThrow(Result.flip(mount(root))).map(({ msg }) => msg)).toStrictEqual(["must not be the root directory"])
    }
  })
})
