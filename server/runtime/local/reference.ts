/**
 * Image references: the grammar of the CNCF distribution project (github.com/distribution/reference,
 * `regexp.go`) and Docker's normalisation (`ParseNormalizedNamed`): `python:3.12-slim` is
 * `docker.io/library/python:3.12-slim`, `user/img` is `docker.io/user/img:latest`.
 *
 * Whatever comes out of `parseReference` is safe to hand to skopeo as `docker://<ref>`: it matches the
 * grammar, so it cannot start with `-`, hold whitespace, control characters or a shell/URL trick.
 */

export const DOCKER_HUB = "docker.io"

export interface ImageReference {
  /** Registry host, with port if any (`docker.io`, `127.0.0.1:5055`, `[::1]:5000`). */
  readonly domain: string
  /** Repository path inside the registry (`library/python`). */
  readonly path: string
  /** Tag; "latest" when the input named neither tag nor digest. */
  readonly tag: string | undefined
  /** `sha256:<64 hex>` or `sha512:<128 hex>` when the input pinned one. */
  readonly digest: string | undefined
  /** `domain/path` */
  readonly name: string
  /** The normalised reference: `domain/path[:tag][@digest]`. */
  readonly reference: string
}

const alphaNumeric = "[a-z0-9]+"
const separator = "(?:[._]|__|[-]+)"
const pathComponent = `${alphaNumeric}(?:${separator}${alphaNumeric})*`
const domainComponent = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
const domainName = `${domainComponent}(?:\\.${domainComponent})*`
const ipv6 = "\\[(?:[a-fA-F0-9:]+)\\]"
const domain = `(?:${domainName}|${ipv6})(?::[0-9]+)?`

const PATH_RE = new RegExp(`^${pathComponent}(?:/${pathComponent})*$`)
const DOMAIN_RE = new RegExp(`^${domain}$`)
const TAG_RE = /^[\w][\w.-]{0,127}$/
const DIGEST_RE = /^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$/
const MAX_NAME_LENGTH = 255
const MAX_INPUT_LENGTH = 1024

/** A reference that does not follow the grammar. `message` quotes the input safely (JSON-escaped, truncated). */
export class InvalidReference extends Error {
  readonly _tag = "InvalidReference"
  readonly input: string
  constructor(input: string, why: string) {
    super(`invalid image reference ${quote(input)}: ${why}`)
    this.name = "InvalidReference"
    this.input = input
  }
}

/** JSON-quoted and cut to 80 characters: control characters and newlines never reach a log or a status message raw. */
export const quote = (input: string): string => JSON.stringify(input.length > 80 ? `${input.slice(0, 80)}…` : input)

/** True when the first path component names a registry rather than a Docker Hub user (Docker's rule). */
const looksLikeDomain = (component: string): boolean =>
  component.includes(".") || component.includes(":") || component === "localhost" || component !== component.toLowerCase()

