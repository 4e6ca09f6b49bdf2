/**
 * What a running box offers to the dataplane (the contract in tasks/interfaces.md). The dataplane
 * only ever touches a box through `exec`: commands, file reads and writes all run inside the
 * box's own namespaces, so path resolution and permissions are the box's, never the host's.
 */
import type { Readable, Writable } from "node:stream"

export interface BoxProcess {
  /** Host pid (diagnostics). */
  readonly pid: number
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

/** The box's `exec`, with a runner failure (box stopped, gone) reported as the protocol's retryable not-ready answer. */
export const execIn = (box: BoxExec, argv: ReadonlyArray<string>, options?: ExecOptions): BoxProcess => {
  try {
    return box.exec(argv, options)
  } catch (cause) {
    throw new BoxUnavailable(`Sandbox is not available: ${(cause as Error)?.message ?? String(cause)}`)
  }
}

export class BoxUnavailable extends Error {}
