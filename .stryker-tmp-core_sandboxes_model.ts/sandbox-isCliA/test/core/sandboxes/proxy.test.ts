// @ts-nocheck
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { decodeWithIssues } from "../../../core/api/validation.ts"
import { parseEnvReferences, ProxyConfig, ProxyConfigInput, referencedVariables } from "../../../core/sandboxes/proxy.ts"

const prefix = ["body", "proxy_config"]
const decode = decodeWithIssues(ProxyConfigInput, prefix)
const issues = (input: unknown) => Result.match(decode(input), { onFailure: (found) => found.map(({ loc, msg, type }) => ({ loc, msg, type })), onSuccess: () => [] })
const oneRule = (fields: Record<string, unknown>) => ({ rules: [{ name: "openai", match_hosts: ["api.openai.com"], ...fields }] })

describe("parseEnvReferences", () => {
  it.each([
    ["Bearer ${OPENAI_API_KEY}", ["OPENAI_API_KEY"]],
    ["${A}:${_b1}", ["A", "_b1"]],
    ["${A}${A}", ["A"]],
    ["plain", []],
    ["costs $5 or {x}", []],
    ["$${A}", ["A"]]
  ])("%j references %j", (value, names) => {
    expect(parseEnvReferences(value)).toStrictEqual(Result.succeed(names))
  })

  it.each([
    ["Bearer ${TOKEN", "unclosed '${' at position 7: expected '}'"],
    ["${A} ${", "unclosed '${' at position 5: expected '}'"],
    ["${}", "empty variable name in '${}' at position 0"],
    ["x${1ABC}", "invalid variable name '1ABC' at position 1: must be a C identifier (letters, digits and '_', not starting with a digit)"],
    ["${MY-VAR}", "invalid variable name 'MY-VAR' at position 0: must be a C identifier (letters, digits and '_', not starting with a digit)"],
    ["${ A }", "invalid variable name ' A ' at position 0: must be a C identifier (letters, digits and '_', not starting with a digit)"]
  ])("rejects %j", (value, message) => {
    expect(parseEnvReferences(value)).toStrictEqual(Result.fail(message))
  })
})

