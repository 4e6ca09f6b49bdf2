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
// @ts-nocheck
function stryNS_9fa48() {
  var g = typeof globalThis === 'object' && globalThis && globalThis.Math === Math && globalThis || new Function("return this")();
  var ns = g.__stryker__ || (g.__stryker__ = {});
  if (ns.activeMutant === undefined && g.process && g.process.env && g.process.env.__STRYKER_ACTIVE_MUTANT__) {
    ns.activeMutant = g.process.env.__STRYKER_ACTIVE_MUTANT__;
  }
  function retrieveNS() {
    return ns;
  }
  stryNS_9fa48 = retrieveNS;
  return retrieveNS();
}
stryNS_9fa48();
function stryCov_9fa48() {
  var ns = stryNS_9fa48();
  var cov = ns.mutantCoverage || (ns.mutantCoverage = {
    static: {},
    perTest: {}
  });
  function cover() {
    var c = cov.static;
    if (ns.currentTestId) {
      c = cov.perTest[ns.currentTestId] = cov.perTest[ns.currentTestId] || {};
    }
    var a = arguments;
    for (var i = 0; i < a.length; i++) {
      c[a[i]] = (c[a[i]] || 0) + 1;
    }
  }
  stryCov_9fa48 = cover;
  cover.apply(null, arguments);
}
function stryMutAct_9fa48(id) {
  var ns = stryNS_9fa48();
  function isActive(id) {
    if (ns.activeMutant === id) {
      if (ns.hitCount !== void 0 && ++ns.hitCount > ns.hitLimit) {
        throw new Error('Stryker: Hit count limit reached (' + ns.hitCount + ')');
      }
      return true;
    }
    return false;
  }
  stryMutAct_9fa48 = isActive;
  return isActive(id);
}
import { Effect, Result, Schema } from "effect";
import { issueTypeKey, rule } from "../api/validation.ts";

// ---------------------------------------------------------------------------------------------
// `${VAR}` references in header values

const identifierPattern = stryMutAct_9fa48("4") ? /^[A-Za-z_][^A-Za-z0-9_]*$/ : stryMutAct_9fa48("3") ? /^[A-Za-z_][A-Za-z0-9_]$/ : stryMutAct_9fa48("2") ? /^[^A-Za-z_][A-Za-z0-9_]*$/ : stryMutAct_9fa48("1") ? /^[A-Za-z_][A-Za-z0-9_]*/ : stryMutAct_9fa48("0") ? /[A-Za-z_][A-Za-z0-9_]*$/ : (stryCov_9fa48("0", "1", "2", "3", "4"), /^[A-Za-z_][A-Za-z0-9_]*$/);

/**
 * The environment variables a header value references, in order of first appearance, or a
 * message describing the first malformed reference (unclosed `${`, empty or invalid name).
 */
