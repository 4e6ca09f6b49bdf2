/**
 * What a command running in a box looks like to its caller, and the launcher rules shared by
 * the box runner (`local/BoxRunner.ts`), the deployment driver and the dataplane. `BoxProcess` keeps Node streams for its
 * stdio (leaf I/O: piped to HTTP answers, WebSockets and log files); its start and exit are
 * Effects. The dataplane only ever touches a box through exec, so path resolution and
 * permissions are the box's, never the host's.
 */
import type { Readable, Writable } from "node:stream"
import { Effect, Exit, Scope } from "effect"
import type { ExitStatus } from "./ProcessRunner.ts"

export type { ExitStatus } from "./ProcessRunner.ts"

export interface BoxProcess {
  /**
   * Pid for diagnostics: inside the box when the box's exec helper runs the command (0 until
   * `started` completes), the host pid otherwise.
   */
  readonly pid: number
  /** Completes once `pid` is known (or the command failed to start). */
  readonly started: Effect.Effect<void>
  readonly stdin: Writable
  readonly stdout: Readable
  readonly stderr: Readable
  /** Signals the command's whole process group inside the box (SIGKILL by default). */
  readonly kill: (signal?: NodeJS.Signals) => void
  /** Completes when the command has exited. */
  readonly exited: Effect.Effect<ExitStatus>
}

export interface ExecOptions {
  /** Added to the box's environment. */
  readonly env?: Readonly<Record<string, string>>
  /** Inside the box; default /home/user. */
  readonly cwd?: string
}

/** A command for the box's shell, as the dataplane runs it (`shell -c command` in `cwd`). */
export interface ShellCommand {
  /** Absolute path inside the box; `/bin/bash` falls back to `/bin/sh` when the box has no bash. */
  readonly shell: string
  readonly command: string
  /** Absolute path inside the box. */
  readonly cwd: string
}

/**
 * The launcher a shell command runs through when the box has no faster way (`execShell`): the static
 * busybox settles the shell (/bin/bash → /bin/sh when absent), so a missing shell is a clear exit 127
 * and a missing cwd a clear exit 1 rather than a runner error, then execs `shell -c command`. The
 * exec helper (local/exec-helper.c, frame 'L') does the same in C, with the same messages and codes.
 */
const LAUNCH = [
  's="$1"; d="$2"; c="$3"',
  'if [ ! -x "$s" ] && [ "$s" = /bin/bash ]; then s=/bin/sh; fi',
  'if [ ! -x "$s" ]; then echo "slipway: shell not found in the sandbox: $s" >&2; exit 127; fi',
  'cd "$d" 2>/dev/null || { echo "slipway: cannot change to directory: $d" >&2; exit 1; }',
  'exec "$s" -c "$c"'
].join("\n")

export const shellLaunchArgv = (command: ShellCommand): ReadonlyArray<string> => [BOX_TOOLS, "sh", "-c", LAUNCH, "slipway", command.shell, command.cwd, command.command]

/** A static busybox bound read-only into every box, for the dataplane's file operations. */
export const BOX_TOOLS = "/.slipway/busybox"
/** Every box has this directory, writable, as the default working directory. */
export const BOX_HOME = "/home/user"


/**
 * A command started at once for stream code (the dataplane's protocol): the runtime's
 * `BoxProcess`, its start and exit as Promises.
 */
export interface StartedProcess {
  readonly pid: number
  readonly started: Promise<void>
  readonly stdin: Writable
  readonly stdout: Readable
  readonly stderr: Readable
  readonly kill: (signal?: NodeJS.Signals) => void
  readonly exited: Promise<ExitStatus>
}

/**
 * Starts a scoped exec (`box.exec(...)`) now, from stream code, in a scope of its own inside
 * `parent` (the box's): the command dies with the box, and its scope closes once it has exited.
 * One run for the start (synchronous up to the spawn), one for the exit. Throws when it cannot start.
 */
export const startNow = (exec: Effect.Effect<BoxProcess, { readonly message: string }, Scope.Scope>, parent: Scope.Scope): StartedProcess => {
  const scope = Scope.forkUnsafe(parent)
  const started = Effect.runSyncExit(Scope.provide(exec, scope))
  if (Exit.isFailure(started)) {
    Effect.runFork(Scope.close(scope, Exit.void))
    const failure = started.cause.reasons.find((reason) => reason._tag === "Fail")
    throw new Error(failure?._tag === "Fail" ? failure.error.message : "the command could not start")
  }
  const process = started.value
  let pidKnown: Promise<void> | undefined
  return {
    get pid() {
      return process.pid
    },
    get started() {
      return (pidKnown ??= Effect.runPromise(process.started))
    },
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    kill: process.kill,
    exited: Effect.runPromise(Effect.ensuring(process.exited, Scope.close(scope, Exit.void)))
  }
}
