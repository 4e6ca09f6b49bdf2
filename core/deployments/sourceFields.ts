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

/** ASCII control characters (C0 and DEL). */
const controlCharacter = /[\u0000-\u001f\u007f]/
const whitespace = /\s/

/** The first problem shared by every field: control characters, whitespace, a leading '-'. */
const commonProblem = (value: string, what: string, allowSpaces = false): string | undefined => {
  if (value.length === 0) return `${what} must not be empty`
  if (controlCharacter.test(value)) return `${what} must not contain control characters (such as a line break or NUL)`
  if (value.startsWith("-")) return `${what} must not start with '-' (a tool would read it as an option)`
  if (!allowSpaces && whitespace.test(value)) return `${what} must not contain whitespace`
  return undefined
}

// ---------------------------------------------------------------------------------------------
// repo_url: https and ssh git URLs (git-clone(1), "GIT URLS"), and plain http to listed hosts

export const maxRepoUrlLength = 2048

const repoUrlForms = "https://host/owner/repo, ssh://git@host/owner/repo or git@host:owner/repo"

/** A DNS name or IPv4 address (labels of letters, digits and '-', not starting or ending with '-'), or a bracketed IPv6 address. */
const hostPattern = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/
/** The characters a repository path may use: unreserved characters, percent escapes and '/'. */
const repoPathCharacters = /^[A-Za-z0-9._~%+/-]+$/
/** A user name before '@' in an ssh URL (never a password: see `repoUrlProblem`). */
const sshUserPattern = /^[A-Za-z0-9._-]+$/

const schemePattern = /^([A-Za-z][A-Za-z0-9+.-]*):/

const repoPathProblemOf = (path: string): string | undefined => {
  // Empty segments ("//", a leading or trailing "/") name nothing and are harmless.
  const segments = path.split("/").filter((segment) => segment !== "")
  if (segments.length === 0) return `repo_url must name a repository path (${repoUrlForms})`
  if (!repoPathCharacters.test(path)) return "repo_url's repository path may contain only letters, digits, '.', '_', '~', '%', '+', '-' and '/' (no query or fragment)"
  if (segments.some((segment) => segment === "." || segment === "..")) return "repo_url's repository path must not contain '.' or '..' segments"
  if (segments.some((segment) => segment.startsWith("-"))) return "repo_url's repository path segments must not start with '-'"
  return undefined
}

