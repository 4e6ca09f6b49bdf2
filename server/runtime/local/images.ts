/**
 * Slipway's one image store, shared by sandboxes and deployments.
 *
 * `pull(reference)` fetches an OCI image with skopeo (`docker://REF` -> a temporary OCI layout) and
 * unpacks it with umoci into a root filesystem that every box of that image shares read-only (by
 * convention: boxes mount it as the lower layer of an overlay). Images are cached by manifest digest:
 *
 *   <root>/images/sha256-<hex>/rootfs       the unpacked files
 *   <root>/images/sha256-<hex>/image.json   digest, source and the parsed image config
 *   <root>/tmp/<pid>-<random>/              work space of pulls under way (skopeo's tmpdir too)
 *
 * An image directory appears by one rename once complete, so a crash never leaves a half-unpacked
 * rootfs that looks finished; leftovers in tmp/ of dead processes are removed when a store starts.
 * A second pull of a tag resolves its digest (one manifest request) and reuses the rootfs; a pull by
 * digest (`name@sha256:…`) of a cached image touches no network. Concurrent pulls of one reference, or
 * of references resolving to one digest, share one operation.
 *
 * Security: user input is parsed against the reference grammar before any process runs and goes to
 * skopeo only as `docker://<normalised ref>`; TLS is verified except for registries listed as
 * insecure; credentials come only from the configured auth file (never the host user's
 * ~/.docker/config.json, which could hold the operator's private-registry logins).
 */
