/**
 * Source tarballs uploaded for a deployment (`langgraph deploy --remote`, docs/registry.md).
 *
 * `uploadUrl(tenant, deployment)` answers `{ upload_url, object_path }`: a Slipway URL
 * (`<public url>/v2/source-uploads/<token>`) whose token (server/signedTokens.ts) names one
 * object of one deployment and expires; no API key is needed. `handleUpload` takes the `PUT`:
 * `Content-Type: application/gzip`, at most `maxBytes` (and at most what `X-Goog-Content-Length-Range:
 * min,max` allows, when sent), streamed to disk (never held in memory), checked as a tarball
 * (tarball.ts) and only then stored, once: a URL that was used is refused (ask for another).
 * The next PATCH names the tarball by `object_path`; `open` and `extract` accept only a path of
 * that same deployment.
 *
 * Stored under `<dir of the database>/uploads/<tenant>/<deployment>/<object>.tar.gz`, mode 0600.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { createWriteStream } from "node:fs"
import { link, mkdir, rm, stat, unlink } from "node:fs/promises"
import { join } from "node:path"
import { Transform } from "node:stream"
import { pipeline } from "node:stream/promises"
import { Clock, Context, Effect, Layer } from "effect"
import { type ApiError, BadRequest, Conflict, MethodNotAllowed, PayloadTooLarge, ServerError, Unauthorized, UnsupportedMediaType } from "../../core/index.ts"
import { ConfigError } from "../config.ts"
import { stateDir } from "../dataDir.ts"
import { errorResponse, header, jsonResponse, type NeutralRequest, type NeutralResponse } from "../http/neutral.ts"
import type { Logger } from "../log.ts"
import { ServerEnv } from "../module.ts"
import { makeSignedTokens, unexpired } from "../signedTokens.ts"
import { defaultTarballLimits, extractTarball, inspectTarball, type TarballLimits, type TarballSummary } from "./tarball.ts"

/** Where the server serves upload URLs, under its public URL (`PUT <prefix><token>`). */
export const SOURCE_UPLOAD_PREFIX = "/v2/source-uploads/"

export interface UploadUrl {
  readonly upload_url: string
  /** What the next PATCH sends as `source_revision_config.source_tarball_path`. */
  readonly object_path: string
}

/** A PUT as the handler takes it: the request, the URL's path, and the body as a stream. */
export interface UploadRequest extends NeutralRequest {
  /** The request's path (the token is its last segment). */
  readonly path: string
  readonly body: AsyncIterable<Uint8Array>
}

export interface StoredTarball {
  readonly file: string
  readonly bytes: number
}

export interface UploadSettings {
  /** `SLIPWAY_UPLOAD_URL_TTL`: seconds an upload URL is valid. */
  readonly urlTtlSeconds: number
  /** `SLIPWAY_UPLOAD_MAX_BYTES`: largest tarball (compressed); the CLI's own limit is 200 MiB. */
  readonly maxBytes: number
  /** `SLIPWAY_UPLOAD_MAX_UNPACKED` and `SLIPWAY_UPLOAD_MAX_FILES`. */
  readonly limits: TarballLimits
}

export const defaultUploadSettings: UploadSettings = { urlTtlSeconds: 900, maxBytes: 200 * 1024 * 1024, limits: defaultTarballLimits }

