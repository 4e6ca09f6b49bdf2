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
import { chmodSync, closeSync, existsSync, ftruncateSync, mkdirSync, openSync, readdirSync, rmSync, statfsSync, statSync, writeFileSync } from "node:fs"
import path from "node:path"
import { Context, Data, Effect, Layer } from "effect"
import { ServerEnv } from "../../module.ts"
import { makeKeyedLock } from "../keyedLock.ts"
import { type CommandFailed, ProcessRunner } from "../ProcessRunner.ts"
import { missingTools, unsearchableAncestor } from "./host.ts"
import { RuntimeRoot } from "./RuntimeRoot.ts"
import { hostCommands, isMountPoint } from "./mounts.ts"

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

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/

const fail = (message: string) => Effect.fail(new VolumeStoreError({ message }))
const failed = (error: { readonly message: string }) => new VolumeStoreError({ message: error.message })

/** A store over `root` (a directory it creates); its volumes are mounted while the scope is open. */
export const makeVolumeStore = (options: { readonly root: string; readonly log?: (event: string, detail?: Record<string, unknown>) => void }) =>
  Effect.gen(function* () {
    const missing = missingTools(["/usr/sbin/mkfs.btrfs", "/usr/bin/btrfs", "/usr/sbin/losetup", "/usr/bin/mount"])
    if (missing) return yield* fail(missing)
    if (process.getuid?.() !== 0) return yield* fail("the volume store needs root (loop mounts)")
    const host = hostCommands(yield* ProcessRunner)
    const root = path.resolve(options.root)
    const log = options.log ?? (() => undefined)
    mkdirSync(root, { recursive: true })
    chmodSync(root, 0o711)
    const blocked = unsearchableAncestor(root)
    if (blocked) return yield* fail(`volume dir ${root}: ancestor ${blocked} must be searchable by others (chmod o+x)`)
    const serial = yield* makeKeyedLock<string>()

    const check = (id: string) => (typeof id === "string" && ID.test(id) ? Effect.succeed(id) : fail(`invalid volume id ${JSON.stringify(id)}`))
    const dirOf = (id: string) => path.join(root, id)
    const imageOf = (id: string) => path.join(dirOf(id), "volume.img")
    const mountOf = (id: string) => path.join(dirOf(id), "mnt")
    const roundSize = (sizeBytes: number) => {
      if (!Number.isSafeInteger(sizeBytes) || sizeBytes <= 0) return fail("sizeBytes must be a positive integer")
      if (sizeBytes > VOLUME_MAX_BYTES) return fail(`sizeBytes must be at most ${VOLUME_MAX_BYTES}`)
      return Effect.succeed(Math.max(VOLUME_MIN_BYTES, Math.ceil(sizeBytes / VOLUME_ALIGN_BYTES) * VOLUME_ALIGN_BYTES))
    }
    const infoNow = (id: string): VolumeInfo | undefined => {
      if (!existsSync(imageOf(id))) return undefined
      const sizeBytes = statSync(imageOf(id)).size
      const p = mountOf(id)
      if (!isMountPoint(p)) return { id, sizeBytes, path: p }
      const s = statfsSync(p)
      return { id, sizeBytes, path: p, usedBytes: (s.blocks - s.bfree) * s.bsize, availableBytes: s.bavail * s.bsize }
    }
    const info = (id: string) => Effect.flatMap(check(id), (id) => Effect.sync(() => infoNow(id)))
    const setSize = (id: string, size: number, flags: "w" | "r+") =>
      Effect.sync(() => {
        const fd = openSync(imageOf(id), flags, 0o600)
        ftruncateSync(fd, size)
        closeSync(fd)
      })
    const mount = (id: string) =>
      Effect.gen(function* () {
        const p = mountOf(id)
        mkdirSync(p, { recursive: true })
        if (isMountPoint(p)) return
        // Reuse a loop device still attached to the image (a box may hold the filesystem open):
        // two loop devices over one btrfs image must never be mounted at once.
        const [dev] = yield* host.loopDevicesOf(imageOf(id))
        yield* host.run(dev ? ["/usr/bin/mount", "-o", "nosuid,nodev", dev, p] : ["/usr/bin/mount", "-o", "loop,nosuid,nodev", imageOf(id), p])
      })
    /** Unmounts a volume and detaches its loop device (its data stays). */
    const unmount = (id: string) => Effect.andThen(host.unmountAll(dirOf(id)), host.detachLoops(imageOf(id)))
    const volumeIds = () =>
      readdirSync(root, { withFileTypes: true })
        .filter((e) => e.isDirectory() && ID.test(e.name) && existsSync(imageOf(e.name)))
        .map((e) => e.name)

    const create = (id: string, sizeBytes: number) =>
      Effect.gen(function* () {
        const size = yield* roundSize(sizeBytes)
        if (existsSync(dirOf(id))) return yield* fail(`volume ${id} already exists`)
        yield* Effect.gen(function* () {
          mkdirSync(dirOf(id), { recursive: true })
          chmodSync(dirOf(id), 0o711)
          yield* setSize(id, size, "w")
          yield* host.run(["/usr/sbin/mkfs.btrfs", "-q", "--mixed", imageOf(id)], "60 seconds")
          yield* mount(id)
          writeFileSync(path.join(dirOf(id), "volume.json"), JSON.stringify({ id, requestedBytes: sizeBytes }))
        }).pipe(
          // Whatever was made of it goes: a volume exists whole or not at all.
          Effect.onError(() => Effect.andThen(unmount(id), Effect.sync(() => rmSync(dirOf(id), { recursive: true, force: true }))))
        )
        log("volumes.created", { id, sizeBytes: size })
        return infoNow(id)!
      })

    const grow = (id: string, sizeBytes: number) =>
      Effect.gen(function* () {
        const size = yield* roundSize(sizeBytes)
        if (!existsSync(imageOf(id))) return yield* fail(`volume ${id} does not exist`)
        const current = statSync(imageOf(id)).size
        if (size < current) return yield* fail(`volume ${id} cannot shrink (${current} -> ${size} bytes)`)
        if (size === current) return infoNow(id)!
        yield* mount(id)
        yield* setSize(id, size, "r+")
        for (const dev of yield* host.loopDevicesOf(imageOf(id))) yield* host.run(["/usr/sbin/losetup", "-c", dev])
        yield* host.run(["/usr/bin/btrfs", "filesystem", "resize", "max", mountOf(id)])
        log("volumes.grown", { id, from: current, to: size })
        return infoNow(id)!
      })

    const destroy = (id: string) =>
      Effect.gen(function* () {
        if (!existsSync(dirOf(id))) return
        yield* unmount(id)
        rmSync(dirOf(id), { recursive: true, force: true })
        log("volumes.destroyed", { id })
      })

    // Volumes on disk are mounted while the store runs; unmounted (data kept) when it stops.
    yield* Effect.acquireRelease(
      Effect.gen(function* () {
        const mounted: Array<string> = []
        for (const id of volumeIds()) {
          if (isMountPoint(mountOf(id))) continue
          yield* mount(id)
          mounted.push(id)
        }
        log("volumes.remounted", { count: mounted.length })
      }),
      () => Effect.forEach(volumeIds(), unmount, { discard: true })
    ).pipe(Effect.mapError(failed))

    /** One operation at a time per volume (a grow racing a destroy, two grows). */
    const locked = <A>(id: string, op: (id: string) => Effect.Effect<A, VolumeStoreError | CommandFailed>) =>
      Effect.flatMap(check(id), (id) => serial(id)(Effect.mapError(op(id), failed)))

    return VolumeStore.of({
      roundSize,
      create: (id, sizeBytes) => locked(id, (id) => create(id, sizeBytes)),
      grow: (id, sizeBytes) => locked(id, (id) => grow(id, sizeBytes)),
      destroy: (id) => locked(id, destroy),
      path: (id) => Effect.map(check(id), mountOf),
      info,
      list: Effect.sync(() => volumeIds().map((id) => infoNow(id)!))
    })
  })

/** The volume store of the runtime: `<runtime root>/volumes`. */
export const VolumeStoreLive = Layer.effect(
  VolumeStore,
  Effect.gen(function* () {
    const { root } = yield* RuntimeRoot
    const { log } = yield* ServerEnv
    return yield* makeVolumeStore({ root: path.join(root, "volumes"), log: (event, detail) => log.debug(event, detail) })
  }).pipe(Effect.orDie)
)
