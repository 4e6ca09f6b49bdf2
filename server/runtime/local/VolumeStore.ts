/**
 * Volumes with a real size: each volume is a sparse file holding a btrfs filesystem
 * (`mkfs.btrfs --mixed`), loop-mounted on the host at `path(id)` and bound into boxes. A write
 * past the size fails with ENOSPC inside the box; the host disk only ever holds the file.
 * Growing happens while mounted: truncate the file, `losetup -c`, `btrfs filesystem resize max`.
 * (ext4 cannot grow online here: resize2fs needs CAP_SYS_RESOURCE, which these hosts lack.)
 *
 * The store's layer mounts every volume found on disk when it starts and unmounts them (data
 * kept) when it stops.
 */
import { Context, Data, type Effect } from "effect"

const MiB = 1024 * 1024
/**
 * The smallest volume: btrfs grows online only to a size of at least 256 MiB (the kernel's resize
 * ioctl answers EINVAL below that), and mkfs refuses images under ~16 MiB; so every volume is at
 * least 256 MiB and a smaller request is rounded up to it. The image is sparse: an empty volume
 * costs the host a few MiB, whatever its size.
 */
export const VOLUME_MIN_BYTES = 256 * MiB
/** Sizes are rounded up to whole MiB. */
export const VOLUME_ALIGN_BYTES = MiB
export const VOLUME_MAX_BYTES = 16 * 1024 * 1024 * MiB

export class VolumeStoreError extends Data.TaggedError("VolumeStoreError")<{ readonly message: string }> {}

export interface VolumeInfo {
  readonly id: string
  /** Size of the filesystem image (after rounding). */
  readonly sizeBytes: number
  /** Host mount point, to bind into boxes. */
  readonly path: string
  /** Bytes the filesystem reports in use / available (statfs), when mounted. */
  readonly usedBytes?: number
  readonly availableBytes?: number
}

export class VolumeStore extends Context.Service<
  VolumeStore,
  {
    /** The size a request is rounded to (256 MiB minimum, whole MiB). */
    readonly roundSize: (sizeBytes: number) => Effect.Effect<number, VolumeStoreError>
    readonly create: (id: string, sizeBytes: number) => Effect.Effect<VolumeInfo, VolumeStoreError>
    /** Grows a volume while mounted (never shrinks: a smaller size is an error). */
    readonly grow: (id: string, sizeBytes: number) => Effect.Effect<VolumeInfo, VolumeStoreError>
    /** Host mount point of a volume (to bind into a box). */
    readonly path: (id: string) => Effect.Effect<string, VolumeStoreError>
    readonly info: (id: string) => Effect.Effect<VolumeInfo | undefined, VolumeStoreError>
    readonly list: Effect.Effect<ReadonlyArray<VolumeInfo>, VolumeStoreError>
    /** Unmounts and deletes the volume and its data. */
    readonly destroy: (id: string) => Effect.Effect<void, VolumeStoreError>
  }
>()("slipway/VolumeStore") {}
