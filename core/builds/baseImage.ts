/**
 * The image a build starts `FROM`, as the langgraph CLI names it (`default_base_image`,
 * `docker_tag`, `_resolve_compatible_api_version`, `_image_supports_uv`):
 *
 *   base = base_image ‖ (Node.js only) langchain/langgraphjs-api ‖ langchain/langgraph-api
 *   _INTERNAL_docker_tag → base:TAG
 *   api_version          → base:{api}-{py|node}{version}[-distro]   (~=/>~= ranges resolved against langgraph-api releases)
 *   …/langgraph-server…  → base-{py|node}{version}[-distro]
 *   otherwise            → base:{version}[-distro]
 *
 * One deliberate difference: a `base_image` that already names a tag or digest is used as it is
 * (the CLI appends a second tag, `langchain/langgraph-api:0.2.47:3.11`, which no registry can
 * serve), and `api_version` next to such a `base_image` is refused. docs/builds.md.
 */
import type { Result } from "effect"
import { API_VERSION_RANGE_PATTERN, DEFAULT_IMAGE_DISTRO, type LanggraphConfig, pythonRepr } from "./config.ts"
import { attempt, type LanggraphConfigError, refuse } from "./errors.ts"

/** A config whose graphs are all JavaScript: built on the Node.js image, by the Node.js Dockerfile. */
export const isNodeOnly = (config: Pick<LanggraphConfig, "node_version" | "python_version">): boolean => !!config.node_version && !config.python_version

/** `default_base_image`: the config's `base_image`, else the Node.js or the Python API image. */
export const defaultBaseImage = (config: Pick<LanggraphConfig, "base_image" | "node_version" | "python_version">): string =>
  config.base_image ?? (isNodeOnly(config) ? "langchain/langgraphjs-api" : "langchain/langgraph-api")

/** Whether an image reference already names a tag (a ':' after its last '/') or a digest. */
export const hasTagOrDigest = (image: string): boolean => image.includes("@") || image.slice(image.lastIndexOf("/") + 1).includes(":")

// ---------------------------------------------------------------------------------------------
// api_version ranges: `~=0.11.0.dev5` (compatible release), `>~=0.11.0.dev5` (and later stable ones)

interface ApiVersion {
  readonly release: ReadonlyArray<number>
  readonly pre: "dev" | "rc" | null
  readonly preNumber: number
}

const API_VERSION_PART_PATTERN = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.?(dev|rc)(\d+))?$/

const parseApiVersion = (text: string): ApiVersion | undefined => {
  const match = API_VERSION_PART_PATTERN.exec(text)
  if (!match) return undefined
  return {
    release: [match[1], match[2], match[3]].filter((part) => part !== undefined).map(Number),
    pre: (match[4] as ApiVersion["pre"]) ?? null,
    preNumber: Number(match[5] ?? 0)
  }
}

/** Python's tuple ordering: element by element, a shorter prefix first. */
const compareTuples = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): number => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!
  return a.length - b.length
}

const preOrder = { dev: 0, rc: 1 } as const
const compareApiVersions = (a: ApiVersion, b: ApiVersion): number =>
  compareTuples(a.release, b.release) || (a.pre === null ? 2 : preOrder[a.pre]) - (b.pre === null ? 2 : preOrder[b.pre]) || a.preNumber - b.preNumber

const sameApiVersion = (a: ApiVersion, b: ApiVersion): boolean => compareTuples(a.release, b.release) === 0 && a.pre === b.pre && a.preNumber === b.preNumber

/** The first release past the compatible range: `~=1.2` → 2, `~=1.2.3` → 1.3. */
const upperBound = ({ release }: ApiVersion): ReadonlyArray<number> => (release.length <= 2 ? [release[0]! + 1] : [release[0]!, release[1]! + 1])

const isCompatible = (candidate: ApiVersion, floor: ApiVersion, allowFutureStable: boolean, upper: ReadonlyArray<number>): boolean => {
  if (compareApiVersions(candidate, floor) < 0) return false
  const outside = compareTuples(candidate.release.slice(0, upper.length), upper) >= 0
  if (outside && (!allowFutureStable || candidate.pre !== null)) return false
  if (floor.pre === "dev" && candidate.pre === "dev") return sameApiVersion(candidate, floor)
  return true
}

/**
 * `_resolve_compatible_api_version`: a pinned `api_version` as is; a `~=`/`>~=` range resolved to
 * the newest matching release of `langgraph-api` among `releases` (the CLI asks PyPI; the caller
 * passes the list, so this stays pure).
 */
