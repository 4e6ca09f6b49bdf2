/**
 * An image from an OCI image layout on disk (a build's result: `ImageBuilder.build` exports one)
 * into the cache, keyed by its manifest digest like a pulled image, its config kept. Its rootfs is
 * assembled from its layers (layers.ts: each layer unpacked once, shared by hard links), so a
 * rebuild that keeps its base and dependency layers unpacks only what changed; should that fail,
 * umoci unpacks the whole image instead. It is in no registry: boxes find it by `lookup(digest)`,
 * or it is handed over as the `PulledImage` this answers. Importing a digest that is cached
 * already unpacks nothing.
 */
import { mkdirSync, rmSync } from "node:fs"
import { join } from "node:path"
import { Clock, type Duration, Effect } from "effect"
import type { ProcessRunner } from "../../ProcessRunner.ts"
import { ImageStoreError, type PulledImage } from "./model.ts"
import type { ImageCache } from "./cache.ts"
import { type CachedImage, cut, layoutManifestDigest, readLayoutConfig, readLayoutLayers, shortDigest } from "./config.ts"
import type { LayerStore } from "./layers.ts"
import { sealBundle, unpackLayout } from "./unpack.ts"

export interface ImportLayoutOptions {
  /** What the image is called (`localhost/slipway/<deployment>:<revision>`): its `reference`. */
  readonly reference: string
  /** Hears "unpacking …", "cached …". */
  readonly onProgress?: ((message: string) => Effect.Effect<void>) | undefined
}

export const importLayout = (
  deps: {
    readonly runner: ProcessRunner["Service"]
    readonly cache: ImageCache
    readonly layers: LayerStore
    readonly umoci: string
    readonly timeout: Duration.Input
    readonly warn?: ((message: string, fields?: Record<string, unknown>) => void) | undefined
  },
  layout: string,
  tag: string,
  options: ImportLayoutOptions
): Effect.Effect<PulledImage, ImageStoreError> =>
  Effect.gen(function* () {
    const progress = options.onProgress ?? (() => Effect.void)
    const digest = yield* Effect.tryPromise({
      try: () => layoutManifestDigest(layout, tag),
      catch: (error) => new ImageStoreError({ message: `importing ${options.reference}: ${cut((error as Error)?.message ?? String(error))}` })
    })
    const cached = yield* deps.cache.read(digest)
    if (cached) {
      yield* progress(`cached ${shortDigest(digest)}`)
      return deps.cache.toPulled(cached, options.reference)
    }
    yield* progress(`unpacking ${shortDigest(digest)}`)
    return yield* Effect.scoped(
      Effect.gen(function* () {
        const work = yield* deps.cache.workDir("import-")
        const bundle = join(work, "bundle")
        const failed = (error: unknown) => new ImageStoreError({ message: `importing ${options.reference}: ${cut((error as Error)?.message ?? String(error))}` })
        const layers = yield* Effect.tryPromise({ try: () => readLayoutLayers(layout, tag), catch: failed })
        const config = yield* Effect.tryPromise({ try: () => readLayoutConfig(layout, tag), catch: failed })
        const assembled = yield* Effect.andThen(
          Effect.try({
            try: () => {
              rmSync(bundle, { recursive: true, force: true })
              mkdirSync(bundle, { mode: 0o755 })
            },
            catch: failed
          }),
          deps.layers.assemble(layers, join(bundle, "rootfs"))
        ).pipe(
          Effect.map(() => true),
          Effect.catch((error) =>
            Effect.sync(() => {
              deps.warn?.("assembling an image from its layers failed: unpacking it whole", { reference: options.reference, error: error.message })
              rmSync(bundle, { recursive: true, force: true })
              return false
            })
          )
        )
        if (!assembled) {
          yield* unpackLayout({ runner: deps.runner, umoci: deps.umoci, timeout: deps.timeout, layout, bundle, reference: options.reference, tag }).pipe(
            Effect.mapError((error) => new ImageStoreError({ message: error.message }))
          )
        }
        const image: CachedImage = {
          reference: options.reference,
          digest,
          source: `built ${options.reference}`,
          pulledAt: new Date(yield* Clock.currentTimeMillis).toISOString(),
          ...(assembled ? { layers: layers.map((layer) => layer.diffId) } : {}),
          config
        }
        yield* sealBundle(bundle, image)
        const stored = yield* deps.cache.commit(bundle, image)
        return deps.cache.toPulled(stored, options.reference)
      })
    )
  })
