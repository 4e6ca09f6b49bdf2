/**
 * The one process runner of the server: every host tool (skopeo, umoci, mount, mkfs, nsenter,
 * bwrap, postgres, redis-server, ...) starts here.
 *
 * - argv is handed to spawn without a shell: no word splitting, no globbing, no quoting bugs
 *   (callers still validate user input so that it can never be read as an option of the tool).
 * - Every process gets its own process group: a kill reaches whatever it started.
 * - `run` waits for the command and collects its output (stdout whole up to a cap, a tail of
 *   stderr for error messages); interrupting it kills the process group, and its `timeout` is
 *   Effect's (`Clock`), so a test clock drives it too.
 * - `spawn` starts a long-lived process in a `Scope`: closing the scope signals its group
 *   (SIGTERM by default, SIGKILL after a grace) and waits for it to exit.
 * - Any failure (cannot start, non-zero exit, killed by a signal, timed out, too much output) is
 *   a `CommandFailed`.
 */
import { spawn as spawnChild, type ChildProcess } from "node:child_process"
import type { Readable, Stream, Writable } from "node:stream"
import { Context, Data, Deferred, Duration, Effect, Layer, type Scope } from "effect"

export type CommandFailureKind = "spawn" | "exit" | "signal" | "timeout" | "output"

/** How a process ended. */
export interface ExitStatus {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/** The command could not run or did not succeed. `stderrTail` is the end of what it wrote to stderr. */
export class CommandFailed extends Data.TaggedError("CommandFailed")<{
  readonly message: string
  readonly argv: ReadonlyArray<string>
  readonly kind: CommandFailureKind
  readonly exitCode: number | null
  readonly signal: NodeJS.Signals | null
  readonly stderrTail: string
  /** errno code when the command could not start (ENOENT: not installed). */
  readonly errno: string | undefined
}> {}

/** A `CommandFailed` with its message made from the rest (`<tool> exited with code 3: <last stderr line>`). */
export const commandFailed = (args: {
  readonly argv: ReadonlyArray<string>
  readonly kind: CommandFailureKind
  readonly exitCode?: number | null
  readonly signal?: NodeJS.Signals | null
  readonly stderrTail?: string
  readonly errno?: string | undefined
  readonly detail?: string | undefined
}): CommandFailed => {
  const tool = args.argv[0] ?? "command"
  const lastLine = lastNonEmptyLine(args.stderrTail ?? "")
  const what =
    args.kind === "spawn" ? `could not start${args.errno === "ENOENT" ? " (not found)" : ""}${args.detail ? `: ${args.detail}` : ""}`
    : args.kind === "timeout" ? `timed out${args.detail ? ` after ${args.detail}` : ""}`
    : args.kind === "output" ? (args.detail ?? "wrote too much output")
    : args.kind === "signal" ? `killed by ${args.signal}`
    : `exited with code ${args.exitCode}`
  return new CommandFailed({
    message: `${tool} ${what}${lastLine && args.kind !== "spawn" ? `: ${lastLine}` : ""}`,
    argv: args.argv,
    kind: args.kind,
    exitCode: args.exitCode ?? null,
    signal: args.signal ?? null,
    stderrTail: args.stderrTail ?? "",
    errno: args.errno
  })
}

export interface RunOptions {
  /** Kill the command (its whole process group) after this long; it then fails with kind "timeout". Default: no limit. */
  readonly timeout?: Duration.Input | undefined
  /** Written to stdin, which is then closed. Without it stdin is /dev/null. */
  readonly input?: string | Uint8Array | undefined
  /** Added to (and overriding) the server's environment; `cleanEnv` starts from an empty one. */
  readonly env?: Readonly<Record<string, string>> | undefined
  readonly cleanEnv?: boolean | undefined
  readonly cwd?: string | undefined
  /** Called with every complete output line as it arrives (progress reporting). */
  readonly onLine?: ((line: string, stream: "stdout" | "stderr") => void) | undefined
  /** stdout beyond this many bytes fails the command. Default 64 MiB. */
  readonly maxStdoutBytes?: number | undefined
}

export interface CommandResult {
  readonly stdout: string
  /** The exact bytes of stdout (e.g. to hash a manifest). */
  readonly stdoutBytes: Buffer
  readonly stderr: string
}

export interface SpawnOptions {
  readonly env?: Readonly<Record<string, string>> | undefined
  readonly cleanEnv?: boolean | undefined
  readonly cwd?: string | undefined
  /** One entry per fd from 0; default `["ignore", "pipe", "pipe"]`. A stream with a descriptor (a socket) is handed to the process as that fd. */
  readonly stdio?: ReadonlyArray<"pipe" | "ignore" | "inherit" | Stream> | undefined
  /** The signal the process group gets when the scope closes (default SIGTERM)... */
  readonly killSignal?: NodeJS.Signals | undefined
  /** ...and how long it has to exit before SIGKILL (default 2 seconds). */
  readonly killGrace?: Duration.Input | undefined
  /** The process never keeps the server's event loop alive (its life is its scope's business). */
  readonly unref?: boolean | undefined
}

/** A process started by `spawn`, alive until its scope closes (or it exits). */
export interface ChildHandle {
  readonly pid: number
  /** The pipes, by fd (null where the fd is not a pipe). */
  readonly stdio: ReadonlyArray<Readable | Writable | null>
  readonly stdin: Writable | null
  readonly stdout: Readable | null
  readonly stderr: Readable | null
  /** Completes when the process has exited. */
  readonly exited: Effect.Effect<ExitStatus>
  /** True until the process exits. */
  readonly isRunning: () => boolean
  /** Signals the process's whole group (SIGKILL by default); nothing once it has exited. */
  readonly kill: (signal?: NodeJS.Signals) => void
}

export class ProcessRunner extends Context.Service<
  ProcessRunner,
  {
    /** Runs `argv` to completion: its output when it exits 0, else `CommandFailed`. Interruption kills its process group. */
    readonly run: (argv: ReadonlyArray<string>, options?: RunOptions) => Effect.Effect<CommandResult, CommandFailed>
    /** Starts `argv`; the process (group) is ended when the scope closes. */
    readonly spawn: (argv: ReadonlyArray<string>, options?: SpawnOptions) => Effect.Effect<ChildHandle, CommandFailed, Scope.Scope>
  }
>()("slipway/ProcessRunner") {}

const STDERR_TAIL_BYTES = 16 * 1024

const lastNonEmptyLine = (text: string): string => {
  const lines = text.split("\n").map((l) => l.trim()).filter((l) => l.length > 0)
  const last = lines[lines.length - 1] ?? ""
  return last.length > 500 ? `${last.slice(0, 500)}…` : last
}

/** Splits a byte stream into lines for `onLine`. */
const lineSplitter = (emit: (line: string) => void) => {
  let pending = ""
  return {
    push: (chunk: Buffer) => {
      pending += chunk.toString("utf8")
      let index: number
      while ((index = pending.indexOf("\n")) >= 0) {
        emit(pending.slice(0, index).replace(/\r$/, ""))
        pending = pending.slice(index + 1)
      }
      if (pending.length > 64 * 1024) pending = pending.slice(-64 * 1024)
    },
    end: () => {
      if (pending.length > 0) emit(pending)
      pending = ""
    }
  }
}

const signalGroup = (child: ChildProcess, signal: NodeJS.Signals) => {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    try {
      child.kill(signal)
    } catch {
      // already gone
    }
  }
}