export const parseEnvReferences = (value: string): Result.Result<ReadonlyArray<string>, string> => {
  if (stryMutAct_9fa48("5")) {
    {}
  } else {
    stryCov_9fa48("5");
    const names: Array<string> = stryMutAct_9fa48("6") ? ["Stryker was here"] : (stryCov_9fa48("6"), []);
    let position = value.indexOf(stryMutAct_9fa48("7") ? "" : (stryCov_9fa48("7"), "${"));
    while (stryMutAct_9fa48("9") ? position === -1 : stryMutAct_9fa48("8") ? false : (stryCov_9fa48("8", "9"), position !== (stryMutAct_9fa48("10") ? +1 : (stryCov_9fa48("10"), -1)))) {
      if (stryMutAct_9fa48("11")) {
        {}
      } else {
        stryCov_9fa48("11");
        const close = value.indexOf(stryMutAct_9fa48("12") ? "" : (stryCov_9fa48("12"), "}"), stryMutAct_9fa48("13") ? position - 2 : (stryCov_9fa48("13"), position + 2));
        if (stryMutAct_9fa48("16") ? close !== -1 : stryMutAct_9fa48("15") ? false : stryMutAct_9fa48("14") ? true : (stryCov_9fa48("14", "15", "16"), close === (stryMutAct_9fa48("17") ? +1 : (stryCov_9fa48("17"), -1)))) return Result.fail(stryMutAct_9fa48("18") ? `` : (stryCov_9fa48("18"), `unclosed '\${' at position ${position}: expected '}'`));
        const name = stryMutAct_9fa48("19") ? value : (stryCov_9fa48("19"), value.slice(stryMutAct_9fa48("20") ? position - 2 : (stryCov_9fa48("20"), position + 2), close));
        if (stryMutAct_9fa48("23") ? name !== "" : stryMutAct_9fa48("22") ? false : stryMutAct_9fa48("21") ? true : (stryCov_9fa48("21", "22", "23"), name === (stryMutAct_9fa48("24") ? "Stryker was here!" : (stryCov_9fa48("24"), "")))) return Result.fail(stryMutAct_9fa48("25") ? `` : (stryCov_9fa48("25"), `empty variable name in '\${}' at position ${position}`));
        if (stryMutAct_9fa48("28") ? false : stryMutAct_9fa48("27") ? true : stryMutAct_9fa48("26") ? identifierPattern.test(name) : (stryCov_9fa48("26", "27", "28"), !identifierPattern.test(name))) {
          if (stryMutAct_9fa48("29")) {
            {}
          } else {
            stryCov_9fa48("29");
            return Result.fail(stryMutAct_9fa48("30") ? `` : (stryCov_9fa48("30"), `invalid variable name '${name}' at position ${position}: must be a C identifier (letters, digits and '_', not starting with a digit)`));
          }
        }
        if (stryMutAct_9fa48("33") ? false : stryMutAct_9fa48("32") ? true : stryMutAct_9fa48("31") ? names.includes(name) : (stryCov_9fa48("31", "32", "33"), !names.includes(name))) if (stryMutAct_9fa48("34")) {
          ;
        } else {
          stryCov_9fa48("34");
          names.push(name);
        }
        position = value.indexOf(stryMutAct_9fa48("35") ? "" : (stryCov_9fa48("35"), "${"), stryMutAct_9fa48("36") ? close - 1 : (stryCov_9fa48("36"), close + 1));
      }
    }
    return Result.succeed(names);
  }
};

/** Every variable referenced by the enabled rules: what the sandbox's environment must provide. */
export const referencedVariables = (config: {
  readonly rules: ReadonlyArray<ProxyRule>;
}): ReadonlyArray<string> => {
  if (stryMutAct_9fa48("37")) {
    {}
  } else {
    stryCov_9fa48("37");
    const names = new Set<string>();
    for (const proxyRule of config.rules) {
      if (stryMutAct_9fa48("38")) {
        {}
      } else {
        stryCov_9fa48("38");
        if (stryMutAct_9fa48("41") ? false : stryMutAct_9fa48("40") ? true : stryMutAct_9fa48("39") ? proxyRule.enabled : (stryCov_9fa48("39", "40", "41"), !proxyRule.enabled)) continue;
        for (const value of Object.values(proxyRule.inject_headers)) {
          if (stryMutAct_9fa48("42")) {
            {}
          } else {
            stryCov_9fa48("42");
            Result.match(parseEnvReferences(value), stryMutAct_9fa48("44") ? {} : (stryCov_9fa48("44"), {
              onFailure: () => undefined,
              onSuccess: stryMutAct_9fa48("45") ? () => undefined : (stryCov_9fa48("45"), found => found.forEach(stryMutAct_9fa48("46") ? () => undefined : (stryCov_9fa48("46"), name => names.add(name))))
            }));
          }
        }
      }
    }
    return stryMutAct_9fa48("47") ? [] : (stryCov_9fa48("47"), [...names]);
  }
};