import { createHash, randomUUID } from "node:crypto"
import { existsSync } from "node:fs"
import { chmod, lchown, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises"
import { join, resolve } from "node:path"
import { Schema } from "effect"
import { CommandFailed, runCommand } from "./command.ts"
import {
  type ImageReference,
  InvalidReference,
  parseMirror,
  parseReference,
  parseRegistryHost,
  quote,
  sourceOf
} from "./reference.ts"

export { type ImageReference, InvalidReference, type Mirror, parseMirror, parseReference } from "./reference.ts"

export interface ExposedPort {
  readonly port: number
  readonly protocol: string
}

/** The parts of the OCI image config a runtime needs. */
export interface ImageConfig {
  readonly entrypoint: ReadonlyArray<string>
  readonly cmd: ReadonlyArray<string>
  /** `KEY=value` entries, as in the image. */
  readonly env: ReadonlyArray<string>
  /** "/" when the image sets none (Docker's default). */
  readonly workingDir: string
  /** As in the image (`uid`, `uid:gid`, `name`, …); "" means root. */
  readonly user: string
  /** From the image's ExposedPorts (`8000/tcp`), sorted; empty when it declares none. */
  readonly exposedPorts: ReadonlyArray<ExposedPort>
}

export interface PulledImage {
  /** The normalised reference asked for (`docker.io/library/python:3.12-slim`). */
  readonly reference: string
  /** Manifest digest the reference resolved to (what the registry serves; may be a multi-platform index). */
  readonly digest: string
  /** The unpacked root filesystem: shared by every box of this image, never write into it. */
  readonly rootfs: string
  readonly config: ImageConfig
}

export interface PullOptions {
  readonly onProgress?: (message: string) => void
  /**
   * Credentials for the reference's registry (a stored sandbox registry): written for this pull
   * only, as a docker-config file of mode 0600 in a private directory under the store's tmp/,
   * given to skopeo as `--authfile` (never on a command line) and removed when the pull ends.
   * They take the place of the store's `authFile` for this pull.
   */
  readonly auth?: RegistryAuth
}

/** A username and password for one registry host. */
export interface RegistryAuth {
  readonly username: string
  readonly password: string
}

export interface ImageStoreLog {
  readonly info: (msg: string, fields?: Record<string, unknown>) => void
  readonly warn: (msg: string, fields?: Record<string, unknown>) => void
}

export interface ImageStoreOptions {
  /** Directory of the cache (created when missing). */
  readonly root: string
  /** Docker Hub mirror: `host:port`, `https://host[:port][/prefix]` or `http://…` (implies insecure). */
  readonly mirror?: string
  /** `host[:port]` of registries reached over plain HTTP / without certificate checks. */
  readonly insecureRegistries?: ReadonlyArray<string>
  /** A docker-config JSON file (`{"auths":{"host":{"auth":"base64(user:pass)"}}}`) for private registries. */
  readonly authFile?: string
  readonly log?: ImageStoreLog
  readonly timeouts?: {
    /** Resolving a tag to a digest (one manifest request). Default 2 minutes. */
    readonly resolveMs?: number
    /** Copying an image. Default 30 minutes. */
    readonly copyMs?: number
    /** Unpacking an image. Default 30 minutes. */
    readonly unpackMs?: number
  }
  /** Tool paths (default: found on PATH). */
  readonly skopeo?: string
  readonly umoci?: string
}

export interface ImageStoreStats {
  /** Tag -> digest resolutions (manifest requests). */
  readonly resolves: number
  /** skopeo copies started. */
  readonly copies: number
  /** umoci unpacks started. */
  readonly unpacks: number
  /** Pulls answered from the cache. */
  readonly cacheHits: number
}

export interface ImageStore {
  readonly root: string
  readonly pull: (reference: string, options?: PullOptions) => Promise<PulledImage>
  /** A cached image by digest (no network), or null. `reference` is the one it was first pulled as. */
  readonly lookup: (digest: string) => Promise<PulledImage | null>
  /** Every cached image (reference is the one it was first pulled as). */
  readonly list: () => Promise<ReadonlyArray<PulledImage>>
  /** Removes one cached image; true when it was there. Boxes still using its rootfs must be gone. */
  readonly remove: (digest: string) => Promise<boolean>
  /**
   * Makes a local image of a directory tree (a box's filesystem as the box sees it: its captured
   * snapshot): copied into the cache under a new digest, with the ids of `uidBase`..+65535 (the
   * box's id-mapped range) mapped back to 0..65535 and the image config of the image it ran. It
   * is in no registry: boxes find it by `lookup(digest)`.
   */
  readonly importTree: (source: string, options: { readonly reference: string; readonly config: ImageConfig; readonly uidBase: number }) => Promise<PulledImage>
  /** Removes every cached image whose digest is not in `keep`; returns the removed digests. */
  readonly gc: (keep: ReadonlySet<string>) => Promise<ReadonlyArray<string>>
  readonly stats: () => ImageStoreStats
}

export type ImagePullErrorKind =
  | "invalid_reference"
  | "not_found"
  | "unauthorized"
  | "unreachable"
  | "tls"
  | "timeout"
  | "unsupported"
  | "tool_missing"
  | "failed"

/** A pull that did not succeed. `message` is short and human, fit for a `status_message`. */
export class ImagePullError extends Error {
  readonly _tag = "ImagePullError"
  readonly kind: ImagePullErrorKind
  /** The reference as asked (normalised when it parsed). */
  readonly reference: string
  /** The registry talked to (the mirror for Docker Hub references when one is set). */
  readonly registry: string | undefined
  /** Raw tool output, for logs (never for users: it may be long). */
  readonly detail: string | undefined
  constructor(args: {
    readonly kind: ImagePullErrorKind
    readonly message: string
    readonly reference: string
    readonly registry?: string
    readonly detail?: string
  }) {
    super(args.message)
    this.name = "ImagePullError"
    this.kind = args.kind
    this.reference = args.reference
    this.registry = args.registry
    this.detail = args.detail
  }
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
const Descriptor = Schema.Struct({ mediaType: Schema.optional(Schema.String), digest: Schema.String })
const OciIndex = Schema.Struct({ manifests: Schema.Array(Descriptor) })
const OciManifest = Schema.Struct({ mediaType: Schema.optional(Schema.String), config: Descriptor })
const CachedImage = Schema.Struct({
  reference: Schema.String,
  digest: Schema.String,
  source: Schema.String,
  pulledAt: Schema.String,
  /** Pulled with credentials: a later pull by digest must show it may read the image too. */
  private: Schema.optionalKey(Schema.Boolean),
  config: Schema.Struct({
    entrypoint: Schema.Array(Schema.String),
    cmd: Schema.Array(Schema.String),
    env: Schema.Array(Schema.String),
    workingDir: Schema.String,
    user: Schema.String,
    exposedPorts: Schema.Array(Schema.Struct({ port: Schema.Number, protocol: Schema.String }))
  })
})
type CachedImage = typeof CachedImage.Type

const DIGEST_RE = /^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$/
const LAYOUT_TAG = "image"

const blobPath = (layout: string, digest: string): string => {
  if (!DIGEST_RE.test(digest)) throw new Error(`unexpected digest ${quote(digest)} in the image layout`)
  const [algorithm, hex] = digest.split(":") as [string, string]
  return join(layout, "blobs", algorithm, hex)
}

const readJson = async (path: string): Promise<unknown> => JSON.parse(await readFile(path, "utf8"))

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

/** The image config of the one image in an OCI layout written by skopeo. */
export const readLayoutConfig = async (layout: string): Promise<ImageConfig> => {
  const index = Schema.decodeUnknownSync(OciIndex)(await readJson(join(layout, "index.json")))
  const first = index.manifests[0]
  if (first === undefined) throw new Error("the image layout holds no manifest")
  const manifest = Schema.decodeUnknownSync(OciManifest)(await readJson(blobPath(layout, first.digest)))
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

// --- skopeo's errors, made short ------------------------------------------------------------------

const shortDigest = (digest: string): string => digest.slice(0, digest.indexOf(":") + 13)

/** The message of skopeo's `level=fatal msg="…"` line (unescaped), else its last stderr line. */
const skopeoMessage = (stderr: string): string => {
  const matches = [...stderr.matchAll(/level=fatal msg="((?:[^"\\]|\\.)*)"/g)]
  const last = matches[matches.length - 1]
  let message: string
  if (last) {
    try {
      message = JSON.parse(`"${last[1]}"`) as string
    } catch {
      message = last[1]!
    }
  } else {
    const lines = stderr.split("\n").map((l) => l.trim()).filter((l) => l.length > 0)
    message = lines[lines.length - 1] ?? ""
  }
  return message
    .replace(/^Error parsing image name "[^"]*":\s*/, "")
    .replace(/^initializing source \S+:\s*/, "")
    .replace(/^(copying system image from manifest list|choosing an image from manifest list \S+):\s*/, "")
    .replace(/\s+/g, " ") // one line: it ends up in a status_message
    .trim()
}

const firstOf = (text: string, patterns: ReadonlyArray<RegExp>): string | undefined => {
  for (const p of patterns) {
    const m = p.exec(text)
    if (m) return m[0]
  }
  return undefined
}

const cut = (text: string, max = 200): string => (text.length > max ? `${text.slice(0, max)}…` : text)

/** Turns a failed skopeo run into an ImagePullError with a short message. */
export const pullErrorFrom = (
  error: unknown,
  context: { readonly reference: string; readonly registry: string; readonly insecure: boolean; readonly authFile: boolean; readonly step: string }
): ImagePullError => {
  const { reference, registry } = context
  const make = (kind: ImagePullErrorKind, message: string, detail?: string) => new ImagePullError({ kind, message, reference, registry, detail })
  if (!(error instanceof CommandFailed)) {
    return make("failed", `pull ${reference}: ${cut(error instanceof Error ? error.message : String(error))}`)
  }
  const tool = error.argv[0] ?? "skopeo"
  if (error.kind === "spawn") {
    return make("tool_missing", error.errno === "ENOENT" ? `${tool} is not installed (install Debian package ${tool.endsWith("umoci") ? "umoci" : "skopeo"})` : `pull ${reference}: ${error.message}`)
  }
  if (error.kind === "timeout") return make("timeout", `pull ${reference}: ${context.step} timed out`, error.stderrTail)
  const text = skopeoMessage(error.stderrTail)
  const lower = text.toLowerCase()
  const detail = error.stderrTail
  if (/server gave http response to https client/.test(lower)) {
    return make("tls", `registry ${registry} answers plain HTTP, not HTTPS (list it in SLIPWAY_INSECURE_REGISTRIES to allow that)`, detail)
  }
  const network = firstOf(lower, [
    /connection refused/,
    /no such host/,
    /network is unreachable/,
    /no route to host/,
    /i\/o timeout/,
    /connection reset by peer/,
    /tls handshake timeout/,
    /server misbehaving/,
    /eof$/
  ])
  if (network && (/pinging container registry|dial tcp|lookup |\bget "/.test(lower) || network !== "eof")) {
    return make("unreachable", `registry ${registry} unreachable (${network})`, detail)
  }
  if (/x509:|certificate|tls: /.test(lower)) {
    return make("tls", `registry ${registry}: TLS failed (${cut(firstOf(text, [/x509: .*/i, /tls: .*/i]) ?? text, 120)})`, detail)
  }
  if (/unauthorized|authentication required|requested access to the resource is denied|denied:|\b401\b|\b403\b/.test(lower)) {
    return make("unauthorized", `pull ${reference}: unauthorized${context.authFile ? "" : ` (no credentials for ${registry} are configured)`}`, detail)
  }
  if (/manifest unknown/.test(lower)) return make("not_found", `pull ${reference}: manifest unknown`, detail)
  if (/name unknown|repository name not known|not found|\b404\b/.test(lower)) return make("not_found", `pull ${reference}: not found`, detail)
  if (/toomanyrequests|too many requests|\b429\b/.test(lower)) return make("failed", `pull ${reference}: registry ${registry} is rate limiting (too many requests)`, detail)
  if (/no image found in (image index|manifest list) for architecture/.test(lower)) {
    return make("unsupported", `pull ${reference}: no image for this platform (${process.platform}/${process.arch === "x64" ? "amd64" : process.arch})`, detail)
  }
  return make("failed", `pull ${reference}: ${cut(text || error.message)}`, detail)
}

// --- the store ----------------------------------------------------------------------------------

interface Shared<A> {
  readonly promise: Promise<A>
  readonly listeners: Set<(message: string) => void>
  last: string | undefined
}

/** One operation per key at a time; late callers join it and hear its progress from then on. */
const sharedBy = <A>(map: Map<string, Shared<A>>) => (key: string, listener: ((m: string) => void) | undefined, run: (emit: (m: string) => void) => Promise<A>): Promise<A> => {
  let op = map.get(key)
  if (op === undefined) {
    const listeners = new Set<(m: string) => void>()
    const emit = (message: string) => {
      created.last = message
      for (const l of listeners) {
        try {
          l(message)
        } catch {
          // a listener's failure is not the pull's
        }
      }
    }
    const created: Shared<A> = { listeners, last: undefined, promise: Promise.resolve().then(() => run(emit)) }
    op = created
    map.set(key, op)
    const done = () => {
      if (map.get(key) === created) map.delete(key)
    }
    created.promise.then(done, done)
  } else if (listener && op.last !== undefined) {
    try {
      listener(op.last)
    } catch {
      // ignored
    }
  }
  if (listener) {
    const joined = op
    joined.listeners.add(listener)
    const leave = () => joined.listeners.delete(listener)
    joined.promise.then(leave, leave)
  }
  return op.promise
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const dirName = (digest: string): string => digest.replace(":", "-")

/** skopeo silently pulls anonymously when the auth file is missing: say so instead. Never echoes the content. */
const checkAuthFile = async (path: string, reference: string): Promise<void> => {
  let text: string
  try {
    text = await readFile(path, "utf8")
  } catch (error) {
    throw new ImagePullError({ kind: "failed", message: `registry auth file ${path} is not readable (${(error as NodeJS.ErrnoException).code ?? "error"})`, reference })
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new ImagePullError({ kind: "failed", message: `registry auth file ${path} is not valid JSON`, reference })
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new ImagePullError({ kind: "failed", message: `registry auth file ${path} must hold a JSON object like {"auths":{…}}`, reference })
  }
}

/** Work directories of pulls under way in this process (a store starting on the same root leaves them alone). */
const activeWork = new Set<string>()

export const makeImageStore = (options: ImageStoreOptions): ImageStore => {
  const root = resolve(options.root)
  if (root.includes(":")) throw new Error(`image store root must not contain ':' (skopeo and umoci read it as a tag separator): ${quote(root)}`)
  const mirror = options.mirror !== undefined && options.mirror.trim() !== "" ? parseMirror(options.mirror) : undefined
  const insecure = new Set<string>((options.insecureRegistries ?? []).map(parseRegistryHost))
  if (mirror?.insecure) insecure.add(mirror.domain)
  const authFile = options.authFile !== undefined && options.authFile.trim() !== "" ? resolve(options.authFile) : undefined
  const skopeo = options.skopeo ?? "skopeo"
  const umoci = options.umoci ?? "umoci"
  const timeouts = {
    resolveMs: options.timeouts?.resolveMs ?? 2 * 60_000,
    copyMs: options.timeouts?.copyMs ?? 30 * 60_000,
    unpackMs: options.timeouts?.unpackMs ?? 30 * 60_000
  }
  const imagesDir = join(root, "images")
  const tmpDir = join(root, "tmp")
  const counters = { resolves: 0, copies: 0, unpacks: 0, cacheHits: 0 }
  const byReference = sharedBy<PulledImage>(new Map())
  const byDigest = sharedBy<CachedImage>(new Map())
  const rootless = typeof process.getuid === "function" && process.getuid() !== 0

  let prepared: Promise<ReadonlyArray<string>> | undefined
  /** Creates the directories, removes work left by dead processes; resolves to skopeo's global options. */
  const prepare = (): Promise<ReadonlyArray<string>> =>
    (prepared ??= (async () => {
      await mkdir(imagesDir, { recursive: true })
      await mkdir(tmpDir, { recursive: true })
      for (const entry of await readdir(tmpDir)) {
        const pid = Number(entry.split("-")[0])
        const stale = !Number.isInteger(pid) || pid <= 0 || !isAlive(pid) || (pid === process.pid && !activeWork.has(join(tmpDir, entry)))
        if (stale) {
          await rm(join(tmpDir, entry), { recursive: true, force: true })
        }
      }
      const global = ["--tmpdir", tmpDir]
      // skopeo refuses to copy without a signature policy; use the host's when it has one.
      if (!existsSync("/etc/containers/policy.json")) {
        const policy = join(root, "policy.json")
        await writeFile(policy, JSON.stringify({ default: [{ type: "insecureAcceptAnything" }] }) + "\n")
        global.push("--policy", policy)
      }
      return global
    })()).catch((error) => {
      prepared = undefined
      throw error
    })

  const toPulled = (cached: CachedImage, reference: string): PulledImage => ({
    reference,
    digest: cached.digest,
    rootfs: join(imagesDir, dirName(cached.digest), "rootfs"),
    config: cached.config
  })

  const readCached = async (digest: string): Promise<CachedImage | null> => {
    const dir = join(imagesDir, dirName(digest))
    try {
      const cached = Schema.decodeUnknownSync(CachedImage)(await readJson(join(dir, "image.json")))
      if (cached.digest !== digest) return null
      if (!(await stat(join(dir, "rootfs"))).isDirectory()) return null
      return cached
    } catch {
      return null
    }
  }

  /** Moves a directory aside into tmp/ (one rename) and deletes it there: it vanishes at once. */
  const discard = async (dir: string): Promise<boolean> => {
    const aside = join(tmpDir, `${process.pid}-removing-${Math.random().toString(36).slice(2)}`)
    activeWork.add(aside)
    try {
      try {
        await rename(dir, aside)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return false
        throw error
      }
      await rm(aside, { recursive: true, force: true })
      return true
    } finally {
      activeWork.delete(aside)
    }
  }

  /** A docker-config file for one pull: 0600 in a 0700 directory of tmp/ (swept if the process dies), removed by `remove`. */
  const writeAuthFile = async (domain: string, auth: RegistryAuth): Promise<{ readonly path: string; readonly remove: () => Promise<void> }> => {
    const dir = await mkdtemp(join(tmpDir, `${process.pid}-auth-`))
    activeWork.add(dir)
    const remove = async () => {
      await rm(dir, { recursive: true, force: true }).catch(() => undefined)
      activeWork.delete(dir)
    }
    try {
      await chmod(dir, 0o700)
      const path = join(dir, "auth.json")
      const encoded = Buffer.from(`${auth.username}:${auth.password}`, "utf8").toString("base64")
      await writeFile(path, JSON.stringify({ auths: { [domain]: { auth: encoded } } }), { mode: 0o600, flag: "wx" })
      return { path, remove }
    } catch (error) {
      await remove()
      throw error
    }
  }

  const tlsArgs = (domain: string, flag: string): ReadonlyArray<string> => (insecure.has(domain) ? [`${flag}=false`] : [])

  const resolveDigest = async (
    ref: ImageReference,
    source: { domain: string; name: string },
    global: ReadonlyArray<string>,
    authFile: string | undefined,
    pinned?: string
  ): Promise<string> => {
    counters.resolves++
    const target = pinned ? `docker://${source.name}@${pinned}` : `docker://${source.name}:${ref.tag ?? "latest"}`
    const argv = [skopeo, ...global, "inspect", "--raw", ...tlsArgs(source.domain, "--tls-verify"), ...(authFile ? ["--authfile", authFile] : ["--no-creds"]), target]
    let bytes: Buffer
    try {
      bytes = (await runCommand(argv, { timeoutMs: timeouts.resolveMs })).stdoutBytes
    } catch (error) {
      throw pullErrorFrom(error, { reference: ref.reference, registry: source.domain, insecure: insecure.has(source.domain), authFile: authFile !== undefined, step: pinned ? "checking access" : "resolving the tag" })
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(bytes.toString("utf8"))
    } catch {
      throw new ImagePullError({ kind: "failed", message: `pull ${ref.reference}: the registry sent a manifest that is not JSON`, reference: ref.reference, registry: source.domain })
    }
    if (typeof parsed === "object" && parsed !== null && (parsed as { schemaVersion?: unknown }).schemaVersion === 1) {
      throw new ImagePullError({ kind: "unsupported", message: `pull ${ref.reference}: Docker schema 1 manifests are not supported`, reference: ref.reference, registry: source.domain })
    }
    return `sha256:${createHash("sha256").update(bytes).digest("hex")}`
  }

  const fetchAndUnpack = async (
    ref: ImageReference,
    source: { domain: string; name: string },
    digest: string,
    global: ReadonlyArray<string>,
    emit: (message: string) => void,
    authFile: string | undefined
  ): Promise<CachedImage> => {
    const started = Date.now()
    const work = await mkdtemp(join(tmpDir, `${process.pid}-`))
    activeWork.add(work)
    try {
      const layout = join(work, "layout")
      const bundle = join(work, "bundle")
      emit(`pulling ${ref.reference}${source.domain !== ref.domain ? ` from ${source.domain}` : ""}`)
      counters.copies++
      let blobs = 0
      try {
        await runCommand(
          [
            skopeo,
            ...global,
            "copy",
            ...tlsArgs(source.domain, "--src-tls-verify"),
            ...(authFile ? ["--src-authfile", authFile] : ["--src-no-creds"]),
            `docker://${source.name}@${digest}`,
            `oci:${layout}:${LAYOUT_TAG}`
          ],
          {
            timeoutMs: timeouts.copyMs,
            onLine: (line, stream) => {
              const m = stream === "stdout" ? /^Copying blob (sha256:[a-f0-9]{12})/.exec(line) : null
              if (m) emit(`pulling ${ref.reference}: layer ${++blobs} (${m[1]})`)
            }
          }
        )
      } catch (error) {
        throw pullErrorFrom(error, { reference: ref.reference, registry: source.domain, insecure: insecure.has(source.domain), authFile: authFile !== undefined, step: "copying the image" })
      }
      emit(`unpacking ${shortDigest(digest)}`)
      counters.unpacks++
      try {
        await runCommand([umoci, "unpack", ...(rootless ? ["--rootless"] : []), "--image", `${layout}:${LAYOUT_TAG}`, bundle], { timeoutMs: timeouts.unpackMs })
      } catch (error) {
        if (error instanceof CommandFailed && error.kind === "spawn" && error.errno === "ENOENT") {
          throw new ImagePullError({ kind: "tool_missing", message: "umoci is not installed (install Debian package umoci)", reference: ref.reference })
        }
        const message = error instanceof CommandFailed ? skopeoMessage(error.stderrTail) || error.message : String(error)
        throw new ImagePullError({
          kind: error instanceof CommandFailed && error.kind === "timeout" ? "timeout" : "failed",
          message: error instanceof CommandFailed && error.kind === "timeout" ? `pull ${ref.reference}: unpacking timed out` : `unpack ${ref.reference}: ${cut(message.replace(/^\s*⨯\s*/, ""))}`,
          reference: ref.reference,
          detail: error instanceof CommandFailed ? error.stderrTail : undefined
        })
      }
      let config: ImageConfig
      try {
        config = await readLayoutConfig(layout)
      } catch (error) {
        throw new ImagePullError({ kind: "failed", message: `pull ${ref.reference}: unreadable image config (${cut(error instanceof Error ? error.message : String(error), 120)})`, reference: ref.reference })
      }
      // umoci's repack bookkeeping is not needed: only rootfs/ and image.json stay.
      for (const entry of await readdir(bundle)) {
        if (entry !== "rootfs") await rm(join(bundle, entry), { recursive: true, force: true })
      }
      const cached: CachedImage = {
        reference: ref.reference,
        digest,
        source: `${source.name}@${digest}`,
        pulledAt: new Date().toISOString(),
        ...(authFile !== undefined ? { private: true } : {}),
        config
      }
      await writeFile(join(bundle, "image.json"), JSON.stringify(cached, null, 2) + "\n")
      // umoci creates the bundle 0700; boxes in user namespaces must be able to reach rootfs/.
      await chmod(bundle, 0o755)
      const target = join(imagesDir, dirName(digest))
      try {
        await rename(bundle, target)
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code !== "ENOTEMPTY" && code !== "EEXIST") throw error
        // Another process finished the same image first: use it; a broken leftover is replaced.
        const theirs = await readCached(digest)
        if (theirs) return theirs
        await discard(target)
        await rename(bundle, target)
      }
      options.log?.info("image pulled", { reference: ref.reference, digest, source: source.domain, ms: Date.now() - started })
      return cached
    } finally {
      await rm(work, { recursive: true, force: true }).catch(() => undefined)
      activeWork.delete(work)
    }
  }

  const pull = (input: string, pullOptions: PullOptions = {}): Promise<PulledImage> => {
    let ref: ImageReference
    try {
      ref = parseReference(input)
    } catch (error) {
      const message = error instanceof InvalidReference ? error.message : `invalid image reference ${quote(String(input))}`
      return Promise.reject(new ImagePullError({ kind: "invalid_reference", message, reference: typeof input === "string" ? input : String(input) }))
    }
    const source = sourceOf(ref, mirror)
    const auth = pullOptions.auth
    // Pulls with other credentials (or none) do not share one operation: each shows its own access.
    const key = auth ? `${ref.reference}\0${createHash("sha256").update(`${ref.domain}\0${auth.username}\0${auth.password}`).digest("hex")}` : ref.reference
    return byReference(key, pullOptions.onProgress, async (emit) => {
      const global = await prepare()
      const credentials = auth ? await writeAuthFile(ref.domain, auth) : undefined
      try {
        const pullAuthFile = credentials?.path ?? authFile
        if (!credentials && authFile !== undefined) await checkAuthFile(authFile, ref.reference)
        let digest = ref.digest
        if (digest !== undefined) {
          const hit = await readCached(digest)
          if (hit) {
            // An image pulled with credentials is only handed to a caller who can read it too.
            if (hit.private) await resolveDigest(ref, source, global, pullAuthFile, digest)
            counters.cacheHits++
            emit(`cached ${shortDigest(digest)}`)
            return toPulled(hit, ref.reference)
          }
        } else {
          emit(`resolving ${ref.reference}`)
          digest = await resolveDigest(ref, source, global, pullAuthFile)
        }
        const pinned = digest
        const hit = await readCached(pinned)
        if (hit) {
          counters.cacheHits++
          emit(`cached ${shortDigest(pinned)}`)
          return toPulled(hit, ref.reference)
        }
        const cached = await byDigest(pinned, emit, (emitDigest) => fetchAndUnpack(ref, source, pinned, global, emitDigest, pullAuthFile))
        emit(`ready ${shortDigest(pinned)}`)
        return toPulled(cached, ref.reference)
      } finally {
        await credentials?.remove()
      }
    }).catch((error: unknown) => {
      if (error instanceof ImagePullError) {
        options.log?.warn("image pull failed", { reference: ref.reference, kind: error.kind, message: error.message })
        throw error
      }
      const wrapped = new ImagePullError({
        kind: "failed",
        message: `pull ${ref.reference}: ${cut(error instanceof Error ? error.message : String(error))}`,
        reference: ref.reference,
        registry: source.domain
      })
      options.log?.warn("image pull failed", { reference: ref.reference, kind: wrapped.kind, message: wrapped.message })
      throw wrapped
    })
  }

  const checkDigest = (digest: string): string => {
    if (typeof digest !== "string" || !DIGEST_RE.test(digest)) throw new Error(`invalid image digest ${quote(String(digest))}`)
    return digest
  }

  const list = async (): Promise<ReadonlyArray<PulledImage>> => {
    await prepare()
    const out: Array<PulledImage> = []
    for (const entry of await readdir(imagesDir)) {
      const digest = entry.replace("-", ":")
      if (!DIGEST_RE.test(digest)) continue
      const cached = await readCached(digest)
      if (cached) out.push(toPulled(cached, cached.reference))
    }
    return out
  }

  const remove = async (digest: string): Promise<boolean> => {
    await prepare()
    return discard(join(imagesDir, dirName(checkDigest(digest))))
  }

  const importTree = async (source: string, options: { readonly reference: string; readonly config: ImageConfig; readonly uidBase: number }): Promise<PulledImage> => {
    await prepare()
    const work = await mkdtemp(join(tmpDir, `${process.pid}-`))
    activeWork.add(work)
    try {
      const bundle = join(work, "bundle")
      const rootfs = join(bundle, "rootfs")
      await mkdir(bundle)
      // cp -a keeps modes, owners, times, links and special files; the kernel's overlay view has
      // already applied the box's deletions (whiteouts, opaque directories).
      await runCommand(["cp", "-a", "--one-file-system", "-T", source, rootfs], { timeoutMs: timeouts.unpackMs })
      const back = (id: number) => (id >= options.uidBase && id < options.uidBase + 65_536 ? id - options.uidBase : id)
      for (const rel of ["", ...(await readdir(rootfs, { recursive: true }))]) {
        const path = join(rootfs, rel)
        const info = await lstat(path)
        const [uid, gid] = [back(info.uid), back(info.gid)]
        if (uid === info.uid && gid === info.gid) continue
        // chown clears set-id bits, and they stay cleared: a box could otherwise leave a set-uid
        // root program on the host (boxes mount their filesystem nosuid, so nothing is lost in them).
        await lchown(path, uid, gid)
      }
      const digest = `sha256:${createHash("sha256").update(`capture:${options.reference}:${randomUUID()}`).digest("hex")}`
      const cached: CachedImage = {
        reference: options.reference,
        digest,
        source: `captured from a box running ${options.reference}`,
        pulledAt: new Date().toISOString(),
        config: { ...options.config, entrypoint: [...options.config.entrypoint], cmd: [...options.config.cmd], env: [...options.config.env], exposedPorts: options.config.exposedPorts.map((port) => ({ ...port })) }
      }
      await writeFile(join(bundle, "image.json"), JSON.stringify(cached, null, 2) + "\n")
      await rename(bundle, join(imagesDir, dirName(digest)))

      return toPulled(cached, options.reference)
    } finally {
      activeWork.delete(work)
      await rm(work, { recursive: true, force: true })
    }
  }

  return {
    root,
    pull,
    importTree,
    lookup: async (digest) => {
      await prepare()
      const cached = await readCached(checkDigest(digest))
      return cached ? toPulled(cached, cached.reference) : null
    },
    list,
    remove,
    gc: async (keep) => {
      await prepare()
      const removed: Array<string> = []
      for (const entry of await readdir(imagesDir)) {
        const digest = entry.replace("-", ":")
        if (!DIGEST_RE.test(digest) || keep.has(digest)) continue
        if (await discard(join(imagesDir, entry))) {
          removed.push(digest)
          options.log?.info("image removed", { digest })
        }
      }
      return removed
    },
    stats: () => ({ ...counters })
  }
}

/** An image config's `Env` (`["K=V", ...]`) as a record. */
export const imageEnvironment = (env: ReadonlyArray<string>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const entry of env) {
    const at = entry.indexOf("=")
    if (at > 0) out[entry.slice(0, at)] = entry.slice(at + 1)
  }
  return out
}