/** Parses and normalises like Docker; throws `InvalidReference`. */
export const parseReference = (input: string): ImageReference => {
  if (typeof input !== "string" || input.length === 0) throw new InvalidReference(String(input ?? ""), "empty")
  if (input.length > MAX_INPUT_LENGTH) throw new InvalidReference(input, `longer than ${MAX_INPUT_LENGTH} characters`)
  // Control characters first, so that the message says what is wrong with them.
  if (/[\u0000-\u0020\u007f]/.test(input)) throw new InvalidReference(input, "contains whitespace or control characters")
  if (input.startsWith("-")) throw new InvalidReference(input, "must not start with '-'")
  if (input.includes("://")) throw new InvalidReference(input, "give a reference like registry.example.com/team/app:1, not a URL")

  let rest = input
  let digest: string | undefined
  const at = rest.indexOf("@")
  if (at >= 0) {
    digest = rest.slice(at + 1)
    rest = rest.slice(0, at)
    if (!DIGEST_RE.test(digest)) throw new InvalidReference(input, "digest must be sha256:<64 lowercase hex> or sha512:<128 lowercase hex>")
  }
  let tag: string | undefined
  const lastSlash = rest.lastIndexOf("/")
  const colon = rest.lastIndexOf(":")
  if (colon > lastSlash) {
    tag = rest.slice(colon + 1)
    rest = rest.slice(0, colon)
    if (!TAG_RE.test(tag)) throw new InvalidReference(input, "tag must be 1-128 of [A-Za-z0-9_.-], not starting with '.' or '-'")
  }
  if (rest.length === 0) throw new InvalidReference(input, "missing repository name")

  const slash = rest.indexOf("/")
  let registry: string
  let path: string
  if (slash < 0 || !looksLikeDomain(rest.slice(0, slash))) {
    registry = DOCKER_HUB
    path = rest
  } else {
    registry = rest.slice(0, slash)
    path = rest.slice(slash + 1)
  }
  if (registry === "index.docker.io" || registry === "registry-1.docker.io") registry = DOCKER_HUB
  if (!DOMAIN_RE.test(registry)) throw new InvalidReference(input, `invalid registry host ${quote(registry)}`)
  if (path !== path.toLowerCase()) throw new InvalidReference(input, "repository name must be lowercase")
  if (!PATH_RE.test(path)) {
    throw new InvalidReference(input, "repository name must be lowercase letters, digits and separators (. _ __ -) in /-separated components")
  }
  if (registry === DOCKER_HUB && !path.includes("/")) path = `library/${path}`
  const name = `${registry}/${path}`
  if (name.length > MAX_NAME_LENGTH) throw new InvalidReference(input, `repository name longer than ${MAX_NAME_LENGTH} characters`)
  if (tag === undefined && digest === undefined) tag = "latest"
  const reference = `${name}${tag !== undefined ? `:${tag}` : ""}${digest !== undefined ? `@${digest}` : ""}`
  return { domain: registry, path, tag, digest, name, reference }
}

/** A registry mirror (`host:port`, `https://host[:port][/prefix]`, `http://…` which implies insecure). */
export interface Mirror {
  readonly domain: string
  /** Repository prefix inside the mirror ("" for none). */
  readonly prefix: string
  /** Given as http://: plain HTTP, so it counts as an insecure registry. */
  readonly insecure: boolean
}

export const parseMirror = (input: string): Mirror => {
  const raw = input.trim()
  const bad = (why: string) => new Error(`registry mirror ${quote(input)}: ${why}`)
  if (raw.length === 0) throw bad("empty")
  let hostAndPath = raw
  let insecure = false
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(raw)
  if (scheme) {
    const s = scheme[1]!.toLowerCase()
    if (s !== "http" && s !== "https") throw bad("only http:// and https:// mirrors are supported")
    insecure = s === "http"
    hostAndPath = raw.slice(scheme[0].length)
  }
  hostAndPath = hostAndPath.replace(/\/+$/, "")
  const slash = hostAndPath.indexOf("/")
  const host = slash < 0 ? hostAndPath : hostAndPath.slice(0, slash)
  const prefix = slash < 0 ? "" : hostAndPath.slice(slash + 1)
  if (!DOMAIN_RE.test(host)) throw bad(`invalid host ${quote(host)}`)
  if (prefix !== "" && !PATH_RE.test(prefix)) throw bad(`invalid path ${quote(prefix)}`)
  return { domain: host, prefix, insecure }
}

/** Where to fetch `ref` from: Docker Hub references go to the mirror when there is one (like Docker's registry-mirrors). */
export const sourceOf = (ref: ImageReference, mirror: Mirror | undefined): { readonly domain: string; readonly name: string } => {
  if (mirror === undefined || ref.domain !== DOCKER_HUB) return { domain: ref.domain, name: ref.name }
  const path = mirror.prefix ? `${mirror.prefix}/${ref.path}` : ref.path
  return { domain: mirror.domain, name: `${mirror.domain}/${path}` }
}

/** Checks a `host[:port]` entry of SLIPWAY_INSECURE_REGISTRIES. */
export const parseRegistryHost = (input: string): string => {
  const raw = input.trim()
  if (!DOMAIN_RE.test(raw)) throw new Error(`insecure registry ${quote(input)}: expected host or host:port`)
  return raw
}