const envOf = (options: { readonly env?: Readonly<Record<string, string>> | undefined; readonly cleanEnv?: boolean | undefined }) =>
  options.cleanEnv ? { ...options.env } : { ...process.env, ...options.env }

const run = (argv: ReadonlyArray<string>, options: RunOptions = {}): Effect.Effect<CommandResult, CommandFailed> =>
  Effect.suspend(() => {
    if (argv.length === 0 || argv[0] === "") return Effect.fail(commandFailed({ argv, kind: "spawn", detail: "empty argv" }))
    /** The end of stderr so far: a timeout's error carries it too. */
    let stderrTail = Buffer.alloc(0)
    const running = Effect.callback<CommandResult, CommandFailed>((resume) => {
      const maxStdout = options.maxStdoutBytes ?? 64 * 1024 * 1024
      const child = spawnChild(argv[0]!, argv.slice(1), {
        cwd: options.cwd,
        env: envOf(options),
        stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
        // Its own process group, so that a kill also reaches whatever it started.
        detached: true,
        shell: false
      })
      const stdoutChunks: Array<Buffer> = []
      let stdoutBytes = 0
      /** Why the run failed while the process still ran (too much output, an error after the spawn): reported once it has closed. */
      let failure: { readonly kind: CommandFailureKind; readonly detail?: string; readonly errno?: string | undefined } | undefined
      let settled = false
      const closed = Deferred.makeUnsafe<void>()
      const failWith = (reason: NonNullable<typeof failure>) => {
        failure ??= reason
        signalGroup(child, "SIGKILL")
      }
      const outLines = options.onLine ? lineSplitter((l) => options.onLine!(l, "stdout")) : undefined
      const errLines = options.onLine ? lineSplitter((l) => options.onLine!(l, "stderr")) : undefined
      child.stdout!.on("data", (chunk: Buffer) => {
        stdoutBytes += chunk.length
        if (stdoutBytes > maxStdout) return failWith({ kind: "output", detail: `wrote more than ${maxStdout} bytes to stdout` })
        stdoutChunks.push(chunk)
        outLines?.push(chunk)
      })
      child.stderr!.on("data", (chunk: Buffer) => {
        stderrTail = Buffer.concat([stderrTail, chunk])
        if (stderrTail.length > STDERR_TAIL_BYTES) stderrTail = stderrTail.subarray(stderrTail.length - STDERR_TAIL_BYTES)
        errLines?.push(chunk)
      })
      const finish = (outcome: Effect.Effect<CommandResult, CommandFailed>) => {
        if (settled) return
        settled = true
        resume(outcome)
      }
      child.on("error", (error: NodeJS.ErrnoException) => {
        // Failure to spawn (ENOENT, EACCES): "close" may never come.
        const reason = { kind: "spawn" as const, errno: error.code, detail: error.message }
        if (child.pid === undefined) {
          Deferred.doneUnsafe(closed, Effect.void)
          finish(Effect.fail(commandFailed({ argv, ...reason })))
        } else failWith(reason)
      })
      if (options.input !== undefined && child.stdin) {
        // EPIPE when the command exits without reading its input: its exit status tells the story.
        child.stdin.on("error", () => undefined)
        child.stdin.end(options.input)
      }
      child.on("close", (code, signal) => {
        Deferred.doneUnsafe(closed, Effect.void)
        outLines?.end()
        errLines?.end()
        const stderr = stderrTail.toString("utf8")
        if (failure) return finish(Effect.fail(commandFailed({ argv, ...failure, exitCode: code, signal, stderrTail: stderr })))
        if (code === 0) {
          const bytes = Buffer.concat(stdoutChunks)
          return finish(Effect.succeed({ stdout: bytes.toString("utf8"), stdoutBytes: bytes, stderr }))
        }
        finish(Effect.fail(commandFailed({ argv, kind: signal ? "signal" : "exit", exitCode: code, signal, stderrTail: stderr })))
      })
      // Interrupted (a timeout, a caller gone): the group is killed, and we wait for it to be gone.
      return Effect.suspend(() => {
        settled = true
        signalGroup(child, "SIGKILL")
        return Effect.timeoutOption(Deferred.await(closed), 5000)
      })
    })
    if (options.timeout === undefined) return running
    const duration = Duration.fromInputUnsafe(options.timeout)
    return Effect.timeoutOrElse(running, {
      duration,
      orElse: () => Effect.fail(commandFailed({ argv, kind: "timeout", detail: Duration.format(duration), stderrTail: stderrTail.toString("utf8") }))
    })
  })

