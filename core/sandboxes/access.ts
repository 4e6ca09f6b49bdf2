/**
 * Wire shapes and pure rules of the sandbox area's access features (issue 15, "the current
 * sandbox model"): private image registries (credentials the runtime pulls with, never
 * answered), service URLs (a token that reaches one port of one box) and download URLs (a token
 * that fetches one file of one box). Shapes follow the npm `langsmith@0.12.0` client
 * (`resources/sandboxes/registries.js`, `lib/sandbox/client.js`).
 */
import { Schema } from "effect"
import { doc, IntFromQuery, Timestamp, Uuid } from "../api/common.ts"
import { atLeast, atMost, Int, rule, ruleOf } from "../api/validation.ts"
import { DnsLabel } from "./names.ts"

// ---------------------------------------------------------------------------------------------
// Registries

export const registryProviders = ["DOCKER_REGISTRY", "HARBOR", "GHCR", "ECR", "GAR", "DOCKER_HUB"] as const
export type RegistryProvider = (typeof registryProviders)[number]

/** Where a registry is: `host[:port]` (lowercase) and an optional repository path prefix. */
export interface RegistryLocation {
  readonly host: string
  readonly path: string
}

const hostPattern = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*(?::[0-9]{1,5})?$|^\[[0-9a-f:]+\](?::[0-9]{1,5})?$/
const pathPattern = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/

/** Docker Hub's names: images without a registry host are pulled from it. */
const dockerHubHosts = new Set(["docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com"])

/**
 * A registry URL as clients write it: `registry.example.com`, `https://ghcr.io/acme`,
 * `127.0.0.1:5000`. Answers the location, or why it is not one.
 */
