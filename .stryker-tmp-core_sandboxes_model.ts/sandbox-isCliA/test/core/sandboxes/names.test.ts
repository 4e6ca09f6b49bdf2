// @ts-nocheck
import { Result } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { decodeWithIssues } from "../../../core/api/validation.ts"
import { DnsLabel, dnsLabelPatternMessage, generateSandboxName, generatedSuffixLength, isDnsLabel } from "../../../core/sandboxes/names.ts"

const issues = (input: unknown) => Result.match(decodeWithIssues(DnsLabel, ["body", "name"])(input), { onFailure: (found) => found.map(({ loc, msg, type }) => ({ loc, msg, type })), onSuccess: () => [] })

/** A deterministic source of "randomness" for the generator. */
const sequence = (...values: Array<number>) => {
  let index = 0
  return () => values[index++ % values.length]!
}

describe("DnsLabel", () => {
  it.each(["a", "0", "my-sandbox", "a1-b2-c3", "x".repeat(63)])("accepts %j", (name) => {
    expect(issues(name)).toStrictEqual([])
    expect(isDnsLabel(name)).toBe(true)
  })

  it.each(["My-Box", "-box", "box-", "my_box", "my.box", "b ox", "bøx"])("rejects %j with the pattern message", (name) => {
    expect(issues(name)).toStrictEqual([{ loc: ["body", "name"], msg: dnsLabelPatternMessage, type: "string_pattern_mismatch" }])
    expect(isDnsLabel(name)).toBe(false)
  })

  it("says what the pattern requires", () => {
    expect(dnsLabelPatternMessage).toBe(
      "must consist of lowercase alphanumeric characters or '-', and must start and end with an alphanumeric character"
    )
  })

  it("rejects 64 characters as too long", () => {
    expect(issues("x".repeat(64))).toStrictEqual([{ loc: ["body", "name"], msg: "must be at most 63 characters", type: "string_too_long" }])
    expect(isDnsLabel("x".repeat(64))).toBe(false)
  })

  it("rejects the empty string with one issue, not two", () => {
    expect(issues("")).toStrictEqual([{ loc: ["body", "name"], msg: "must be at least 1 character", type: "string_too_short" }])
  })

  it("reports every problem of a long, malformed name", () => {
    expect(issues("X".repeat(64)).map((issue) => issue.type)).toStrictEqual(["string_too_long", "string_pattern_mismatch"])
  })

  it("rejects a non-string", () => {
    expect(issues(42)).toStrictEqual([{ loc: ["body", "name"], msg: "Input should be a valid string", type: "string_type" }])
  })
})

describe("generateSandboxName", () => {
  it("is the template name, a dash and a suffix drawn from the given randomness", () => {
    expect(generateSandboxName("python", sequence(0))).toBe("python-bbbbbb")
    expect(generateSandboxName("python", sequence(0.999999))).toBe("python-999999")
    expect(generateSandboxName("python", sequence(0, 0.5))).toBe(generateSandboxName("python", sequence(0, 0.5)))
  })

  it("cuts a long template name so the whole fits 63 characters and does not end the prefix with '-'", () => {
    const template = `${"a".repeat(55)}-bbbbbbb`
    const name = generateSandboxName(template, sequence(0))
    expect(name).toBe(`${"a".repeat(55)}-bbbbbb`)
    expect(name.length).toBeLessThanOrEqual(63)
  })

  it("repairs a template name that is not a label, and falls back when nothing is left", () => {
    expect(generateSandboxName("My_Template", sequence(0))).toBe("my-template-bbbbbb")
    expect(generateSandboxName("---", sequence(0))).toBe("sandbox-bbbbbb")
  })

  it("always produces a valid label (property)", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 100 }), fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1 }), (template, randoms) => {
        const name = generateSandboxName(template, sequence(...randoms))
        return isDnsLabel(name) && name.slice(-generatedSuffixLength - 1).startsWith("-")
      })
    )
  })
})
