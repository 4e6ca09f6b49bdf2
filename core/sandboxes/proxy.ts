/**
 * A template's egress proxy configuration: rules that inject headers (typically credentials)
 * into requests a sandbox makes to matching hosts and paths, plus hosts that bypass the proxy.
 *
 * Fields and defaults of a rule (the spec leaves them open):
 * - `name`           required, 1–63 characters, unique within the config (it identifies the rule).
 * - `match_hosts`    required, at least one host: a rule that matches no host never applies,
 *                    which is surely a mistake. A host is a name or IP with an optional port; a
 *                    leading `*.` matches subdomains; `*` alone matches every host.
 * - `inject_headers` optional, default `{}`. Keys are HTTP header names; values may reference
 *                    environment variables as `${VAR}` (VAR a C identifier). There is no escape:
 *                    a `$` not followed by `{` is literal.
 * - `match_paths`    optional, default `[]` = every path. Each starts with `/`; a `*` is allowed
 *                    only as the last character (prefix match).
 * - `enabled`        optional, default `true`.
 * And of the config: `rules` default `[]`, `no_proxy` default `[]` (hosts, domains or CIDRs,
 * joined with commas into NO_PROXY, so they may not contain commas or whitespace).
 */
import { Effect, Result, Schema } from "effect"
import { issueTypeKey, rule } from "../api/validation.ts"

// ---------------------------------------------------------------------------------------------
// `${VAR}` references in header values

const identifierPattern = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * The environment variables a header value references, in order of first appearance, or a
 * message describing the first malformed reference (unclosed `${`, empty or invalid name).
 */
export const parseEnvReferences = (value: string): Result.Result<ReadonlyArray<string>, string> => {
  const names: Array<string> = []
  let position = value.indexOf("${")
  while (position !== -1) {
    const close = value.indexOf("}", position + 2)
    if (close === -1) return Result.fail(`unclosed '\${' at position ${position}: expected '}'`)
    const name = value.slice(position + 2, close)
    if (name === "") return Result.fail(`empty variable name in '\${}' at position ${position}`)
    if (!identifierPattern.test(name)) {
      return Result.fail(`invalid variable name '${name}' at position ${position}: must be a C identifier (letters, digits and '_', not starting with a digit)`)
    }
    if (!names.includes(name)) names.push(name)
    // From the '}' itself: it cannot start "${".
    position = value.indexOf("${", close)
  }
  return Result.succeed(names)
}

/** Every variable referenced by the enabled rules: what the sandbox's environment must provide. */
export const referencedVariables = (config: { readonly rules: ReadonlyArray<ProxyRule> }): ReadonlyArray<string> => {
  const names = new Set<string>()
  for (const proxyRule of config.rules) {
    if (!proxyRule.enabled) continue
    for (const value of Object.values(proxyRule.inject_headers)) {
      Result.match(parseEnvReferences(value), { onFailure: () => undefined, onSuccess: (found) => found.forEach((name) => names.add(name)) })
    }
  }
  return [...names]
}

// ---------------------------------------------------------------------------------------------
// Field schemas

/** RFC 9110 token: the characters an HTTP header name may contain. */
const headerNamePattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * Checked on the record rather than as its key schema: a key that fails a key schema is
 * reported as an unexpected key, which would hide the real reason.
 */
const validHeaderNames = Schema.makeFilter<Readonly<Record<string, string>>>(
  (headers) =>
    Object.keys(headers)
      .filter((name) => !headerNamePattern.test(name))
      .map((name) => ({ path: [name], issue: "must be a valid HTTP header name" })),
  { [issueTypeKey]: "value_error" } as any
)

const HeaderValue = Schema.String.check(
  // A line break would let a value smuggle in extra headers.
  rule((value: string) => !/[\r\n]/.test(value), "must not contain line breaks", "value_error"),
  Schema.makeFilter<string>((value) => Result.match(parseEnvReferences(value), { onFailure: (reason) => reason, onSuccess: () => undefined }), {
    [issueTypeKey]: "value_error"
  } as any)
)

const hostPattern = /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?)$/

const MatchHost = Schema.String.check(
  rule((host: string) => hostPattern.test(host), "must be a host name or IP address with an optional port; '*.' may prefix a domain, '*' alone matches every host", "value_error", {
    pattern: hostPattern.source
  })
).annotate({ description: "A host name or IP address with an optional port; '*.' may prefix a domain, '*' alone matches every host", examples: ["api.openai.com"] })

