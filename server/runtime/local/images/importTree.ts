/**
 * A directory tree (a box's filesystem as the box sees it) made into a local image: copied into
 * the cache under a new digest with the box's id-mapped owners mapped back, and the config of the
 * image the box ran. It is in no registry: boxes find it by its digest.
 */
import { createHash, randomUUID } from "node:crypto"
import { chmod, lchown, lstat, mkdir, readdir } from "node:fs/promises"
import { join } from "node:path"
import { Clock, type Duration, Effect } from "effect"
import type { ProcessRunner } from "../../ProcessRunner.ts"
import { type ImageConfig, ImageStoreError, type PulledImage } from "./model.ts"
import { fsError, type ImageCache } from "./cache.ts"
import type { CachedImage } from "./config.ts"
import { sealBundle } from "./unpack.ts"

export const importTree = (
  deps: { readonly runner: ProcessRunner["Service"]; readonly cache: ImageCache; readonly timeout: Duration.Input },
  source: string,
  options: { readonly reference: string; readonly config: ImageConfig; readonly uidBase: number }
): Effect.Effect<PulledImage, ImageStoreError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const work = yield* deps.cache.workDir()
      const bundle = join(work, "bundle")
      const rootfs = join(bundle, "rootfs")
      yield* Effect.tryPromise({ try: () => mkdir(bundle), catch: fsError("import") })
      // cp -a keeps modes, owners, times, links and special files; the kernel's overlay view has
      // already applied the box's deletions (whiteouts, opaque directories).
      yield* deps.runner
        .run(["cp", "-a", "--one-file-system", "-T", source, rootfs], { timeout: deps.timeout })
        .pipe(Effect.mapError((error) => new ImageStoreError({ message: `copying ${source}: ${error.message}` })))
      yield* Effect.tryPromise({
        try: async () => {
          const back = (id: number) => (id >= options.uidBase && id < options.uidBase + 65_536 ? id - options.uidBase : id)
          for (const rel of ["", ...(await readdir(rootfs, { recursive: true }))]) {
            const path = join(rootfs, rel)
            const info = await lstat(path)
            const [uid, gid] = [back(info.uid), back(info.gid)]
            if (uid !== info.uid || gid !== info.gid) await lchown(path, uid, gid)
            // No set-id bits in a captured image (chown clears them; a gVisor box's files need no
            // chown): a box could otherwise leave a set-uid root program on the host. Boxes mount
            // their filesystem nosuid, so nothing is lost in them.
            if (info.isFile() && (info.mode & 0o6000) !== 0) await chmod(path, info.mode & 0o1777)
          }
        },
        catch: fsError("mapping the owners back")
      })
      const cached: CachedImage = {
        reference: options.reference,
        digest: `sha256:${createHash("sha256").update(`capture:${options.reference}:${randomUUID()}`).digest("hex")}`,
        source: `captured from a box running ${options.reference}`,
        pulledAt: new Date(yield* Clock.currentTimeMillis).toISOString(),
        config: { ...options.config, entrypoint: [...options.config.entrypoint], cmd: [...options.config.cmd], env: [...options.config.env], exposedPorts: options.config.exposedPorts.map((port) => ({ ...port })) }
      }
      yield* sealBundle(bundle, cached)
      const stored = yield* deps.cache.commit(bundle, cached)
      return deps.cache.toPulled(stored, options.reference)
    })
  )
