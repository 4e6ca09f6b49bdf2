/**
 * Slipway's one image store, shared by sandboxes and deployments.
 *
 * `pull(reference)` fetches an OCI image with skopeo (`docker://REF` -> a temporary OCI layout) and
 * unpacks it with umoci into a root filesystem that every box of that image shares read-only (boxes
 * mount it as the lower layer of their overlay). Images are cached by manifest digest:
 *
 *   <root>/images/sha256-<hex>/rootfs       the unpacked files
 *   <root>/images/sha256-<hex>/image.json   digest, source and the parsed image config
 *   <root>/tmp/<pid>-<random>/              work space of pulls under way (skopeo's tmpdir too)
 *
 * An image directory appears by one rename once complete, so a crash never leaves a half-unpacked
 * rootfs that looks finished; leftovers in tmp/ of dead processes are removed when a store starts.
 * A second pull of a tag resolves its digest (one manifest request) and reuses the rootfs; a pull by
 * digest (`name@sha256:…`) of a cached image touches no network. Concurrent pulls of one reference,
 * or of references resolving to one digest, share one fiber; it is interrupted when its last
 * waiter is.
 *
 * The files of the store: `images/cache.ts` (the directory above), `images/registry.ts` (skopeo:
 * resolve and copy), `images/unpack.ts` (umoci), `images/importTree.ts` (a box's filesystem as a
 * new image), `images/importLayout.ts` (an OCI layout on disk, a build's result, as an image),
 * `images/errors.ts` (skopeo's errors made short), `images/config.ts` (OCI documents
 * and the options from the environment), `images/shared.ts` (one fiber per key).
 */
import { createHash } from "node:crypto"
import { join, resolve } from "node:path"
import { Clock, Context, Effect, Layer } from "effect"
import { ServerEnv } from "../../module.ts"
import { ProcessRunner } from "../ProcessRunner.ts"
import { makeImageCache } from "./images/cache.ts"
import { type CachedImage, cut, type ImageStoreOptions, imageStoreOptionsFromEnv, shortDigest } from "./images/config.ts"
import { importLayout, type ImportLayoutOptions } from "./images/importLayout.ts"
import { importTree } from "./images/importTree.ts"
import { makeLayerStore } from "./images/layers.ts"
import { type ImageConfig, ImagePullError, ImageStoreError, type ImageStoreStats, type PulledImage, type PullOptions } from "./images/model.ts"
import { makeRegistryClient, type Source } from "./images/registry.ts"
import { makeShared } from "./images/shared.ts"
import { sealBundle, unpackLayout } from "./images/unpack.ts"
import { RuntimeRoot } from "./RuntimeRoot.ts"
import { type ImageReference, InvalidReference, parseMirror, parseReference, parseRegistryHost, quote, sourceOf } from "./reference.ts"

export * from "./images/model.ts"
export { type ImageStoreOptions, imageStoreOptionsFromEnv } from "./images/config.ts"
export type { ImportLayoutOptions } from "./images/importLayout.ts"

export class ImageStore extends Context.Service<
  ImageStore,
  {
    readonly root: string
    readonly pull: (reference: string, options?: PullOptions) => Effect.Effect<PulledImage, ImagePullError>
    /** A cached image by digest (no network), or null. `reference` is the one it was first pulled as. */
    readonly lookup: (digest: string) => Effect.Effect<PulledImage | null, ImageStoreError>
    /** Every cached image (reference is the one it was first pulled as). */
    readonly list: Effect.Effect<ReadonlyArray<PulledImage>, ImageStoreError>
    /** Removes one cached image; true when it was there. Boxes still using its rootfs must be gone. */
    readonly remove: (digest: string) => Effect.Effect<boolean, ImageStoreError>
    /**
     * Makes a local image of a directory tree (a box's filesystem as the box sees it: its captured
     * snapshot): copied into the cache under a new digest, with the ids of `uidBase`..+65535 (the
     * box's id-mapped range) mapped back to 0..65535 and the image config of the image it ran. It
     * is in no registry: boxes find it by `lookup(digest)`.
     */
    readonly importTree: (
      source: string,
      options: { readonly reference: string; readonly config: ImageConfig; readonly uidBase: number }
    ) => Effect.Effect<PulledImage, ImageStoreError>
    /**
     * Imports the image `tag` of an OCI image layout (a build's result) into the cache, keyed by
     * its manifest digest and keeping its config, as a pull would: boxes use it like a pulled
     * image (`lookup(digest)` finds it). An image already cached is not unpacked again.
     */
    readonly importOciLayout: (layout: string, tag: string, options: ImportLayoutOptions) => Effect.Effect<PulledImage, ImageStoreError>
    /** Removes every cached image whose digest is not in `keep`; answers the removed digests. */
    readonly gc: (keep: ReadonlySet<string>) => Effect.Effect<ReadonlyArray<string>, ImageStoreError>
    readonly stats: () => ImageStoreStats
  }
