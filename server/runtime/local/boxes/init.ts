/**
 * A box's cgroup and its init: `bwrap --unshare-all --as-pid-1` running a static busybox that only
 * sleeps (and reaps orphans), as the box's own unprivileged host uid, inside the box's cgroup.
 * Both are acquired in the box's scope: closing it kills the init (and with it every process of
 * the box's pid namespace), then removes the cgroup (killing whatever is left in it).
 */
import type { Readable, Writable } from "node:stream"
import { Deferred, Effect, Schedule, type Scope } from "effect"
import { BOX_TOOLS } from "../../BoxProcess.ts"
import type { ChildHandle, ProcessRunner } from "../../ProcessRunner.ts"
import { createCgroup, type LimitsMode, removeCgroup, type Resources, rlimitArgs } from "../cgroups.ts"
import { processAlive, processStartTicks } from "../host.ts"
import { BoxError, type BoxExit } from "./model.ts"
import { HOST_PATH, shQuote } from "./spec.ts"
import type { BoxRecord } from "./state.ts"

/** The init of a running box, as the runner watches it. */
export interface BoxInit {
  /** Host pid of the box's pid 1. */
  readonly pid: number
  readonly startTicks: string
  readonly exited: Effect.Effect<BoxExit>
  readonly isRunning: () => boolean
}

/** The box's cgroup with its limits written, removed when the scope closes; answers the `cgroup.procs` files to join. */
export const acquireCgroup = (mode: LimitsMode, parent: string, id: string, resources: Resources): Effect.Effect<ReadonlyArray<string>, BoxError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({
      try: () => createCgroup(mode, parent, id, resources),
      catch: (error) => new BoxError({ message: `box ${id}: cgroup: ${(error as Error)?.message ?? String(error)}` })
    }),
    () => removeCgroup(mode, parent, id)
  )

/** The command that joins the cgroups (or takes the rlimits) and then execs `"$@"`. */
export const joinLimits = (procs: ReadonlyArray<string>, mode: LimitsMode, record: BoxRecord, extra = ""): ReadonlyArray<string> => {
  const join = procs.map((f) => `echo $$ > ${shQuote(f)}`)
  const script = [...join, ...(extra ? [extra] : []), 'exec "$@"'].join(" && ")
  const limitsPrefix = mode === "rlimit" ? ["/usr/bin/prlimit", ...rlimitArgs(record.spec.resources ?? {}), "--"] : []
  return ["/bin/sh", "-c", script, "sh", ...limitsPrefix]
}

const waitDead = (pid: number, startTicks: string) =>
  Effect.sync(() => processAlive(pid, startTicks)).pipe(Effect.repeat({ schedule: Schedule.spaced("5 millis").pipe(Schedule.upTo({ duration: "5 seconds" })), while: (alive) => alive }))

/** SIGKILL to `pid` if it is still the process that started at `startTicks`. */
const killPid = (pid: number, startTicks: string) =>
  Effect.sync(() => {
    if (!processAlive(pid, startTicks)) return
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      /* gone */
    }
  })

/** Starts the init of a box whose filesystem is `merged` (bwrap's arguments `args`) in its cgroup; it runs until the scope closes. */
export const startInit = (options: {
  readonly runner: ProcessRunner["Service"]
  readonly record: BoxRecord
  readonly mode: LimitsMode
  readonly procs: ReadonlyArray<string>
  readonly bwrapArgs: ReadonlyArray<string>
}): Effect.Effect<BoxInit, BoxError, Scope.Scope> =>
  Effect.gen(function* () {
    const { record } = options
    const id = record.spec.id
    const argv = [
      ...joinLimits(options.procs, options.mode, record),
      "/usr/bin/setpriv",
      `--reuid=${record.hostUid}`,
      `--regid=${record.hostUid}`,
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
    ]
    const child = yield* options.runner
      .spawn(argv, { cleanEnv: true, env: { PATH: HOST_PATH }, stdio: ["ignore", "pipe", "pipe", "pipe", "pipe"], killSignal: "SIGKILL" })
      .pipe(Effect.mapError((error) => new BoxError({ message: `box ${id} failed to start: ${error.message}` })))
    // Arguments through a pipe: the box's /proc/1/cmdline shows no host paths.
    const argsPipe = child.stdio[4] as Writable
    argsPipe.on("error", () => undefined)
    argsPipe.end(options.bwrapArgs.map((a) => a + "\0").join(""))
    let stderr = ""
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()))
    const pid = yield* Effect.raceFirst(
      childPidWhenReady(child),
      Effect.flatMap(child.exited, (exit) =>
        // A moment for the last of its stderr.
        Effect.andThen(Effect.sleep("10 millis"), Effect.fail(new BoxError({ message: `box ${id} failed to start (exit ${exit.code ?? exit.signal}): ${stderr.trim()}` })))
      )
    )
    return yield* watchInit(child, pid)
  })