const spawn = (argv: ReadonlyArray<string>, options: SpawnOptions = {}): Effect.Effect<ChildHandle, CommandFailed, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      if (argv.length === 0 || argv[0] === "") return Effect.fail(commandFailed({ argv, kind: "spawn", detail: "empty argv" }))
      const child = spawnChild(argv[0]!, argv.slice(1), {
        cwd: options.cwd,
        env: envOf(options),
        stdio: [...(options.stdio ?? ["ignore", "pipe", "pipe"])],
        detached: true,
        shell: false
      })
      if (child.pid === undefined) {
        // Could not start: Node reports why on the next tick.
        return Effect.callback<never, CommandFailed>((resume) => {
          child.once("error", (error: NodeJS.ErrnoException) => resume(Effect.fail(commandFailed({ argv, kind: "spawn", errno: error.code, detail: error.message }))))
        })
      }
      const exit = Deferred.makeUnsafe<ExitStatus>()
      child.on("error", () => undefined)
      child.once("exit", (code, signal) => Deferred.doneUnsafe(exit, Effect.succeed({ code, signal })))
      if (options.unref) {
        child.unref()
        for (const stream of child.stdio) (stream as unknown as { unref?: () => void } | null)?.unref?.()
      }
      const pid = child.pid
      const handle: ChildHandle = {
        pid,
        stdio: child.stdio as ReadonlyArray<Readable | Writable | null>,
        stdin: child.stdin,
        stdout: child.stdout,
        stderr: child.stderr,
        exited: Deferred.await(exit),
        isRunning: () => !Deferred.isDoneUnsafe(exit),
        kill: (signal = "SIGKILL") => signalGroup(child, signal)
      }
      return Effect.succeed(handle)
    }),
    (handle) =>
      Effect.suspend(() => {
        if (!handle.isRunning()) return Effect.void
        handle.kill(options.killSignal ?? "SIGTERM")
        return Effect.timeoutOption(handle.exited, options.killGrace ?? 2000).pipe(
          Effect.flatMap((exited) => {
            if (exited._tag === "Some") return Effect.void
            handle.kill("SIGKILL")
            return Effect.asVoid(Effect.timeoutOption(handle.exited, 5000))
          })
        )
      })
  )

/** The runner itself (stateless): what `ProcessRunnerLive` provides; scripts and test helpers may call it directly. */
export const processRunner = ProcessRunner.of({ run, spawn })

export const ProcessRunnerLive = Layer.succeed(ProcessRunner, processRunner)

/** The environment host tools run with when they need nothing of the server's: a plain PATH, the C locale. */
export const HOST_ENV: Readonly<Record<string, string>> = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" }

