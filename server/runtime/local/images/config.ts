/**
 * The image store's settings (from the environment) and the OCI documents it reads: the image
 * config of a pulled image, and the record of a cached one (`image.json`).
 */
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import { Schema } from "effect"
import type { ExposedPort, ImageConfig } from "./model.ts"
import { parseMirror, parseRegistryHost, quote } from "../reference.ts"

export interface ImageStoreOptions {
  /** Directory of the cache (created when missing). */
  readonly root: string
  /** Docker Hub mirror: `host:port`, `https://host[:port][/prefix]` or `http://…` (implies insecure). */
  readonly mirror?: string | undefined
  /** `host[:port]` of registries reached over plain HTTP / without certificate checks. */
  readonly insecureRegistries?: ReadonlyArray<string> | undefined
  /** A docker-config JSON file (`{"auths":{"host":{"auth":"base64(user:pass)"}}}`) for private registries. */
  readonly authFile?: string | undefined
  readonly log?: {
    readonly info: (msg: string, fields?: Record<string, unknown>) => void
    readonly warn: (msg: string, fields?: Record<string, unknown>) => void
  }
  readonly timeouts?: {
    /** Resolving a tag to a digest (one manifest request). Default 2 minutes. */
    readonly resolveMs?: number | undefined
    /** Copying an image. Default 30 minutes. */
    readonly copyMs?: number | undefined
    /** Unpacking an image. Default 30 minutes. */
    readonly unpackMs?: number | undefined
  } | undefined
  /** Tool paths (default: found on PATH). */
  readonly skopeo?: string
  readonly umoci?: string
}

/** Options from the environment: SLIPWAY_REGISTRY_MIRROR, SLIPWAY_INSECURE_REGISTRIES, SLIPWAY_REGISTRY_AUTH_FILE, SLIPWAY_IMAGE_PULL_TIMEOUT_S. */
export const imageStoreOptionsFromEnv = (
  env: Readonly<Record<string, string | undefined>> = process.env
): Pick<ImageStoreOptions, "mirror" | "insecureRegistries" | "authFile" | "timeouts"> => {
  const pick = (name: string) => {
    const value = env[name]?.trim()
    return value ? value : undefined
  }
  const mirror = pick("SLIPWAY_REGISTRY_MIRROR")
  if (mirror !== undefined) parseMirror(mirror) // fail at start-up, not at the first pull
  const insecure = pick("SLIPWAY_INSECURE_REGISTRIES")
  const insecureRegistries = insecure === undefined ? undefined : insecure.split(",").map((s) => s.trim()).filter((s) => s.length > 0).map(parseRegistryHost)
  const authFile = pick("SLIPWAY_REGISTRY_AUTH_FILE")
  const timeout = pick("SLIPWAY_IMAGE_PULL_TIMEOUT_S")
  let timeouts: ImageStoreOptions["timeouts"]
  if (timeout !== undefined) {
    const seconds = Number(timeout)
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > 24 * 3600) {
      throw new Error(`SLIPWAY_IMAGE_PULL_TIMEOUT_S must be a whole number of seconds between 1 and 86400, got ${quote(timeout)}`)
    }
    timeouts = { copyMs: seconds * 1000, unpackMs: seconds * 1000 }
  }
  return { mirror, insecureRegistries, authFile, timeouts }
}

// --- the OCI documents we read -------------------------------------------------------------------

const StringList = Schema.NullOr(Schema.Array(Schema.String))
const OciImageConfig = Schema.Struct({
  config: Schema.optional(
    Schema.NullOr(
      Schema.Struct({
        Entrypoint: Schema.optional(StringList),
        Cmd: Schema.optional(StringList),
        Env: Schema.optional(StringList),
        WorkingDir: Schema.optional(Schema.String),
        User: Schema.optional(Schema.String),
        ExposedPorts: Schema.optional(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)))
      })
    )
  )
})
const Descriptor = Schema.Struct({
  mediaType: Schema.optional(Schema.String),
  digest: Schema.String,
  annotations: Schema.optional(Schema.NullOr(Schema.Record(Schema.String, Schema.String)))
})
const OciIndex = Schema.Struct({ manifests: Schema.Array(Descriptor) })
const OciManifest = Schema.Struct({ mediaType: Schema.optional(Schema.String), config: Descriptor, layers: Schema.optional(Schema.Array(Descriptor)) })
const OciRootfs = Schema.Struct({ rootfs: Schema.Struct({ diff_ids: Schema.Array(Schema.String) }) })

