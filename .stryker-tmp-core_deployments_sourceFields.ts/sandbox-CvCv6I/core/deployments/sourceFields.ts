/**
 * The real grammars of the source fields a deployment names: where to fetch code from
 * (`repo_url`), which git ref to build (`repo_ref`), where the graph configuration lives in the
 * repository (`graph_config_path`) and which container image to run (`image_uri`, and the images
 * of sidecars and init containers). These values reach git, a builder and a container runtime,
 * so each is checked against what those tools accept, and against what would make them do
 * something else: a transport that runs a command (`ext::`), a local file (`file://`), a value
 * read as an option (`--upload-pack=…`), a path out of the repository (`../..`), a line break.
 *
 * Each `…Problem` function answers why a value is refused (a sentence for the 422 `msg`) or
 * `undefined` when it is valid. Messages never quote a `repo_url`: it may hold a credential.
 *
 * Hand-written, not a library: the grammars are short and published (git-check-ref-format(1),
 * git-clone(1) "GIT URLS", distribution/reference's `regexp.go`), the npm ports of the image
 * reference grammar are unmaintained CommonJS packages, and the core has no runtime dependency
 * besides effect. docs/deployments.md lists the rules.
 */
// @ts-nocheck


/** ASCII control characters (C0 and DEL). */function stryNS_9fa48() {
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
const controlCharacter = stryMutAct_9fa48("0") ? /[^\u0000-\u001f\u007f]/ : (stryCov_9fa48("0"), /[\u0000-\u001f\u007f]/);
const whitespace = stryMutAct_9fa48("1") ? /\S/ : (stryCov_9fa48("1"), /\s/);

/** The first problem shared by every field: control characters, whitespace, a leading '-'. */
const commonProblem = (value: string, what: string, options: {
  readonly spaces: boolean;
} = stryMutAct_9fa48("2") ? {} : (stryCov_9fa48("2"), {
  spaces: stryMutAct_9fa48("3") ? true : (stryCov_9fa48("3"), false)
})): string | undefined => {
  if (stryMutAct_9fa48("4")) {
    {}
  } else {
    stryCov_9fa48("4");
    if (stryMutAct_9fa48("7") ? value.length !== 0 : stryMutAct_9fa48("6") ? false : stryMutAct_9fa48("5") ? true : (stryCov_9fa48("5", "6", "7"), value.length === 0)) return stryMutAct_9fa48("8") ? `` : (stryCov_9fa48("8"), `${what} must not be empty`);
    if (stryMutAct_9fa48("10") ? false : stryMutAct_9fa48("9") ? true : (stryCov_9fa48("9", "10"), controlCharacter.test(value))) return stryMutAct_9fa48("11") ? `` : (stryCov_9fa48("11"), `${what} must not contain control characters (such as a line break or NUL)`);
    if (stryMutAct_9fa48("14") ? value.endsWith("-") : stryMutAct_9fa48("13") ? false : stryMutAct_9fa48("12") ? true : (stryCov_9fa48("12", "13", "14"), value.startsWith(stryMutAct_9fa48("15") ? "" : (stryCov_9fa48("15"), "-")))) return stryMutAct_9fa48("16") ? `` : (stryCov_9fa48("16"), `${what} must not start with '-' (a tool would read it as an option)`);
    if (stryMutAct_9fa48("19") ? !options.spaces || whitespace.test(value) : stryMutAct_9fa48("18") ? false : stryMutAct_9fa48("17") ? true : (stryCov_9fa48("17", "18", "19"), (stryMutAct_9fa48("20") ? options.spaces : (stryCov_9fa48("20"), !options.spaces)) && whitespace.test(value))) return stryMutAct_9fa48("21") ? `` : (stryCov_9fa48("21"), `${what} must not contain whitespace`);
    return undefined;
  }
};

// ---------------------------------------------------------------------------------------------
// repo_url: https and ssh git URLs (git-clone(1), "GIT URLS")

export const maxRepoUrlLength = 2048;
const repoUrlForms = stryMutAct_9fa48("22") ? "" : (stryCov_9fa48("22"), "https://host/owner/repo, ssh://git@host/owner/repo or git@host:owner/repo");

/** A DNS name or IPv4 address (labels of letters, digits and '-', not starting or ending with '-'), or a bracketed IPv6 address. */
const hostPattern = stryMutAct_9fa48("37") ? /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[^0-9A-Fa-f:.]+\])$/ : stryMutAct_9fa48("36") ? /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]\])$/ : stryMutAct_9fa48("35") ? /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[^A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/ : stryMutAct_9fa48("34") ? /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[^A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/ : stryMutAct_9fa48("33") ? /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-][A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/ : stryMutAct_9fa48("32") ? /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9]))*|\[[0-9A-Fa-f:.]+\])$/ : stryMutAct_9fa48("31") ? /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[^A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/ : stryMutAct_9fa48("30") ? /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)|\[[0-9A-Fa-f:.]+\])$/ : stryMutAct_9fa48("29") ? /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[^A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/ : stryMutAct_9fa48("28") ? /^(?:[A-Za-z0-9](?:[^A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/ : stryMutAct_9fa48("27") ? /^(?:[A-Za-z0-9](?:[A-Za-z0-9-][A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/ : stryMutAct_9fa48("26") ? /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/ : stryMutAct_9fa48("25") ? /^(?:[^A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/ : stryMutAct_9fa48("24") ? /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])/ : stryMutAct_9fa48("23") ? /(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/ : (stryCov_9fa48("23", "24", "25", "26", "27", "28", "29", "30", "31", "32", "33", "34", "35", "36", "37"), /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/);
/** The characters a repository path may use: unreserved characters, percent escapes and '/'. */
const repoPathCharacters = stryMutAct_9fa48("41") ? /^[^A-Za-z0-9._~%+/-]+$/ : stryMutAct_9fa48("40") ? /^[A-Za-z0-9._~%+/-]$/ : stryMutAct_9fa48("39") ? /^[A-Za-z0-9._~%+/-]+/ : stryMutAct_9fa48("38") ? /[A-Za-z0-9._~%+/-]+$/ : (stryCov_9fa48("38", "39", "40", "41"), /^[A-Za-z0-9._~%+/-]+$/);
/** A user name before '@' in an ssh URL (never a password: see `repoUrlProblem`). */
const sshUserPattern = stryMutAct_9fa48("45") ? /^[^A-Za-z0-9._-]+$/ : stryMutAct_9fa48("44") ? /^[A-Za-z0-9._-]$/ : stryMutAct_9fa48("43") ? /^[A-Za-z0-9._-]+/ : stryMutAct_9fa48("42") ? /[A-Za-z0-9._-]+$/ : (stryCov_9fa48("42", "43", "44", "45"), /^[A-Za-z0-9._-]+$/);
const schemePattern = stryMutAct_9fa48("49") ? /^([A-Za-z][^A-Za-z0-9+.-]*):/ : stryMutAct_9fa48("48") ? /^([A-Za-z][A-Za-z0-9+.-]):/ : stryMutAct_9fa48("47") ? /^([^A-Za-z][A-Za-z0-9+.-]*):/ : stryMutAct_9fa48("46") ? /([A-Za-z][A-Za-z0-9+.-]*):/ : (stryCov_9fa48("46", "47", "48", "49"), /^([A-Za-z][A-Za-z0-9+.-]*):/);
const repoPathProblemOf = (path: string): string | undefined => {
  if (stryMutAct_9fa48("50")) {
    {}
  } else {
    stryCov_9fa48("50");
    const trimmed = path.replace(stryMutAct_9fa48("52") ? /^\// : stryMutAct_9fa48("51") ? /\/+/ : (stryCov_9fa48("51", "52"), /^\/+/), stryMutAct_9fa48("53") ? "Stryker was here!" : (stryCov_9fa48("53"), "")).replace(stryMutAct_9fa48("55") ? /\/$/ : stryMutAct_9fa48("54") ? /\/+/ : (stryCov_9fa48("54", "55"), /\/+$/), stryMutAct_9fa48("56") ? "Stryker was here!" : (stryCov_9fa48("56"), ""));
    if (stryMutAct_9fa48("59") ? trimmed !== "" : stryMutAct_9fa48("58") ? false : stryMutAct_9fa48("57") ? true : (stryCov_9fa48("57", "58", "59"), trimmed === (stryMutAct_9fa48("60") ? "Stryker was here!" : (stryCov_9fa48("60"), "")))) return stryMutAct_9fa48("61") ? `` : (stryCov_9fa48("61"), `repo_url must name a repository path (${repoUrlForms})`);
    if (stryMutAct_9fa48("64") ? false : stryMutAct_9fa48("63") ? true : stryMutAct_9fa48("62") ? repoPathCharacters.test(trimmed) : (stryCov_9fa48("62", "63", "64"), !repoPathCharacters.test(trimmed))) return stryMutAct_9fa48("65") ? "" : (stryCov_9fa48("65"), "repo_url's repository path may contain only letters, digits, '.', '_', '~', '%', '+', '-' and '/' (no query or fragment)");
    if (stryMutAct_9fa48("68") ? trimmed.split("/").every(segment => segment === "." || segment === "..") : stryMutAct_9fa48("67") ? false : stryMutAct_9fa48("66") ? true : (stryCov_9fa48("66", "67", "68"), trimmed.split(stryMutAct_9fa48("69") ? "" : (stryCov_9fa48("69"), "/")).some(stryMutAct_9fa48("70") ? () => undefined : (stryCov_9fa48("70"), segment => stryMutAct_9fa48("73") ? segment === "." && segment === ".." : stryMutAct_9fa48("72") ? false : stryMutAct_9fa48("71") ? true : (stryCov_9fa48("71", "72", "73"), (stryMutAct_9fa48("75") ? segment !== "." : stryMutAct_9fa48("74") ? false : (stryCov_9fa48("74", "75"), segment === (stryMutAct_9fa48("76") ? "" : (stryCov_9fa48("76"), ".")))) || (stryMutAct_9fa48("78") ? segment !== ".." : stryMutAct_9fa48("77") ? false : (stryCov_9fa48("77", "78"), segment === (stryMutAct_9fa48("79") ? "" : (stryCov_9fa48("79"), ".."))))))))) return stryMutAct_9fa48("80") ? "" : (stryCov_9fa48("80"), "repo_url's repository path must not contain '.' or '..' segments");
    if (stryMutAct_9fa48("83") ? trimmed.split("/").every(segment => segment.startsWith("-")) : stryMutAct_9fa48("82") ? false : stryMutAct_9fa48("81") ? true : (stryCov_9fa48("81", "82", "83"), trimmed.split(stryMutAct_9fa48("84") ? "" : (stryCov_9fa48("84"), "/")).some(stryMutAct_9fa48("85") ? () => undefined : (stryCov_9fa48("85"), segment => stryMutAct_9fa48("86") ? segment.endsWith("-") : (stryCov_9fa48("86"), segment.startsWith(stryMutAct_9fa48("87") ? "" : (stryCov_9fa48("87"), "-"))))))) return stryMutAct_9fa48("88") ? "" : (stryCov_9fa48("88"), "repo_url's repository path segments must not start with '-'");
    return undefined;
  }
};
const portProblem = stryMutAct_9fa48("89") ? () => undefined : (stryCov_9fa48("89"), (() => {
  const portProblem = (port: string | undefined): string | undefined => (stryMutAct_9fa48("92") ? port === undefined && /^[0-9]{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65535 : stryMutAct_9fa48("91") ? false : stryMutAct_9fa48("90") ? true : (stryCov_9fa48("90", "91", "92"), (stryMutAct_9fa48("94") ? port !== undefined : stryMutAct_9fa48("93") ? false : (stryCov_9fa48("93", "94"), port === undefined)) || (stryMutAct_9fa48("96") ? /^[0-9]{1,5}$/.test(port) && Number(port) >= 1 || Number(port) <= 65535 : stryMutAct_9fa48("95") ? false : (stryCov_9fa48("95", "96"), (stryMutAct_9fa48("98") ? /^[0-9]{1,5}$/.test(port) || Number(port) >= 1 : stryMutAct_9fa48("97") ? true : (stryCov_9fa48("97", "98"), (stryMutAct_9fa48("102") ? /^[^0-9]{1,5}$/ : stryMutAct_9fa48("101") ? /^[0-9]$/ : stryMutAct_9fa48("100") ? /^[0-9]{1,5}/ : stryMutAct_9fa48("99") ? /[0-9]{1,5}$/ : (stryCov_9fa48("99", "100", "101", "102"), /^[0-9]{1,5}$/)).test(port) && (stryMutAct_9fa48("105") ? Number(port) < 1 : stryMutAct_9fa48("104") ? Number(port) > 1 : stryMutAct_9fa48("103") ? true : (stryCov_9fa48("103", "104", "105"), Number(port) >= 1)))) && (stryMutAct_9fa48("108") ? Number(port) > 65535 : stryMutAct_9fa48("107") ? Number(port) < 65535 : stryMutAct_9fa48("106") ? true : (stryCov_9fa48("106", "107", "108"), Number(port) <= 65535)))))) ? undefined : stryMutAct_9fa48("109") ? "" : (stryCov_9fa48("109"), "repo_url's port must be a number from 1 to 65535");
  return portProblem;
})());

/** `scheme://[userinfo@]host[:port]/path`, split without a URL parser (which would normalise what we must judge). */
const authorityPattern = stryMutAct_9fa48("114") ? /^([^/?#]*)(.)$/ : stryMutAct_9fa48("113") ? /^([/?#]*)(.*)$/ : stryMutAct_9fa48("112") ? /^([^/?#])(.*)$/ : stryMutAct_9fa48("111") ? /^([^/?#]*)(.*)/ : stryMutAct_9fa48("110") ? /([^/?#]*)(.*)$/ : (stryCov_9fa48("110", "111", "112", "113", "114"), /^([^/?#]*)(.*)$/);
const hierarchicalProblem = (scheme: "https" | "ssh", rest: string): string | undefined => {
  if (stryMutAct_9fa48("115")) {
    {}
  } else {
    stryCov_9fa48("115");
    const [, authority = stryMutAct_9fa48("116") ? "Stryker was here!" : (stryCov_9fa48("116"), ""), path = stryMutAct_9fa48("117") ? "Stryker was here!" : (stryCov_9fa48("117"), "")] = authorityPattern.exec(rest)!;
    const at = authority.lastIndexOf(stryMutAct_9fa48("118") ? "" : (stryCov_9fa48("118"), "@"));
    const userinfo = (stryMutAct_9fa48("121") ? at !== -1 : stryMutAct_9fa48("120") ? false : stryMutAct_9fa48("119") ? true : (stryCov_9fa48("119", "120", "121"), at === (stryMutAct_9fa48("122") ? +1 : (stryCov_9fa48("122"), -1)))) ? undefined : stryMutAct_9fa48("123") ? authority : (stryCov_9fa48("123"), authority.slice(0, at));
    const hostPort = (stryMutAct_9fa48("126") ? at !== -1 : stryMutAct_9fa48("125") ? false : stryMutAct_9fa48("124") ? true : (stryCov_9fa48("124", "125", "126"), at === (stryMutAct_9fa48("127") ? +1 : (stryCov_9fa48("127"), -1)))) ? authority : stryMutAct_9fa48("128") ? authority : (stryCov_9fa48("128"), authority.slice(stryMutAct_9fa48("129") ? at - 1 : (stryCov_9fa48("129"), at + 1)));
    if (stryMutAct_9fa48("132") ? userinfo === undefined : stryMutAct_9fa48("131") ? false : stryMutAct_9fa48("130") ? true : (stryCov_9fa48("130", "131", "132"), userinfo !== undefined)) {
      if (stryMutAct_9fa48("133")) {
        {}
      } else {
        stryCov_9fa48("133");
        // A credential would be stored, logged and answered back in every response: refuse it
        // rather than strip it silently (the caller would believe it is used). Private repositories
        // are reached through the deployment's integration or an ssh deploy key.
        if (stryMutAct_9fa48("136") ? scheme !== "https" : stryMutAct_9fa48("135") ? false : stryMutAct_9fa48("134") ? true : (stryCov_9fa48("134", "135", "136"), scheme === (stryMutAct_9fa48("137") ? "" : (stryCov_9fa48("137"), "https")))) return stryMutAct_9fa48("138") ? "" : (stryCov_9fa48("138"), "repo_url must not contain credentials (a user name or token before '@'); private repositories are reached through the integration");
        if (stryMutAct_9fa48("140") ? false : stryMutAct_9fa48("139") ? true : (stryCov_9fa48("139", "140"), userinfo.includes(stryMutAct_9fa48("141") ? "" : (stryCov_9fa48("141"), ":")))) return stryMutAct_9fa48("142") ? "" : (stryCov_9fa48("142"), "repo_url must not contain a password");
        if (stryMutAct_9fa48("145") ? false : stryMutAct_9fa48("144") ? true : stryMutAct_9fa48("143") ? sshUserPattern.test(userinfo) : (stryCov_9fa48("143", "144", "145"), !sshUserPattern.test(userinfo))) return stryMutAct_9fa48("146") ? "" : (stryCov_9fa48("146"), "repo_url's ssh user may contain only letters, digits, '.', '_' and '-'");
      }
    }
    const portMatch = (stryMutAct_9fa48("152") ? /^(.*?)(?::([:\]]*))?$/ : stryMutAct_9fa48("151") ? /^(.*?)(?::([^:\]]))?$/ : stryMutAct_9fa48("150") ? /^(.*?)(?::([^:\]]*))$/ : stryMutAct_9fa48("149") ? /^(.)(?::([^:\]]*))?$/ : stryMutAct_9fa48("148") ? /^(.*?)(?::([^:\]]*))?/ : stryMutAct_9fa48("147") ? /(.*?)(?::([^:\]]*))?$/ : (stryCov_9fa48("147", "148", "149", "150", "151", "152"), /^(.*?)(?::([^:\]]*))?$/)).exec(hostPort)!;
    const host = portMatch[1]!;
    if (stryMutAct_9fa48("155") ? false : stryMutAct_9fa48("154") ? true : stryMutAct_9fa48("153") ? hostPattern.test(host) : (stryCov_9fa48("153", "154", "155"), !hostPattern.test(host))) return stryMutAct_9fa48("156") ? "" : (stryCov_9fa48("156"), "repo_url's host must be a DNS name or an IP address");
    const portIssue = portProblem(portMatch[2]);
    if (stryMutAct_9fa48("158") ? false : stryMutAct_9fa48("157") ? true : (stryCov_9fa48("157", "158"), portIssue)) return portIssue;
    if (stryMutAct_9fa48("161") ? false : stryMutAct_9fa48("160") ? true : stryMutAct_9fa48("159") ? path.startsWith("/") : (stryCov_9fa48("159", "160", "161"), !(stryMutAct_9fa48("162") ? path.endsWith("/") : (stryCov_9fa48("162"), path.startsWith(stryMutAct_9fa48("163") ? "" : (stryCov_9fa48("163"), "/")))))) return stryMutAct_9fa48("164") ? `` : (stryCov_9fa48("164"), `repo_url must name a repository path (${repoUrlForms})`);
    return repoPathProblemOf(path);
  }
};

/** scp-like syntax: `user@host:path` (git reads `host:path` the same way, but we ask for the user). */
const scpLikePattern = stryMutAct_9fa48("171") ? /^([^@/:]+)@([^/:]+):(.)$/ : stryMutAct_9fa48("170") ? /^([^@/:]+)@([/:]+):(.*)$/ : stryMutAct_9fa48("169") ? /^([^@/:]+)@([^/:]):(.*)$/ : stryMutAct_9fa48("168") ? /^([@/:]+)@([^/:]+):(.*)$/ : stryMutAct_9fa48("167") ? /^([^@/:])@([^/:]+):(.*)$/ : stryMutAct_9fa48("166") ? /^([^@/:]+)@([^/:]+):(.*)/ : stryMutAct_9fa48("165") ? /([^@/:]+)@([^/:]+):(.*)$/ : (stryCov_9fa48("165", "166", "167", "168", "169", "170", "171"), /^([^@/:]+)@([^/:]+):(.*)$/);

/**
 * Why a repository URL is refused, or undefined. Accepted: `https://host[:port]/path`,
 * `ssh://[user@]host[:port]/path` and `user@host:path`. Refused: every other transport (`file:`,
 * `git:`, `http:`, `ext::`, …), local paths, credentials, control characters, whitespace and a
 * leading '-'.
 */
export const repoUrlProblem = (url: string): string | undefined => {
  if (stryMutAct_9fa48("172")) {
    {}
  } else {
    stryCov_9fa48("172");
    const common = commonProblem(url, stryMutAct_9fa48("173") ? "" : (stryCov_9fa48("173"), "repo_url"));
    if (stryMutAct_9fa48("175") ? false : stryMutAct_9fa48("174") ? true : (stryCov_9fa48("174", "175"), common)) return common;
    if (stryMutAct_9fa48("179") ? url.length <= maxRepoUrlLength : stryMutAct_9fa48("178") ? url.length >= maxRepoUrlLength : stryMutAct_9fa48("177") ? false : stryMutAct_9fa48("176") ? true : (stryCov_9fa48("176", "177", "178", "179"), url.length > maxRepoUrlLength)) return stryMutAct_9fa48("180") ? `` : (stryCov_9fa48("180"), `repo_url must be at most ${maxRepoUrlLength} characters`);
    const scheme = schemePattern.exec(url);
    if (stryMutAct_9fa48("182") ? false : stryMutAct_9fa48("181") ? true : (stryCov_9fa48("181", "182"), scheme)) {
      if (stryMutAct_9fa48("183")) {
        {}
      } else {
        stryCov_9fa48("183");
        const name = stryMutAct_9fa48("184") ? scheme[1]!.toUpperCase() : (stryCov_9fa48("184"), scheme[1]!.toLowerCase());
        const rest = stryMutAct_9fa48("185") ? url : (stryCov_9fa48("185"), url.slice(scheme[0].length));
        if (stryMutAct_9fa48("188") ? name === "https" || name === "ssh" || rest.startsWith("//") : stryMutAct_9fa48("187") ? false : stryMutAct_9fa48("186") ? true : (stryCov_9fa48("186", "187", "188"), (stryMutAct_9fa48("190") ? name === "https" && name === "ssh" : stryMutAct_9fa48("189") ? true : (stryCov_9fa48("189", "190"), (stryMutAct_9fa48("192") ? name !== "https" : stryMutAct_9fa48("191") ? false : (stryCov_9fa48("191", "192"), name === (stryMutAct_9fa48("193") ? "" : (stryCov_9fa48("193"), "https")))) || (stryMutAct_9fa48("195") ? name !== "ssh" : stryMutAct_9fa48("194") ? false : (stryCov_9fa48("194", "195"), name === (stryMutAct_9fa48("196") ? "" : (stryCov_9fa48("196"), "ssh")))))) && (stryMutAct_9fa48("197") ? rest.endsWith("//") : (stryCov_9fa48("197"), rest.startsWith(stryMutAct_9fa48("198") ? "" : (stryCov_9fa48("198"), "//")))))) return hierarchicalProblem(name, stryMutAct_9fa48("199") ? rest : (stryCov_9fa48("199"), rest.slice(2)));
        // "ext::cmd" and "fd::…" are git's remote helpers; "file://", "git://", "http://" are transports we do not fetch from.
        if (stryMutAct_9fa48("202") ? rest.startsWith("//") && rest.startsWith(":") : stryMutAct_9fa48("201") ? false : stryMutAct_9fa48("200") ? true : (stryCov_9fa48("200", "201", "202"), (stryMutAct_9fa48("203") ? rest.endsWith("//") : (stryCov_9fa48("203"), rest.startsWith(stryMutAct_9fa48("204") ? "" : (stryCov_9fa48("204"), "//")))) || (stryMutAct_9fa48("205") ? rest.endsWith(":") : (stryCov_9fa48("205"), rest.startsWith(stryMutAct_9fa48("206") ? "" : (stryCov_9fa48("206"), ":")))))) return stryMutAct_9fa48("207") ? `` : (stryCov_9fa48("207"), `repo_url uses the transport '${name}'; only https:// and ssh:// URLs (or git@host:owner/repo) are allowed`);
      }
    }
    const scp = scpLikePattern.exec(url);
    if (stryMutAct_9fa48("209") ? false : stryMutAct_9fa48("208") ? true : (stryCov_9fa48("208", "209"), scp)) {
      if (stryMutAct_9fa48("210")) {
        {}
      } else {
        stryCov_9fa48("210");
        const [, user = stryMutAct_9fa48("211") ? "Stryker was here!" : (stryCov_9fa48("211"), ""), host = stryMutAct_9fa48("212") ? "Stryker was here!" : (stryCov_9fa48("212"), ""), path = stryMutAct_9fa48("213") ? "Stryker was here!" : (stryCov_9fa48("213"), "")] = scp;
        if (stryMutAct_9fa48("216") ? false : stryMutAct_9fa48("215") ? true : stryMutAct_9fa48("214") ? sshUserPattern.test(user) : (stryCov_9fa48("214", "215", "216"), !sshUserPattern.test(user))) return stryMutAct_9fa48("217") ? "" : (stryCov_9fa48("217"), "repo_url's ssh user may contain only letters, digits, '.', '_' and '-'");
        if (stryMutAct_9fa48("220") ? false : stryMutAct_9fa48("219") ? true : stryMutAct_9fa48("218") ? hostPattern.test(host) : (stryCov_9fa48("218", "219", "220"), !hostPattern.test(host))) return stryMutAct_9fa48("221") ? "" : (stryCov_9fa48("221"), "repo_url's host must be a DNS name or an IP address");
        return repoPathProblemOf(path);
      }
    }
    return stryMutAct_9fa48("222") ? `` : (stryCov_9fa48("222"), `repo_url must be a git URL: ${repoUrlForms}`);
  }
};

// ---------------------------------------------------------------------------------------------
// repo_ref: git-check-ref-format(1)

export const maxRepoRefLength = 255;

/** Characters git refuses anywhere in a ref name (rules 4, 5 and 10), besides control characters. */
const forbiddenRefCharacters = stryMutAct_9fa48("223") ? /[^ ~^:?*[\\]/ : (stryCov_9fa48("223"), /[ ~^:?*[\\]/);

/**
 * Why a ref name is refused, or undefined. A branch is given by its bare name (`main`,
 * `feature/x`) or as `refs/heads/<name>`, a tag as `refs/tags/<name>`; other `refs/` namespaces
 * are refused. Every name follows git-check-ref-format(1): no component starting with '.' or
 * ending with '.lock', no '..', no control characters, space, '~', '^', ':', '?', '*', '[' or
 * '\', no leading, trailing or doubled '/', no trailing '.', no '@{', not '@'; and, as
 * `git check-ref-format --branch` adds, no leading '-' (and not `HEAD`).
 */
export const gitRefProblem = (ref: string): string | undefined => {
  if (stryMutAct_9fa48("224")) {
    {}
  } else {
    stryCov_9fa48("224");
    const common = commonProblem(ref, stryMutAct_9fa48("225") ? "" : (stryCov_9fa48("225"), "repo_ref"));
    if (stryMutAct_9fa48("227") ? false : stryMutAct_9fa48("226") ? true : (stryCov_9fa48("226", "227"), common)) return common;
    if (stryMutAct_9fa48("231") ? ref.length <= maxRepoRefLength : stryMutAct_9fa48("230") ? ref.length >= maxRepoRefLength : stryMutAct_9fa48("229") ? false : stryMutAct_9fa48("228") ? true : (stryCov_9fa48("228", "229", "230", "231"), ref.length > maxRepoRefLength)) return stryMutAct_9fa48("232") ? `` : (stryCov_9fa48("232"), `repo_ref must be at most ${maxRepoRefLength} characters`);
    const forbidden = forbiddenRefCharacters.exec(ref);
    if (stryMutAct_9fa48("234") ? false : stryMutAct_9fa48("233") ? true : (stryCov_9fa48("233", "234"), forbidden)) return stryMutAct_9fa48("235") ? `` : (stryCov_9fa48("235"), `repo_ref must not contain '${forbidden[0]}' (git ref names exclude space, '~', '^', ':', '?', '*', '[' and '\\')`);
    if (stryMutAct_9fa48("237") ? false : stryMutAct_9fa48("236") ? true : (stryCov_9fa48("236", "237"), ref.includes(stryMutAct_9fa48("238") ? "" : (stryCov_9fa48("238"), "..")))) return stryMutAct_9fa48("239") ? "" : (stryCov_9fa48("239"), "repo_ref must not contain '..'");
    if (stryMutAct_9fa48("241") ? false : stryMutAct_9fa48("240") ? true : (stryCov_9fa48("240", "241"), ref.includes(stryMutAct_9fa48("242") ? "" : (stryCov_9fa48("242"), "@{")))) return stryMutAct_9fa48("243") ? "" : (stryCov_9fa48("243"), "repo_ref must not contain '@{'");
    if (stryMutAct_9fa48("246") ? ref !== "@" : stryMutAct_9fa48("245") ? false : stryMutAct_9fa48("244") ? true : (stryCov_9fa48("244", "245", "246"), ref === (stryMutAct_9fa48("247") ? "" : (stryCov_9fa48("247"), "@")))) return stryMutAct_9fa48("248") ? "" : (stryCov_9fa48("248"), "repo_ref must not be '@'");
    if (stryMutAct_9fa48("251") ? (ref.startsWith("/") || ref.endsWith("/")) && ref.includes("//") : stryMutAct_9fa48("250") ? false : stryMutAct_9fa48("249") ? true : (stryCov_9fa48("249", "250", "251"), (stryMutAct_9fa48("253") ? ref.startsWith("/") && ref.endsWith("/") : stryMutAct_9fa48("252") ? false : (stryCov_9fa48("252", "253"), (stryMutAct_9fa48("254") ? ref.endsWith("/") : (stryCov_9fa48("254"), ref.startsWith(stryMutAct_9fa48("255") ? "" : (stryCov_9fa48("255"), "/")))) || (stryMutAct_9fa48("256") ? ref.startsWith("/") : (stryCov_9fa48("256"), ref.endsWith(stryMutAct_9fa48("257") ? "" : (stryCov_9fa48("257"), "/")))))) || ref.includes(stryMutAct_9fa48("258") ? "" : (stryCov_9fa48("258"), "//")))) return stryMutAct_9fa48("259") ? "" : (stryCov_9fa48("259"), "repo_ref must not start or end with '/' or contain '//'");
    if (stryMutAct_9fa48("262") ? ref.startsWith(".") : stryMutAct_9fa48("261") ? false : stryMutAct_9fa48("260") ? true : (stryCov_9fa48("260", "261", "262"), ref.endsWith(stryMutAct_9fa48("263") ? "" : (stryCov_9fa48("263"), ".")))) return stryMutAct_9fa48("264") ? "" : (stryCov_9fa48("264"), "repo_ref must not end with '.'");
    const components = ref.split(stryMutAct_9fa48("265") ? "" : (stryCov_9fa48("265"), "/"));
    if (stryMutAct_9fa48("268") ? components.every(component => component.startsWith(".")) : stryMutAct_9fa48("267") ? false : stryMutAct_9fa48("266") ? true : (stryCov_9fa48("266", "267", "268"), components.some(stryMutAct_9fa48("269") ? () => undefined : (stryCov_9fa48("269"), component => stryMutAct_9fa48("270") ? component.endsWith(".") : (stryCov_9fa48("270"), component.startsWith(stryMutAct_9fa48("271") ? "" : (stryCov_9fa48("271"), "."))))))) return stryMutAct_9fa48("272") ? "" : (stryCov_9fa48("272"), "repo_ref's components must not start with '.'");
    if (stryMutAct_9fa48("275") ? components.every(component => component.endsWith(".lock")) : stryMutAct_9fa48("274") ? false : stryMutAct_9fa48("273") ? true : (stryCov_9fa48("273", "274", "275"), components.some(stryMutAct_9fa48("276") ? () => undefined : (stryCov_9fa48("276"), component => stryMutAct_9fa48("277") ? component.startsWith(".lock") : (stryCov_9fa48("277"), component.endsWith(stryMutAct_9fa48("278") ? "" : (stryCov_9fa48("278"), ".lock"))))))) return stryMutAct_9fa48("279") ? "" : (stryCov_9fa48("279"), "repo_ref's components must not end with '.lock'");
    if (stryMutAct_9fa48("282") ? ref.endsWith("refs/") : stryMutAct_9fa48("281") ? false : stryMutAct_9fa48("280") ? true : (stryCov_9fa48("280", "281", "282"), ref.startsWith(stryMutAct_9fa48("283") ? "" : (stryCov_9fa48("283"), "refs/")))) {
      if (stryMutAct_9fa48("284")) {
        {}
      } else {
        stryCov_9fa48("284");
        const [, namespace, ...name] = components;
        if (stryMutAct_9fa48("287") ? namespace !== "heads" || namespace !== "tags" : stryMutAct_9fa48("286") ? false : stryMutAct_9fa48("285") ? true : (stryCov_9fa48("285", "286", "287"), (stryMutAct_9fa48("289") ? namespace === "heads" : stryMutAct_9fa48("288") ? true : (stryCov_9fa48("288", "289"), namespace !== (stryMutAct_9fa48("290") ? "" : (stryCov_9fa48("290"), "heads")))) && (stryMutAct_9fa48("292") ? namespace === "tags" : stryMutAct_9fa48("291") ? true : (stryCov_9fa48("291", "292"), namespace !== (stryMutAct_9fa48("293") ? "" : (stryCov_9fa48("293"), "tags")))))) return stryMutAct_9fa48("294") ? "" : (stryCov_9fa48("294"), "repo_ref must be a branch name (main, or refs/heads/main) or a tag (refs/tags/v1); other refs/ namespaces are not deployable");
        if (stryMutAct_9fa48("297") ? name.length !== 0 : stryMutAct_9fa48("296") ? false : stryMutAct_9fa48("295") ? true : (stryCov_9fa48("295", "296", "297"), name.length === 0)) return stryMutAct_9fa48("298") ? `` : (stryCov_9fa48("298"), `repo_ref must name a ${(stryMutAct_9fa48("301") ? namespace !== "heads" : stryMutAct_9fa48("300") ? false : stryMutAct_9fa48("299") ? true : (stryCov_9fa48("299", "300", "301"), namespace === (stryMutAct_9fa48("302") ? "" : (stryCov_9fa48("302"), "heads")))) ? stryMutAct_9fa48("303") ? "" : (stryCov_9fa48("303"), "branch") : stryMutAct_9fa48("304") ? "" : (stryCov_9fa48("304"), "tag")} after refs/${namespace}/`);
        if (stryMutAct_9fa48("307") ? name[0]!.endsWith("-") : stryMutAct_9fa48("306") ? false : stryMutAct_9fa48("305") ? true : (stryCov_9fa48("305", "306", "307"), name[0]!.startsWith(stryMutAct_9fa48("308") ? "" : (stryCov_9fa48("308"), "-")))) return stryMutAct_9fa48("309") ? "" : (stryCov_9fa48("309"), "repo_ref's branch or tag name must not start with '-'");
        return undefined;
      }
    }
    if (stryMutAct_9fa48("312") ? ref !== "HEAD" : stryMutAct_9fa48("311") ? false : stryMutAct_9fa48("310") ? true : (stryCov_9fa48("310", "311", "312"), ref === (stryMutAct_9fa48("313") ? "" : (stryCov_9fa48("313"), "HEAD")))) return stryMutAct_9fa48("314") ? "" : (stryCov_9fa48("314"), "repo_ref must name a branch or tag, not HEAD");
    return undefined;
  }
};

/** The branch a ref names (`main` for both `main` and `refs/heads/main`), or null for a tag. */
export const branchOf = stryMutAct_9fa48("315") ? () => undefined : (stryCov_9fa48("315"), (() => {
  const branchOf = (ref: string): string | null => (stryMutAct_9fa48("316") ? ref.endsWith("refs/tags/") : (stryCov_9fa48("316"), ref.startsWith(stryMutAct_9fa48("317") ? "" : (stryCov_9fa48("317"), "refs/tags/")))) ? null : (stryMutAct_9fa48("318") ? ref.endsWith("refs/heads/") : (stryCov_9fa48("318"), ref.startsWith(stryMutAct_9fa48("319") ? "" : (stryCov_9fa48("319"), "refs/heads/")))) ? stryMutAct_9fa48("320") ? ref : (stryCov_9fa48("320"), ref.slice((stryMutAct_9fa48("321") ? "" : (stryCov_9fa48("321"), "refs/heads/")).length)) : ref;
  return branchOf;
})());

// ---------------------------------------------------------------------------------------------
// graph_config_path: a relative path inside the repository

export const maxRepoPathLength = 1024;

/** Why a path inside the repository is refused, or undefined: relative, no '..', no control characters, no leading '-'. */
export const repoPathProblem = (path: string, what = stryMutAct_9fa48("322") ? "" : (stryCov_9fa48("322"), "graph_config_path")): string | undefined => {
  if (stryMutAct_9fa48("323")) {
    {}
  } else {
    stryCov_9fa48("323");
    const common = commonProblem(path, what, stryMutAct_9fa48("324") ? {} : (stryCov_9fa48("324"), {
      spaces: stryMutAct_9fa48("325") ? false : (stryCov_9fa48("325"), true)
    }));
    if (stryMutAct_9fa48("327") ? false : stryMutAct_9fa48("326") ? true : (stryCov_9fa48("326", "327"), common)) return common;
    if (stryMutAct_9fa48("331") ? path.length <= maxRepoPathLength : stryMutAct_9fa48("330") ? path.length >= maxRepoPathLength : stryMutAct_9fa48("329") ? false : stryMutAct_9fa48("328") ? true : (stryCov_9fa48("328", "329", "330", "331"), path.length > maxRepoPathLength)) return stryMutAct_9fa48("332") ? `` : (stryCov_9fa48("332"), `${what} must be at most ${maxRepoPathLength} characters`);
    if (stryMutAct_9fa48("335") ? path.endsWith("/") : stryMutAct_9fa48("334") ? false : stryMutAct_9fa48("333") ? true : (stryCov_9fa48("333", "334", "335"), path.startsWith(stryMutAct_9fa48("336") ? "" : (stryCov_9fa48("336"), "/")))) return stryMutAct_9fa48("337") ? `` : (stryCov_9fa48("337"), `${what} must be a path relative to the repository root (no leading '/')`);
    if (stryMutAct_9fa48("339") ? false : stryMutAct_9fa48("338") ? true : (stryCov_9fa48("338", "339"), path.includes(stryMutAct_9fa48("340") ? "" : (stryCov_9fa48("340"), "\\")))) return stryMutAct_9fa48("341") ? `` : (stryCov_9fa48("341"), `${what} must separate directories with '/', not '\\'`);
    if (stryMutAct_9fa48("343") ? false : stryMutAct_9fa48("342") ? true : (stryCov_9fa48("342", "343"), path.split(stryMutAct_9fa48("344") ? "" : (stryCov_9fa48("344"), "/")).includes(stryMutAct_9fa48("345") ? "" : (stryCov_9fa48("345"), "..")))) return stryMutAct_9fa48("346") ? `` : (stryCov_9fa48("346"), `${what} must stay inside the repository (no '..' segments)`);
    return undefined;
  }
};

// ---------------------------------------------------------------------------------------------
// Image references: distribution/reference (the grammar docker, podman, skopeo and containerd parse)
//
//   reference      := name [ ":" tag ] [ "@" digest ]
//   name           := [domain '/'] path-component ['/' path-component]*
//   domain         := host [':' port-number]
//   host           := domain-name | '[' IPv6address ']'
//   path-component := alpha-numeric [separator alpha-numeric]*
//   alpha-numeric  := /[a-z0-9]+/
//   separator      := /[_.]|__|[-]+/
//   tag            := /[\w][\w.-]{0,127}/
//   digest         := algorithm ":" /[0-9a-fA-F]{32,}/
//   algorithm      := /[A-Za-z][A-Za-z0-9]*/ [/[+._-]/ /[A-Za-z][A-Za-z0-9]*/]*

export const maxImageNameLength = 255;
const domainComponent = stryMutAct_9fa48("347") ? "" : (stryCov_9fa48("347"), "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])");
const domainPattern = stryMutAct_9fa48("348") ? `` : (stryCov_9fa48("348"), `(?:${domainComponent}(?:\\.${domainComponent})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?`);
const pathComponent = stryMutAct_9fa48("349") ? "" : (stryCov_9fa48("349"), "[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*");
const tagPattern = stryMutAct_9fa48("350") ? "" : (stryCov_9fa48("350"), "[\\w][\\w.-]{0,127}");
const digestPattern = stryMutAct_9fa48("351") ? "" : (stryCov_9fa48("351"), "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}");
const referencePattern = new RegExp(stryMutAct_9fa48("352") ? `` : (stryCov_9fa48("352"), `^((?:${domainPattern}/)?${pathComponent}(?:/${pathComponent})*)(?::(${tagPattern}))?(?:@(${digestPattern}))?$`));
/** The same grammar with the repository path allowed in any case, to tell "uppercase" from "malformed". */
const anyCasePattern = new RegExp(referencePattern.source.replaceAll(stryMutAct_9fa48("353") ? "" : (stryCov_9fa48("353"), "[a-z0-9]"), stryMutAct_9fa48("354") ? "" : (stryCov_9fa48("354"), "[a-zA-Z0-9]")));
const imageForms = stryMutAct_9fa48("355") ? "" : (stryCov_9fa48("355"), "[registry[:port]/]repository[:tag][@digest], e.g. ghcr.io/acme/agent:1.0");

/** Why an image reference is refused, or undefined. */
export const imageReferenceProblem = (reference: string, what = stryMutAct_9fa48("356") ? "" : (stryCov_9fa48("356"), "image_uri")): string | undefined => {
  if (stryMutAct_9fa48("357")) {
    {}
  } else {
    stryCov_9fa48("357");
    const common = commonProblem(reference, what);
    if (stryMutAct_9fa48("359") ? false : stryMutAct_9fa48("358") ? true : (stryCov_9fa48("358", "359"), common)) return common;
    const match = referencePattern.exec(reference);
    if (stryMutAct_9fa48("361") ? false : stryMutAct_9fa48("360") ? true : (stryCov_9fa48("360", "361"), match)) {
      if (stryMutAct_9fa48("362")) {
        {}
      } else {
        stryCov_9fa48("362");
        return (stryMutAct_9fa48("366") ? match[1]!.length <= maxImageNameLength : stryMutAct_9fa48("365") ? match[1]!.length >= maxImageNameLength : stryMutAct_9fa48("364") ? false : stryMutAct_9fa48("363") ? true : (stryCov_9fa48("363", "364", "365", "366"), match[1]!.length > maxImageNameLength)) ? stryMutAct_9fa48("367") ? `` : (stryCov_9fa48("367"), `${what}'s repository name must be at most ${maxImageNameLength} characters`) : undefined;
      }
    }
    if (stryMutAct_9fa48("369") ? false : stryMutAct_9fa48("368") ? true : (stryCov_9fa48("368", "369"), anyCasePattern.test(reference))) return stryMutAct_9fa48("370") ? `` : (stryCov_9fa48("370"), `${what}'s repository path must be lowercase (only the registry host may use uppercase)`);
    if (stryMutAct_9fa48("372") ? false : stryMutAct_9fa48("371") ? true : (stryCov_9fa48("371", "372"), reference.includes(stryMutAct_9fa48("373") ? "" : (stryCov_9fa48("373"), "://")))) return stryMutAct_9fa48("374") ? `` : (stryCov_9fa48("374"), `${what} must be an image reference without a scheme: ${imageForms}`);
    return stryMutAct_9fa48("375") ? `` : (stryCov_9fa48("375"), `${what} must be an OCI image reference: ${imageForms}`);
  }
};