const portProblem = (port: string | undefined): string | undefined =>
  port === undefined || (/^[0-9]{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65535) ? undefined : "repo_url's port must be a number from 1 to 65535"

/** `scheme://[userinfo@]host[:port]/path`, split without a URL parser (which would normalise what we must judge). */
const authorityPattern = /^([^/?#]*)(.*)$/

const hierarchicalProblem = (scheme: "https" | "http" | "ssh", rest: string): string | undefined => {
  // Both groups always take part in the match (possibly empty).
  const [, authority, path] = authorityPattern.exec(rest)! as unknown as [string, string, string]
  const at = authority.lastIndexOf("@")
  const userinfo = at === -1 ? undefined : authority.slice(0, at)
  // Without '@', `at + 1` is 0: the whole authority.
  const hostPort = authority.slice(at + 1)
  if (userinfo !== undefined) {
    // A credential would be stored, logged and answered back in every response: refuse it
    // rather than strip it silently (the caller would believe it is used). Private repositories
    // are reached through the deployment's integration or an ssh deploy key.
    if (scheme !== "ssh") return "repo_url must not contain credentials (a user name or token before '@'); private repositories are reached through the integration"
    if (userinfo.includes(":")) return "repo_url must not contain a password"
    if (!sshUserPattern.test(userinfo)) return "repo_url's ssh user may contain only letters, digits, '.', '_' and '-'"
  }
  // Matches from index 0 whatever the input (every part is optional, `.` meets no line break:
  // control characters were refused), so it needs no '^'. The port is after the last ':' outside brackets.
  const portMatch = /(.*?)(?::([^:\]]*))?$/.exec(hostPort)!
  const host = portMatch[1]!
  if (!hostPattern.test(host)) return "repo_url's host must be a DNS name or an IP address"
  const portIssue = portProblem(portMatch[2])
  if (portIssue) return portIssue
  if (!path.startsWith("/")) return `repo_url must name a repository path (${repoUrlForms})`
  return repoPathProblemOf(path)
}

/** scp-like syntax: `user@host:path` (git reads `host:path` the same way, but we ask for the user). */
const scpLikePattern = /^([^@/:]+)@([^/:]+):(.*)$/

/** A `host[:port]` of an http:// URL or of the allowed list, compared case-insensitively with port 80 by default. */
const hostPortKey = (hostPort: string): string => {
  const lower = hostPort.toLowerCase()
  return /:[0-9]+$/.test(lower) ? lower : `${lower}:80`
}

/** The `host[:port]` of an http URL's authority (after any `user@`), as it is written. */
const authorityHostPort = (rest: string): string => {
  const authority = authorityPattern.exec(rest)![1]!
  return authority.slice(authority.lastIndexOf("@") + 1)
}

export interface RepoUrlOptions {
  /**
   * The hosts whose repositories may be fetched over plain `http://`, as `host:port` (`host`
   * alone means port 80): the server's `SLIPWAY_INSECURE_GIT_HOSTS`, for git servers on a
   * trusted network or loopback. Default: none. `"any"` checks an http URL's grammar and leaves
   * its host to a later check (the request schemas do this; `planCreate` checks the host).
   */
  readonly insecureHosts?: ReadonlyArray<string> | "any" | undefined
}

/**
 * Why a repository URL is refused, or undefined. Accepted: `https://host[:port]/path`,
 * `ssh://[user@]host[:port]/path`, `user@host:path`, and `http://host[:port]/path` when the host
 * is among `options.insecureHosts`. Refused: every other transport (`file:`, `git:`, `ext::`,
 * …), local paths, credentials, control characters, whitespace and a leading '-'.
 */
export const repoUrlProblem = (url: string, options: RepoUrlOptions = {}): string | undefined => {
  const common = commonProblem(url, "repo_url")
  if (common) return common
  if (url.length > maxRepoUrlLength) return `repo_url must be at most ${maxRepoUrlLength} characters`
  const scheme = schemePattern.exec(url)
  if (scheme) {
    const name = scheme[1]!.toLowerCase()
    const rest = url.slice(scheme[0].length)
    if ((name === "https" || name === "ssh") && rest.startsWith("//")) return hierarchicalProblem(name, rest.slice(2))
    if (name === "http" && rest.startsWith("//")) {
      const allowed = options.insecureHosts ?? []
      const hostPort = authorityHostPort(rest.slice(2))
      if (allowed === "any" || allowed.some((entry) => hostPortKey(entry.trim()) === hostPortKey(hostPort))) return hierarchicalProblem(name, rest.slice(2))
      return `repo_url uses the transport 'http' to ${hostPort || "no host"}, which this server does not allow (plain-http git hosts must be listed in SLIPWAY_INSECURE_GIT_HOSTS); use https:// or ssh://`
    }
    // "ext::cmd" and "fd::…" are git's remote helpers; "file://", "git://" are transports we do not fetch from.
    if (rest.startsWith("//") || rest.startsWith(":")) return `repo_url uses the transport '${name}'; only https:// and ssh:// URLs (or git@host:owner/repo) are allowed`
  }
  const scp = scpLikePattern.exec(url)
  if (scp) {
    const [, user, host, path] = scp as unknown as [string, string, string, string]
    if (!sshUserPattern.test(user)) return "repo_url's ssh user may contain only letters, digits, '.', '_' and '-'"
    if (!hostPattern.test(host)) return "repo_url's host must be a DNS name or an IP address"
    return repoPathProblemOf(path)
  }
  return `repo_url must be a git URL: ${repoUrlForms}`
}

/** Why an entry of SLIPWAY_INSECURE_GIT_HOSTS is refused (`host` or `host:port`), or undefined. */
export const insecureGitHostProblem = (entry: string): string | undefined => {
  const portMatch = /^(.*?)(?::([^:\]]*))?$/.exec(entry.trim())!
  if (!hostPattern.test(portMatch[1]!) || /[/@]/.test(entry)) return `insecure git host '${entry}' must be host or host:port (a DNS name, an IPv4 address or a bracketed IPv6 address)`
  return portProblem(portMatch[2]) === undefined ? undefined : `insecure git host '${entry}' has a port that is not a number from 1 to 65535`
}

// ---------------------------------------------------------------------------------------------
// repo_ref: git-check-ref-format(1)

export const maxRepoRefLength = 255

/** Characters git refuses anywhere in a ref name (rules 4, 5 and 10), besides control characters. */
const forbiddenRefCharacters = /[ ~^:?*[\\]/

/**
 * Why a ref name is refused, or undefined. A branch is given by its bare name (`main`,
 * `feature/x`) or as `refs/heads/<name>`, a tag as `refs/tags/<name>`; other `refs/` namespaces
 * are refused. Every name follows git-check-ref-format(1): no component starting with '.' or
 * ending with '.lock', no '..', no control characters, space, '~', '^', ':', '?', '*', '[' or
 * '\', no leading, trailing or doubled '/', no trailing '.', no '@{', not '@'; and, as
 * `git check-ref-format --branch` adds, no leading '-' (and not `HEAD`).
 */
export const gitRefProblem = (ref: string): string | undefined => {
  const common = commonProblem(ref, "repo_ref")
  if (common) return common
  if (ref.length > maxRepoRefLength) return `repo_ref must be at most ${maxRepoRefLength} characters`
  const forbidden = forbiddenRefCharacters.exec(ref)
  if (forbidden) return `repo_ref must not contain '${forbidden[0]}' (git ref names exclude space, '~', '^', ':', '?', '*', '[' and '\\')`
  if (ref.includes("..")) return "repo_ref must not contain '..'"
  if (ref.includes("@{")) return "repo_ref must not contain '@{'"
  if (ref === "@") return "repo_ref must not be '@'"
  if (ref.startsWith("/") || ref.endsWith("/") || ref.includes("//")) return "repo_ref must not start or end with '/' or contain '//'"
  if (ref.endsWith(".")) return "repo_ref must not end with '.'"
  const components = ref.split("/")
  if (components.some((component) => component.startsWith("."))) return "repo_ref's components must not start with '.'"
  if (components.some((component) => component.endsWith(".lock"))) return "repo_ref's components must not end with '.lock'"
  if (ref.startsWith("refs/")) {
    const [, namespace, ...name] = components
    if (namespace !== "heads" && namespace !== "tags") return "repo_ref must be a branch name (main, or refs/heads/main) or a tag (refs/tags/v1); other refs/ namespaces are not deployable"
    if (name.length === 0) return `repo_ref must name a ${namespace === "heads" ? "branch" : "tag"} after refs/${namespace}/`
    if (name[0]!.startsWith("-")) return "repo_ref's branch or tag name must not start with '-'"
    return undefined
  }
  if (ref === "HEAD") return "repo_ref must name a branch or tag, not HEAD"
  return undefined
}

/** The branch a ref names (`main` for both `main` and `refs/heads/main`), or null for a tag. */
export const branchOf = (ref: string): string | null =>
  ref.startsWith("refs/tags/") ? null : ref.startsWith("refs/heads/") ? ref.slice("refs/heads/".length) : ref

// ---------------------------------------------------------------------------------------------
// graph_config_path: a relative path inside the repository

export const maxRepoPathLength = 1024

/** Why a path inside the repository is refused, or undefined: relative, no '..', no control characters, no leading '-'. */
export const repoPathProblem = (path: string, what = "graph_config_path"): string | undefined => {
  const common = commonProblem(path, what, true)
  if (common) return common
  if (path.length > maxRepoPathLength) return `${what} must be at most ${maxRepoPathLength} characters`
  if (path.startsWith("/")) return `${what} must be a path relative to the repository root (no leading '/')`
  if (path.includes("\\")) return `${what} must separate directories with '/', not '\\'`
  if (path.split("/").includes("..")) return `${what} must stay inside the repository (no '..' segments)`
  return undefined
}

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

export const maxImageNameLength = 255

const domainComponent = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
const domainPattern = `(?:${domainComponent}(?:\\.${domainComponent})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?`
const pathComponent = "[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
const tagPattern = "[\\w][\\w.-]{0,127}"
const digestPattern = "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
const referencePattern = new RegExp(`^((?:${domainPattern}/)?${pathComponent}(?:/${pathComponent})*)(?::(${tagPattern}))?(?:@(${digestPattern}))?$`)
/** The same grammar with the repository path allowed in any case, to tell "uppercase" from "malformed". */
const anyCasePattern = new RegExp(referencePattern.source.replaceAll("[a-z0-9]", "[a-zA-Z0-9]"))

const imageForms = "[registry[:port]/]repository[:tag][@digest], e.g. ghcr.io/acme/agent:1.0"

/** Why an image reference is refused, or undefined. */
export const imageReferenceProblem = (reference: string, what = "image_uri"): string | undefined => {
  const common = commonProblem(reference, what)
  if (common) return common
  const match = referencePattern.exec(reference)
  if (match) {
    return match[1]!.length > maxImageNameLength ? `${what}'s repository name must be at most ${maxImageNameLength} characters` : undefined
  }
  if (anyCasePattern.test(reference)) return `${what}'s repository path must be lowercase (only the registry host may use uppercase)`
  if (reference.includes("://")) return `${what} must be an image reference without a scheme: ${imageForms}`
  return `${what} must be an OCI image reference: ${imageForms}`
}
