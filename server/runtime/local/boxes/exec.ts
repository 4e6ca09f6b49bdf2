/**
 * Commands and connections in a running box. Through the box's exec helper (started inside the
 * box on the first command, or, under gVisor, the sandbox's pid 1; then one fork in the box per
 * command, and connections to and from the box's loopback relayed over its channel), or, on a
 * bwrap runner without it, a host spawn per command (`nsenter --all` after joining the box's
 * cgroups) and bridges for ports. Every command lives in the caller's scope: it is killed when the
 * scope closes. The helper lives in the box's scope.
 */
import path from "node:path"
import { type Duplex, Readable, type Stream, Writable } from "node:stream"
import { Effect, Scope } from "effect"
import { BOX_HOME, BOX_TOOLS, type BoxProcess, type ExecOptions, type ShellCommand, shellLaunchArgv } from "../../BoxProcess.ts"
import type { ChildHandle, ProcessRunner, SpawnOptions } from "../../ProcessRunner.ts"
import type { LimitsMode } from "../cgroups.ts"
import { type HelperChannel, makeHelperChannel } from "../execHelper.ts"
import { makeBridges } from "./forward.ts"
import { joinLimits } from "./init.ts"
import { BoxError } from "./model.ts"
import { DEFAULT_PATH, HOST_PATH } from "./spec.ts"
import type { BoxRecord } from "./state.ts"

export interface BoxCommands {
  readonly exec: (argv: ReadonlyArray<string>, options?: ExecOptions) => Effect.Effect<BoxProcess, BoxError, Scope.Scope>
  readonly execShell: (command: ShellCommand, options?: ExecOptions) => Effect.Effect<BoxProcess, BoxError, Scope.Scope>
  /** Only where the host can enter the box (bwrap): a gVisor sandbox has no namespaces of the host's to join. */
  readonly execInto?: (argv: ReadonlyArray<string>, sink: Stream, options?: ExecOptions) => Effect.Effect<BoxProcess, BoxError, Scope.Scope>
  readonly connect: (port: number) => Effect.Effect<Duplex, BoxError>
  readonly listen: (port: number, onConnection: (connection: Duplex) => void) => Effect.Effect<void, BoxError, Scope.Scope>
}

/** A relay's stdin that takes nothing, and a stdout that has nothing: what an `execInto` command offers instead of its stdout. */
const noInput = () => new Writable({ write: (_chunk, _encoding, done) => done() })
const noOutput = () => Readable.from([])

const envName = /^[^=\0]+$/

/** What the host needs to enter a bwrap box: its init, its cgroups (or rlimits). */
interface HostEntry {
  readonly runner: ProcessRunner["Service"]
  readonly record: BoxRecord
  /** Host pid of the box's init. */
  readonly pid: number
  readonly mode: LimitsMode
  /** The `cgroup.procs` files a command joins. */
  readonly procs: ReadonlyArray<string>
}

/** The host argv that runs `command` inside a bwrap box: cgroups joined, then nsenter into every namespace and the root. */
const inBox = (options: HostEntry, command: ReadonlyArray<string>, oomScoreAdj: boolean): ReadonlyArray<string> => [
  // oom_score_adj 500: under the memory limit the kernel kills commands before the box's init.
  ...joinLimits(options.procs, options.mode, options.record, oomScoreAdj ? "echo 500 > /proc/self/oom_score_adj" : ""),
  "/usr/bin/nsenter",
  "-t",
  String(options.pid),
  "--all",
  "--root",
  "--wd",
  "--",
  ...command
]

const hostSpawn = (options: HostEntry, argv: ReadonlyArray<string>, stdio: SpawnOptions["stdio"], unref: boolean): Effect.Effect<ChildHandle, BoxError, Scope.Scope> =>
  options.runner
    .spawn(argv, { cleanEnv: true, env: { PATH: HOST_PATH }, stdio, killSignal: "SIGKILL", unref })
    .pipe(Effect.mapError((error) => new BoxError({ message: `box ${options.record.spec.id}: ${error.message}` })))

/** Spawns `command` inside a bwrap box from the host. */
export const spawnInBox = (options: HostEntry, command: ReadonlyArray<string>, stdio: ReadonlyArray<"pipe" | "ignore">, oomScoreAdj: boolean, unref: boolean) =>
  hostSpawn(options, inBox(options, command, oomScoreAdj), stdio, unref)

/**
 * The helper's channel over `socket` (its end of a socketpair): closed when the scope closes; when
 * it goes on its own, `stop` ends what is left of the helper's host side and it is logged.
 */
