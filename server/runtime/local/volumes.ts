/**
 * Volumes with a real size: each volume is a sparse file holding a btrfs filesystem
 * (`mkfs.btrfs --mixed`), loop-mounted on the host at `path(id)` and bound into boxes. A write
 * past the size fails with ENOSPC inside the box; the host disk only ever holds the file.
 * Growing happens while mounted: truncate the file, `losetup -c`, `btrfs filesystem resize max`.
 * (ext4 cannot grow online here: resize2fs needs CAP_SYS_RESOURCE, which these hosts lack.)
 */
import { mkdirSync, existsSync, readdirSync, writeFileSync, rmSync, statSync, chmodSync, statfsSync, openSync, ftruncateSync, closeSync } from "node:fs"
import path from "node:path"
import { detachLoops, isMountPoint, loopDevicesOf, requireTools, run, unmountAll, unsearchableAncestor } from "./host.ts"

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/
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

export class VolumeError extends Error {
  override readonly name = "VolumeError"
}

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

export interface SandboxVolumeStore {
  /** The size a request is rounded to (256 MiB minimum, whole MiB). */
  readonly roundSize: (sizeBytes: number) => number
  readonly create: (id: string, sizeBytes: number) => Promise<VolumeInfo>
  /** Grows a volume while mounted (never shrinks: a smaller size is an error). */
  readonly grow: (id: string, sizeBytes: number) => Promise<VolumeInfo>
  readonly path: (id: string) => string
  readonly info: (id: string) => VolumeInfo | undefined
  readonly list: () => ReadonlyArray<VolumeInfo>
  /** Unmounts and deletes the volume and its data. */
  readonly destroy: (id: string) => Promise<void>
  /** At server start: mounts every volume found on disk that is not mounted. */
  readonly remountAll: () => Promise<ReadonlyArray<string>>
  /** Unmounts every volume (data kept); for shutdown and tests. */
  readonly unmountAll: () => Promise<void>
}