/**
 * The init `pid` of a box whose host side is `child` (bwrap, or `runsc run`, which exits with its
 * sandbox): closing the scope kills the init (the child then exits), expected; an init that dies
 * on its own (OOM, killed from the host) ends the box unexpectedly.
 */
export const watchInit = (child: ChildHandle, pid: number): Effect.Effect<BoxInit, never, Scope.Scope> =>
  Effect.gen(function* () {
    const startTicks = processStartTicks(pid) ?? ""
    const exit = Deferred.makeUnsafe<BoxExit>()
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        yield* killPid(pid, startTicks)
        const status = yield* Effect.timeoutOption(child.exited, "5 seconds")
        yield* Deferred.succeed(exit, { code: status._tag === "Some" ? status.value.code : null, signal: "SIGKILL", expected: true })
      })
    )
    yield* Effect.forkScoped(Effect.flatMap(child.exited, (status) => Deferred.succeed(exit, { ...status, expected: false })))
    return { pid, startTicks, exited: Deferred.await(exit), isRunning: () => !Deferred.isDoneUnsafe(exit) }
  })

/** The pid of the box's init (bwrap's info fd) once the init has said "ready". */
const childPidWhenReady = (child: ChildHandle) =>
  Effect.callback<number>((resume) => {
    const info = child.stdio[3] as Readable
    let infoText = ""
    let readyText = ""
    let done = false
    const check = () => {
      const m = /"child-pid"\s*:\s*(\d+)/.exec(infoText)
      if (done || !m || !readyText.includes("ready\n")) return
      done = true
      child.stdout!.destroy()
      resume(Effect.succeed(Number(m[1])))
    }
    info.on("data", (d: Buffer) => {
      infoText += d.toString()
      check()
    })
    info.once("end", check)
    child.stdout!.on("data", (d: Buffer) => {
      readyText += d.toString()
      check()
    })
  })

/** The init of a box a previous server process started (no child of ours): watched through /proc; ended when the scope closes. */
export const adoptInit = (pid: number, startTicks: string): Effect.Effect<BoxInit, never, Scope.Scope> =>
  Effect.gen(function* () {
    const exit = Deferred.makeUnsafe<BoxExit>()
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        yield* killPid(pid, startTicks)
        yield* waitDead(pid, startTicks)
        yield* Deferred.succeed(exit, { code: null, signal: "SIGKILL", expected: true })
      })
    )
    yield* Effect.forkScoped(
      Effect.sync(() => processAlive(pid, startTicks)).pipe(
        Effect.repeat({ schedule: Schedule.spaced("250 millis"), while: (alive) => alive }),
        Effect.andThen(Deferred.succeed(exit, { code: null, signal: null, expected: false }))
      )
    )
    return { pid, startTicks, exited: Deferred.await(exit), isRunning: () => !Deferred.isDoneUnsafe(exit) }
  })

/** Ends an init left by a previous process (no scope owns it): killed, and waited for. */
export const endInit = (pid: number, startTicks: string) => Effect.andThen(killPid(pid, startTicks), waitDead(pid, startTicks))
