/**
 * Commands in a running box. Through the box's exec helper (started inside the box on the first
 * command, then one fork in the box per command), or, without it, a host spawn per command
 * (`nsenter --all` after joining the box's cgroups). Every command lives in the caller's scope:
 * it is killed when the scope closes. The helper lives in the box's scope.
 */
import path from "node:path"
import { type Duplex, Readable, type Stream, Writable } from "node:stream"
import { Effect, Scope } from "effect"
import { BOX_HOME, BOX_TOOLS, type BoxProcess, type ExecOptions, type ShellCommand, shellLaunchArgv } from "../../BoxProcess.ts"
import type { ProcessRunner, SpawnOptions } from "../../ProcessRunner.ts"
import type { LimitsMode } from "../cgroups.ts"
import { EXEC_HELPER, type HelperChannel, makeHelperChannel } from "../execHelper.ts"
import { joinLimits } from "./init.ts"
import { BoxError } from "./model.ts"
import { DEFAULT_PATH, HOST_PATH } from "./spec.ts"
import type { BoxRecord } from "./state.ts"

export interface BoxCommands {
  readonly exec: (argv: ReadonlyArray<string>, options?: ExecOptions) => Effect.Effect<BoxProcess, BoxError, Scope.Scope>
  readonly execShell: (command: ShellCommand, options?: ExecOptions) => Effect.Effect<BoxProcess, BoxError, Scope.Scope>
  readonly execInto: (argv: ReadonlyArray<string>, sink: Stream, options?: ExecOptions) => Effect.Effect<BoxProcess, BoxError, Scope.Scope>
}

/** A relay's stdin that takes nothing, and a stdout that has nothing: what an `execInto` command offers instead of its stdout. */
const noInput = () => new Writable({ write: (_chunk, _encoding, done) => done() })
const noOutput = () => Readable.from([])

const envName = /^[^=\0]+$/