describe("ProxyConfigInput", () => {
  it("defaults an empty config and a rule's optional fields (enabled true)", () => {
    expect(Result.getOrThrow(decode({}))).toStrictEqual({ rules: [], no_proxy: [] })
    expect(Result.getOrThrow(decode(oneRule({})))).toStrictEqual({
      rules: [{ name: "openai", match_hosts: ["api.openai.com"], inject_headers: {}, match_paths: [], enabled: true }],
      no_proxy: []
    })
  })

  it("keeps what was sent", () => {
    const rule = {
      name: "openai",
      match_hosts: ["api.openai.com", "*.openai.com", "10.0.0.1:8443", "*"],
      inject_headers: { Authorization: "Bearer ${OPENAI_API_KEY}" },
      match_paths: ["/v1/*", "/health"],
      enabled: false
    }
    expect(Result.getOrThrow(decode({ rules: [rule], no_proxy: ["localhost", ".internal", "10.0.0.0/8"] }))).toStrictEqual({
      rules: [rule],
      no_proxy: ["localhost", ".internal", "10.0.0.0/8"]
    })
  })

  it("points a malformed header reference at the header", () => {
    expect(issues(oneRule({ inject_headers: { Authorization: "Bearer ${KEY", "X-Org": "${}" } }))).toStrictEqual([
      { loc: [...prefix, "rules", 0, "inject_headers", "Authorization"], msg: "unclosed '${' at position 7: expected '}'", type: "value_error" },
      { loc: [...prefix, "rules", 0, "inject_headers", "X-Org"], msg: "empty variable name in '${}' at position 0", type: "value_error" }
    ])
  })

  it("rejects header names that are not HTTP tokens and values with line breaks", () => {
    expect(issues(oneRule({ inject_headers: { "Bad Header": "x", "X-Ok": "a\r\nX-Evil: 1" } }))).toStrictEqual([
      { loc: [...prefix, "rules", 0, "inject_headers", "X-Ok"], msg: "must not contain line breaks", type: "value_error" }
    ])
    expect(issues(oneRule({ inject_headers: { "Bad Header": "x" } }))).toStrictEqual([
      { loc: [...prefix, "rules", 0, "inject_headers", "Bad Header"], msg: "must be a valid HTTP header name", type: "value_error" }
    ])
  })

  it("requires match_paths to start with '/' and allows '*' only at the end", () => {
    expect(issues(oneRule({ match_paths: ["/ok/*", "v1", "/a/*/b", "*"] }))).toStrictEqual([
      { loc: [...prefix, "rules", 0, "match_paths", 1], msg: "must start with '/'", type: "value_error" },
      { loc: [...prefix, "rules", 0, "match_paths", 2], msg: "may contain '*' only as the last character", type: "value_error" },
      { loc: [...prefix, "rules", 0, "match_paths", 3], msg: "must start with '/'", type: "value_error" }
    ])
  })

  it("requires a name and at least one valid host", () => {
    expect(issues({ rules: [{ match_hosts: [] }] })).toStrictEqual([
      { loc: [...prefix, "rules", 0, "name"], msg: "Field required", type: "missing" },
      { loc: [...prefix, "rules", 0, "match_hosts"], msg: "must list at least one host", type: "too_short" }
    ])
    expect(issues(oneRule({ match_hosts: ["https://api.openai.com", "a*.b.com"] })).map((issue) => issue.loc)).toStrictEqual([
      [...prefix, "rules", 0, "match_hosts", 0],
      [...prefix, "rules", 0, "match_hosts", 1]
    ])
  })

  it("reports a duplicate rule name at the second rule", () => {
    expect(issues({ rules: [{ name: "a", match_hosts: ["x.com"] }, { name: "b", match_hosts: ["y.com"] }, { name: "a", match_hosts: ["z.com"] }] })).toStrictEqual([
      { loc: [...prefix, "rules", 2, "name"], msg: "duplicate rule name 'a'", type: "value_error" }
    ])
  })

  it("rejects no_proxy entries that would break the comma-joined NO_PROXY", () => {
    expect(issues({ no_proxy: ["a.com,b.com", "", "ok.com"] })).toStrictEqual([
      { loc: [...prefix, "no_proxy", 0], msg: "must not contain whitespace or commas", type: "value_error" },
      { loc: [...prefix, "no_proxy", 1], msg: "must not be empty", type: "string_too_short" }
    ])
  })

  it("rejects unknown fields and wrong types", () => {
    expect(issues(oneRule({ enabled: "yes", extra: 1 }))).toStrictEqual([
      { loc: [...prefix, "rules", 0, "extra"], msg: "Extra inputs are not permitted", type: "extra_forbidden" },
      { loc: [...prefix, "rules", 0, "enabled"], msg: "Input should be a valid boolean", type: "bool_type" }
    ])
  })
})

describe("ProxyConfig (stored and response shape)", () => {
  it("requires every field", () => {
    expect(Result.isFailure(decodeWithIssues(ProxyConfig)({}))).toBe(true)
    expect(Result.isSuccess(decodeWithIssues(ProxyConfig)({ rules: [], no_proxy: [] }))).toBe(true)
  })
})

describe("referencedVariables", () => {
  it("collects the variables of enabled rules only, once each", () => {
    const rule = (name: string, enabled: boolean, inject_headers: Record<string, string>) => ({ name, match_hosts: ["x"], match_paths: [], enabled, inject_headers })
    expect(
      referencedVariables({
        rules: [rule("a", true, { A: "${ONE} ${TWO}" }), rule("b", false, { B: "${THREE}" }), rule("c", true, { C: "${TWO}" })]
      })
    ).toStrictEqual(["ONE", "TWO"])
  })
})