const MatchPath = Schema.String.check(
  rule((path: string) => path.startsWith("/"), "must start with '/'", "value_error", { pattern: "^/[^*]*\\*?$" }),
  rule((path: string) => !path.slice(0, -1).includes("*"), "may contain '*' only as the last character", "value_error")
).annotate({ description: "A path prefix starting with '/'; '*' only as the last character", examples: ["/v1/*"] })

const NoProxyEntry = Schema.String.check(
  rule((entry: string) => entry.length > 0, "must not be empty", "string_too_short", { minLength: 1 }),
  rule((entry: string) => !/[\s,]/.test(entry), "must not contain whitespace or commas", "value_error", { pattern: "^[^\\s,]+$" })
).annotate({ description: "A host (or domain suffix) reached without the proxy", examples: ["localhost"] })

const RuleName = Schema.String.check(
  rule((name: string) => name.length >= 1, "must be at least 1 character", "string_too_short", { minLength: 1 }),
  rule((name: string) => name.length <= 63, "must be at most 63 characters", "string_too_long", { maxLength: 63 })
).annotate({ description: "The rule's name, unique in the template", examples: ["openai"] })

const MatchHosts = Schema.Array(MatchHost)
  .check(rule((hosts: ReadonlyArray<string>) => hosts.length >= 1, "must list at least one host", "too_short", { minItems: 1 }))
  .annotate({ description: "Hosts whose requests the rule applies to", examples: [["api.openai.com"]] })
const InjectHeaders = Schema.Record(Schema.String, HeaderValue)
  .check(validHeaderNames)
  .annotate({ description: "Headers added to matching requests; ${VAR} takes a variable of the sandbox's environment", examples: [{ Authorization: "Bearer ${OPENAI_API_KEY}" }] })
const MatchPaths = Schema.Array(MatchPath).annotate({ description: "Path prefixes the rule applies to (empty: every path)", examples: [["/v1/*"]] })
const NoProxy = Schema.Array(NoProxyEntry).annotate({ description: "Hosts reached directly, without the proxy", examples: [["localhost"]] })

/** Rule names identify rules, so a second rule with the same name is reported at its `name`. */
const uniqueRuleNames = Schema.makeFilter<ReadonlyArray<{ readonly name: string }>>(
  (rules) =>
    rules.flatMap((proxyRule, index) =>
      rules.findIndex((other) => other.name === proxyRule.name) < index ? [{ path: [index, "name"], issue: `duplicate rule name '${proxyRule.name}'` }] : []
    ),
  { [issueTypeKey]: "value_error" } as any
)

const withDefault = <S extends Schema.Top>(schema: S, value: S["Encoded"]) => Schema.withDecodingDefaultKey<S>(Effect.succeed(value))(schema)

// ---------------------------------------------------------------------------------------------
// Stored / response shapes: every field present.

export const ProxyRule = Schema.Struct({
  name: RuleName,
  match_hosts: MatchHosts,
  inject_headers: InjectHeaders,
  match_paths: MatchPaths,
  enabled: Schema.Boolean
}).annotate({ identifier: "ProxyRule" })
export type ProxyRule = typeof ProxyRule.Type

export const ProxyConfig = Schema.Struct({
  rules: Schema.Array(ProxyRule).check(uniqueRuleNames),
  no_proxy: NoProxy
}).annotate({ identifier: "ProxyConfig" })
export type ProxyConfig = typeof ProxyConfig.Type

// ---------------------------------------------------------------------------------------------
// Request shapes: the same fields, optional ones defaulted on decode (see the header comment).

export const ProxyRuleInput = Schema.Struct({
  name: RuleName,
  match_hosts: MatchHosts,
  inject_headers: withDefault(InjectHeaders, {}),
  match_paths: withDefault(MatchPaths, []),
  enabled: withDefault(Schema.Boolean.annotate({ description: "Whether the rule applies (default true)", examples: [true] }), true)
}).annotate({ identifier: "ProxyRuleInput" })

export const ProxyConfigInput = Schema.Struct({
  rules: withDefault(Schema.Array(ProxyRuleInput).check(uniqueRuleNames), []),
  no_proxy: withDefault(NoProxy, [])
}).annotate({ identifier: "ProxyConfigInput" })

/** What a template without `proxy_config` gets. */
export const emptyProxyConfig: ProxyConfig = { rules: [], no_proxy: [] }