// ---------------------------------------------------------------------------------------------
// Field schemas

/** RFC 9110 token: the characters an HTTP header name may contain. */
const headerNamePattern = stryMutAct_9fa48("51") ? /^[^!#$%&'*+.^_`|~0-9A-Za-z-]+$/ : stryMutAct_9fa48("50") ? /^[!#$%&'*+.^_`|~0-9A-Za-z-]$/ : stryMutAct_9fa48("49") ? /^[!#$%&'*+.^_`|~0-9A-Za-z-]+/ : stryMutAct_9fa48("48") ? /[!#$%&'*+.^_`|~0-9A-Za-z-]+$/ : (stryCov_9fa48("48", "49", "50", "51"), /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/);

/**
 * Checked on the record rather than as its key schema: a key that fails a key schema is
 * reported as an unexpected key, which would hide the real reason.
 */
const validHeaderNames = Schema.makeFilter<Readonly<Record<string, string>>>(stryMutAct_9fa48("52") ? () => undefined : (stryCov_9fa48("52"), headers => stryMutAct_9fa48("53") ? Object.keys(headers).map(name => ({
  path: [name],
  issue: "must be a valid HTTP header name"
})) : (stryCov_9fa48("53"), Object.keys(headers).filter(stryMutAct_9fa48("54") ? () => undefined : (stryCov_9fa48("54"), name => stryMutAct_9fa48("55") ? headerNamePattern.test(name) : (stryCov_9fa48("55"), !headerNamePattern.test(name)))).map(stryMutAct_9fa48("56") ? () => undefined : (stryCov_9fa48("56"), name => stryMutAct_9fa48("57") ? {} : (stryCov_9fa48("57"), {
  path: stryMutAct_9fa48("58") ? [] : (stryCov_9fa48("58"), [name]),
  issue: stryMutAct_9fa48("59") ? "" : (stryCov_9fa48("59"), "must be a valid HTTP header name")
}))))), {
  [issueTypeKey]: "value_error"
} as any);
const HeaderValue = Schema.String.check(
// A line break would let a value smuggle in extra headers.
rule(stryMutAct_9fa48("60") ? () => undefined : (stryCov_9fa48("60"), (value: string) => stryMutAct_9fa48("61") ? /[\r\n]/.test(value) : (stryCov_9fa48("61"), !(stryMutAct_9fa48("62") ? /[^\r\n]/ : (stryCov_9fa48("62"), /[\r\n]/)).test(value))), stryMutAct_9fa48("63") ? "" : (stryCov_9fa48("63"), "must not contain line breaks"), stryMutAct_9fa48("64") ? "" : (stryCov_9fa48("64"), "value_error")), Schema.makeFilter<string>(stryMutAct_9fa48("65") ? () => undefined : (stryCov_9fa48("65"), value => Result.match(parseEnvReferences(value), stryMutAct_9fa48("66") ? {} : (stryCov_9fa48("66"), {
  onFailure: stryMutAct_9fa48("67") ? () => undefined : (stryCov_9fa48("67"), reason => reason),
  onSuccess: () => undefined
}))), {
  [issueTypeKey]: "value_error"
} as any));
const hostPattern = stryMutAct_9fa48("84") ? /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[^0-9]{1,5})?)$/ : stryMutAct_9fa48("83") ? /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9])?)$/ : stryMutAct_9fa48("82") ? /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5}))$/ : stryMutAct_9fa48("81") ? /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[^A-Za-z0-9])?)*(:[0-9]{1,5})?)$/ : stryMutAct_9fa48("80") ? /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([^A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?)$/ : stryMutAct_9fa48("79") ? /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-][A-Za-z0-9])?)*(:[0-9]{1,5})?)$/ : stryMutAct_9fa48("78") ? /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9]))*(:[0-9]{1,5})?)$/ : stryMutAct_9fa48("77") ? /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[^A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?)$/ : stryMutAct_9fa48("76") ? /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)(:[0-9]{1,5})?)$/ : stryMutAct_9fa48("75") ? /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[^A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?)$/ : stryMutAct_9fa48("74") ? /^(\*|(\*\.)?[A-Za-z0-9]([^A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?)$/ : stryMutAct_9fa48("73") ? /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-][A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?)$/ : stryMutAct_9fa48("72") ? /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?)$/ : stryMutAct_9fa48("71") ? /^(\*|(\*\.)?[^A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?)$/ : stryMutAct_9fa48("70") ? /^(\*|(\*\.)[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?)$/ : stryMutAct_9fa48("69") ? /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?)/ : stryMutAct_9fa48("68") ? /(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?)$/ : (stryCov_9fa48("68", "69", "70", "71", "72", "73", "74", "75", "76", "77", "78", "79", "80", "81", "82", "83", "84"), /^(\*|(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?)$/);
const MatchHost = Schema.String.check(rule(stryMutAct_9fa48("85") ? () => undefined : (stryCov_9fa48("85"), (host: string) => hostPattern.test(host)), stryMutAct_9fa48("86") ? "" : (stryCov_9fa48("86"), "must be a host name or IP address with an optional port; '*.' may prefix a domain, '*' alone matches every host"), stryMutAct_9fa48("87") ? "" : (stryCov_9fa48("87"), "value_error")));
const MatchPath = Schema.String.check(rule(stryMutAct_9fa48("88") ? () => undefined : (stryCov_9fa48("88"), (path: string) => stryMutAct_9fa48("89") ? path.endsWith("/") : (stryCov_9fa48("89"), path.startsWith(stryMutAct_9fa48("90") ? "" : (stryCov_9fa48("90"), "/")))), stryMutAct_9fa48("91") ? "" : (stryCov_9fa48("91"), "must start with '/'"), stryMutAct_9fa48("92") ? "" : (stryCov_9fa48("92"), "value_error")), rule(stryMutAct_9fa48("93") ? () => undefined : (stryCov_9fa48("93"), (path: string) => stryMutAct_9fa48("94") ? path.slice(0, -1).includes("*") : (stryCov_9fa48("94"), !(stryMutAct_9fa48("95") ? path.includes("*") : (stryCov_9fa48("95"), path.slice(0, stryMutAct_9fa48("96") ? +1 : (stryCov_9fa48("96"), -1)).includes(stryMutAct_9fa48("97") ? "" : (stryCov_9fa48("97"), "*")))))), stryMutAct_9fa48("98") ? "" : (stryCov_9fa48("98"), "may contain '*' only as the last character"), stryMutAct_9fa48("99") ? "" : (stryCov_9fa48("99"), "value_error")));
const NoProxyEntry = Schema.String.check(rule(stryMutAct_9fa48("100") ? () => undefined : (stryCov_9fa48("100"), (entry: string) => stryMutAct_9fa48("104") ? entry.length <= 0 : stryMutAct_9fa48("103") ? entry.length >= 0 : stryMutAct_9fa48("102") ? false : stryMutAct_9fa48("101") ? true : (stryCov_9fa48("101", "102", "103", "104"), entry.length > 0)), stryMutAct_9fa48("105") ? "" : (stryCov_9fa48("105"), "must not be empty"), stryMutAct_9fa48("106") ? "" : (stryCov_9fa48("106"), "string_too_short")), rule(stryMutAct_9fa48("107") ? () => undefined : (stryCov_9fa48("107"), (entry: string) => stryMutAct_9fa48("108") ? /[\s,]/.test(entry) : (stryCov_9fa48("108"), !(stryMutAct_9fa48("110") ? /[\S,]/ : stryMutAct_9fa48("109") ? /[^\s,]/ : (stryCov_9fa48("109", "110"), /[\s,]/)).test(entry))), stryMutAct_9fa48("111") ? "" : (stryCov_9fa48("111"), "must not contain whitespace or commas"), stryMutAct_9fa48("112") ? "" : (stryCov_9fa48("112"), "value_error")));
const RuleName = Schema.String.check(rule(stryMutAct_9fa48("113") ? () => undefined : (stryCov_9fa48("113"), (name: string) => stryMutAct_9fa48("117") ? name.length < 1 : stryMutAct_9fa48("116") ? name.length > 1 : stryMutAct_9fa48("115") ? false : stryMutAct_9fa48("114") ? true : (stryCov_9fa48("114", "115", "116", "117"), name.length >= 1)), stryMutAct_9fa48("118") ? "" : (stryCov_9fa48("118"), "must be at least 1 character"), stryMutAct_9fa48("119") ? "" : (stryCov_9fa48("119"), "string_too_short")), rule(stryMutAct_9fa48("120") ? () => undefined : (stryCov_9fa48("120"), (name: string) => stryMutAct_9fa48("124") ? name.length > 63 : stryMutAct_9fa48("123") ? name.length < 63 : stryMutAct_9fa48("122") ? false : stryMutAct_9fa48("121") ? true : (stryCov_9fa48("121", "122", "123", "124"), name.length <= 63)), stryMutAct_9fa48("125") ? "" : (stryCov_9fa48("125"), "must be at most 63 characters"), stryMutAct_9fa48("126") ? "" : (stryCov_9fa48("126"), "string_too_long")));
const MatchHosts = Schema.Array(MatchHost).check(rule(stryMutAct_9fa48("127") ? () => undefined : (stryCov_9fa48("127"), (hosts: ReadonlyArray<string>) => stryMutAct_9fa48("131") ? hosts.length < 1 : stryMutAct_9fa48("130") ? hosts.length > 1 : stryMutAct_9fa48("129") ? false : stryMutAct_9fa48("128") ? true : (stryCov_9fa48("128", "129", "130", "131"), hosts.length >= 1)), stryMutAct_9fa48("132") ? "" : (stryCov_9fa48("132"), "must list at least one host"), stryMutAct_9fa48("133") ? "" : (stryCov_9fa48("133"), "too_short")));
const InjectHeaders = Schema.Record(Schema.String, HeaderValue).check(validHeaderNames);
const MatchPaths = Schema.Array(MatchPath);
const NoProxy = Schema.Array(NoProxyEntry);

/** Rule names identify rules, so a second rule with the same name is reported at its `name`. */
const uniqueRuleNames = Schema.makeFilter<ReadonlyArray<{
  readonly name: string;
}>>(stryMutAct_9fa48("134") ? () => undefined : (stryCov_9fa48("134"), rules => rules.flatMap(stryMutAct_9fa48("135") ? () => undefined : (stryCov_9fa48("135"), (proxyRule, index) => (stryMutAct_9fa48("139") ? rules.findIndex(other => other.name === proxyRule.name) >= index : stryMutAct_9fa48("138") ? rules.findIndex(other => other.name === proxyRule.name) <= index : stryMutAct_9fa48("137") ? false : stryMutAct_9fa48("136") ? true : (stryCov_9fa48("136", "137", "138", "139"), rules.findIndex(stryMutAct_9fa48("140") ? () => undefined : (stryCov_9fa48("140"), other => stryMutAct_9fa48("143") ? other.name !== proxyRule.name : stryMutAct_9fa48("142") ? false : stryMutAct_9fa48("141") ? true : (stryCov_9fa48("141", "142", "143"), other.name === proxyRule.name))) < index)) ? stryMutAct_9fa48("144") ? [] : (stryCov_9fa48("144"), [stryMutAct_9fa48("145") ? {} : (stryCov_9fa48("145"), {
  path: stryMutAct_9fa48("146") ? [] : (stryCov_9fa48("146"), [index, stryMutAct_9fa48("147") ? "" : (stryCov_9fa48("147"), "name")]),
  issue: stryMutAct_9fa48("148") ? `` : (stryCov_9fa48("148"), `duplicate rule name '${proxyRule.name}'`)
})]) : stryMutAct_9fa48("149") ? ["Stryker was here"] : (stryCov_9fa48("149"), [])))), {
  [issueTypeKey]: "value_error"
} as any);
const withDefault = stryMutAct_9fa48("150") ? () => undefined : (stryCov_9fa48("150"), (() => {
  const withDefault = <S extends Schema.Top,>(schema: S, value: S["Encoded"]) => Schema.withDecodingDefaultKey<S>(Effect.succeed(value))(schema);
  return withDefault;
})());

// ---------------------------------------------------------------------------------------------
// Stored / response shapes: every field present.

export const ProxyRule = Schema.Struct(stryMutAct_9fa48("151") ? {} : (stryCov_9fa48("151"), {
  name: RuleName,
  match_hosts: MatchHosts,
  inject_headers: InjectHeaders,
  match_paths: MatchPaths,
  enabled: Schema.Boolean
})).annotate(stryMutAct_9fa48("152") ? {} : (stryCov_9fa48("152"), {
  identifier: stryMutAct_9fa48("153") ? "" : (stryCov_9fa48("153"), "ProxyRule")
}));
export type ProxyRule = typeof ProxyRule.Type;
export const ProxyConfig = Schema.Struct(stryMutAct_9fa48("154") ? {} : (stryCov_9fa48("154"), {
  rules: Schema.Array(ProxyRule).check(uniqueRuleNames),
  no_proxy: NoProxy
})).annotate(stryMutAct_9fa48("155") ? {} : (stryCov_9fa48("155"), {
  identifier: stryMutAct_9fa48("156") ? "" : (stryCov_9fa48("156"), "ProxyConfig")
}));
export type ProxyConfig = typeof ProxyConfig.Type;

// ---------------------------------------------------------------------------------------------
// Request shapes: the same fields, optional ones defaulted on decode (see the header comment).

export const ProxyRuleInput = Schema.Struct(stryMutAct_9fa48("157") ? {} : (stryCov_9fa48("157"), {
  name: RuleName,
  match_hosts: MatchHosts,
  inject_headers: withDefault(InjectHeaders, {}),
  match_paths: withDefault(MatchPaths, stryMutAct_9fa48("158") ? ["Stryker was here"] : (stryCov_9fa48("158"), [])),
  enabled: withDefault(Schema.Boolean, stryMutAct_9fa48("159") ? false : (stryCov_9fa48("159"), true))
})).annotate(stryMutAct_9fa48("160") ? {} : (stryCov_9fa48("160"), {
  identifier: stryMutAct_9fa48("161") ? "" : (stryCov_9fa48("161"), "ProxyRuleInput")
}));
export const ProxyConfigInput = Schema.Struct(stryMutAct_9fa48("162") ? {} : (stryCov_9fa48("162"), {
  rules: withDefault(Schema.Array(ProxyRuleInput).check(uniqueRuleNames), stryMutAct_9fa48("163") ? ["Stryker was here"] : (stryCov_9fa48("163"), [])),
  no_proxy: withDefault(NoProxy, stryMutAct_9fa48("164") ? ["Stryker was here"] : (stryCov_9fa48("164"), []))
})).annotate(stryMutAct_9fa48("165") ? {} : (stryCov_9fa48("165"), {
  identifier: stryMutAct_9fa48("166") ? "" : (stryCov_9fa48("166"), "ProxyConfigInput")
}));

/** What a template without `proxy_config` gets. */
export const emptyProxyConfig: ProxyConfig = stryMutAct_9fa48("167") ? {} : (stryCov_9fa48("167"), {
  rules: stryMutAct_9fa48("168") ? ["Stryker was here"] : (stryCov_9fa48("168"), []),
  no_proxy: stryMutAct_9fa48("169") ? ["Stryker was here"] : (stryCov_9fa48("169"), [])
});