/**
 * What a command running in a box looks like to its caller, and the launcher rules shared by
 * the box runner (`local/BoxRunner.ts`), the deployment driver and the dataplane. `BoxProcess` keeps Node streams for its
 * stdio (leaf I/O: piped to HTTP answers, WebSockets and log files); its start and exit are
 * Effects. The dataplane only ever touches a box through exec, so path resolution and
 * permissions are the box's, never the host's.
 */
import type { Readable, Writable } from "node:stream"
import type { Effect } from "effect"
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