export const resolveApiVersion = (apiVersion: string, baseImage: string, versionTag: string, releases: ReadonlyArray<string> | undefined): string => {
  const range = API_VERSION_RANGE_PATTERN.exec(apiVersion)
  if (!range) return apiVersion
  const floor = parseApiVersion(range[2]!.trim())
  if (!floor) {
    return refuse(
      `Invalid compatible api_version range: ${apiVersion}.\n\nUse a compatible version range, e.g.:\n  "api_version": "~=0.11.0.dev5"\nor a stable-floating range, e.g.:\n  "api_version": ">~=0.11.0.dev5"`
    )
  }
  // The CLI tests for any ':', which also refuses a registry port (localhost:5000/…); Slipway looks at the tag only.
  if (hasTagOrDigest(baseImage)) refuse("Compatible api_version ranges cannot be used with a tagged base_image.")
  if (releases === undefined) {
    return refuse(`api_version ${pythonRepr(apiVersion)} is a range, and the langgraph-api releases to resolve it against are not known here. Pin a version, e.g.:\n  "api_version": "0.8"`)
  }
  const upper = upperBound(floor)
  const allowFutureStable = range[1] === ">~="
  let best: { version: ApiVersion; text: string } | undefined
  for (const text of releases) {
    const version = parseApiVersion(text)
    if (!version || !isCompatible(version, floor, allowFutureStable, upper)) continue
    if (!best || compareApiVersions(version, best.version) > 0) best = { version, text }
  }
  return best?.text ?? refuse(`No PyPI releases match compatible api_version range ${pythonRepr(apiVersion)} for ${baseImage} with ${pythonRepr(versionTag)}.`)
}

// ---------------------------------------------------------------------------------------------
// docker_tag

export interface BaseImageOptions {
  /** `--base-image`: replaces the config's `base_image`. */
  readonly baseImage?: string | undefined
  /** `--api-version`: replaces the config's `api_version`. */
  readonly apiVersion?: string | undefined
  /** The `langgraph-api` releases on PyPI, to resolve `~=`/`>~=` ranges of `api_version`. */
  readonly langgraphApiReleases?: ReadonlyArray<string> | undefined
}

type TagConfig = Pick<LanggraphConfig, "base_image" | "node_version" | "python_version" | "image_distro" | "api_version" | "_INTERNAL_docker_tag">

/** `docker_tag`: the reference of the image the Dockerfile builds `FROM` (refuses through `refuse`). */
export const imageReference = (config: TagConfig, options: BaseImageOptions = {}): string => {
  const apiVersion = options.apiVersion || config.api_version
  const base = options.baseImage || defaultBaseImage(config)
  const distroTag = config.image_distro === DEFAULT_IMAGE_DISTRO ? "" : `-${config.image_distro}`
  if (config._INTERNAL_docker_tag) return `${base}:${config._INTERNAL_docker_tag}`
  const [language, version] = isNodeOnly(config) ? ["node", config.node_version] : ["py", config.python_version]
  const versionDistroTag = `${version}${distroTag}`
  if (apiVersion) {
    const resolved = resolveApiVersion(apiVersion, base, `${language}${versionDistroTag}`, options.langgraphApiReleases)
    if (hasTagOrDigest(base)) refuse(`api_version cannot be used with a tagged base_image (${base}): drop the tag from base_image, or drop api_version.`)
    return `${base}:${resolved}-${language}${versionDistroTag}`
  }
  if (base.includes("/langgraph-server") && !base.includes(versionDistroTag)) return `${base}-${language}${versionDistroTag}`
  // Slipway: a tagged base image names its image already (the CLI would append a second tag).
  if (hasTagOrDigest(base)) return base
  return `${base}:${versionDistroTag}`
}

/** `docker_tag` of a validated config: the image the Dockerfile builds `FROM`, or why there is none (an api_version range that cannot be resolved, a tagged base_image with api_version). */
export const dockerTag = (config: TagConfig, options: BaseImageOptions = {}): Result.Result<string, LanggraphConfigError> => attempt(() => imageReference(config, options))

/** Base images whose version tag predates uv (`_image_supports_uv`): `langchain/langgraph-trial`, or a `:X.Y.Z` tag below 0.2.47. */
export const imageSupportsUv = (baseImage: string): boolean => {
  if (baseImage === "langchain/langgraph-trial") return false
  const match = /:(\d+(?:\.\d+)?(?:\.\d+)?)(?:-|$)/.exec(baseImage)
  if (!match) return true
  return compareTuples(match[1]!.split(".").map(Number), [0, 2, 47]) >= 0
}
