/**
 * What a running box offers: `exec` inside its namespaces, root filesystem and cgroup. The box
 * runner (`local/boxes.ts`) implements it; the sandbox dataplane and the deployment driver use
 * it. The dataplane only ever touches a box through `exec`, so path resolution and permissions
 * are the box's, never the host's.
 */
import type { Readable, Writable } from "node:stream"

export interface BoxProcess {
  /**
   * Pid for diagnostics: inside the box when the box's exec helper runs the command (0 until
   * `started` resolves), the host pid otherwise.
   */
  readonly pid: number
  /** Resolves once `pid` is known (or the command failed to start); absent when it is known at once. */
  readonly started?: Promise<void>
  readonly stdin: Writable
  readonly stdout: Readable
  readonly stderr: Readable
  /** Signals the command's whole process group inside the box (SIGKILL by default). */
  readonly kill: (signal?: NodeJS.Signals) => void
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
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

export interface BoxExec {
  /** Runs argv inside the box: its namespaces, root filesystem and cgroup. */
  readonly exec: (argv: ReadonlyArray<string>, options?: ExecOptions) => BoxProcess
  /**
   * Runs a shell command with the launcher's rules (`shellLaunchArgv`) in one exec, when the box can
   * (the local runner's exec helper). Absent: callers run `shellLaunchArgv(command)` through `exec`.
   * `options.cwd` is ignored (the command's own `cwd` applies).
   */
  readonly execShell?: (command: ShellCommand, options?: ExecOptions) => BoxProcess
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

