/**
 * The box runner of the local runtime: boxes under bubblewrap.
 *
 * A box = an image rootfs (read-only) + its own writable layer (kernel overlayfs; upper/work on a
 * per-box ext4 image loop-mounted, so `storageBytes` is a hard cap) + new user, mount, pid, ipc,
 * uts, net and cgroup namespaces (`bwrap --unshare-all`) + a cgroup with its limits. Box root is an
 * unprivileged host uid of its own (bwrap runs under `setpriv --reuid`), so even a process that got
 * out of every namespace would hold no host privilege. An init (`busybox sleep`) keeps the
 * namespaces alive; commands join them through the box's exec helper (or `nsenter`).
 * See docs/runtime-isolation.md and docs/runtime-local.md.
 *
 * A running box lives in a `Scope`: `start` acquires each part (the layer's loop mount, the
 * id-mapped image and volumes, the overlay, the cgroup, the init, the exec helper) with its release
 * registered right after it succeeds, so closing the scope (a stop, an interruption, a failure
 * half-way) undoes exactly what was done, in reverse order. The box's files stay on disk until
 * `destroy`.
 */
import { chmodSync, existsSync, mkdirSync, rmSync } from "node:fs"
import path from "node:path"
import { Context, Effect, Layer, type Scope } from "effect"
import { ServerEnv } from "../../module.ts"
import { ProcessRunner } from "../ProcessRunner.ts"
import { acquireFilesystem } from "./boxes/filesystem.ts"
import { forwardPort } from "./boxes/forward.ts"
import { acquireCgroup, adoptInit, type BoxInit, endInit, startInit } from "./boxes/init.ts"
import { makeBoxCommands } from "./boxes/exec.ts"
import { BoxError, type BoxSpec, type LimitsMode, type RunningBox } from "./boxes/model.ts"
import { bwrapArgs, ID, validateSpec } from "./boxes/spec.ts"
import { type BoxRecord, makeBoxState } from "./boxes/state.ts"
import { cgroupDirs, detectLimitsMode, listCgroups, removeCgroup, removeCgroupParent } from "./cgroups.ts"
import { buildExecHelper } from "./execHelper.ts"
import { missingTools, processAlive, unsearchableAncestor } from "./host.ts"
import { RuntimeRoot } from "./RuntimeRoot.ts"
import { hostCommands, mountsUnder } from "./mounts.ts"
import { hostTools, hostToolsSummary } from "./tools.ts"

export * from "./boxes/model.ts"

export class BoxRunner extends Context.Service<
  BoxRunner,
  {
    readonly limitsMode: LimitsMode
    /** How exec runs commands: "helper" (the per-box exec helper) or "nsenter" (a host spawn per command, with why). */
    readonly execMode: { readonly mode: "helper" | "nsenter"; readonly reason?: string }
    /** Starts a box; it runs until the scope closes, which ends it and keeps its files. */
    readonly start: (spec: BoxSpec) => Effect.Effect<RunningBox, BoxError, Scope.Scope>
    /** Adopts box `id` when its init still runs (left by a previous server process); it then runs until the scope closes. */
    readonly attach: (id: string) => Effect.Effect<RunningBox | undefined, BoxError, Scope.Scope>
    /**
     * After a restart: cleans what boxes that are no longer running left (mounts, cgroups, loop
     * devices) and answers which boxes on disk still run (to `attach` or end) and which are stopped.
     */
    readonly recover: Effect.Effect<{ readonly running: ReadonlyArray<BoxSpec>; readonly stopped: ReadonlyArray<BoxSpec> }, BoxError>
    /** Stored specs of every box on disk (running or not). */
    readonly list: Effect.Effect<ReadonlyArray<BoxSpec>>
    /** Frees the disk of a box that is not running here (one a previous process left running is ended first). */
    readonly destroy: (id: string) => Effect.Effect<void, BoxError>
  }
