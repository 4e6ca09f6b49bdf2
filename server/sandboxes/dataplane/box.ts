/**
 * What a running box offers the dataplane's protocol: commands started at once (`exec`), whose
 * stdio are Node streams the protocol pipes to HTTP answers and WebSockets. The dataplane only
 * ever touches a box through exec: commands, file reads and writes all run inside the box's own
 * namespaces, so path resolution and permissions are the box's, never the host's. The local
 * backend (`local.ts`) makes one of a `RunningBox`; the protocol's tests make one of a bare
 * bubblewrap sandbox.
 */
import type { Readable, Stream, Writable } from "node:stream"
import { Effect, Exit, Scope } from "effect"
import { BOX_HOME, BOX_TOOLS, type BoxProcess, type ExecOptions, type ExitStatus, type ShellCommand, shellLaunchArgv } from "../../runtime/BoxProcess.ts"

export { BOX_HOME, BOX_TOOLS, shellLaunchArgv, type ExecOptions, type ExitStatus, type ShellCommand }

export interface BoxExec {
  /** Runs argv inside the box; throws when the box cannot run it (stopped, gone). */
  readonly exec: (argv: ReadonlyArray<string>, options?: ExecOptions) => BoxCommand
  /**
   * Runs a shell command with the launcher's rules (`shellLaunchArgv`) in one exec, when the box can
   * (the local runner's exec helper). Absent: callers run `shellLaunchArgv(command)` through `exec`.
   */
  readonly execShell?: (command: ShellCommand, options?: ExecOptions) => BoxCommand
  /**
   * Runs argv in the box with its stdout relayed straight into `sink` (a socket), never through
   * this process (the local runner's `execInto`): a large download's body. Absent: the bytes go
   * through `exec`'s stdout.
   */
  readonly execInto?: (argv: ReadonlyArray<string>, sink: Stream, options?: ExecOptions) => BoxCommand
}

/** The box's `exec`, with a runner failure (box stopped, gone) reported as the protocol's retryable not-ready answer. */
export const execIn = (box: BoxExec, argv: ReadonlyArray<string>, options?: ExecOptions): BoxCommand => {
  try {
    return box.exec(argv, options)
  } catch (cause) {
    throw new BoxUnavailable(`Sandbox is not available: ${(cause as Error)?.message ?? String(cause)}`)
  }
}

/** A shell command in the box: the box's own `execShell` (one exec) when it has one, else the busybox launcher through `exec`. */
export const execShellIn = (box: BoxExec, command: ShellCommand, options?: ExecOptions): BoxCommand => {
  try {
    return box.execShell ? box.execShell(command, options) : box.exec(shellLaunchArgv(command), options)
  } catch (cause) {
    throw new BoxUnavailable(`Sandbox is not available: ${(cause as Error)?.message ?? String(cause)}`)
  }
}

export class BoxUnavailable extends Error {}

/** A command running in the box, as the protocol's stream code holds it: the runtime's `BoxProcess`, its start and exit as Promises. */
export interface BoxCommand {
  readonly pid: number
  readonly started: Promise<void>
  readonly stdin: Writable
  readonly stdout: Readable
  readonly stderr: Readable
  readonly kill: (signal?: NodeJS.Signals) => void
  readonly exited: Promise<ExitStatus>
}

/**
 * Starts a scoped exec (`box.exec(...)`) now, from the protocol's stream code (the boundary between
 * Node callbacks and the runtime), in a scope of its own inside `parent` (the box's): the command
 * dies with the box, and its scope closes once it has exited. One run for the start (synchronous
 * up to the spawn), one for the exit. Throws when it cannot start.
 */
export const startNow = (exec: Effect.Effect<BoxProcess, { readonly message: string }, Scope.Scope>, parent: Scope.Scope): BoxCommand => {
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