/** The layers of the image `tag` of an OCI layout, bottom first: each blob's path and its diff_id. */
export const readLayoutLayers = async (layout: string, tag: string): Promise<ReadonlyArray<{ readonly diffId: string; readonly blob: string }>> => {
  const manifest = Schema.decodeUnknownSync(OciManifest)(await readJson(blobPath(layout, await layoutManifestDigest(layout, tag))))
  const { rootfs } = Schema.decodeUnknownSync(OciRootfs)(await readJson(blobPath(layout, manifest.config.digest)))
  const layers = manifest.layers ?? []
  if (layers.length !== rootfs.diff_ids.length) throw new Error(`the image has ${layers.length} layers but ${rootfs.diff_ids.length} diff_ids`)
  return layers.map((layer, index) => ({ diffId: rootfs.diff_ids[index]!, blob: blobPath(layout, layer.digest) }))
}

/** What `image.json` of a cached image holds. */
export const CachedImage = Schema.Struct({
  reference: Schema.String,
  digest: Schema.String,
  source: Schema.String,
  pulledAt: Schema.String,
  /** Pulled with credentials: a later pull by digest must show it may read the image too. */
  private: Schema.optionalKey(Schema.Boolean),
  /** Imported from a layout (a build): its layers' diff_ids, whose unpacked trees its rootfs links to (layers.ts). */
  layers: Schema.optionalKey(Schema.Array(Schema.String)),
  config: Schema.Struct({
    entrypoint: Schema.Array(Schema.String),
    cmd: Schema.Array(Schema.String),
    env: Schema.Array(Schema.String),
    workingDir: Schema.String,
    user: Schema.String,
    exposedPorts: Schema.Array(Schema.Struct({ port: Schema.Number, protocol: Schema.String }))
  })
})
export type CachedImage = typeof CachedImage.Type

export const DIGEST_RE = /^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$/

/** The tag skopeo writes the one image of a pull's OCI layout under. */
export const LAYOUT_TAG = "image"

const blobPath = (layout: string, digest: string): string => {
  if (!DIGEST_RE.test(digest)) throw new Error(`unexpected digest ${quote(digest)} in the image layout`)
  const [algorithm, hex] = digest.split(":") as [string, string]
  return join(layout, "blobs", algorithm, hex)
}

export const readJson = async (path: string): Promise<unknown> => JSON.parse(await readFile(path, "utf8"))

export const parseExposedPorts = (ports: Readonly<Record<string, unknown>> | null | undefined): ReadonlyArray<ExposedPort> => {
  const out: Array<ExposedPort> = []
  for (const key of Object.keys(ports ?? {})) {
    const match = /^(\d{1,5})(?:\/([a-z]+))?$/.exec(key.trim().toLowerCase())
    if (!match) continue
    const port = Number(match[1])
    if (port < 1 || port > 65535) continue
    out.push({ port, protocol: match[2] ?? "tcp" })
  }
  return out.sort((a, b) => a.port - b.port || a.protocol.localeCompare(b.protocol))
}

/** The OCI annotation naming a manifest of a layout (its tag). */
const REF_NAME = "org.opencontainers.image.ref.name"

/** The manifest digest of `tag` in an OCI layout (without a tag: its first manifest). */
export const layoutManifestDigest = async (layout: string, tag?: string): Promise<string> => {
  const index = Schema.decodeUnknownSync(OciIndex)(await readJson(join(layout, "index.json")))
  const found = tag === undefined ? index.manifests[0] : index.manifests.find((m) => m.annotations?.[REF_NAME] === tag)
  if (found === undefined) throw new Error(tag === undefined ? "the image layout holds no manifest" : `the image layout holds no image tagged ${quote(tag)}`)
  if (!DIGEST_RE.test(found.digest)) throw new Error(`unexpected digest ${quote(found.digest)} in the image layout`)
  return found.digest
}

/** The image config of the image `tag` (default: the first) in an OCI layout. */
export const readLayoutConfig = async (layout: string, tag?: string): Promise<ImageConfig> => {
  const manifest = Schema.decodeUnknownSync(OciManifest)(await readJson(blobPath(layout, await layoutManifestDigest(layout, tag))))
  const image = Schema.decodeUnknownSync(OciImageConfig)(await readJson(blobPath(layout, manifest.config.digest)))
  const c = image.config ?? {}
  return {
    entrypoint: c.Entrypoint ?? [],
    cmd: c.Cmd ?? [],
    env: c.Env ?? [],
    workingDir: c.WorkingDir && c.WorkingDir.length > 0 ? c.WorkingDir : "/",
    user: c.User ?? "",
    exposedPorts: parseExposedPorts(c.ExposedPorts)
  }
}

/** The first 12 hex digits of a digest, with its algorithm (`sha256:0123456789ab`). */
export const shortDigest = (digest: string): string => digest.slice(0, digest.indexOf(":") + 13)

/** A message cut to `max` characters. */
export const cut = (text: string, max = 200): string => (text.length > max ? `${text.slice(0, max)}…` : text)