>()("slipway/BoxRunner") {}

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
  /**
   * Where the host ends of its port bridges' unix sockets go (default `<root>/.sockets`): a
   * short directory, since a socket path has at most 107 bytes (the runtime's `sockets`).
   */
  readonly socketDir?: string
}

const failure = (message: string) => new BoxError({ message })

export const makeBoxRunner = (options: BoxRunnerOptions): Effect.Effect<BoxRunner["Service"], BoxError, ProcessRunner> =>
  Effect.gen(function* () {
    const runner = yield* ProcessRunner
    const busybox = options.busybox ?? "/bin/busybox"
    const missing = missingTools(["/usr/bin/bwrap", "/usr/bin/nsenter", "/usr/bin/setpriv", "/usr/bin/prlimit", "/usr/bin/unshare", "/usr/bin/perl", "/usr/sbin/mkfs.ext4", "/usr/bin/mount", "/bin/sh", busybox])
    if (missing) return yield* failure(missing)
    const root = path.resolve(options.root)
    if (/[,:\\\s]/.test(root)) return yield* failure(`box state dir ${root} must not contain ',', ':', '\\' or spaces (overlayfs options)`)
    const log = options.log ?? (() => undefined)
    const cgroupParent = options.cgroupParent ?? "slipway-boxes"
    const socketDir = options.socketDir ?? path.join(root, ".sockets")
    if (!ID.test(cgroupParent)) return yield* failure(`invalid cgroupParent ${JSON.stringify(cgroupParent)}`)
    if (process.getuid?.() !== 0) return yield* failure("the box runner needs root (mounts, cgroups, uid mapping)")
    mkdirSync(root, { recursive: true })
    chmodSync(root, 0o711)
    const blocked = unsearchableAncestor(root)
    if (blocked) return yield* failure(`box state dir ${root}: ancestor ${blocked} must be searchable by others (chmod o+x)`)
    const mode: LimitsMode = options.limits === "rlimit" ? "rlimit" : detectLimitsMode(cgroupParent)
    log("boxes.limits", { mode })
    const helperBuild =
      options.execHelper === false ? { error: "disabled" } : options.execHelper !== undefined ? { path: options.execHelper } : yield* buildExecHelper(runner, path.join(root, ".tools"))
    const execHelper = "path" in helperBuild ? helperBuild.path : undefined
    if (execHelper) {
      const absent = missingTools([execHelper])
      if (absent) return yield* failure(absent)
    }
    log("boxes.exec_helper", "path" in helperBuild ? { path: helperBuild.path } : { unavailable: helperBuild.error })

    const host = hostCommands(runner)
    const state = makeBoxState(root)
    const idmap: { works: boolean | undefined } = { works: undefined }
    /** Boxes being started or running in this runner (started or adopted), by id. */
    const claimed = new Set<string>()

    /** Unmounts what a box that is not running left (mounts, loop device, cgroup, run record); idempotent. */
    const teardownLeftovers = (id: string, limits: LimitsMode) =>
      Effect.all([removeCgroup(limits, cgroupParent, id), host.unmountAll(state.dirOf(id)), host.detachLoops(path.join(state.dirOf(id), "layer.img")), Effect.sync(() => state.removeRun(id))], {
        discard: true
      })

    /** Holds `id` for the current scope: one start (or adoption) of a box at a time, and none of a box running here. */
    const claim = (id: string) =>
      Effect.acquireRelease(
        Effect.suspend(() => (claimed.has(id) ? Effect.fail(failure(`box ${id} is already running`)) : Effect.sync(() => void claimed.add(id)))),
        () => Effect.sync(() => void claimed.delete(id))
      )

    /** The running box over its init, in the current scope (the box's). */
    const running = (record: BoxRecord, init: BoxInit, limits: LimitsMode, helper: boolean) =>
      Effect.gen(function* () {
        const id = record.spec.id
        const scope = yield* Effect.scope
        const commands = makeBoxCommands({
          runner,
          record,
          pid: init.pid,
          mode: limits,
          procs: cgroupDirs(limits, cgroupParent, id).map((d) => path.join(d, "cgroup.procs")),
          helper: helper && execHelper !== undefined,
          isRunning: init.isRunning,
          scope,
          log
        })
        const box: RunningBox = {
          id,
          spec: record.spec,
          pid: init.pid,
          hostUid: record.hostUid,
          filesystem: path.join(state.dirOf(id), "merged"),
          exited: init.exited,
          isRunning: init.isRunning,
          exec: commands.exec,
          execShell: commands.execShell,
          execInto: commands.execInto,
          forward: (port, forwardOptions) =>
            Effect.suspend(() =>
              init.isRunning()
                ? forwardPort({ runner, id, pid: init.pid, socketDir, port, host: forwardOptions?.host, hostPort: forwardOptions?.hostPort })
                : Effect.fail(failure(`box ${id} is not running`))
            )
        }
        yield* Effect.addFinalizer(() => Effect.sync(() => log("boxes.exited", { id })))
        return box
      })

    const start = (spec: BoxSpec): Effect.Effect<RunningBox, BoxError, Scope.Scope> =>
      Effect.gen(function* () {
        yield* validateSpec(spec)
        const id = spec.id
        yield* claim(id)
        const t0 = performance.now()
        const dir = state.dirOf(id)
        const stale = state.readRun(id)
        if (stale && processAlive(stale.pid, stale.startTicks)) return yield* failure(`box ${id} is already running (attach to it)`)
        mkdirSync(dir, { recursive: true })
        chmodSync(dir, 0o711)
        if (stale || mountsUnder(dir).length > 0) yield* teardownLeftovers(id, stale?.limitsMode ?? mode)
        const previous = state.readRecord(id)
        const record: BoxRecord = { spec, hostUid: previous?.hostUid ?? (yield* Effect.try({ try: () => state.allocateUid(id), catch: (error) => failure((error as Error).message) })) }
        state.writeRecord(record)
        const fs = yield* acquireFilesystem({ host, dirOf: state.dirOf, execHelper, idmap, log }, record)
        const procs = yield* acquireCgroup(mode, cgroupParent, record)
        const tPrepared = performance.now()
        // The run record goes after the init is gone (a crash in between leaves a record of a dead init: cleaned at the next start).
        yield* Effect.addFinalizer(() => Effect.sync(() => state.removeRun(id)))
        const init = yield* startInit({
          runner,
          record,
          mode,
          procs,
          bwrapArgs: bwrapArgs({ spec, merged: fs.merged, volumeSources: fs.volumeSources, busybox, execHelper })
        })
        state.writeRun(id, { pid: init.pid, startTicks: init.startTicks, limitsMode: mode, ...(execHelper ? { execHelper: true } : {}) })
        const box = yield* running(record, init, mode, execHelper !== undefined)
        log("boxes.started", { id, pid: init.pid, ms: Math.round(performance.now() - t0), prepareMs: Math.round(tPrepared - t0) })
        return box
      }).pipe(Effect.catchDefect((defect) => Effect.fail(failure(`box ${spec?.id}: ${(defect as Error)?.message ?? String(defect)}`))))

    const attach = (id: string): Effect.Effect<RunningBox | undefined, BoxError, Scope.Scope> =>
      Effect.gen(function* () {
        if (!ID.test(id)) return undefined
        const record = state.readRecord(id)
        const run = state.readRun(id)
        if (!record || !run || !processAlive(run.pid, run.startTicks)) return undefined
        yield* claim(id)
        // What the previous process mounted is undone once the init is gone.
        yield* Effect.addFinalizer(() => teardownLeftovers(id, run.limitsMode))
        const init = yield* adoptInit(run.pid, run.startTicks)
        log("boxes.attached", { id, pid: run.pid })
        return yield* running(record, init, run.limitsMode, run.execHelper === true)
      })

    const recover = Effect.gen(function* () {
      const runningSpecs: Array<BoxSpec> = []
      const stopped: Array<BoxSpec> = []
      for (const id of state.boxIds()) {
        const record = state.readRecord(id)
        if (!record || claimed.has(id)) continue
        const run = state.readRun(id)
        if (run && processAlive(run.pid, run.startTicks)) {
          runningSpecs.push(record.spec)
          continue
        }
        yield* teardownLeftovers(id, run?.limitsMode ?? mode)
        stopped.push(record.spec)
      }
      // Cgroups of boxes whose state dir is gone.
      for (const id of listCgroups(mode, cgroupParent)) if (!claimed.has(id) && !existsSync(state.dirOf(id))) yield* removeCgroup(mode, cgroupParent, id)
      log("boxes.recovered", { running: runningSpecs.length, stopped: stopped.length })
      return { running: runningSpecs, stopped }
    })

    const destroy = (id: string) =>
      Effect.gen(function* () {
        if (!ID.test(id)) return yield* failure(`invalid box id ${JSON.stringify(id)}`)
        if (claimed.has(id)) return yield* failure(`box ${id} is running: stop it before freeing its disk`)
        const run = state.readRun(id)
        if (run) yield* endInit(run.pid, run.startTicks)
        yield* teardownLeftovers(id, run?.limitsMode ?? mode)
        // Never while anything (an id-mapped volume!) is still mounted in it.
        const still = mountsUnder(state.dirOf(id))
        if (still.length > 0) return yield* failure(`box ${id}: ${still.map((m) => m.mountPoint).join(", ")} still mounted; not deleting`)
        rmSync(state.dirOf(id), { recursive: true, force: true })
        log("boxes.destroyed", { id })
      })

    return BoxRunner.of({
      limitsMode: mode,
      execMode: "path" in helperBuild ? { mode: "helper" } : { mode: "nsenter", reason: helperBuild.error },
      start,
      attach,
      recover,
      list: Effect.sync(() => state.boxIds().flatMap((id) => {
        const record = state.readRecord(id)
        return record ? [record.spec] : []
      })),
      destroy
    })
  })

