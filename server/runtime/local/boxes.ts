/**
 * The one process runner of the local runtime: boxes under bubblewrap.
 *
 * A box = an image rootfs (read-only) + its own writable layer (kernel overlayfs; upper/work on a
 * per-box ext4 image loop-mounted, so `storageBytes` is a hard cap) + new user, mount, pid, ipc,
 * uts, net and cgroup namespaces (`bwrap --unshare-all`) + a cgroup with its limits. Box root is an
 * unprivileged host uid of its own (bwrap runs under `setpriv --reuid`), so even a process that got
 * out of every namespace would hold no host privilege. An init (`busybox sleep`) keeps the
 * namespaces alive; `exec` joins them with `nsenter --all` after placing itself in the box cgroup.
 * See docs/runtime-isolation.md.
 */
import { spawn, type ChildProcess } from "node:child_process"
import {
  mkdirSync,
  writeFileSync,
  readFileSync,
  existsSync,
  lstatSync,
  chownSync,
  chmodSync,
  rmSync,
  readdirSync,
  statSync,
  closeSync,
  openSync,
  ftruncateSync
} from "node:fs"
import net from "node:net"
import path from "node:path"
import type { Readable, Writable } from "node:stream"
import {
  createCgroup,
  detectLimitsMode,
  listCgroups,
  removeCgroup,
  rlimitArgs,
  type LimitsMode,
  type Resources
} from "./cgroups.ts"
import {
  detachLoops,
  isMountPoint,
  mountsUnder,
  processAlive,
  processStartTicks,
  requireTools,
  run,
  sleep,
  unmountAll,
  unsearchableAncestor
} from "./host.ts"
import { idmapMount } from "./idmap.ts"
import { buildExecHelper, EXEC_HELPER, type HelperChannel, makeHelperChannel } from "./execHelper.ts"

export type { LimitsMode, Resources } from "./cgroups.ts"

// ---------------------------------------------------------------------------------------------
// Shared interfaces: server/runtime/BoxExec.ts

import { BOX_HOME, BOX_TOOLS, shellLaunchArgv, type BoxExec, type BoxProcess, type ExecOptions, type ShellCommand } from "../BoxExec.ts"

export { BOX_HOME, BOX_TOOLS, type BoxExec, type BoxProcess, type ExecOptions, type ShellCommand }

// ---------------------------------------------------------------------------------------------

export interface BoxVolume {
  /** Host directory (e.g. `SandboxVolumeStore.path(id)`), bound at `mountPath`. */
  readonly hostPath: string
  readonly mountPath: string
  readonly readOnly?: boolean
}

export interface BoxSpec {
  /** [A-Za-z0-9][A-Za-z0-9_.-]{0,99}; names the state dir and the cgroup. */
  readonly id: string
  /** Read-only image root filesystem (a directory on the host). */
  readonly rootfs: string
  readonly env: Readonly<Record<string, string>>
  /** Default working directory of the init and of `exec`; default BOX_HOME. */
  readonly workingDir?: string
  readonly hostname?: string
  /** Cap of the writable layer (default 1 GiB; minimum 8 MiB). A larger value on a later start grows it; a smaller one is ignored. */
  readonly storageBytes?: number
  readonly resources?: Resources
  readonly volumes?: ReadonlyArray<BoxVolume>
  /** Size of the box's tmpfs /tmp (default: a quarter of the memory limit, at most 512 MiB); counts against memory. */
  readonly tmpBytes?: number
  /**
   * "none" (default): the box has only its own loopback. Ports served inside the box on its
   * loopback are reached from the host with `RunningBox.forward(port)` (a bridge), never by
   * sharing the host network.
   */
  readonly network?: "none"
}

export type BoxStatus = "running" | "stopped"

export interface BoxExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  /** True when stop()/destroy() ended the box; false when its init died on its own. */
  readonly expected: boolean
}

export interface Forward {
  readonly host: string
  readonly port: number
  /**
   * The unix socket the bridge listens on (root only): a connection to it reaches the box's port
   * without the host port's hop through this process (the deployment proxy dials it).
   */
  readonly socketPath: string
  readonly close: () => Promise<void>
}

export interface RunningBox extends BoxExec {
  readonly id: string
  readonly spec: BoxSpec
  /** Host pid of the box's pid 1 (its init). */
  readonly pid: number
  /** The host uid that box root is mapped to. */
  readonly hostUid: number
  /** Host path of the box's root filesystem as the box sees it (image + writable layer, the overlay); mounted while the box runs. */
  readonly filesystem: string
  readonly status: () => BoxStatus
  /** A shell command: one exec in the box through its exec helper (or the busybox launcher without it). */
  readonly execShell: (command: ShellCommand, options?: ExecOptions) => BoxProcess
  /** Called once when the box's init exits (stop, destroy, or an unexpected death). */
  readonly onExit: (listener: (exit: BoxExit) => void) => () => void
  /** Resolves when the box has exited. */
  readonly exited: Promise<BoxExit>
  /** Ends every process of the box; keeps the writable layer on disk. */
  readonly stop: () => Promise<void>
  /** stop() and free all disk of the box. */
  readonly destroy: () => Promise<void>
  /**
   * Listens on the host (default 127.0.0.1, a free port) and forwards each connection to
   * 127.0.0.1:`port` inside the box's own network namespace. Closed when the box stops.
   */
  readonly forward: (port: number, options?: { readonly host?: string; readonly hostPort?: number }) => Promise<Forward>
}