export const makeVolumeStore = (options: { readonly root: string; readonly log?: (event: string, detail?: Record<string, unknown>) => void }): SandboxVolumeStore => {
  requireTools(["/usr/sbin/mkfs.btrfs", "/usr/bin/btrfs", "/usr/sbin/losetup", "/usr/bin/mount"])
  if (process.getuid?.() !== 0) throw new VolumeError("the volume store needs root (loop mounts)")
  const root = path.resolve(options.root)
  const log = options.log ?? (() => undefined)
  mkdirSync(root, { recursive: true })
  chmodSync(root, 0o711)
  const blocked = unsearchableAncestor(root)
  if (blocked) throw new VolumeError(`volume dir ${root}: ancestor ${blocked} must be searchable by others (chmod o+x)`)

  const check = (id: string) => {
    if (typeof id !== "string" || !ID.test(id)) throw new VolumeError(`invalid volume id ${JSON.stringify(id)}`)
  }
  const dirOf = (id: string) => path.join(root, id)
  const imageOf = (id: string) => path.join(dirOf(id), "volume.img")
  const mountOf = (id: string) => path.join(dirOf(id), "mnt")
  const roundSize = (sizeBytes: number) => {
    if (!Number.isSafeInteger(sizeBytes) || sizeBytes <= 0) throw new VolumeError("sizeBytes must be a positive integer")
    if (sizeBytes > VOLUME_MAX_BYTES) throw new VolumeError(`sizeBytes must be at most ${VOLUME_MAX_BYTES}`)
    return Math.max(VOLUME_MIN_BYTES, Math.ceil(sizeBytes / VOLUME_ALIGN_BYTES) * VOLUME_ALIGN_BYTES)
  }
  const info = (id: string): VolumeInfo | undefined => {
    check(id)
    if (!existsSync(imageOf(id))) return undefined
    const sizeBytes = statSync(imageOf(id)).size
    const p = mountOf(id)
    if (!isMountPoint(p)) return { id, sizeBytes, path: p }
    const s = statfsSync(p)
    return { id, sizeBytes, path: p, usedBytes: (s.blocks - s.bfree) * s.bsize, availableBytes: s.bavail * s.bsize }
  }
  const mount = async (id: string) => {
    const p = mountOf(id)
    mkdirSync(p, { recursive: true })
    if (isMountPoint(p)) return
    // Reuse a loop device still attached to the image (a box may hold the filesystem open):
    // two loop devices over one btrfs image must never be mounted at once.
    const [dev] = await loopDevicesOf(imageOf(id))
    if (dev) await run(["/usr/bin/mount", "-o", "nosuid,nodev", dev, p])
    else await run(["/usr/bin/mount", "-o", "loop,nosuid,nodev", imageOf(id), p])
  }

  // One operation at a time per volume (a grow racing a destroy, two grows).
  const locks = new Map<string, Promise<unknown>>()
  const serial = <A>(id: string, f: () => Promise<A>): Promise<A> => {
    const previous = locks.get(id) ?? Promise.resolve()
    const next = previous.catch(() => undefined).then(f)
    locks.set(id, next)
    void next.catch(() => undefined).finally(() => {
      if (locks.get(id) === next) locks.delete(id)
    })
    return next
  }

  const store: SandboxVolumeStore = {
    roundSize,
    create: async (id, sizeBytes) => {
      check(id)
      const size = roundSize(sizeBytes)
      if (existsSync(dirOf(id))) throw new VolumeError(`volume ${id} already exists`)
      mkdirSync(dirOf(id), { recursive: true })
      chmodSync(dirOf(id), 0o711)
      try {
        const fd = openSync(imageOf(id), "w", 0o600)
        ftruncateSync(fd, size)
        closeSync(fd)
        await run(["/usr/sbin/mkfs.btrfs", "-q", "--mixed", imageOf(id)], 60_000)
        await mount(id)
        writeFileSync(path.join(dirOf(id), "volume.json"), JSON.stringify({ id, requestedBytes: sizeBytes }))
      } catch (e) {
        await unmountAll(dirOf(id)).catch(() => undefined)
        await detachLoops(imageOf(id)).catch(() => undefined)
        rmSync(dirOf(id), { recursive: true, force: true })
        throw e
      }
      log("volumes.created", { id, sizeBytes: size })
      return info(id)!
    },
    grow: async (id, sizeBytes) => {
      check(id)
      const size = roundSize(sizeBytes)
      if (!existsSync(imageOf(id))) throw new VolumeError(`volume ${id} does not exist`)
      const current = statSync(imageOf(id)).size
      if (size < current) throw new VolumeError(`volume ${id} cannot shrink (${current} -> ${size} bytes)`)
      if (size === current) return info(id)!
      await mount(id)
      const fd = openSync(imageOf(id), "r+")
      ftruncateSync(fd, size)
      closeSync(fd)
      for (const dev of await loopDevicesOf(imageOf(id))) await run(["/usr/sbin/losetup", "-c", dev])
      await run(["/usr/bin/btrfs", "filesystem", "resize", "max", mountOf(id)])
      log("volumes.grown", { id, from: current, to: size })
      return info(id)!
    },
    path: (id) => {
      check(id)
      return mountOf(id)
    },
    info,
    list: () =>
      readdirSync(root, { withFileTypes: true })
        .filter((e) => e.isDirectory() && ID.test(e.name) && existsSync(imageOf(e.name)))
        .map((e) => info(e.name)!),
    destroy: async (id) => {
      check(id)
      if (!existsSync(dirOf(id))) return
      await unmountAll(dirOf(id))
      await detachLoops(imageOf(id))
      rmSync(dirOf(id), { recursive: true, force: true })
      log("volumes.destroyed", { id })
    },
    remountAll: async () => {
      const mounted: Array<string> = []
      for (const e of readdirSync(root, { withFileTypes: true })) {
        if (!e.isDirectory() || !ID.test(e.name) || !existsSync(imageOf(e.name))) continue
        if (!isMountPoint(mountOf(e.name))) {
          await mount(e.name)
          mounted.push(e.name)
        }
      }
      log("volumes.remounted", { count: mounted.length })
      return mounted
    },
    unmountAll: async () => {
      for (const e of readdirSync(root, { withFileTypes: true })) {
        if (!e.isDirectory() || !ID.test(e.name)) continue
        await unmountAll(dirOf(e.name))
        await detachLoops(imageOf(e.name))
      }
    }
  }
  return {
    ...store,
    create: (id, sizeBytes) => serial(id, () => store.create(id, sizeBytes)),
    grow: (id, sizeBytes) => serial(id, () => store.grow(id, sizeBytes)),
    destroy: (id) => serial(id, () => store.destroy(id))
  }
}