>()("slipway/ImageStore") {}


const toPullError = (reference: string, registry?: string) => (error: { readonly message: string }) =>
  error instanceof ImagePullError ? error : new ImagePullError({ kind: "failed", message: `pull ${reference}: ${cut(error.message)}`, reference, registry })

/** A store over `options.root` (created when missing; leftovers of dead processes are removed). */
export const makeImageStore = (options: ImageStoreOptions): Effect.Effect<ImageStore["Service"], ImageStoreError, ProcessRunner> =>
  Effect.gen(function* () {
    const runner = yield* ProcessRunner
    const root = resolve(options.root)
    if (root.includes(":")) return yield* new ImageStoreError({ message: `image store root must not contain ':' (skopeo and umoci read it as a tag separator): ${quote(root)}` })
    const mirror = yield* Effect.try({
      try: () => (options.mirror !== undefined && options.mirror.trim() !== "" ? parseMirror(options.mirror) : undefined),
      catch: (error) => new ImageStoreError({ message: (error as Error).message })
    })
    const insecure = yield* Effect.try({
      try: () => new Set<string>((options.insecureRegistries ?? []).map(parseRegistryHost)),
      catch: (error) => new ImageStoreError({ message: (error as Error).message })
    })
    if (mirror?.insecure) insecure.add(mirror.domain)
    const authFile = options.authFile !== undefined && options.authFile.trim() !== "" ? resolve(options.authFile) : undefined
    const skopeo = options.skopeo ?? "skopeo"
    const umoci = options.umoci ?? "umoci"
    const copyTimeout = options.timeouts?.copyMs ?? 30 * 60_000
    const unpackTimeout = options.timeouts?.unpackMs ?? 30 * 60_000
    const counters = { resolves: 0, copies: 0, unpacks: 0, cacheHits: 0 }
    const cache = yield* makeImageCache(root)
    const registry = makeRegistryClient({ runner, cache, skopeo, insecure, resolveTimeout: options.timeouts?.resolveMs ?? 2 * 60_000, copyTimeout, counters })
    const layers = makeLayerStore({ runner, cache, root, timeout: unpackTimeout })
    const byReference = makeShared<PulledImage, ImagePullError>()
    const byDigest = makeShared<CachedImage, ImagePullError>()

    const fetchAndUnpack = (ref: ImageReference, source: Source, digest: string, authFile: string | undefined, emit: (message: string) => void) =>
      Effect.scoped(
        Effect.gen(function* () {
          const started = yield* Clock.currentTimeMillis
          const work = yield* cache.workDir()
          const layout = join(work, "layout")
          const bundle = join(work, "bundle")
          emit(`pulling ${ref.reference}${source.domain !== ref.domain ? ` from ${source.domain}` : ""}`)
          yield* registry.copy(ref, source, digest, layout, authFile, emit)
          emit(`unpacking ${shortDigest(digest)}`)
          counters.unpacks++
          const config = yield* unpackLayout({ runner, umoci, timeout: unpackTimeout, layout, bundle, reference: ref.reference })
          const finished = yield* Clock.currentTimeMillis
          const cached: CachedImage = {
            reference: ref.reference,
            digest,
            source: `${source.name}@${digest}`,
            pulledAt: new Date(finished).toISOString(),
            ...(authFile !== undefined ? { private: true } : {}),
            config
          }
          yield* sealBundle(bundle, cached)
          const stored = yield* cache.commit(bundle, cached)
          options.log?.info("image pulled", { reference: ref.reference, digest, source: source.domain, ms: finished - started })
          return stored
        })
      ).pipe(Effect.mapError(toPullError(ref.reference, source.domain)))

    const pull = (input: string, pullOptions: PullOptions = {}): Effect.Effect<PulledImage, ImagePullError> =>
      Effect.suspend(() => {
        let ref: ImageReference
        try {
          ref = parseReference(input)
        } catch (error) {
          const message = error instanceof InvalidReference ? error.message : `invalid image reference ${quote(String(input))}`
          return Effect.fail(new ImagePullError({ kind: "invalid_reference", message, reference: typeof input === "string" ? input : String(input) }))
        }
        const source = pullOptions.insecure ? { ...sourceOf(ref, mirror), insecure: true } : sourceOf(ref, mirror)
        const auth = pullOptions.auth
        // Pulls with other credentials (or none) do not share one operation: each shows its own access.
        const key = auth ? `${ref.reference}\0${createHash("sha256").update(`${ref.domain}\0${auth.username}\0${auth.password}`).digest("hex")}` : ref.reference
        const hit = (cached: CachedImage, emit: (message: string) => void) => {
          counters.cacheHits++
          emit(`cached ${shortDigest(cached.digest)}`)
          return cache.toPulled(cached, ref.reference)
        }
        const operation = (emit: (message: string) => void) =>
          Effect.scoped(
            Effect.gen(function* () {
              const credentials = auth ? yield* registry.authFileFor(ref.domain, auth) : undefined
              const pullAuthFile = credentials ?? authFile
              if (!credentials && authFile !== undefined) yield* registry.checkAuthFile(authFile, ref.reference)
              if (ref.digest !== undefined) {
                const cached = yield* cache.read(ref.digest)
                if (cached) {
                  // An image pulled with credentials is only handed to a caller who can read it too.
                  if (cached.private) yield* registry.resolveDigest(ref, source, pullAuthFile, ref.digest)
                  return hit(cached, emit)
                }
              } else emit(`resolving ${ref.reference}`)
              const digest = ref.digest ?? (yield* registry.resolveDigest(ref, source, pullAuthFile))
              const cached = yield* cache.read(digest)
              if (cached) return hit(cached, emit)
              const fetched = yield* byDigest(digest, (message) => Effect.sync(() => emit(message)), (emitDigest) => fetchAndUnpack(ref, source, digest, pullAuthFile, emitDigest))
              emit(`ready ${shortDigest(digest)}`)
              return cache.toPulled(fetched, ref.reference)
            })
          ).pipe(
            Effect.mapError(toPullError(ref.reference, source.domain)),
            Effect.catchDefect((defect) => Effect.fail(toPullError(ref.reference, source.domain)({ message: (defect as Error)?.message ?? String(defect) })))
          )
        // A Docker Hub reference goes to the mirror only: its failure says so (the mirror's address is what to check).
        const mirrored = source.name !== ref.name
        return byReference(key, pullOptions.onProgress, operation).pipe(
          Effect.mapError((error) =>
            mirrored && !error.message.includes(source.domain) ? new ImagePullError({ ...error, message: `${error.message} (through the Docker Hub mirror ${source.domain})` }) : error
          ),
          Effect.tapError((error) => Effect.sync(() => options.log?.warn("image pull failed", { reference: ref.reference, kind: error.kind, message: error.message })))
        )
      })

    /** The unpacked layers no cached image links to any more go (images imported from a layout share them). */
    const pruneLayers = Effect.gen(function* () {
      const referenced = new Set<string>()
      for (const digest of yield* cache.digests) for (const layer of (yield* cache.read(digest))?.layers ?? []) referenced.add(layer)
      const removed = yield* layers.prune(referenced)
      if (removed.length > 0) options.log?.info("image layers removed", { layers: removed.length })
    })
    const remove = (digest: string) => Effect.flatMap(cache.checkDigest(digest), cache.discard).pipe(Effect.tap(() => pruneLayers))

    return ImageStore.of({
      root,
      pull,
      lookup: (digest) =>
        Effect.flatMap(cache.checkDigest(digest), cache.read).pipe(Effect.map((cached) => (cached ? cache.toPulled(cached, cached.reference) : null))),
      list: Effect.flatMap(cache.digests, (digests) =>
        Effect.forEach(digests, (digest) => Effect.map(cache.read(digest), (cached) => (cached ? [cache.toPulled(cached, cached.reference)] : [])))
      ).pipe(Effect.map((found) => found.flat())),
      remove,
      importTree: (source, importOptions) => importTree({ runner, cache, timeout: unpackTimeout }, source, importOptions),
      importOciLayout: (layout, tag, importOptions) =>
        importLayout({ runner, cache, layers, umoci, timeout: unpackTimeout, warn: options.log?.warn }, layout, tag, importOptions).pipe(
          Effect.tap((image) => Effect.sync(() => options.log?.info("image imported", { reference: image.reference, digest: image.digest })))
        ),
      gc: (keep) =>
        Effect.flatMap(cache.digests, (digests) =>
          Effect.filter(digests.filter((digest) => !keep.has(digest)), (digest) =>
            Effect.tap(cache.discard(digest), (removed) => Effect.sync(() => removed && options.log?.info("image removed", { digest })))
          )
        ).pipe(Effect.tap(() => pruneLayers)),
      stats: () => ({ ...counters })
    })
  })

/** The image store of the runtime: `<runtime root>/images`, with the registry settings of the environment. */
export const ImageStoreLive = Layer.effect(
  ImageStore,
  Effect.gen(function* () {
    const { root } = yield* RuntimeRoot
    const { log } = yield* ServerEnv
    const settings = imageStoreOptionsFromEnv()
    // What pulls go through, in the start-up log: a missing mirror or insecure entry is seen here, not at the first failed pull.
    log.info("image registries", {
      mirror: settings.mirror ?? "none (Docker Hub)",
      insecure_registries: settings.insecureRegistries ?? [],
      auth_file: settings.authFile ?? "none"
    })
    return yield* makeImageStore({ root: join(root, "images"), ...settings, log })
  }).pipe(Effect.orDie)
)