export const uploadSettingsFromEnv = (env: NodeJS.ProcessEnv = process.env): UploadSettings => {
  const number = (name: string, min: number, max: number, fallback: number) => {
    const raw = env[name]?.trim()
    if (raw === undefined || raw === "") return fallback
    const value = Number(raw)
    if (!/^\d+$/.test(raw) || value < min || value > max) throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`)
    return value
  }
  return {
    urlTtlSeconds: number("SLIPWAY_UPLOAD_URL_TTL", 10, 86_400, defaultUploadSettings.urlTtlSeconds),
    maxBytes: number("SLIPWAY_UPLOAD_MAX_BYTES", 1024, 64 * 1024 ** 3, defaultUploadSettings.maxBytes),
    limits: {
      maxUnpackedBytes: number("SLIPWAY_UPLOAD_MAX_UNPACKED", 1024, 256 * 1024 ** 3, defaultTarballLimits.maxUnpackedBytes),
      maxEntries: number("SLIPWAY_UPLOAD_MAX_FILES", 1, 10_000_000, defaultTarballLimits.maxEntries)
    }
  }
}

export class SourceUploads extends Context.Service<
  SourceUploads,
  {
    readonly uploadUrl: (tenantId: string, deploymentId: string) => Effect.Effect<UploadUrl, BadRequest>
    /** The upload URL's handler, framework-neutral. The server answers with the response and, if the body was not read to its end, closes the connection. */
    readonly handleUpload: (request: UploadRequest) => Effect.Effect<NeutralResponse>
    /** The stored tarball an `object_path` names, if it is one of this deployment's uploads. */
    readonly open: (tenantId: string, deploymentId: string, objectPath: string) => Effect.Effect<StoredTarball, BadRequest>
    /** Unpacks the tarball into `directory` (created; it must not exist), checking every entry again. */
    readonly extract: (tenantId: string, deploymentId: string, objectPath: string, directory: string) => Effect.Effect<TarballSummary, BadRequest>
    /** Removes every upload of a deleted deployment. */
    readonly removeDeployment: (tenantId: string, deploymentId: string) => Effect.Effect<void>
  }
>()("slipway/SourceUploads") {}

interface UploadClaims {
  readonly t: string
  readonly d: string
  /** Object id. */
  readonly o: string
  /** Expiry, epoch seconds. */
  readonly e: number
}

const ID = /^[0-9a-z][0-9a-z-]{0,63}$/
const OBJECT_PATH = /^uploads\/([0-9a-z][0-9a-z-]{0,63})\/([0-9a-z][0-9a-z-]{0,63})\/([0-9a-f-]{36})\.tar\.gz$/

export interface SourceUploadsOptions {
  readonly settings: UploadSettings
  /** Uploads live in `<dir of the database>/uploads`. */
  readonly databasePath: string
  readonly secretsKey: string
  /** Base of the upload URLs (the server's public URL, no trailing slash). */
  readonly publicUrl: string
  readonly log: Logger
}

export const makeSourceUploads = (options: SourceUploadsOptions): SourceUploads["Service"] => {
  const { settings, log } = options
  const root = stateDir(options.databasePath, "uploads")
  const tokens = makeSignedTokens(options.secretsKey, "slipway source uploads v1", (claims): claims is UploadClaims => {
    const c = claims as Partial<Record<keyof UploadClaims, unknown>>
    return typeof c.t === "string" && typeof c.d === "string" && typeof c.o === "string" && typeof c.e === "number"
  })
  const objectPath = (claims: Pick<UploadClaims, "t" | "d" | "o">) => `uploads/${claims.t}/${claims.d}/${claims.o}.tar.gz`
  const fileOf = (claims: Pick<UploadClaims, "t" | "d" | "o">) => join(root, claims.t, claims.d, `${claims.o}.tar.gz`)

  const uploadUrl = (tenantId: string, deploymentId: string) =>
    Effect.gen(function* () {
      const t = tenantId.toLowerCase()
      const d = deploymentId.toLowerCase()
      if (!ID.test(t) || !ID.test(d)) return yield* new BadRequest({ message: "tenant and deployment ids must be lower-case UUIDs" })
      const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      const claims: UploadClaims = { t, d, o: randomUUID(), e: now + settings.urlTtlSeconds }
      return { upload_url: `${options.publicUrl}${SOURCE_UPLOAD_PREFIX}${tokens.sign(claims)}`, object_path: objectPath(claims) }
    })

  /** `min,max` of `X-Goog-Content-Length-Range`, or undefined when absent. */
  const lengthRange = (value: string | undefined): Effect.Effect<{ readonly min: number; readonly max: number } | undefined, BadRequest> => {
    if (value === undefined) return Effect.succeed(undefined)
    const match = /^\s*(\d{1,15})\s*,\s*(\d{1,15})\s*$/.exec(value)
    if (!match || Number(match[1]) > Number(match[2])) return Effect.fail(new BadRequest({ message: `X-Goog-Content-Length-Range must be "min,max" (bytes), got ${JSON.stringify(value.slice(0, 100))}` }))
    return Effect.succeed({ min: Number(match[1]), max: Number(match[2]) })
  }

  const tooLarge = (max: number) => new PayloadTooLarge({ message: `the tarball is larger than ${max} bytes` })

  const store = Effect.fnUntraced(function* (request: UploadRequest) {
    const token = request.path.slice(request.path.lastIndexOf("/") + 1)
    const claims = tokens.verify(token)
    if (!claims) return yield* new Unauthorized({ message: "this upload URL is not valid" })
    if (!unexpired(claims.e, yield* Clock.currentTimeMillis)) return yield* new Unauthorized({ message: "this upload URL has expired: ask for a new one (POST /v2/deployments/{id}/upload-url)" })
    if (request.method !== "PUT") return yield* new MethodNotAllowed({ message: "upload the tarball with PUT" })
    const type = (header(request, "content-type") ?? "").split(";")[0]!.trim().toLowerCase()
    if (type !== "application/gzip") return yield* new UnsupportedMediaType({ message: `upload the tarball with Content-Type: application/gzip (got ${JSON.stringify(type || "none")})` })
    const range = yield* lengthRange(header(request, "x-goog-content-length-range"))
    const max = Math.min(settings.maxBytes, range?.max ?? Infinity)
    const min = range?.min ?? 0
    const declared = header(request, "content-length")
    const length = declared === undefined ? undefined : Number(declared)
    if (length !== undefined && (!Number.isSafeInteger(length) || length < 0)) return yield* new BadRequest({ message: "Content-Length is not a number of bytes" })
    if (length !== undefined && length > max) return yield* tooLarge(max)
    if (length !== undefined && length < min) return yield* new BadRequest({ message: `the tarball is smaller than the ${min} bytes X-Goog-Content-Length-Range asks for` })

    const final = fileOf(claims)
    const exists = yield* Effect.promise(() => stat(final).then(() => true, () => false))
    if (exists) return yield* new Conflict({ message: "this upload URL was used already: ask for a new one" })
    const directory = join(root, claims.t, claims.d)
    const partial = join(directory, `.${claims.o}.${randomBytes(4).toString("hex")}.part`)
    const serverError = (what: string) => (error: unknown) => new ServerError({ status: 500, message: `${what}: ${error instanceof Error ? error.message : String(error)}` })

    const received = yield* Effect.tryPromise({
      try: async (signal) => {
        await mkdir(directory, { recursive: true, mode: 0o700 })
        let bytes = 0
        const counter = new Transform({
          transform(chunk: Buffer, _encoding, callback) {
            bytes += chunk.length
            callback(bytes > max ? tooLarge(max) : null, chunk)
          }
        })
        await pipeline(request.body, counter, createWriteStream(partial, { flags: "wx", mode: 0o600 }), { signal })
        return bytes
      },
      catch: (error) => (error instanceof PayloadTooLarge ? error : serverError("the upload could not be stored")(error))
    }).pipe(
      Effect.flatMap((bytes) =>
        length !== undefined && bytes !== length ? Effect.fail(new BadRequest({ message: `the body ended after ${bytes} of the ${length} bytes Content-Length announced` }))
        : bytes < min ? Effect.fail(new BadRequest({ message: `the tarball is smaller than the ${min} bytes X-Goog-Content-Length-Range asks for` }))
        : Effect.succeed(bytes)
      ),
      Effect.flatMap((bytes) =>
        inspectTarball(partial, settings.limits).pipe(
          Effect.mapError((refused) => new BadRequest({ message: `tarball refused: ${refused.message}` })),
          Effect.as(bytes)
        )
      ),
      Effect.tap(() =>
        Effect.tryPromise({
          try: () => link(partial, final),
          catch: (error) => ((error as NodeJS.ErrnoException).code === "EEXIST" ? new Conflict({ message: "this upload URL was used already: ask for a new one" }) : serverError("the upload could not be stored")(error))
        })
      ),
      Effect.ensuring(Effect.promise(() => unlink(partial).catch(() => undefined)))
    )
    log.info("source tarball uploaded", { tenant: claims.t, deployment: claims.d, object: claims.o, bytes: received })
    return jsonResponse(200, { object_path: objectPath(claims), size: received })
  })

  const handleUpload = (request: UploadRequest): Effect.Effect<NeutralResponse> =>
    store(request).pipe(Effect.catch((error: ApiError) => Effect.succeed(errorResponse(error))))

  const open = (tenantId: string, deploymentId: string, path: string) =>
    Effect.gen(function* () {
      const match = OBJECT_PATH.exec(path)
      if (!match || match[1] !== tenantId.toLowerCase() || match[2] !== deploymentId.toLowerCase()) {
        return yield* new BadRequest({ message: `source_tarball_path ${JSON.stringify(path.slice(0, 200))} is not an upload of this deployment (ask for an upload URL with POST /v2/deployments/{id}/upload-url)` })
      }
      const file = fileOf({ t: match[1]!, d: match[2]!, o: match[3]! })
      const info = yield* Effect.promise(() => stat(file).catch(() => undefined))
      if (!info) return yield* new BadRequest({ message: `nothing was uploaded to ${path} (PUT the tarball to its upload URL first)` })
      return { file, bytes: info.size }
    })

  const extract = (tenantId: string, deploymentId: string, path: string, directory: string) =>
    Effect.flatMap(open(tenantId, deploymentId, path), ({ file }) =>
      extractTarball(file, directory, settings.limits).pipe(Effect.mapError((refused) => new BadRequest({ message: `tarball refused: ${refused.message}` })))
    )

  const removeDeployment = (tenantId: string, deploymentId: string) =>
    Effect.promise(async () => {
      const t = tenantId.toLowerCase()
      const d = deploymentId.toLowerCase()
      if (ID.test(t) && ID.test(d)) await rm(join(root, t, d), { recursive: true, force: true })
    })

  return { uploadUrl, handleUpload, open, extract, removeDeployment }
}

/** The uploads as the server runs them: settings from the environment, URLs under the public URL. */
export const SourceUploadsLive = Layer.effect(
  SourceUploads,
  Effect.gen(function* () {
    const { config, log, publicUrl } = yield* ServerEnv
    const secretsKey = config.secretsKey ?? (yield* Effect.die(new Error("source uploads need the secrets key")))
    return makeSourceUploads({ settings: uploadSettingsFromEnv(), databasePath: config.databasePath, secretsKey, publicUrl, log })
  })
)
