/**
 * The image store's directory: one directory per image, by digest, that appears by one rename
 * once complete (`images/sha256-<hex>/{rootfs,image.json}`), and `tmp/` for work under way
 * (each work directory is named after the process that made it; those of dead processes are
 * removed when a store starts).
 */
import { mkdir, mkdtemp, readdir, rename, rm, stat, writeFile } from "node:fs/promises"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { Effect, Schema, type Scope } from "effect"
import { ImageStoreError, type PulledImage } from "./model.ts"
import { CachedImage, DIGEST_RE, readJson } from "./config.ts"
import { quote } from "../reference.ts"

const dirName = (digest: string): string => digest.replace(":", "-")

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** A failure of the file system, as the store's error. */
export const fsError = (what: string) => (error: unknown) => new ImageStoreError({ message: `${what}: ${(error as Error)?.message ?? String(error)}` })

export interface ImageCache {
  readonly imagesDir: string
  readonly tmpDir: string
  /** skopeo's global options: its tmpdir, and a signature policy when the host has none. */
  readonly skopeoGlobal: ReadonlyArray<string>
  readonly checkDigest: (digest: string) => Effect.Effect<string, ImageStoreError>
  /** The cached image of a digest, or null (absent, or a leftover without its image.json). */
  readonly read: (digest: string) => Effect.Effect<CachedImage | null>
  readonly toPulled: (cached: CachedImage, reference: string) => PulledImage
  /** Digests of the image directories present. */
  readonly digests: Effect.Effect<ReadonlyArray<string>, ImageStoreError>
  /** A fresh directory under tmp/ (`<pid>-<prefix>…`), removed when the scope closes. */
  readonly workDir: (prefix?: string) => Effect.Effect<string, ImageStoreError, Scope.Scope>
  /** Moves a complete bundle (`rootfs/` and `image.json`) into place; answers the cached image (another process's when it finished first). */
  readonly commit: (bundle: string, cached: CachedImage) => Effect.Effect<CachedImage, ImageStoreError>
  /** Removes an image directory at once (one rename into tmp/, then deleted there); true when it was there. */
  readonly discard: (digest: string) => Effect.Effect<boolean, ImageStoreError>
}

/** Prepares `root` (directories, leftovers of dead processes, skopeo's policy) and answers its cache. */
export const makeImageCache = (root: string): Effect.Effect<ImageCache, ImageStoreError> =>
  Effect.tryPromise({
    try: async () => {
      const imagesDir = join(root, "images")
      const tmpDir = join(root, "tmp")
      await mkdir(imagesDir, { recursive: true })
      await mkdir(tmpDir, { recursive: true })
      for (const entry of await readdir(tmpDir)) {
        const pid = Number(entry.split("-")[0])
        // Work of this process is a previous store's on the same root (tests): left to it.
        if (!Number.isInteger(pid) || pid <= 0 || (pid !== process.pid && !isAlive(pid))) await rm(join(tmpDir, entry), { recursive: true, force: true })
      }
      const skopeoGlobal = ["--tmpdir", tmpDir]
      // skopeo refuses to copy without a signature policy; use the host's when it has one.
      if (!existsSync("/etc/containers/policy.json")) {
        const policy = join(root, "policy.json")
        await writeFile(policy, JSON.stringify({ default: [{ type: "insecureAcceptAnything" }] }) + "\n")
        skopeoGlobal.push("--policy", policy)
      }
      return { imagesDir, tmpDir, skopeoGlobal }
    },
    catch: fsError(`image store ${root}`)
  }).pipe(
    Effect.map(({ imagesDir, tmpDir, skopeoGlobal }) => {
      const read = (digest: string) =>
        Effect.promise(async () => {
          const dir = join(imagesDir, dirName(digest))
          try {
            const cached = Schema.decodeUnknownSync(CachedImage)(await readJson(join(dir, "image.json")))
            if (cached.digest !== digest) return null
            if (!(await stat(join(dir, "rootfs"))).isDirectory()) return null
            return cached
          } catch {
            return null
          }
        })
      const workDir = (prefix = "") =>
        Effect.acquireRelease(
          Effect.tryPromise({ try: () => mkdtemp(join(tmpDir, `${process.pid}-${prefix}`)), catch: fsError("work directory") }),
          (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }).catch(() => undefined))
        )
      const discard = (digest: string) =>
        Effect.scoped(
          Effect.flatMap(workDir("removing-"), (aside) =>
            Effect.tryPromise({
              try: async () => {
                const gone = join(aside, "image")
                try {
                  await rename(join(imagesDir, dirName(digest)), gone)
                } catch (error) {
                  if ((error as NodeJS.ErrnoException).code === "ENOENT") return false
                  throw error
                }
                return true
              },
              catch: fsError(`removing image ${digest}`)
            })
          )
        )
      const cache: ImageCache = {
        imagesDir,
        tmpDir,
        skopeoGlobal,
        checkDigest: (digest) =>
          typeof digest === "string" && DIGEST_RE.test(digest) ? Effect.succeed(digest) : Effect.fail(new ImageStoreError({ message: `invalid image digest ${quote(String(digest))}` })),
        read,
        toPulled: (cached, reference) => ({ reference, digest: cached.digest, rootfs: join(imagesDir, dirName(cached.digest), "rootfs"), config: cached.config }),
        digests: Effect.tryPromise({ try: () => readdir(imagesDir), catch: fsError("listing images") }).pipe(
          Effect.map((entries) => entries.map((entry) => entry.replace("-", ":")).filter((digest) => DIGEST_RE.test(digest)))
        ),
        workDir,
        commit: (bundle, cached) =>
          Effect.gen(function* () {
            const target = join(imagesDir, dirName(cached.digest))
            const moved = yield* Effect.tryPromise({
              try: () => rename(bundle, target).then(() => true, (error: NodeJS.ErrnoException) => {
                if (error.code !== "ENOTEMPTY" && error.code !== "EEXIST") throw error
                return false
              }),
              catch: fsError(`storing image ${cached.digest}`)
            })
            if (moved) return cached
            // Another process finished the same image first: use it; a broken leftover is replaced.
            const theirs = yield* read(cached.digest)
            if (theirs) return theirs
            yield* discard(cached.digest)
            yield* Effect.tryPromise({ try: () => rename(bundle, target), catch: fsError(`storing image ${cached.digest}`) })
            return cached
          }),
        discard
      }
      return cache
    })
  )
