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

export interface BoxExec {
  /** Runs argv inside the box: its namespaces, root filesystem and cgroup. */
  readonly exec: (argv: ReadonlyArray<string>, options?: ExecOptions) => BoxProcess
}

/** A static busybox bound read-only into every box, for the dataplane's file operations. */
export const BOX_TOOLS = "/.slipway/busybox"
/** Every box has this directory, writable, as the default working directory. */
export const BOX_HOME = "/home/user"