/**
 * The box runner of the runtime: `<runtime root>/boxes`, its boxes under the runtime's cgroup
 * parent. `SLIPWAY_EXEC_HELPER=off`: every exec spawns nsenter from the server. When the layer
 * stops, what boxes left behind (mounts, cgroups) is cleaned, their files stay, and the
 * runtime's parent cgroups go once empty. Port bridges' sockets are in the runtime's `sockets`.
 */
export const BoxRunnerLive = Layer.effect(
  BoxRunner,
  Effect.gen(function* () {
    const { root, cgroupParent, sockets } = yield* RuntimeRoot
    const { log } = yield* ServerEnv
    const boxes = yield* makeBoxRunner({
      root: path.join(root, "boxes"),
      cgroupParent,
      socketDir: sockets,
      log: (event, detail) => log.debug(event, detail),
      ...(process.env.SLIPWAY_EXEC_HELPER === "off" ? { execHelper: false as const } : {})
    })
    const exec = boxes.execMode
    log.info("local runtime", { root, host: hostToolsSummary(hostTools()), limits: boxes.limitsMode, exec: exec.reason ? `${exec.mode} (${exec.reason})` : exec.mode })
    yield* Effect.addFinalizer(() =>
      boxes.recover.pipe(
        // Then the runtime's parent cgroups, once empty (a box still running keeps them).
        Effect.andThen(Effect.sync(() => removeCgroupParent(boxes.limitsMode, cgroupParent))),
        Effect.catch((error) => Effect.sync(() => log.warn("local runtime cleanup failed", { error: error.message })))
      )
    )
    return boxes
  }).pipe(Effect.orDie)
)