export const parseRegistryUrl = (raw: string): RegistryLocation | string => {
  const text = raw.trim().replace(/^(https?):\/\//i, "").replace(/\/+$/, "")
  if (text.length === 0) return "must name a registry host, like registry.example.com"
  if (text.length > 255) return "must be at most 255 characters"
  const slash = text.indexOf("/")
  const host = (slash === -1 ? text : text.slice(0, slash)).toLowerCase()
  const path = slash === -1 ? "" : text.slice(slash + 1)
  if (!hostPattern.test(host)) return `${JSON.stringify(host)} is not a registry host[:port]`
  const port = /:(\d+)$/.exec(host)?.[1]
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return `port ${port} is out of range`
  if (path !== "" && !pathPattern.test(path)) return `${JSON.stringify(path)} is not a repository path (lowercase, separated by '/')`
  return { host: dockerHubHosts.has(host) ? "docker.io" : host, path }
}

/** What kind of registry a URL names (answers say it; nothing depends on it). */
export const registryProvider = (location: RegistryLocation): RegistryProvider => {
  const host = location.host.replace(/:\d+$/, "")
  if (host === "docker.io") return "DOCKER_HUB"
  if (host === "ghcr.io") return "GHCR"
  if (/\.amazonaws\.com$/.test(host)) return "ECR"
  if (host === "gcr.io" || host.endsWith(".gcr.io") || host.endsWith("-docker.pkg.dev")) return "GAR"
  return "DOCKER_REGISTRY"
}

/**
 * The registry whose credentials a pull of `image` (domain and repository path, normalised as
 * the image store does: `docker.io/library/python`) uses: same host, and the longest path prefix
 * that contains the repository. Undefined when none applies (an anonymous pull).
 */
export const registryFor = <R extends { readonly url: string }>(
  image: { readonly domain: string; readonly path: string },
  registries: ReadonlyArray<R>
): R | undefined => {
  let best: { registry: R; length: number } | undefined
  for (const registry of registries) {
    const location = parseRegistryUrl(registry.url)
    if (typeof location === "string" || location.host !== image.domain.toLowerCase()) continue
    if (location.path !== "" && image.path !== location.path && !image.path.startsWith(`${location.path}/`)) continue
    if (!best || location.path.length > best.length) best = { registry, length: location.path.length }
  }
  return best?.registry
}

const RegistryUrl = Schema.String.check(ruleOf((url: string) => {
  const parsed = parseRegistryUrl(url)
  return typeof parsed === "string" ? parsed : undefined
}, "value_error")).annotate({ description: "Registry host[:port] and optional repository prefix; a scheme is accepted and ignored", examples: ["registry.example.com"] })

/** Credentials never travel back: answers carry no username or password. */
const Secret = Schema.String.check(
  rule((value: string) => value.length >= 1, "must be at least 1 character", "string_too_short"),
  rule((value: string) => value.length <= 4096, "must be at most 4096 characters", "string_too_long")
)
const Username = Schema.String.check(
  rule((value: string) => value.length >= 1, "must be at least 1 character", "string_too_short"),
  rule((value: string) => value.length <= 255, "must be at most 255 characters", "string_too_long"),
  // docker-config's `auth` is base64("user:password"): a ':' in the user cannot be told apart.
  rule((value: string) => !value.includes(":"), "must not contain ':'", "value_error")
)

/** `DOCKER_CONFIG` (username and password) is what Slipway pulls with; `AWS_ROLE` is refused with a 400. */
const AuthType = Schema.Literals(["DOCKER_CONFIG", "AWS_ROLE"])

/** Cursor paging: null on the last page. */
const nextCursor = doc(Schema.NullOr(Schema.String), "Pass as cursor for the next page; null on the last page", [null])

const registryUsername = doc(Username, "The user the registry knows (stored; never answered)", ["robot"])
const registryPassword = doc(Secret, "The password or access token (stored encrypted with the secrets key; never answered or logged)", ["s3cr3t-token"])
const awsRoleArn = doc(Schema.String, "For auth_type AWS_ROLE, which Slipway refuses (400): an AWS role to assume", ["arn:aws:iam::123456789012:role/ecr-pull"])

export const CreateRegistry = Schema.Struct({
  name: DnsLabel,
  url: RegistryUrl,
  auth_type: Schema.optionalKey(AuthType),
  username: Schema.optionalKey(registryUsername),
  password: Schema.optionalKey(registryPassword),
  aws_role_arn: Schema.optionalKey(awsRoleArn)
}).annotate({ identifier: "CreateRegistry" })
export type CreateRegistry = typeof CreateRegistry.Type

export const PatchRegistry = Schema.Struct({
  name: Schema.optionalKey(DnsLabel),
  url: Schema.optionalKey(RegistryUrl),
  auth_type: Schema.optionalKey(AuthType),
  username: Schema.optionalKey(registryUsername),
  password: Schema.optionalKey(registryPassword),
  aws_role_arn: Schema.optionalKey(awsRoleArn)
}).annotate({ identifier: "PatchRegistry" })
export type PatchRegistry = typeof PatchRegistry.Type

export const Registry = Schema.Struct({
  id: Uuid,
  name: doc(Schema.String, "The registry's name, unique per tenant", ["acme-private"]),
  url: doc(Schema.String, "Registry host[:port] and optional repository prefix its credentials apply to", ["registry.example.com/acme"]),
  auth_type: Schema.Literal("DOCKER_CONFIG"),
  provider: Schema.Literals(registryProviders),
  repository_search_mode: Schema.Literal("NONE"),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotate({ identifier: "Registry" })
export type Registry = typeof Registry.Type

export const RegistryList = Schema.Struct({
  items: Schema.Array(Registry),
  /** Deprecated alias of `items`, as the real API keeps it. */
  registries: Schema.Array(Registry),
  next_cursor: nextCursor,
  /** Deprecated: the offset of the next page (limit/offset paging), 0 on the last one. */
  offset: Int
}).annotate({ identifier: "RegistryList" })

const QueryInt = (min: number, max: number) => IntFromQuery.check(atLeast(min)).check(atMost(max))

/** Legacy limit/offset (default 50) or page_size/cursor (default 20, at most 100), newest first. */
export const RegistryListQuery = Schema.Struct({
  limit: Schema.optionalKey(QueryInt(1, 500)),
  offset: Schema.optionalKey(QueryInt(0, Number.MAX_SAFE_INTEGER)),
  page_size: Schema.optionalKey(QueryInt(1, 100)),
  cursor: Schema.optionalKey(doc(Schema.String, "The next_cursor of the previous page", ["NTA"])),
  name_contains: Schema.optionalKey(doc(Schema.String, "Only registries whose name contains this text (case-sensitive)", ["acme"]))
}).annotate({ identifier: "RegistryListQuery" })

export const RegistryNameParams = Schema.Struct({ name: Schema.String })

// ---------------------------------------------------------------------------------------------
// Service and download URLs

export const maxServiceUrlSeconds = 86_400
export const defaultServiceUrlSeconds = 600

const Port = Int.check(atLeast(1)).check(atMost(65535))

export const CreateServiceUrl = Schema.Struct({
  port: Port,
  expires_in_seconds: Schema.optionalKey(Int.check(atLeast(1)).check(atMost(maxServiceUrlSeconds))),
  /** LangSmith login modes (`restricted`, `workspace`) are refused with a 400; `off` is token mode. */
  access: Schema.optionalKey(Schema.Literals(["restricted", "workspace", "off"])),
  embed_origins: Schema.optionalKey(Schema.Array(Schema.String))
}).annotate({ identifier: "CreateServiceUrl" })
export type CreateServiceUrl = typeof CreateServiceUrl.Type

export const ServiceUrl = Schema.Struct({
  browser_url: doc(Schema.String, "Opens the service in a browser: sets the token as a cookie, then redirects to service_url", [
    "https://slipway.example.com/sandbox-service-login?token=eyJ..."
  ]),
  service_url: doc(Schema.String, "The box's port over HTTP(S) and WebSocket; requests carry the token in X-Langsmith-Sandbox-Service-Token", [
    "https://slipway.example.com/sandbox-services/0d9e4c1a-6f1b-4c43-9e55-3b5f0f9c7a11/8000/"
  ]),
  token: doc(Schema.String, "The signed, expiring token for this box and port", ["eyJ..."]),
  expires_at: Timestamp
}).annotate({ identifier: "ServiceUrl" })

export const ServiceUrlGrant = Schema.Struct({
  access: Schema.Literal("token"),
  port: Int,
  created_at: Timestamp,
  expires_at: Timestamp
}).annotate({ identifier: "ServiceUrlGrant" })

export const ServiceUrlList = Schema.Struct({
  items: Schema.Array(ServiceUrlGrant),
  next_cursor: nextCursor
}).annotate({ identifier: "ServiceUrlList" })

export const ServiceUrlListQuery = Schema.Struct({
  cursor: Schema.optionalKey(Schema.String),
  limit: Schema.optionalKey(Schema.String)
})

export const DeleteServiceUrlQuery = Schema.Struct({
  port: Schema.optionalKey(QueryInt(1, 65535))
})

/** A MIME type as a `Content-Type` header value may carry it (no line breaks, no quotes games). */
const contentTypePattern = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+(?:\s*;\s*[a-z0-9!#$&^_.+-]+=(?:[a-z0-9!#$&^_.+-]+|"[^"\r\n\\]*"))*$/i

export const CreateDownloadUrl = Schema.Struct({
  path: doc(Schema.String, "The file in the box: absolute, or relative to the box's home directory", ["/home/user/report.csv"]).check(
    rule((path: string) => path.length >= 1, "must be at least 1 character", "string_too_short"),
    rule((path: string) => path.length <= 4096, "must be at most 4096 characters", "string_too_long"),
    rule((path: string) => !path.includes("\0"), "must not contain NUL", "value_error")
  ),
  /** Omitted: the link never expires (as the real API). */
  expires_in_seconds: Schema.optionalKey(Int.check(atLeast(1)).check(atMost(365 * 86_400))),
  content_type: Schema.optionalKey(
    doc(Schema.String, "The Content-Type the link answers with (default: guessed from the file name)", ["text/csv"]).check(
      rule((value: string) => value.length <= 255 && contentTypePattern.test(value), "must be a MIME type like text/plain", "value_error")
    )
  ),
  content_disposition: Schema.optionalKey(Schema.Literals(["attachment", "inline"])),
  csp_sandbox: Schema.optionalKey(Schema.Boolean),
  csp_sandbox_flags: Schema.optionalKey(Schema.Array(Schema.String)),
  csp_source_bundles: Schema.optionalKey(Schema.Array(Schema.String))
}).annotate({ identifier: "CreateDownloadUrl" })
export type CreateDownloadUrl = typeof CreateDownloadUrl.Type

export const DownloadUrl = Schema.Struct({
  download_url: doc(Schema.String, "Serves the file without an API key (Range requests included) until it expires", [
    "https://slipway.example.com/sandbox-downloads/eyJ..."
  ]),
  token: doc(Schema.String, "The signed token the link carries", ["eyJ..."]),
  /** Null for a link that never expires. */
  expires_at: Schema.NullOr(Timestamp)
}).annotate({ identifier: "DownloadUrl" })
