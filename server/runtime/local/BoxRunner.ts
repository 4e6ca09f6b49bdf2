/**
 * The box runner of the local runtime: boxes under bubblewrap, or under gVisor (`runsc`) when
 * their spec asks for it (`isolation: "gvisor"`, boxes/gvisor.ts).
 *
 * A box = an image rootfs (read-only) + its own writable layer (kernel overlayfs; upper/work on a
 * per-box ext4 image loop-mounted, so `storageBytes` is a hard cap) + new user, mount, pid, ipc,
 * uts, net and cgroup namespaces (`bwrap --unshare-all`) + a cgroup with its limits. Box root is an
 * unprivileged host uid of its own (bwrap runs under `setpriv --reuid`), so even a process that got
 * out of every namespace would hold no host privilege. An init (`busybox sleep`) keeps the
 * namespaces alive; commands join them through the box's exec helper (or `nsenter`).
 * See docs/runtime-isolation.md and docs/runtime-local.md.
 *
 * Under gVisor the same filesystem, cgroup and state are the box's; its init is a gVisor sandbox
 * whose pid 1 is the exec helper.
 *
 * A running box lives in a `Scope`: `start` acquires each part (the layer's loop mount, the
 * id-mapped image and volumes, the overlay, the cgroup, the init, the exec helper) with its release
 * registered right after it succeeds, so closing the scope (a stop, an interruption, a failure
 * half-way) undoes exactly what was done, in reverse order. The box's files stay on disk until
 * `destroy`.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync } from "node:fs"
import type { Duplex } from "node:stream"
import path from "node:path"
import { Context, Effect, Layer, type Scope } from "effect"
import { ServerEnv } from "../../module.ts"
import { BOX_TOOLS, type BoxProcess } from "../BoxProcess.ts"
import { ProcessRunner } from "../ProcessRunner.ts"
import { acquireFilesystem } from "./boxes/filesystem.ts"
import { forwardPort } from "./boxes/forward.ts"
import { DEFAULT_GVISOR, deleteSandbox, execHelperIn, type Gvisor, type GvisorSettings, gvisorLimitsProblem, gvisorResources, gvisorToolsDir, ociConfig, platformProblem, runscArgv, startSandbox } from "./boxes/gvisor.ts"
import { acquireCgroup, adoptInit, type BoxInit, endInit, startInit } from "./boxes/init.ts"
import { helperChannelOver, makeBoxCommands, spawnInBox } from "./boxes/exec.ts"
import { BoxError, type BoxSpec, type Isolation, type LimitsMode, type RunningBox } from "./boxes/model.ts"
import { bwrapArgs, ID, validateSpec } from "./boxes/spec.ts"
import { type BoxRecord, makeBoxState } from "./boxes/state.ts"
import { cgroupDirs, detectLimitsMode, listCgroups, removeCgroup, removeCgroupParent } from "./cgroups.ts"
import { EXEC_HELPER, buildExecHelper, type HelperChannel } from "./execHelper.ts"
import { listensOn, missingTools, processAlive, unsearchableAncestor } from "./host.ts"
import { type IsolationSetting, isolationSettingsFromEnv, type ResolvedIsolation, resolveIsolation } from "./isolation.ts"
import { RuntimeRoot } from "./RuntimeRoot.ts"
import { hostCommands, mountsUnder } from "./mounts.ts"
import { hostTools, hostToolsSummary } from "./tools.ts"

export * from "./boxes/model.ts"

export class BoxRunner extends Context.Service<
  BoxRunner,
  {
    readonly limitsMode: LimitsMode
    /** The isolations this runner can start boxes under. */
    readonly isolations: ReadonlyArray<Isolation>
    /** Why gVisor cannot run here (undefined: it can). */
    readonly gvisorProblem: string | undefined
    /** The isolation of each area's boxes (its setting, `auto` resolved) and why: what the drivers put in their specs. */
    readonly isolationOf: { readonly sandboxes: ResolvedIsolation; readonly deployments: ResolvedIsolation }
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
   * gVisor for the boxes whose spec asks for it: runsc's settings (runsc itself at /usr/bin/runsc
   * unless given), or false: bwrap only. Default: the default settings, where runsc can run.
   */
  readonly gvisor?: (Partial<GvisorSettings> & { readonly runsc?: string }) | false
  /** Each area's isolation setting (default bwrap for both); `gvisor` fails here when gVisor cannot run. */
  readonly isolation?: { readonly sandboxes?: IsolationSetting; readonly deployments?: IsolationSetting }
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
    const settings = { ...DEFAULT_GVISOR, ...(options.gvisor || {}) }
    const runsc = (options.gvisor && options.gvisor.runsc) || "/usr/bin/runsc"
    const gvisorProblem =
      options.gvisor === false
        ? "gVisor is disabled for this runner"
        : !existsSync(runsc)
          ? `${runsc} is missing (install the Debian package runsc)`
          : (gvisorLimitsProblem(mode) ??
            (execHelper === undefined ? `its pid 1 is the exec helper, which is unavailable (${"error" in helperBuild ? helperBuild.error : "?"})` : undefined) ??
            (yield* platformProblem(runner, runsc, settings.platform)))
    const gvisor: Gvisor | undefined = gvisorProblem === undefined ? { ...settings, runsc, stateRoot: path.join(root, ".runsc") } : undefined
    if (gvisor) mkdirSync(gvisor.stateRoot, { recursive: true, mode: 0o700 })
    // gVisor boxes bind the busybox and the helper from a directory of the runner's own (each box
    // sees it through a read-only mount of its own): never a host file itself.
    const gvisorTools = gvisor ? yield* Effect.try({ try: () => gvisorToolsDir(path.join(root, ".tools", "box"), busybox, execHelper!), catch: (error) => failure(`gVisor tools: ${(error as Error).message}`) }) : undefined
    const resolve = (variable: string, setting: IsolationSetting | undefined) => {
      const resolved = resolveIsolation(variable, setting ?? "bwrap", gvisorProblem)
      return "error" in resolved ? Effect.fail(failure(resolved.error)) : Effect.succeed(resolved)
    }
    const isolationOf = {
      sandboxes: yield* resolve("SLIPWAY_SANDBOX_ISOLATION", options.isolation?.sandboxes),
      deployments: yield* resolve("SLIPWAY_DEPLOYMENT_ISOLATION", options.isolation?.deployments)
    }
    log("boxes.isolation", { sandboxes: isolationOf.sandboxes, deployments: isolationOf.deployments, ...(gvisor ? { gvisor: runscArgv(gvisor).join(" ") } : { gvisorProblem }) })

    const host = hostCommands(runner)
    const state = makeBoxState(root)
    const idmap: { works: boolean | undefined } = { works: undefined }
    /** Boxes being started or running in this runner (started or adopted), by id. */
    const claimed = new Set<string>()

    /** Unmounts what a box that is not running left (runsc's state of it, mounts, loop device, cgroup, run record); idempotent. */
    const teardownLeftovers = (id: string, limits: LimitsMode) =>
      Effect.andThen(
        gvisor ? deleteSandbox(runner, gvisor, id) : Effect.void,
        Effect.all([removeCgroup(limits, cgroupParent, id), host.unmountAll(state.dirOf(id)), host.detachLoops(path.join(state.dirOf(id), "layer.img")), Effect.sync(() => state.removeRun(id))], {
          discard: true
        })
      )

    /** Holds `id` for the current scope: one start (or adoption) of a box at a time, and none of a box running here. */
    const claim = (id: string) =>
      Effect.acquireRelease(
        Effect.suspend(() => (claimed.has(id) ? Effect.fail(failure(`box ${id} is already running`)) : Effect.sync(() => void claimed.add(id)))),
        () => Effect.sync(() => void claimed.delete(id))
      )

    /** Runs argv in the box to its end: its stdout (what a box tells the runner: nothing big). */
    const output = (exec: Effect.Effect<BoxProcess, BoxError, Scope.Scope>) =>
      Effect.scoped(
        Effect.flatMap(exec, (process) => {
          let text = ""
          process.stdin.end()
          process.stderr.resume()
          process.stdout.on("data", (d: Buffer) => (text = (text + d.toString()).slice(-1_000_000)))
          return Effect.map(Effect.andThen(process.exited, Effect.callback<void>((resume) => (process.stdout.readableEnded ? resume(Effect.void) : void process.stdout.once("close", () => resume(Effect.void))))), () => text)
        })
      )

    /** The running box over its init, in the current scope (the box's). */
    const running = (record: BoxRecord, init: BoxInit, limits: LimitsMode, isolation: Isolation, helper: { readonly bound: boolean; readonly initial?: HelperChannel }) =>
      Effect.gen(function* () {
        const id = record.spec.id
        const scope = yield* Effect.scope
        const procs = cgroupDirs(limits, cgroupParent, id).map((d) => path.join(d, "cgroup.procs"))
        const dir = state.dirOf(id)
        const inBox = { runner, record, pid: init.pid, mode: limits, procs }
        // A new helper: under gVisor through `runsc exec`; under bwrap started inside the box through nsenter.
        const startHelper =
          !helper.bound || execHelper === undefined
            ? undefined
            : isolation === "gvisor"
              ? execHelperIn({ runner, gvisor: gvisor!, id, dir, isRunning: init.isRunning, log })
              : Effect.gen(function* () {
                  const child = yield* spawnInBox(inBox, [EXEC_HELPER], ["ignore", "ignore", "pipe", "pipe"], false, true)
                  let stderr = ""
                  child.stderr!.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)))
                  return yield* helperChannelOver({ socket: child.stdio[3] as Duplex, id, isRunning: init.isRunning, log, stderr: () => stderr, stop: () => child.kill("SIGKILL") })
                })
        const commands = makeBoxCommands({
          ...inBox,
          enterable: isolation === "bwrap",
          startHelper,
          initialHelper: helper.initial,
          socketDir,
          isRunning: init.isRunning,
          scope,
          log
        })
        const box: RunningBox = {
          id,
          spec: record.spec,
          isolation,
          pid: init.pid,
          hostUid: record.hostUid,
          filesystem: path.join(dir, "merged"),
          exited: init.exited,
          isRunning: init.isRunning,
          exec: commands.exec,
          execShell: commands.execShell,
          ...(commands.execInto ? { execInto: commands.execInto } : {}),
          connect: commands.connect,
          listen: commands.listen,
          forward: (port, forwardOptions) =>
            Effect.suspend(() =>
              init.isRunning()
                ? forwardPort({ connect: commands.connect, id, socketDir, port, host: forwardOptions?.host, hostPort: forwardOptions?.hostPort })
                : Effect.fail(failure(`box ${id} is not running`))
            ),
          // The box's own TCP table: bwrap's network namespace seen through its init, gVisor's network stack read inside.
          listening: (port) =>
            isolation === "gvisor"
              ? output(commands.exec([BOX_TOOLS, "cat", "/proc/net/tcp", "/proc/net/tcp6"])).pipe(
                  Effect.map((tables) => listensOn(tables, port)),
                  Effect.orElseSucceed(() => false)
                )
              : Effect.sync(() => {
                  const read = (file: string) => {
                    try {
                      return readFileSync(`/proc/${init.pid}/net/${file}`, "utf8")
                    } catch {
                      return ""
                    }
                  }
                  return listensOn(read("tcp") + read("tcp6"), port)
                })
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
        const isolation = spec.isolation ?? "bwrap"
        if (isolation === "gvisor") {
          if (!gvisor) return yield* failure(`box ${id}: gVisor cannot run here: ${gvisorProblem}`)
        }
        const previous = state.readRecord(id)
        const hostUid = previous?.hostUid ?? (yield* Effect.try({ try: () => state.allocateUid(id), catch: (error) => failure((error as Error).message) }))
        // The layer keeps its previous isolation's owners until the filesystem has converted them.
        const before = previous ? (previous.isolation ?? "bwrap") : isolation
        const record: BoxRecord = { spec, hostUid, isolation }
        state.writeRecord({ ...record, isolation: before })
        const fs = yield* acquireFilesystem({ host, dirOf: state.dirOf, execHelper, gvisorTools, idmap, log }, record, { isolation, previous: before })
        state.writeRecord(record)
        const procs = yield* acquireCgroup(mode, cgroupParent, id, isolation === "gvisor" ? gvisorResources(spec.resources ?? {}) : (spec.resources ?? {}))
        const tPrepared = performance.now()
        // The run record goes after the init is gone (a crash in between leaves a record of a dead init: cleaned at the next start).
        yield* Effect.addFinalizer(() => Effect.sync(() => state.removeRun(id)))
        const { init, helper } =
          isolation === "gvisor"
            ? yield* startSandbox({
                runner,
                gvisor: gvisor!,
                spec,
                dir,
                config: ociConfig({ spec, merged: fs.merged, volumeSources: fs.volumeSources, tools: fs.tools!, cgroupsPath: `/${cgroupParent}/${id}` }),
                log
              })
            : {
                init: yield* startInit({ runner, record, mode, procs, bwrapArgs: bwrapArgs({ spec, merged: fs.merged, volumeSources: fs.volumeSources, busybox, execHelper }) }),
                helper: undefined
              }
        state.writeRun(id, { pid: init.pid, startTicks: init.startTicks, limitsMode: mode, ...(execHelper ? { execHelper: true } : {}), ...(isolation === "gvisor" ? { isolation } : {}) })
        const box = yield* running(record, init, mode, isolation, { bound: execHelper !== undefined, initial: helper })
        log("boxes.started", { id, isolation, pid: init.pid, ms: Math.round(performance.now() - t0), prepareMs: Math.round(tPrepared - t0) })
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
        const isolation = run.isolation ?? "bwrap"
        if (isolation === "gvisor" && !gvisor) return yield* failure(`box ${id} runs under gVisor, which cannot run here: ${gvisorProblem}`)
        const init = yield* adoptInit(run.pid, run.startTicks)
        log("boxes.attached", { id, isolation, pid: run.pid })
        return yield* running(record, init, run.limitsMode, isolation, { bound: run.execHelper === true })
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
      isolations: gvisor ? ["bwrap", "gvisor"] : ["bwrap"],
      gvisorProblem,
      isolationOf,
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
    const settings = isolationSettingsFromEnv(process.env)
    const boxes = yield* makeBoxRunner({
      root: path.join(root, "boxes"),
      cgroupParent,
      socketDir: sockets,
      log: (event, detail) => log.debug(event, detail),
      ...(process.env.SLIPWAY_EXEC_HELPER === "off" ? { execHelper: false as const } : {}),
      gvisor: settings.gvisor,
      isolation: { sandboxes: settings.sandboxes, deployments: settings.deployments }
    })
    const exec = boxes.execMode
    const { sandboxes, deployments } = boxes.isolationOf
    log.info("local runtime", {
      root,
      host: hostToolsSummary(hostTools()),
      limits: boxes.limitsMode,
      exec: exec.reason ? `${exec.mode} (${exec.reason})` : exec.mode,
      sandboxes: `${sandboxes.isolation} (${sandboxes.why})`,
      deployments: `${deployments.isolation} (${deployments.why})`,
      ...(boxes.isolations.includes("gvisor") ? { gvisor: `--platform=${settings.gvisor.platform} --file-access=${settings.gvisor.fileAccess}` } : {})
    })
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
