/**
 * A box's root filesystem, acquired piece by piece in the box's scope, each with its release:
 * the writable layer (an ext4 image of the storage size, loop-mounted; created once, grown on a
 * later start that asks for more), the image seen through an id-mapped mount (its root-owned
 * files belong to box root), the overlay of the two, and the volumes (id-mapped too). Closing
 * the scope unmounts them in reverse order; the layer image stays.
 *
 * Under gVisor box root's files are host root's on disk (gVisor's file proxy, the gofer, is host
 * root; the box reaches no host file but through it): no id-mapped mounts, and the layer's files
 * are owned by 0-based uids. A box started under the other isolation than last time has its
 * layer's owners converted first.
 */
import { chmodSync, chownSync, closeSync, existsSync, ftruncateSync, lstatSync, mkdirSync, openSync, rmSync, statSync, writeFileSync } from "node:fs"
import { lchown, lstat, readdir } from "node:fs/promises"
import path from "node:path"
import { Effect, type Scope } from "effect"
import { BOX_HOME } from "../../BoxProcess.ts"
import { EXEC_HELPER } from "../execHelper.ts"
import { idmapMount } from "../idmap.ts"
import type { HostCommands } from "../mounts.ts"
import { BoxError, type Isolation } from "./model.ts"
import { DEFAULT_STORAGE, MIN_STORAGE } from "./spec.ts"
import type { BoxRecord } from "./state.ts"

const boxError = (error: { readonly message: string }) => (error instanceof BoxError ? error : new BoxError({ message: error.message }))

/**
 * Creates every component of `rel` under `base` as a real directory (never following a symlink
 * the box may have planted in its layer: this runs as host root). Chowns what it creates.
 */
const ensureDirNoFollow = (base: string, rel: string, uid: number): boolean => {
  let current = base
  for (const part of rel.split("/").filter((p) => p.length > 0)) {
    current = path.join(current, part)
    let st
    try {
      st = lstatSync(current)
    } catch {
      mkdirSync(current)
      chownSync(current, uid, uid)
      continue
    }
    if (st.isSymbolicLink() || !st.isDirectory()) return false
  }
  return true
}

/** An empty regular file at `file` (a bind target), replacing whatever the box put there. */
const ensureFile = (file: string) => {
  try {
    if (!lstatSync(file).isFile()) rmSync(file, { recursive: true, force: true })
  } catch {
    /* absent */
  }
  if (!existsSync(file)) writeFileSync(file, "", { mode: 0o555 })
}

export interface FilesystemDeps {
  readonly host: HostCommands
  readonly dirOf: (id: string) => string
  readonly execHelper: string | undefined
  /** The runner's copies of the busybox and the exec helper for gVisor boxes (`busybox`, `exec`), in one directory. */
  readonly gvisorTools: string | undefined
  /** Whether id-mapped mounts work on this kernel (undefined until the first box tries). */
  readonly idmap: { works: boolean | undefined }
  readonly log: (event: string, detail?: Record<string, unknown>) => void
}

export interface BoxFilesystem {
  /** The overlay: the box's `/`. */
  readonly merged: string
  /** Host directories bound at the volumes' mount paths, in order. */
  readonly volumeSources: ReadonlyArray<string>
  /** gVisor: the directory (a read-only mount) holding the busybox and the exec helper bound into the box. */
  readonly tools?: string
}

/**
 * A read-only view of `source` at `target` (a bind mount the host's kernel keeps read-only),
 * unmounted when the scope closes. gVisor boxes get their read-only files through these: gVisor
 * marks its own mounts read-only, but its file proxy (the gofer, host root) must not be able to
 * write what the box must not (a box that unmounted its read-only bind could write through it).
 */
const readOnlyView = (deps: FilesystemDeps, source: string, target: string) =>
  mounted(deps, target, deps.host.run(["/usr/bin/mount", "--bind", "-o", "ro,nosuid,nodev", source, target]))

/** Mounts `what` (`mount` argv after the options) at `dir`, unmounted when the scope closes. */
const mounted = (deps: FilesystemDeps, dir: string, mount: Effect.Effect<unknown, { readonly message: string }>) =>
  Effect.acquireRelease(Effect.mapError(mount, boxError), () => deps.host.unmount(dir))