export const helperChannelOver = (options: {
  readonly socket: Duplex
  readonly id: string
  readonly isRunning: () => boolean
  readonly log: (event: string, detail?: Record<string, unknown>) => void
  /** The end of what its host side wrote to stderr. */
  readonly stderr: () => string
  readonly stop: () => void
}): Effect.Effect<HelperChannel, never, Scope.Scope> =>
  Effect.gen(function* () {
    // The helper never keeps the server's event loop alive (the box's life is its scope's business).
    ;(options.socket as unknown as { unref?: () => void }).unref?.()
    const channel = makeHelperChannel(options.socket, (reason) => {
      if (options.isRunning()) options.log("boxes.exec_helper_gone", { id: options.id, reason, stderr: options.stderr().trim() })
      options.stop()
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => channel.close()))
    return channel
  })

export const makeBoxCommands = (options: HostEntry & {
  /** The host can enter the box (bwrap): without the helper, commands and ports go through nsenter; downloads may (`execInto`). */
  readonly enterable: boolean
  /** Starts a helper in the box (in the scope given), or undefined: no helper (bwrap only: nsenter and bridges). */
  readonly startHelper: Effect.Effect<HelperChannel, BoxError, Scope.Scope> | undefined
  /** The helper already running (gVisor's pid 1, started with the box). */
  readonly initialHelper?: HelperChannel | undefined
  /** Where the bridges' unix sockets go (root only, short). */
  readonly socketDir: string
  readonly isRunning: () => boolean
  /** The box's own scope: the helper lives in it. */
  readonly scope: Scope.Scope
  readonly log: (event: string, detail?: Record<string, unknown>) => void
}): BoxCommands => {
  const { record, isRunning } = options
  const id = record.spec.id
  const notRunning = () => new BoxError({ message: `box ${id} is not running` })

  // The exec helper: started inside the box on the first command (unless it came with the box), then every command is one fork in the box.
  let helper: HelperChannel | undefined = options.initialHelper
  const startHelper = options.startHelper
  /** The box's ports served by `listen`: a new helper (the previous one was killed in the box) serves them again. */
  const listens = new Set<{ readonly port: number; readonly onConnection: (connection: Duplex) => void; close: () => void }>()
  const relisten = (started: HelperChannel) =>
    Effect.forEach(
      listens,
      (entry) =>
        started.listen(entry.port, entry.onConnection).pipe(
          Effect.match({
            onFailure: (error) => options.log("boxes.listen_lost", { id, port: entry.port, error: error.message }),
            onSuccess: (listener) => void (entry.close = listener.close)
          })
        ),
      { discard: true }
    )
  const helperChannel: Effect.Effect<HelperChannel | undefined, BoxError> = Effect.suspend(() =>
    !startHelper
      ? Effect.succeed(undefined)
      : helper?.alive()
        ? Effect.succeed(helper)
        : Scope.provide(
            Effect.tap(startHelper, (started) => Effect.andThen(Effect.sync(() => (helper = started)), relisten(started))),
            options.scope
          )
  )
  const bridges = startHelper ? undefined : makeBridges({ runner: options.runner, id, pid: options.pid, socketDir: options.socketDir, scope: options.scope })

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
    const child = yield* spawnInBox(options, boxArgv(command), ["pipe", "pipe", "pipe"], true, false)
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

  const connect: BoxCommands["connect"] = (port) =>
    Effect.gen(function* () {
      if (!isRunning()) return yield* notRunning()
      const viaHelper = yield* helperChannel
      return yield* viaHelper ? viaHelper.connect(port) : bridges!.connect(port)
    })

  const listen: BoxCommands["listen"] = (port, onConnection) =>
    Effect.gen(function* () {
      if (!isRunning()) return yield* notRunning()
      const viaHelper = yield* helperChannel
      if (!viaHelper) return yield* bridges!.listen(port, onConnection)
      const listener = yield* viaHelper.listen(port, onConnection)
      const entry = { port, onConnection, close: listener.close }
      listens.add(entry)
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          listens.delete(entry)
          entry.close()
        })
      )
    })

  // The relay is the host's `cat` on the other end of the command's stdout pipe, its own stdout
  // the sink: the box's process never holds the sink's descriptor (the shell gives the pipeline's
  // left side the pipe as fd 1, and nothing else refers to the sink there).
  const execInto: NonNullable<BoxCommands["execInto"]> = Effect.fnUntraced(function* (argv: ReadonlyArray<string>, sink: Stream, execOptions?: ExecOptions) {
    if (!isRunning()) return yield* notRunning()
    const command = checked(argv, execOptions)
    if (command instanceof BoxError) return yield* command
    const child = yield* hostSpawn(options, ["/bin/sh", "-c", '"$@" | /bin/cat', "relay", ...inBox(options, boxArgv(command), true)], ["ignore", sink, "pipe"], false)
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

  return { exec, execShell, ...(options.enterable ? { execInto } : {}), connect, listen }
}
