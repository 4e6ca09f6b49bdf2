/** Unpacking a pulled OCI layout with umoci into the bundle a cached image is made of (`rootfs/` and `image.json`). */
import { chmod, readdir, rm, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { type Duration, Effect } from "effect"
import type { ProcessRunner } from "../../ProcessRunner.ts"
import { type ImageConfig, ImagePullError } from "./model.ts"
import { fsError } from "./cache.ts"
import { type CachedImage, cut, LAYOUT_TAG, readLayoutConfig } from "./config.ts"
import { unpackErrorFrom } from "./errors.ts"

export const unpackLayout = (options: {
  readonly runner: ProcessRunner["Service"]
  readonly umoci: string
  readonly timeout: Duration.Input
  readonly layout: string
  readonly bundle: string
  readonly reference: string
  /** The image's tag in the layout (default: the one a pull writes). */
  readonly tag?: string | undefined
}): Effect.Effect<ImageConfig, ImagePullError> =>
  Effect.gen(function* () {
    const { layout, bundle, reference } = options
    const tag = options.tag ?? LAYOUT_TAG
    const rootless = typeof process.getuid === "function" && process.getuid() !== 0
    yield* options.runner
      .run([options.umoci, "unpack", ...(rootless ? ["--rootless"] : []), "--image", `${layout}:${tag}`, bundle], { timeout: options.timeout })
      .pipe(Effect.mapError((error) => unpackErrorFrom(error, reference)))
    return yield* Effect.tryPromise({
      try: async () => {
        const config = await readLayoutConfig(layout, tag).catch((error: unknown) => {
          throw new Error(`unreadable image config (${cut(error instanceof Error ? error.message : String(error), 120)})`)
        })
        // umoci's repack bookkeeping is not needed: only rootfs/ and image.json stay.
        for (const entry of await readdir(bundle)) {
          if (entry !== "rootfs") await rm(join(bundle, entry), { recursive: true, force: true })
        }
        return config
      },
      catch: (error) => new ImagePullError({ kind: "failed", message: `pull ${reference}: ${cut((error as Error)?.message ?? String(error))}`, reference })
    })
  })

/** Writes a bundle's `image.json` and opens it to the boxes' uids (umoci makes it 0700). */
export const sealBundle = (bundle: string, cached: CachedImage) =>
  Effect.tryPromise({
    try: async () => {
      await writeFile(join(bundle, "image.json"), JSON.stringify(cached, null, 2) + "\n")
      await chmod(bundle, 0o755)
    },
    catch: fsError(`storing image ${cached.digest}`)
  })