export interface BoxRunnerOptions {
  /** State directory: one `<id>/` per box (spec, writable layer image). */
  readonly root: string
  readonly log?: (event: string, detail?: Record<string, unknown>) => void
  /** Parent cgroup name (default "slipway-boxes"). */
  readonly cgroupParent?: string
  /** "auto" (default) uses cgroups when writable; "rlimit" forces the fallback (tests). */
  readonly limits?: "auto" | "rlimit"
  /** Host busybox bound at BOX_TOOLS (default /bin/busybox, Debian busybox-static). */
  readonly busybox?: string
  /**
   * The exec helper (exec-helper.c) bound into boxes: a built binary's path, `false` for none
   * (every exec then spawns nsenter from the host), or by default built into `<root>/.tools`.
   */
  readonly execHelper?: string | false
}

export interface BoxRunner {
  readonly limitsMode: () => LimitsMode
  /** How exec runs commands: "helper" (the per-box exec helper) or "nsenter" (a host spawn per command, with why). */
  readonly execMode: () => { readonly mode: "helper" | "nsenter"; readonly reason?: string }
  readonly start: (spec: BoxSpec) => Promise<RunningBox>
  /** After a server restart: re-attaches to boxes still running, cleans the rest (stale mounts, cgroups). */
  readonly recover: () => Promise<{ readonly running: ReadonlyArray<RunningBox>; readonly stopped: ReadonlyArray<BoxSpec> }>
  /** The running box `id` (attaching to it if this runner did not start it), or undefined. */
  readonly attach: (id: string) => Promise<RunningBox | undefined>
  /** Stored specs of every box on disk (running or not). */
  readonly list: () => ReadonlyArray<BoxSpec>
  /** Frees the disk of a stopped box (or stops and frees a running one). */
  readonly destroy: (id: string) => Promise<void>
}

export class BoxError extends Error {
  override readonly name = "BoxError"
}

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/
const MiB = 1024 * 1024
const DEFAULT_STORAGE = 1024 * MiB
const MIN_STORAGE = 8 * MiB
const UID_BASE = 1_000_000_000
const UID_STEP = 65_536
const UID_SLOTS = 17_000
const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
const HOST_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
const FORBIDDEN_MOUNTS = ["/", "/proc", "/dev", "/tmp", "/.slipway"]

interface BoxRecord {
  readonly spec: BoxSpec
  readonly hostUid: number
}
interface RunRecord {
  readonly pid: number
  readonly startTicks: string
  readonly limitsMode: LimitsMode
  /** The box has the exec helper bound at EXEC_HELPER (boxes started before it existed have not). */
  readonly execHelper?: boolean
}

const shQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`

const validateSpec = (spec: BoxSpec): void => {
  if (typeof spec.id !== "string" || !ID.test(spec.id)) throw new BoxError(`invalid box id ${JSON.stringify(spec.id)}`)
  if (!path.isAbsolute(spec.rootfs) || /[,:\\]/.test(spec.rootfs))
    throw new BoxError("rootfs must be an absolute path without ',', ':' or '\\\\'")
  if (!existsSync(spec.rootfs) || !statSync(spec.rootfs).isDirectory()) throw new BoxError(`rootfs ${spec.rootfs} is not a directory`)
  for (const [k, v] of Object.entries(spec.env)) {
    if (!/^[^=\0]+$/.test(k) || typeof v !== "string" || v.includes("\0")) throw new BoxError(`invalid environment variable ${JSON.stringify(k)}`)
  }
  const boxPath = (p: string, what: string) => {
    if (!p.startsWith("/") || p.includes("\0") || p.split("/").some((c) => c === ".." || c === "."))
      throw new BoxError(`${what} must be an absolute path without '.' or '..': ${JSON.stringify(p)}`)
  }
  if (spec.workingDir !== undefined) boxPath(spec.workingDir, "workingDir")
  if (spec.hostname !== undefined && !/^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(spec.hostname))
    throw new BoxError(`invalid hostname ${JSON.stringify(spec.hostname)}`)
  if (spec.storageBytes !== undefined && (!Number.isSafeInteger(spec.storageBytes) || spec.storageBytes <= 0))
    throw new BoxError("storageBytes must be a positive integer")
  const r = spec.resources ?? {}
  for (const [k, v] of Object.entries(r)) {
    if (v !== undefined && (!Number.isSafeInteger(v) || v <= 0)) throw new BoxError(`resources.${k} must be a positive integer`)
  }
  for (const v of spec.volumes ?? []) {
    boxPath(v.mountPath, "volume mountPath")
    const norm = path.posix.normalize(v.mountPath)
    if (FORBIDDEN_MOUNTS.some((f) => norm === f || (f !== "/" && norm.startsWith(f + "/"))))
      throw new BoxError(`volume mountPath ${v.mountPath} is reserved`)
    if (!path.isAbsolute(v.hostPath) || !existsSync(v.hostPath) || !statSync(v.hostPath).isDirectory())
      throw new BoxError(`volume hostPath ${v.hostPath} is not a directory`)
  }
  if (spec.network !== undefined && spec.network !== "none") throw new BoxError(`unsupported network mode ${String(spec.network)}`)
}

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

export const makeBoxRunner = (options: BoxRunnerOptions): BoxRunner => {
  requireTools(["/usr/bin/bwrap", "/usr/bin/nsenter", "/usr/bin/setpriv", "/usr/bin/prlimit", "/usr/bin/unshare", "/usr/bin/perl", "/usr/sbin/mkfs.ext4", "/usr/bin/mount", "/bin/sh"])
  const busybox = options.busybox ?? "/bin/busybox"
  requireTools([busybox])
  const root = path.resolve(options.root)
  if (/[,:\\\s]/.test(root)) throw new BoxError(`box state dir ${root} must not contain ',', ':', '\\' or spaces (overlayfs options)`)
  const log = options.log ?? (() => undefined)
  const cgroupParent = options.cgroupParent ?? "slipway-boxes"
  if (!ID.test(cgroupParent)) throw new BoxError(`invalid cgroupParent ${JSON.stringify(cgroupParent)}`)
  if (process.getuid?.() !== 0) throw new BoxError("the box runner needs root (mounts, cgroups, uid mapping)")
  mkdirSync(root, { recursive: true })
  chmodSync(root, 0o711)
  const blocked = unsearchableAncestor(root)
  if (blocked) throw new BoxError(`box state dir ${root}: ancestor ${blocked} must be searchable by others (chmod o+x)`)
  const mode: LimitsMode = options.limits === "rlimit" ? "rlimit" : detectLimitsMode(cgroupParent)
  log("boxes.limits", { mode })
  const helperBuild =
    options.execHelper === false ? { error: "disabled" } : options.execHelper !== undefined ? { path: options.execHelper } : buildExecHelper(path.join(root, ".tools"))
  const execHelper = "path" in helperBuild ? helperBuild.path : undefined
  if (execHelper) requireTools([execHelper])
  log("boxes.exec_helper", "path" in helperBuild ? { path: helperBuild.path } : { unavailable: helperBuild.error })

  /** Whether id-mapped mounts work on this kernel (undefined until the first box tries). */
  let idmapWorks: boolean | undefined
  const live = new Map<string, RunningBox>()
  const starting = new Set<string>()

  const dirOf = (id: string) => path.join(root, id)
  const recordPath = (id: string) => path.join(dirOf(id), "box.json")
  const runPath = (id: string) => path.join(dirOf(id), "run.json")
  const readRecord = (id: string): BoxRecord | undefined => {
    try {
      return JSON.parse(readFileSync(recordPath(id), "utf8")) as BoxRecord
    } catch {
      return undefined
    }
  }
  const readRun = (id: string): RunRecord | undefined => {
    try {
      return JSON.parse(readFileSync(runPath(id), "utf8")) as RunRecord
    } catch {
      return undefined
    }
  }
  const boxIds = () =>
    existsSync(root)
      ? readdirSync(root, { withFileTypes: true })
          .filter((e) => e.isDirectory() && ID.test(e.name))
          .map((e) => e.name)
      : []

  /** Host uids that own a running process (boxes of another runner on this host included). */
  const uidsInUse = (): Set<number> => {
    const uids = new Set<number>()
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue
      try {
        const uid = statSync(`/proc/${entry}`).uid
        if (uid >= UID_BASE) uids.add(uid)
      } catch {
        /* exited meanwhile */
      }
    }
    return uids
  }

  const allocateUid = (id: string): number => {
    // Never share a uid with another box, of this runner (its records) or of another one (its processes).
    const used = new Set<number | undefined>([...boxIds().filter((b) => b !== id).map((b) => readRecord(b)?.hostUid), ...uidsInUse()])
    let h = 0
    for (const c of id) h = (h * 31 + c.charCodeAt(0)) >>> 0
    for (let i = 0; i < UID_SLOTS; i++) {
      const uid = UID_BASE + ((h + i) % UID_SLOTS) * UID_STEP
      if (!used.has(uid)) return uid
    }
    throw new BoxError("no free box uid")
  }

  /** Unmounts the box's overlay and layer, removes its cgroup; idempotent. */
  const teardown = async (id: string, limits: LimitsMode): Promise<void> => {
    await removeCgroup(limits, cgroupParent, id)
    await unmountAll(dirOf(id))
    await detachLoops(path.join(dirOf(id), "layer.img"))
    rmSync(runPath(id), { force: true })
    rmSync(path.join(dirOf(id), "ports"), { recursive: true, force: true })
  }

  /** Deletes a box's state dir, never while anything (an id-mapped volume!) is still mounted in it. */
  const removeStateDir = (id: string) => {
    const still = mountsUnder(dirOf(id))
    if (still.length > 0) throw new BoxError(`box ${id}: ${still.map((m) => m.mountPoint).join(", ")} still mounted; not deleting`)
    rmSync(dirOf(id), { recursive: true, force: true })
  }

  const killTree = (pid: number, startTicks: string) => {
    if (processAlive(pid, startTicks)) {
      try {
        process.kill(pid, "SIGKILL")
      } catch {
        /* gone */
      }
    }
  }

  const prepareLayer = async (id: string, rec: BoxRecord): Promise<string> => {
    const dir = dirOf(id)
    const img = path.join(dir, "layer.img")
    const layer = path.join(dir, "layer")
    const merged = path.join(dir, "merged")
    const size = Math.max(MIN_STORAGE, Math.ceil((rec.spec.storageBytes ?? DEFAULT_STORAGE) / 4096) * 4096)
    mkdirSync(layer, { recursive: true })
    mkdirSync(merged, { recursive: true })
    const upper = path.join(layer, "upper")
    const work = path.join(layer, "work")
    // The writable layer (a loop-mounted ext4 of the storage size) and the image seen through an
    // id-mapped mount (its root-owned files belong to box root) are prepared in parallel.
    const layerReady = (async () => {
      if (!existsSync(img)) {
        const fd = openSync(img, "w", 0o600)
        ftruncateSync(fd, size)
        closeSync(fd)
        // -m 0: box root is not host root, reserved blocks would only shrink its space.
        await run(["/usr/sbin/mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", img])
      } else if (statSync(img).size < size && !isMountPoint(layer)) {
        // A larger storage on restart: grow the layer offline (ext4 cannot grow online without
        // CAP_SYS_RESOURCE). A smaller one keeps the layer as it is (files are never dropped).
        const from = statSync(img).size
        const fd = openSync(img, "r+")
        ftruncateSync(fd, size)
        closeSync(fd)
        await run(["/usr/sbin/e2fsck", "-f", "-p", img], 120_000).catch((e: unknown) => {
          // 1 = errors corrected; anything else is a real failure.
          if (!(e instanceof Error && "code" in e && (e as { code: unknown }).code === 1)) throw e
        })
        await run(["/usr/sbin/resize2fs", img], 120_000)
        log("boxes.storage_grown", { id, from, to: size })
      }
      if (!isMountPoint(layer)) await run(["/usr/bin/mount", "-o", "loop,nosuid,nodev", img, layer])
      if (!existsSync(upper)) {
        mkdirSync(upper)
        chownSync(upper, rec.hostUid, rec.hostUid)
      }
      mkdirSync(work, { recursive: true })
      chmodSync(layer, 0o711)
    })()
    const lowerReady = (async () => {
      const lower = path.join(dir, "lower")
      mkdirSync(lower, { recursive: true })
      if (idmapWorks === false) return rec.spec.rootfs
      try {
        if (!isMountPoint(lower)) await idmapMount(rec.spec.rootfs, lower, rec.hostUid, true)
        idmapWorks = true
        return lower
      } catch (e) {
        idmapWorks = false
        log("boxes.idmap_unavailable", { error: String(e) })
        return rec.spec.rootfs
      }
    })()
    const [layerResult, lowerResult] = await Promise.allSettled([layerReady, lowerReady])
    if (layerResult.status === "rejected") throw layerResult.reason
    if (lowerResult.status === "rejected") throw lowerResult.reason
    const lowerDir = lowerResult.value
    if (!isMountPoint(merged))
      await run([
        "/usr/bin/mount",
        "-t",
        "overlay",
        "overlay",
        "-o",
        `lowerdir=${lowerDir},upperdir=${upper},workdir=${work},nosuid,nodev`,
        merged
      ])
    // Mount points and directories the box needs, created as root without following symlinks.
    // A symlink the box planted is left to bwrap, which resolves it inside the box (unprivileged).
    // Box root must own its home and working directory (the directory itself, not the image's files in it).
    for (const dir of [BOX_HOME, ...(rec.spec.workingDir ? [rec.spec.workingDir] : [])]) {
      if (!ensureDirNoFollow(merged, dir, rec.hostUid)) continue
      const full = path.join(merged, dir)
      const st = lstatSync(full)
      if (st.isDirectory() && st.uid !== rec.hostUid) chownSync(full, rec.hostUid, rec.hostUid)
    }
    const tools = path.join(merged, ".slipway")
    try {
      if (!lstatSync(tools).isDirectory()) rmSync(tools, { force: true })
    } catch {
      /* absent */
    }
    if (!existsSync(tools)) mkdirSync(tools, { mode: 0o755 })
    const toolsFile = path.join(tools, "busybox")
    try {
      const st = lstatSync(toolsFile)
      if (!st.isFile()) rmSync(toolsFile, { recursive: true, force: true })
    } catch {
      /* absent */
    }
    if (!existsSync(toolsFile)) writeFileSync(toolsFile, "", { mode: 0o555 })
    if (execHelper) {
      const helperFile = path.join(merged, EXEC_HELPER)
      try {
        if (!lstatSync(helperFile).isFile()) rmSync(helperFile, { recursive: true, force: true })
      } catch {
        /* absent */
      }
      if (!existsSync(helperFile)) writeFileSync(helperFile, "", { mode: 0o555 })
    }
    for (const v of rec.spec.volumes ?? [])
      if (!ensureDirNoFollow(merged, v.mountPath, rec.hostUid))
        throw new BoxError(`volume mountPath ${v.mountPath} crosses a symlink or a file in the box; refusing to mount there`)
    return merged
  }

  /** Host directories to bind for the volumes: id-mapped views (or, without idmap, the volumes chowned). */
  const prepareVolumes = async (rec: BoxRecord): Promise<Array<string>> => {
    const sources: Array<string> = []
    const volumes = rec.spec.volumes ?? []
    for (let i = 0; i < volumes.length; i++) {
      const v = volumes[i]!
      if (idmapWorks) {
        const target = path.join(dirOf(rec.spec.id), "volumes", String(i))
        mkdirSync(target, { recursive: true })
        if (!isMountPoint(target)) await idmapMount(v.hostPath, target, rec.hostUid, v.readOnly === true)
        sources.push(target)
      } else {
        if (!v.readOnly && statSync(v.hostPath).uid !== rec.hostUid)
          await run(["/usr/bin/chown", "-R", "-P", "-h", `${rec.hostUid}:${rec.hostUid}`, v.hostPath], 300_000)
        sources.push(v.hostPath)
      }
    }
    return sources
  }

  const bwrapArgs = (rec: BoxRecord, merged: string, volumeSources: ReadonlyArray<string>): Array<string> => {
    const spec = rec.spec
    // tmpfs pages are charged to the box's memory and cannot be reclaimed: a /tmp as large as the
    // memory limit would let a full /tmp OOM-kill the init. Default: a quarter of it.
    const tmpBytes = spec.tmpBytes ?? Math.min(512 * MiB, Math.max(MiB, Math.floor((spec.resources?.memoryBytes ?? 2048 * MiB) / 4)))
    const args = [
      "--bind", merged, "/",
      "--proc", "/proc",
      "--dev", "/dev",
      "--size", String(tmpBytes), "--tmpfs", "/tmp",
      "--ro-bind", busybox, BOX_TOOLS,
      ...(execHelper ? ["--ro-bind", execHelper, EXEC_HELPER] : [])
    ]
    ;(spec.volumes ?? []).forEach((v, i) => args.push(v.readOnly ? "--ro-bind" : "--bind", volumeSources[i]!, v.mountPath))
    args.push(
      "--unshare-all",
      "--uid", "0",
      "--gid", "0",
      "--hostname", spec.hostname ?? "box",
      "--chdir", spec.workingDir ?? BOX_HOME,
      "--clearenv",
      "--setenv", "PATH", DEFAULT_PATH,
      "--setenv", "HOME", BOX_HOME,
      "--new-session",
      "--as-pid-1",
      "--info-fd", "3"
    )
    return args
  }

  /** The RunningBox object for a box whose init is `pid`; `child` when this runner spawned it. */
  const makeRunning = (rec: BoxRecord, runRec: RunRecord, child: ChildProcess | undefined): RunningBox => {
    const id = rec.spec.id
    const limits = runRec.limitsMode
    const procsFiles =
      limits === "rlimit"
        ? []
        : (limits === "cgroup-v2" ? [path.join("/sys/fs/cgroup", cgroupParent, id)] : ["memory", "cpu", "pids"].map((c) => path.join("/sys/fs/cgroup", c, cgroupParent, id))).map(
            (d) => path.join(d, "cgroup.procs")
          )
    let status: BoxStatus = "running"
    let stopping = false
    const listeners = new Set<(e: BoxExit) => void>()
    const forwards = new Set<Forward>()
    let resolveExited!: (e: BoxExit) => void
    const exited = new Promise<BoxExit>((r) => (resolveExited = r))
    let finished: Promise<void> | undefined

    const finish = (code: number | null, signal: NodeJS.Signals | null): Promise<void> => {
      if (finished) return finished
      finished = (async () => {
        if (poll) clearInterval(poll)
        helper?.close()
        for (const f of forwards) await f.close().catch(() => undefined)
        await teardown(id, limits).catch((e) => log("boxes.teardown_failed", { id, error: String(e) }))
        status = "stopped"
        live.delete(id)
        const exit: BoxExit = { code, signal, expected: stopping }
        log("boxes.exited", { id, code, signal, expected: stopping })
        resolveExited(exit)
        for (const l of listeners) {
          try {
            l(exit)
          } catch {
            /* a listener's error is its own */
          }
        }
      })()
      return finished
    }

    let poll: ReturnType<typeof setInterval> | undefined
    if (child) {
      if (child.exitCode !== null || child.signalCode !== null) void finish(child.exitCode, child.signalCode)
      else child.once("exit", (code, signal) => void finish(code, signal))
    } else {
      poll = setInterval(() => {
        if (!processAlive(runRec.pid, runRec.startTicks)) void finish(null, null)
      }, 250)
      poll.unref()
    }

    const stop = async () => {
      if (status === "stopped") return
      stopping = true
      killTree(runRec.pid, runRec.startTicks)
      for (let i = 0; i < 1000 && processAlive(runRec.pid, runRec.startTicks); i++) await sleep(5)
      // Our child (the outer bwrap) reports the exit; without one (attached), or if it is slow, finish here.
      if (!child) void finish(null, "SIGKILL")
      else setTimeout(() => void finish(null, "SIGKILL"), 2000).unref()
      await exited
      await finished
    }

    /** Spawns `command` inside the box from the host: cgroups joined, then nsenter into every namespace and the root. */
    const spawnInBox = (command: ReadonlyArray<string>, stdio: Array<"pipe" | "ignore">, oomScoreAdj: boolean): ChildProcess => {
      const join = procsFiles.map((f) => `echo $$ > ${shQuote(f)}`).join(" && ")
      const limitsPrefix = limits === "rlimit" ? ["/usr/bin/prlimit", ...rlimitArgs(rec.spec.resources ?? {}), "--"] : []
      // oom_score_adj 500: under the memory limit the kernel kills commands before the box's init.
      const script = [join, oomScoreAdj ? "echo 500 > /proc/self/oom_score_adj" : "", 'exec "$@"'].filter((part) => part !== "").join(" && ")
      return spawn("/bin/sh", ["-c", script, "sh", ...limitsPrefix, "/usr/bin/nsenter", "-t", String(runRec.pid), "--all", "--root", "--wd", "--", ...command], {
        detached: true,
        env: { PATH: HOST_PATH },
        stdio
      })
    }

    // The exec helper: started inside the box on the first exec, then every exec is one fork in the box.
    let helper: HelperChannel | undefined
    const helperChannel = (): HelperChannel | undefined => {
      if (!runRec.execHelper || !execHelper) return undefined
      if (helper?.alive()) return helper
      const child = spawnInBox([EXEC_HELPER], ["ignore", "ignore", "pipe", "pipe"], false)
      let stderr = ""
      child.stderr!.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)))
      child.on("error", () => undefined)
      const channel = child.stdio[3] as import("node:stream").Duplex
      const started = makeHelperChannel(channel, (reason) => {
        if (status === "running") log("boxes.exec_helper_gone", { id, reason, stderr: stderr.trim() })
        if (child.exitCode === null && child.signalCode === null) {
          try {
            process.kill(-child.pid!, "SIGKILL")
          } catch {
            /* gone */
          }
        }
      })
      child.once("exit", () => channel.destroy())
      // The helper never keeps the server's event loop alive (the box's life is the runner's business).
      child.unref()
      for (const stream of [channel, child.stderr]) (stream as unknown as { unref?: () => void } | null)?.unref?.()
      helper = started
      return started
    }

    const envName = /^[^=\0]+$/
    /** The command's whole environment: the box's defaults, the spec's, the request's; checked. */
    const envFor = (execOptions: ExecOptions | undefined, extra?: Readonly<Record<string, string>>): Record<string, string> => {
      const env: Record<string, string> = { PATH: DEFAULT_PATH, HOME: BOX_HOME, ...rec.spec.env, ...(execOptions?.env ?? {}), ...extra }
      for (const k in env) {
        const v = env[k]
        if (!envName.test(k) || typeof v !== "string" || v.includes("\0")) throw new BoxError(`invalid environment variable ${JSON.stringify(k)}`)
      }
      return env
    }

    const execShell = (command: ShellCommand, execOptions?: ExecOptions): BoxProcess => {
      if (status !== "running") throw new BoxError(`box ${id} is not running`)
      for (const field of ["shell", "cwd", "command"] as const)
        if (typeof command?.[field] !== "string" || command[field].includes("\0")) throw new BoxError(`${field} must be a string without NUL`)
      if (!command.shell.startsWith("/") || !command.cwd.startsWith("/")) throw new BoxError("shell and cwd must be absolute paths")
      const viaHelper = helperChannel()
      // PWD as the launcher's `cd` left it (the shell would otherwise take the physical path).
      if (viaHelper) return viaHelper.execShell(command.shell, command.command, envFor(execOptions, { PWD: command.cwd }), command.cwd)
      return exec(shellLaunchArgv(command), execOptions)
    }

    const exec = (argv: ReadonlyArray<string>, execOptions?: ExecOptions): BoxProcess => {
      if (status !== "running") throw new BoxError(`box ${id} is not running`)
      if (!Array.isArray(argv) || argv.length === 0 || argv.some((a) => typeof a !== "string" || a.includes("\0")))
        throw new BoxError("argv must be a non-empty list of strings")
      if (argv[0]!.includes("=")) throw new BoxError("argv[0] must not contain '='")
      const env = envFor(execOptions)
      const defaultCwd = rec.spec.workingDir ?? BOX_HOME
      const cwd = execOptions?.cwd === undefined ? defaultCwd : path.posix.resolve(BOX_HOME, execOptions.cwd)
      const viaHelper = helperChannel()
      // The helper starts in the init's directory: "" = stay there (as nsenter --wd does).
      if (viaHelper) return viaHelper.exec(argv, env, cwd === defaultCwd ? "" : cwd)
      // Inside the box: a clean environment (`env -i`), and `cd` when not the init's directory.
      // The host-side tools (sh, nsenter) never see the box's variables (no LD_PRELOAD games).
      const inner = [BOX_TOOLS, "env", "-i", ...Object.entries(env).map(([k, v]) => `${k}=${v}`)]
      const command =
        cwd === defaultCwd
          ? [...inner, ...argv]
          : [BOX_TOOLS, "sh", "-c", 'cd -- "$1" || exit 126; shift; exec "$@"', "sh", cwd, ...inner, ...argv]
      const child = spawnInBox(command, ["pipe", "pipe", "pipe"], true)
      const exitedP = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
        child.once("error", () => resolve({ code: 127, signal: null }))
        child.once("exit", (code, signal) => resolve({ code, signal }))
      })
      child.stdin!.on("error", () => undefined)
      const pid = child.pid ?? -1
      return {
        pid,
        stdin: child.stdin!,
        stdout: child.stdout!,
        stderr: child.stderr!,
        kill: (signal: NodeJS.Signals = "SIGKILL") => {
          if (pid <= 0 || child.exitCode !== null || child.signalCode !== null) return
          try {
            process.kill(-pid, signal)
          } catch {
            /* already gone */
          }
        },
        exited: exitedP
      }
    }

    const forward = async (port: number, fwdOptions?: { host?: string; hostPort?: number }): Promise<Forward> => {
      if (status !== "running") throw new BoxError(`box ${id} is not running`)
      if (!Number.isInteger(port) || port < 1 || port > 65535) throw new BoxError(`invalid port ${port}`)
      const portsDir = path.join(dirOf(id), "ports")
      mkdirSync(portsDir, { recursive: true, mode: 0o700 })
      const sock = path.join(portsDir, `${port}-${process.pid}-${Date.now()}.sock`)
      // The bridge: host node in the box's network namespace only (host files, no box privileges),
      // listening on a unix socket (a path, so reachable across network namespaces) and dialing
      // 127.0.0.1:port inside the box. It exits when its stdin (our pipe) closes.
      const code = `const net=require("node:net");const [s,p]=process.argv.slice(1);` +
        `const srv=net.createServer(c=>{const u=net.connect(+p,"127.0.0.1");c.pipe(u).pipe(c);c.on("error",()=>u.destroy());u.on("error",()=>c.destroy())});` +
        `srv.listen(s,()=>process.stdout.write("ready\\n"));process.stdin.on("end",()=>process.exit(0));process.stdin.resume()`
      const bridge = spawn("/usr/bin/nsenter", ["-t", String(runRec.pid), "--net", "--", process.execPath, "-e", code, sock, String(port)], {
        env: { PATH: HOST_PATH },
        stdio: ["pipe", "pipe", "pipe"]
      })
      let bridgeErr = ""
      bridge.stderr!.on("data", (d: Buffer) => (bridgeErr += d.toString()))
      await new Promise<void>((resolve, reject) => {
        bridge.stdout!.once("data", () => resolve())
        bridge.once("exit", (c) => reject(new BoxError(`port bridge for box ${id} exited (${c}): ${bridgeErr.trim()}`)))
      })
      // Open connections, so close() ends them (server.close alone waits for every keep-alive one).
      const conns = new Set<net.Socket>()
      const server = net.createServer((c) => {
        const u = net.connect(sock)
        conns.add(c)
        c.once("close", () => conns.delete(c))
        c.pipe(u).pipe(c)
        c.on("error", () => u.destroy())
        u.on("error", () => c.destroy())
      })
      const host = fwdOptions?.host ?? "127.0.0.1"
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject)
        server.listen(fwdOptions?.hostPort ?? 0, host, () => resolve())
      })
      const address = server.address() as net.AddressInfo
      let closed: Promise<void> | undefined
      const fwd: Forward = {
        host,
        port: address.port,
        socketPath: sock,
        close: () =>
          (closed ??= (async () => {
            forwards.delete(fwd)
            const closing = new Promise<void>((r) => server.close(() => r()))
            for (const c of conns) c.destroy()
            await closing
            bridge.stdin!.end()
            if (bridge.exitCode === null) bridge.kill("SIGKILL")
            rmSync(sock, { force: true })
          })())
      }
      forwards.add(fwd)
      return fwd
    }

    const box: RunningBox = {
      id,
      spec: rec.spec,
      pid: runRec.pid,
      hostUid: rec.hostUid,
      filesystem: path.join(dirOf(id), "merged"),
      status: () => status,
      onExit: (l) => {
        listeners.add(l)
        return () => listeners.delete(l)
      },
      exited,
      stop,
      destroy: async () => {
        await stop()
        removeStateDir(id)
        log("boxes.destroyed", { id })
      },
      exec,
      execShell,
      forward
    }
    return box
  }

  const start = async (spec: BoxSpec): Promise<RunningBox> => {
    validateSpec(spec)
    const id = spec.id
    if (live.has(id) || starting.has(id)) throw new BoxError(`box ${id} is already running`)
    starting.add(id)
    try {
      const t0 = performance.now()
      const dir = dirOf(id)
      const stale = readRun(id)
      if (stale && processAlive(stale.pid, stale.startTicks)) throw new BoxError(`box ${id} is already running (attach to it)`)
      mkdirSync(dir, { recursive: true })
      chmodSync(dir, 0o711)
      if (stale) await teardown(id, stale.limitsMode)
      const previous = readRecord(id)
      const rec: BoxRecord = { spec, hostUid: previous?.hostUid ?? allocateUid(id) }
      writeFileSync(recordPath(id), JSON.stringify(rec, null, 2), { mode: 0o600 })
      let merged: string
      let procs: Array<string>
      let volumeSources: Array<string>
      try {
        merged = await prepareLayer(id, rec)
        volumeSources = await prepareVolumes(rec)
        procs = createCgroup(mode, cgroupParent, id, spec.resources ?? {})
      } catch (e) {
        await teardown(id, mode)
        throw e
      }
      const tPrepared = performance.now()
      const join = procs.map((f) => `echo $$ > ${shQuote(f)}`).join(" && ")
      const limitsPrefix = mode === "rlimit" ? ["/usr/bin/prlimit", ...rlimitArgs(spec.resources ?? {}), "--"] : []
      const child = spawn(
        "/bin/sh",
        [
          "-c",
          `${join ? join + " && " : ""}exec "$@"`,
          "sh",
          ...limitsPrefix,
          "/usr/bin/setpriv",
          `--reuid=${rec.hostUid}`,
          `--regid=${rec.hostUid}`,
          "--clear-groups",
          "/usr/bin/bwrap",
          "--args",
          "4",
          // The init says "ready" once bwrap has finished the box (mounts, pivot_root, chdir):
          // info-fd's child-pid comes before that, and nothing may join a half-built box.
          BOX_TOOLS,
          "sh",
          "-c",
          // It runs as pid 1 of the box (--as-pid-1): signals from inside the box cannot end it
          // (`kill -9 -1`, `kill 1`), and its `wait` reaps the orphans the kernel hands it.
          `trap "" HUP INT TERM QUIT; echo ready; while :; do ${BOX_TOOLS} sleep 2147483647 & wait; done`
        ],
        { detached: true, env: { PATH: HOST_PATH }, stdio: ["ignore", "pipe", "pipe", "pipe", "pipe"] }
      )
      // Arguments through a pipe: the box's /proc/1/cmdline shows no host paths.
      const argsPipe = child.stdio[4] as Writable
      argsPipe.on("error", () => undefined)
      argsPipe.end(bwrapArgs(rec, merged, volumeSources).map((a) => a + "\0").join(""))
      let stderr = ""
      child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()))
      const info = child.stdio[3] as Readable
      let infoText = ""
      info.on("data", (d: Buffer) => (infoText += d.toString()))
      let readyText = ""
      const childPid = await new Promise<number>((resolve, reject) => {
        const done = () => {
          const m = /"child-pid"\s*:\s*(\d+)/.exec(infoText)
          if (m && readyText.includes("ready\n")) {
            child.stdout!.destroy()
            resolve(Number(m[1]))
          }
        }
        info.on("data", done)
        info.once("end", done)
        child.stdout!.on("data", (d: Buffer) => {
          readyText += d.toString()
          done()
        })
        child.once("exit", (code) => {
          setTimeout(() => reject(new BoxError(`box ${id} failed to start (exit ${code}): ${stderr.trim()}`)), 10)
        })
        child.once("error", reject)
      }).catch(async (e) => {
        await teardown(id, mode)
        throw e
      })
      const startTicks = processStartTicks(childPid) ?? ""
      const runRec: RunRecord = { pid: childPid, startTicks, limitsMode: mode, ...(execHelper ? { execHelper: true } : {}) }
      writeFileSync(runPath(id), JSON.stringify(runRec), { mode: 0o600 })
      const box = makeRunning(rec, runRec, child)
      live.set(id, box)
      log("boxes.started", { id, pid: childPid, ms: Math.round(performance.now() - t0), prepareMs: Math.round(tPrepared - t0) })
      return box
    } finally {
      starting.delete(id)
    }
  }

  const attach = async (id: string): Promise<RunningBox | undefined> => {
    if (!ID.test(id)) return undefined
    const existing = live.get(id)
    if (existing) return existing
    const rec = readRecord(id)
    const runRec = readRun(id)
    if (!rec || !runRec || !processAlive(runRec.pid, runRec.startTicks)) return undefined
    const box = makeRunning(rec, runRec, undefined)
    live.set(id, box)
    log("boxes.attached", { id, pid: runRec.pid })
    return box
  }

  const recover = async () => {
    const running: Array<RunningBox> = []
    const stopped: Array<BoxSpec> = []
    for (const id of boxIds()) {
      const rec = readRecord(id)
      if (!rec) continue
      const box = await attach(id)
      if (box) {
        running.push(box)
        continue
      }
      const runRec = readRun(id)
      await teardown(id, runRec?.limitsMode ?? mode)
      stopped.push(rec.spec)
    }
    // Cgroups of boxes whose state dir is gone.
    for (const id of listCgroups(mode, cgroupParent)) if (!live.has(id) && !existsSync(dirOf(id))) await removeCgroup(mode, cgroupParent, id)
    log("boxes.recovered", { running: running.length, stopped: stopped.length })
    return { running, stopped }
  }

  return {
    limitsMode: () => mode,
    execMode: () => ("path" in helperBuild ? { mode: "helper" } : { mode: "nsenter", reason: helperBuild.error }),
    start,
    recover,
    attach,
    list: () => boxIds().flatMap((id) => (readRecord(id) ? [readRecord(id)!.spec] : [])),
    destroy: async (id: string) => {
      if (!ID.test(id)) throw new BoxError(`invalid box id ${JSON.stringify(id)}`)
      const box = live.get(id) ?? (await attach(id))
      if (box) return box.destroy()
      const runRec = readRun(id)
      await teardown(id, runRec?.limitsMode ?? mode)
      removeStateDir(id)
    }
  }
}
