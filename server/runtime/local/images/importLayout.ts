/**
 * An image from an OCI image layout on disk (a build's result: `ImageBuilder.build` exports one)
 * into the cache, keyed by its manifest digest like a pulled image: unpacked with umoci, its
 * config kept. It is in no registry: boxes find it by `lookup(digest)`, or it is handed over as
 * the `PulledImage` this answers. Importing a digest that is cached already unpacks nothing.
 */
import { join } from "node:path"
import { Clock, type Duration, Effect } from "effect"
import type { ProcessRunner } from "../../ProcessRunner.ts"
import { ImageStoreError, type PulledImage } from "./model.ts"
import type { ImageCache } from "./cache.ts"
import { type CachedImage, cut, layoutManifestDigest, shortDigest } from "./config.ts"
import { sealBundle, unpackLayout } from "./unpack.ts"

export interface ImportLayoutOptions {
  /** What the image is called (`localhost/slipway/<deployment>:<revision>`): its `reference`. */
  readonly reference: string
  /** Hears "unpacking …", "cached …". */
  readonly onProgress?: ((message: string) => Effect.Effect<void>) | undefined
}

export const importLayout = (
  deps: { readonly runner: ProcessRunner["Service"]; readonly cache: ImageCache; readonly umoci: string; readonly timeout: Duration.Input },
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
        const config = yield* unpackLayout({ runner: deps.runner, umoci: deps.umoci, timeout: deps.timeout, layout, bundle, reference: options.reference, tag }).pipe(
          Effect.mapError((error) => new ImageStoreError({ message: error.message }))
        )
        const image: CachedImage = {
          reference: options.reference,
          digest,
          source: `built ${options.reference}`,
          pulledAt: new Date(yield* Clock.currentTimeMillis).toISOString(),
          config
        }
        yield* sealBundle(bundle, image)
        const stored = yield* deps.cache.commit(bundle, image)
        return deps.cache.toPulled(stored, options.reference)
      })
    )
  })
