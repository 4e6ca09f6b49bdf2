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
 * new image), `images/errors.ts` (skopeo's errors made short), `images/config.ts` (OCI documents
 * and the options from the environment), `images/shared.ts` (one fiber per key).
 */
import { Context, Data, type Effect } from "effect"

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

/** A username and password for one registry host. */
export interface RegistryAuth {
  readonly username: string
  readonly password: string
}

export interface PullOptions {
  /** Hears the pull's progress ("pulling …: layer 2 (sha256:…)", "unpacking …"), from the moment it joins. */
  readonly onProgress?: ((message: string) => Effect.Effect<void>) | undefined
  /**
   * Credentials for the reference's registry (a stored sandbox registry): written for this pull
   * only, as a docker-config file of mode 0600 in a private directory under the store's tmp/,
   * given to skopeo as `--authfile` (never on a command line) and removed when the pull ends.
   * They take the place of the store's `authFile` for this pull.
   */
  readonly auth?: RegistryAuth | undefined
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
export class ImagePullError extends Data.TaggedError("ImagePullError")<{
  readonly kind: ImagePullErrorKind
  readonly message: string
  /** The reference as asked (normalised when it parsed). */
  readonly reference: string
  /** The registry talked to (the mirror for Docker Hub references when one is set). */
  readonly registry?: string | undefined
  /** Raw tool output, for logs (never for users: it may be long). */
  readonly detail?: string | undefined
}> {}

/** Any other failure of the store (a bad digest, the disk). */
export class ImageStoreError extends Data.TaggedError("ImageStoreError")<{ readonly message: string }> {}

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
    /** Removes every cached image whose digest is not in `keep`; answers the removed digests. */
    readonly gc: (keep: ReadonlySet<string>) => Effect.Effect<ReadonlyArray<string>, ImageStoreError>
    readonly stats: () => ImageStoreStats
  }
>()("slipway/ImageStore") {}

/** An image config's `Env` (`["K=V", ...]`) as a record. */
export const imageEnvironment = (env: ReadonlyArray<string>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const entry of env) {
    const at = entry.indexOf("=")
    if (at > 0) out[entry.slice(0, at)] = entry.slice(at + 1)
  }
  return out
}
