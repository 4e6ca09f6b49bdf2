/** What the image store deals in: images, their configs, pull options and errors. */
import { Data, type Effect } from "effect"

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
  /**
   * The reference's registry is reached over plain HTTP for this pull (the registry Slipway runs
   * on loopback: `Registry.insecure`), as if it were listed in `insecureRegistries`.
   */
  readonly insecure?: boolean | undefined
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

/** An image config's `Env` (`["K=V", ...]`) as a record. */
export const imageEnvironment = (env: ReadonlyArray<string>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const entry of env) {
    const at = entry.indexOf("=")
    if (at > 0) out[entry.slice(0, at)] = entry.slice(at + 1)
  }
  return out
}