/** The host uid of box root's files on disk (the owner of what it writes): its own uid under bwrap, 0 under gVisor. */
export const diskOwner = (isolation: Isolation, hostUid: number) => (isolation === "gvisor" ? 0 : hostUid)

/** Converts the owners of every file under `dir` from one isolation's box uids to the other's (chown clears set-id bits). */
const remapOwners = (dir: string, from: number, to: number) =>
  Effect.tryPromise({
    try: async () => {
      const map = (id: number) => (id >= from && id < from + 65_536 ? id - from + to : id)
      for (const rel of ["", ...(await readdir(dir, { recursive: true }))]) {
        const file = path.join(dir, rel)
        const info = await lstat(file)
        const [uid, gid] = [map(info.uid), map(info.gid)]
        if (uid !== info.uid || gid !== info.gid) await lchown(file, uid, gid)
      }
    },
    catch: (error) => new BoxError({ message: `converting the owners of the box's files: ${(error as Error)?.message ?? String(error)}` })
  })

export const acquireFilesystem = (
  deps: FilesystemDeps,
  record: BoxRecord,
  options: {
    readonly isolation: Isolation
    /** The isolation the box's layer was written under (its files' owners), when it differs. */
    readonly previous?: Isolation | undefined
  }
): Effect.Effect<BoxFilesystem, BoxError, Scope.Scope> =>
  Effect.gen(function* () {
    const { host, log } = deps
    const { spec, hostUid } = record
    const owner = diskOwner(options.isolation, hostUid)
    // Id-mapped views make root's files box root's under bwrap; gVisor's gofer needs none.
    const idmapped = options.isolation === "bwrap"
    const dir = deps.dirOf(spec.id)
    const img = path.join(dir, "layer.img")
    const layer = path.join(dir, "layer")
    const merged = path.join(dir, "merged")
    const upper = path.join(layer, "upper")
    const work = path.join(layer, "work")
    const size = Math.max(MIN_STORAGE, Math.ceil((spec.storageBytes ?? DEFAULT_STORAGE) / 4096) * 4096)
    mkdirSync(layer, { recursive: true })
    mkdirSync(merged, { recursive: true })

    const layerImage = Effect.gen(function* () {
      if (!existsSync(img)) {
        const fd = openSync(img, "w", 0o600)
        ftruncateSync(fd, size)
        closeSync(fd)
        // -m 0: box root is not host root, reserved blocks would only shrink its space.
        yield* host.run(["/usr/sbin/mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", img])
      } else if (statSync(img).size < size) {
        // A larger storage on restart: grow the layer offline (ext4 cannot grow online without
        // CAP_SYS_RESOURCE). A smaller one keeps the layer as it is (files are never dropped).
        const from = statSync(img).size
        const fd = openSync(img, "r+")
        ftruncateSync(fd, size)
        closeSync(fd)
        // e2fsck: 1 = errors corrected; anything else is a real failure.
        yield* host.run(["/usr/sbin/e2fsck", "-f", "-p", img], "120 seconds").pipe(Effect.catchIf((error) => error.exitCode === 1, () => Effect.succeed("")))
        yield* host.run(["/usr/sbin/resize2fs", img], "120 seconds")
        log("boxes.storage_grown", { id: spec.id, from, to: size })
      }
    })
    // The writable layer (a loop-mounted ext4 of the storage size) and the image seen through an
    // id-mapped mount are prepared side by side.
    const writable = Effect.gen(function* () {
      yield* Effect.mapError(layerImage, boxError)
      yield* Effect.acquireRelease(Effect.mapError(host.run(["/usr/bin/mount", "-o", "loop,nosuid,nodev", img, layer]), boxError), () =>
        Effect.andThen(host.unmount(layer), host.detachLoops(img))
      )
      if (!existsSync(upper)) {
        mkdirSync(upper)
        chownSync(upper, owner, owner)
      } else if (options.previous !== undefined && options.previous !== options.isolation) {
        yield* remapOwners(upper, diskOwner(options.previous, hostUid), owner)
        log("boxes.owners_converted", { id: spec.id, from: options.previous, to: options.isolation })
      }
      mkdirSync(work, { recursive: true })
      chmodSync(layer, 0o711)
    })
    const lower = Effect.gen(function* () {
      const lowerDir = path.join(dir, "lower")
      mkdirSync(lowerDir, { recursive: true })
      if (!idmapped || deps.idmap.works === false) return spec.rootfs
      return yield* mounted(deps, lowerDir, idmapMount(host, spec.rootfs, lowerDir, hostUid, true)).pipe(
        Effect.as(lowerDir),
        Effect.tap(() => Effect.sync(() => (deps.idmap.works = true))),
        Effect.catch((error) =>
          Effect.sync(() => {
            deps.idmap.works = false
            log("boxes.idmap_unavailable", { error: error.message })
            return spec.rootfs
          })
        )
      )
    })
    const [, lowerDir] = yield* Effect.all([writable, lower], { concurrency: 2 })
    yield* mounted(deps, merged, host.run(["/usr/bin/mount", "-t", "overlay", "overlay", "-o", `lowerdir=${lowerDir},upperdir=${upper},workdir=${work},nosuid,nodev`, merged]))

    // Mount points and directories the box needs, created as root without following symlinks.
    // A symlink the box planted is left to bwrap, which resolves it inside the box (unprivileged).
    // Box root must own its home and working directory (the directory itself, not the image's files in it).
    for (const home of [BOX_HOME, ...(spec.workingDir ? [spec.workingDir] : [])]) {
      if (!ensureDirNoFollow(merged, home, owner)) continue
      const full = path.join(merged, home)
      const st = lstatSync(full)
      if (st.isDirectory() && st.uid !== owner) chownSync(full, owner, owner)
    }
    const tools = path.join(merged, ".slipway")
    try {
      if (!lstatSync(tools).isDirectory()) rmSync(tools, { force: true })
    } catch {
      /* absent */
    }
    if (!existsSync(tools)) mkdirSync(tools, { mode: 0o755 })
    ensureFile(path.join(tools, "busybox"))
    if (deps.execHelper) ensureFile(path.join(merged, EXEC_HELPER))
    for (const v of spec.volumes ?? [])
      if (!ensureDirNoFollow(merged, v.mountPath, owner))
        return yield* new BoxError({ message: `volume mountPath ${v.mountPath} crosses a symlink or a file in the box; refusing to mount there` })

    // The volumes: id-mapped views (or, without idmap, the volumes chowned to box root).
    // Under gVisor the volumes as they are (root's files are box root's), the read-only ones and the
    // tools through read-only views.
    if (!idmapped) {
      const view = (name: string) => {
        const target = path.join(dir, name)
        mkdirSync(target, { recursive: true })
        return target
      }
      const tools = deps.gvisorTools ? yield* Effect.as(readOnlyView(deps, deps.gvisorTools, view("tools")), path.join(dir, "tools")) : undefined
      const volumeSources = yield* Effect.forEach(spec.volumes ?? [], (v, i) =>
        v.readOnly ? Effect.as(readOnlyView(deps, v.hostPath, view(path.join("volumes", String(i)))), path.join(dir, "volumes", String(i))) : Effect.succeed(v.hostPath)
      )
      return { merged, volumeSources, ...(tools ? { tools } : {}) }
    }
    const volumeSources = yield* Effect.forEach(spec.volumes ?? [], (v, i) => {
      if (deps.idmap.works) {
        const target = path.join(dir, "volumes", String(i))
        mkdirSync(target, { recursive: true })
        return Effect.as(mounted(deps, target, idmapMount(host, v.hostPath, target, hostUid, v.readOnly === true)), target)
      }
      const chown =
        !v.readOnly && statSync(v.hostPath).uid !== hostUid
          ? Effect.mapError(host.run(["/usr/bin/chown", "-R", "-P", "-h", `${hostUid}:${hostUid}`, v.hostPath], "300 seconds"), boxError)
          : Effect.void
      return Effect.as(chown, v.hostPath)
    })
    return { merged, volumeSources }
  }).pipe(Effect.catchDefect((defect) => Effect.fail(new BoxError({ message: `box ${record.spec.id}: ${(defect as Error)?.message ?? String(defect)}` }))))