export const makeBoxCommands = (options: {
  readonly runner: ProcessRunner["Service"]
  readonly record: BoxRecord
  /** Host pid of the box's init. */
  readonly pid: number
  readonly mode: LimitsMode
  /** The `cgroup.procs` files a command joins (nsenter path). */
  readonly procs: ReadonlyArray<string>
  /** The box has the exec helper bound (and the runner has one). */
  readonly helper: boolean
  readonly isRunning: () => boolean
  /** The box's own scope: the helper lives in it. */
  readonly scope: Scope.Scope
  readonly log: (event: string, detail?: Record<string, unknown>) => void
}): BoxCommands => {
  const { runner, record, pid, isRunning } = options
  const id = record.spec.id
  const notRunning = () => new BoxError({ message: `box ${id} is not running` })

  /** The host argv that runs `command` inside the box: cgroups joined, then nsenter into every namespace and the root. */
  const inBox = (command: ReadonlyArray<string>, oomScoreAdj: boolean): ReadonlyArray<string> => [
    // oom_score_adj 500: under the memory limit the kernel kills commands before the box's init.
    ...joinLimits(options.procs, options.mode, record, oomScoreAdj ? "echo 500 > /proc/self/oom_score_adj" : ""),
    "/usr/bin/nsenter",
    "-t",
    String(pid),
    "--all",
    "--root",
    "--wd",
    "--",
    ...command
  ]

  const hostSpawn = (argv: ReadonlyArray<string>, stdio: SpawnOptions["stdio"], unref: boolean) =>
    runner
      .spawn(argv, { cleanEnv: true, env: { PATH: HOST_PATH }, stdio, killSignal: "SIGKILL", unref })
      .pipe(Effect.mapError((error) => new BoxError({ message: `box ${id}: ${error.message}` })))

  /** Spawns `command` inside the box from the host. */
  const spawnInBox = (command: ReadonlyArray<string>, stdio: ReadonlyArray<"pipe" | "ignore">, oomScoreAdj: boolean, unref: boolean) =>
    hostSpawn(inBox(command, oomScoreAdj), stdio, unref)

  // The exec helper: started inside the box on the first command, then every command is one fork in the box.
  let helper: HelperChannel | undefined
  const startHelper = Effect.gen(function* () {
    const child = yield* spawnInBox([EXEC_HELPER], ["ignore", "ignore", "pipe", "pipe"], false, true)
    let stderr = ""
    child.stderr!.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)))
    const channel = child.stdio[3] as Duplex
    // The helper never keeps the server's event loop alive (the box's life is its scope's business).
    ;(channel as unknown as { unref?: () => void }).unref?.()
    const started = makeHelperChannel(channel, (reason) => {
      if (isRunning()) options.log("boxes.exec_helper_gone", { id, reason, stderr: stderr.trim() })
      child.kill("SIGKILL")
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => started.close()))
    helper = started
    return started
  })
  const helperChannel: Effect.Effect<HelperChannel | undefined, BoxError> = Effect.suspend(() =>
    !options.helper ? Effect.succeed(undefined) : helper?.alive() ? Effect.succeed(helper) : Scope.provide(startHelper, options.scope)
  )

  /** The command's whole environment: the box's defaults, the spec's, the request's; checked. */
  const envFor = (execOptions: ExecOptions | undefined, extra?: Readonly<Record<string, string>>): Record<string, string> | BoxError => {
    const env: Record<string, string> = { PATH: DEFAULT_PATH, HOME: BOX_HOME, ...record.spec.env, ...(execOptions?.env ?? {}), ...extra }
    for (const k in env) {
      const v = env[k]
      if (!envName.test(k) || typeof v !== "string" || v.includes("\0")) return new BoxError({ message: `invalid environment variable ${JSON.stringify(k)}` })
    }
    return env
  }

  /** A command the helper started, killed when the scope closes (a no-op once it has exited). */
  const scoped = (start: () => BoxProcess) =>
    Effect.acquireRelease(
      Effect.try({ try: start, catch: (error) => new BoxError({ message: `box ${id}: ${(error as Error)?.message ?? String(error)}` }) }),
      (process) => Effect.sync(() => process.kill("SIGKILL"))
    )

  /** A command's checked argv, environment and directory (the init's own: `cwd` undefined). */
  const checked = (argv: ReadonlyArray<string>, execOptions: ExecOptions | undefined) => {
    if (!Array.isArray(argv) || argv.length === 0 || argv.some((a) => typeof a !== "string" || a.includes("\0")))
      return new BoxError({ message: "argv must be a non-empty list of strings" })
    if (argv[0]!.includes("=")) return new BoxError({ message: "argv[0] must not contain '='" })
    const env = envFor(execOptions)
    if (env instanceof BoxError) return env
    const defaultCwd = record.spec.workingDir ?? BOX_HOME
    const cwd = execOptions?.cwd === undefined ? defaultCwd : path.posix.resolve(BOX_HOME, execOptions.cwd)
    return { argv, env, cwd: cwd === defaultCwd ? undefined : cwd }
  }

  /**
   * The box-side argv of a host spawn: a clean environment (`env -i`), and `cd` when not the
   * init's directory. The host-side tools (sh, nsenter) never see the box's variables (no LD_PRELOAD games).
   */
  const boxArgv = ({ argv, env, cwd }: { readonly argv: ReadonlyArray<string>; readonly env: Record<string, string>; readonly cwd: string | undefined }) => {
    const inner = [BOX_TOOLS, "env", "-i", ...Object.entries(env).map(([k, v]) => `${k}=${v}`)]
    return cwd === undefined ? [...inner, ...argv] : [BOX_TOOLS, "sh", "-c", 'cd -- "$1" || exit 126; shift; exec "$@"', "sh", cwd, ...inner, ...argv]
  }

  // Made once (not a generator per call): an exec is on the dataplane's hot path.
  const exec: BoxCommands["exec"] = Effect.fnUntraced(function* (argv: ReadonlyArray<string>, execOptions?: ExecOptions) {
    if (!isRunning()) return yield* notRunning()
    const command = checked(argv, execOptions)
    if (command instanceof BoxError) return yield* command
    const viaHelper = yield* helperChannel
    // The helper starts in the init's directory: "" = stay there (as nsenter --wd does).
    if (viaHelper) return yield* scoped(() => viaHelper.exec(argv, command.env, command.cwd ?? ""))
    const child = yield* spawnInBox(boxArgv(command), ["pipe", "pipe", "pipe"], true, false)
    child.stdin!.on("error", () => undefined)
    return {
      pid: child.pid,
      started: Effect.void,
      stdin: child.stdin!,
      stdout: child.stdout!,
      stderr: child.stderr!,
      kill: child.kill,
      exited: child.exited
    } satisfies BoxProcess
  })

  const execShell: BoxCommands["execShell"] = Effect.fnUntraced(function* (command: ShellCommand, execOptions?: ExecOptions) {
    if (!isRunning()) return yield* notRunning()
    for (const field of ["shell", "cwd", "command"] as const)
      if (typeof command?.[field] !== "string" || command[field].includes("\0")) return yield* new BoxError({ message: `${field} must be a string without NUL` })
    if (!command.shell.startsWith("/") || !command.cwd.startsWith("/")) return yield* new BoxError({ message: "shell and cwd must be absolute paths" })
    const viaHelper = yield* helperChannel
    if (!viaHelper) return yield* exec(shellLaunchArgv(command), execOptions)
    // PWD as the launcher's `cd` left it (the shell would otherwise take the physical path).
    const env = envFor(execOptions, { PWD: command.cwd })
    if (env instanceof BoxError) return yield* env
    return yield* scoped(() => viaHelper.execShell(command.shell, command.command, env, command.cwd))
  })

  // The relay is the host's `cat` on the other end of the command's stdout pipe, its own stdout
  // the sink: the box's process never holds the sink's descriptor (the shell gives the pipeline's
  // left side the pipe as fd 1, and nothing else refers to the sink there).
  const execInto: BoxCommands["execInto"] = Effect.fnUntraced(function* (argv: ReadonlyArray<string>, sink: Stream, execOptions?: ExecOptions) {
    if (!isRunning()) return yield* notRunning()
    const command = checked(argv, execOptions)
    if (command instanceof BoxError) return yield* command
    const child = yield* hostSpawn(["/bin/sh", "-c", '"$@" | /bin/cat', "relay", ...inBox(boxArgv(command), true)], ["ignore", sink, "pipe"], false)
    return {
      pid: child.pid,
      started: Effect.void,
      stdin: noInput(),
      stdout: noOutput(),
      stderr: child.stderr!,
      kill: child.kill,
      exited: child.exited
    } satisfies BoxProcess
  })

  return { exec, execShell, execInto }
}
