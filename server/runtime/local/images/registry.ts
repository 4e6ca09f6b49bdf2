/**
 * What the image store asks of registries, through skopeo: a tag's manifest digest (one manifest
 * request, hashed here), and the copy of an image by digest into an OCI layout. TLS is verified
 * except for registries listed as insecure; credentials come only from the configured auth file or
 * a pull's own (never the host user's ~/.docker/config.json).
 */
import { createHash } from "node:crypto"
import { chmod, readFile, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { Duration, Effect, type Scope } from "effect"
import type { ProcessRunner } from "../../ProcessRunner.ts"
import { ImagePullError, type ImageStoreError, type RegistryAuth } from "./model.ts"
import type { ImageReference } from "../reference.ts"
import { fsError, type ImageCache } from "./cache.ts"
import { LAYOUT_TAG } from "./config.ts"
import { pullErrorFrom } from "./errors.ts"

export interface Source {
  readonly domain: string
  readonly name: string
  /** Plain HTTP for this pull (`PullOptions.insecure`), besides the registries listed as insecure. */
  readonly insecure?: boolean | undefined
}

export interface RegistryClient {
  /** The manifest digest `ref` resolves to (or, with `pinned`, a check that the credentials may read it). */
  readonly resolveDigest: (ref: ImageReference, source: Source, authFile: string | undefined, pinned?: string) => Effect.Effect<string, ImagePullError>
  /** Copies the image `digest` into an OCI layout at `layout` (tag `image`), telling each layer as it starts. */
  readonly copy: (ref: ImageReference, source: Source, digest: string, layout: string, authFile: string | undefined, emit: (message: string) => void) => Effect.Effect<void, ImagePullError>
  /** A docker-config file holding `auth` for `domain`: 0600 in a 0700 work directory, removed when the scope closes. */
  readonly authFileFor: (domain: string, auth: RegistryAuth) => Effect.Effect<string, ImageStoreError, Scope.Scope>
  /** skopeo silently pulls anonymously when the auth file is missing: say so instead. Never echoes the content. */
  readonly checkAuthFile: (path: string, reference: string) => Effect.Effect<void, ImagePullError>
}

export const makeRegistryClient = (options: {
  readonly runner: ProcessRunner["Service"]
  readonly cache: ImageCache
  readonly skopeo: string
  readonly insecure: ReadonlySet<string>
  readonly resolveTimeout: Duration.Input
  readonly copyTimeout: Duration.Input
  readonly counters: { resolves: number; copies: number }
}): RegistryClient => {
  const { runner, cache, skopeo, insecure, counters } = options
  const isInsecure = (source: Source): boolean => source.insecure === true || insecure.has(source.domain)
  const tlsArgs = (source: Source, flag: string): ReadonlyArray<string> => (isInsecure(source) ? [`${flag}=false`] : [])
  const context = (ref: ImageReference, source: Source, authFile: string | undefined, step: string) => ({
    reference: ref.reference,
    registry: source.domain,
    insecure: isInsecure(source),
    authFile: authFile !== undefined,
    step
  })

  const resolveDigest: RegistryClient["resolveDigest"] = (ref, source, authFile, pinned) =>
    Effect.gen(function* () {
      counters.resolves++
      const target = pinned ? `docker://${source.name}@${pinned}` : `docker://${source.name}:${ref.tag ?? "latest"}`
      const argv = [skopeo, ...cache.skopeoGlobal, "inspect", "--raw", ...tlsArgs(source, "--tls-verify"), ...(authFile ? ["--authfile", authFile] : ["--no-creds"]), target]
      const { stdoutBytes } = yield* Effect.mapError(runner.run(argv, { timeout: options.resolveTimeout }), (error) =>
        pullErrorFrom(error, context(ref, source, authFile, pinned ? "checking access" : "resolving the tag"))
      )
      const failed = (kind: "failed" | "unsupported", message: string) => new ImagePullError({ kind, message: `pull ${ref.reference}: ${message}`, reference: ref.reference, registry: source.domain })
      let parsed: unknown
      try {
        parsed = JSON.parse(stdoutBytes.toString("utf8"))
      } catch {
        return yield* failed("failed", "the registry sent a manifest that is not JSON")
      }
      if (typeof parsed === "object" && parsed !== null && (parsed as { schemaVersion?: unknown }).schemaVersion === 1) {
        return yield* failed("unsupported", "Docker schema 1 manifests are not supported")
      }
      return `sha256:${createHash("sha256").update(stdoutBytes).digest("hex")}`
    })

  const copy: RegistryClient["copy"] = (ref, source, digest, layout, authFile, emit) =>
    Effect.suspend(() => {
      counters.copies++
      let blobs = 0
      const argv = [
        skopeo,
        ...cache.skopeoGlobal,
        "copy",
        ...tlsArgs(source, "--src-tls-verify"),
        ...(authFile ? ["--src-authfile", authFile] : ["--src-no-creds"]),
        `docker://${source.name}@${digest}`,
        `oci:${layout}:${LAYOUT_TAG}`
      ]
      return runner
        .run(argv, {
          timeout: options.copyTimeout,
          onLine: (line, stream) => {
            const m = stream === "stdout" ? /^Copying blob (sha256:[a-f0-9]{12})/.exec(line) : null
            if (m) emit(`pulling ${ref.reference}: layer ${++blobs} (${m[1]})`)
          }
        })
        .pipe(Effect.mapError((error) => pullErrorFrom(error, context(ref, source, authFile, "copying the image"))), Effect.asVoid)
    })

  const authFileFor: RegistryClient["authFileFor"] = (domain, auth) =>
    Effect.flatMap(cache.workDir("auth-"), (dir) =>
      Effect.tryPromise({
        try: async () => {
          await chmod(dir, 0o700)
          const path = join(dir, "auth.json")
          const encoded = Buffer.from(`${auth.username}:${auth.password}`, "utf8").toString("base64")
          await writeFile(path, JSON.stringify({ auths: { [domain]: { auth: encoded } } }), { mode: 0o600, flag: "wx" })
          return path
        },
        catch: fsError("writing the registry credentials")
      })
    )

  const checkAuthFile: RegistryClient["checkAuthFile"] = (path, reference) =>
    Effect.tryPromise({
      try: async () => {
        let text: string
        try {
          text = await readFile(path, "utf8")
        } catch (error) {
          return `registry auth file ${path} is not readable (${(error as NodeJS.ErrnoException).code ?? "error"})`
        }
        let parsed: unknown
        try {
          parsed = JSON.parse(text)
        } catch {
          return `registry auth file ${path} is not valid JSON`
        }
        if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return `registry auth file ${path} must hold a JSON object like {"auths":{…}}`
        return undefined
      },
      catch: (error) => new ImagePullError({ kind: "failed", message: String(error), reference })
    }).pipe(Effect.flatMap((problem) => (problem === undefined ? Effect.void : Effect.fail(new ImagePullError({ kind: "failed", message: problem, reference })))))

  return { resolveDigest, copy, authFileFor, checkAuthFile }
}
