/**
 * What a running box offers to the dataplane (the contract in tasks/interfaces.md). The dataplane
 * only ever touches a box through `exec`: commands, file reads and writes all run inside the
 * box's own namespaces, so path resolution and permissions are the box's, never the host's.
 */
import { BOX_HOME, BOX_TOOLS, shellLaunchArgv, type BoxExec, type BoxProcess, type ExecOptions, type ShellCommand } from "../../runtime/BoxExec.ts"

export { BOX_HOME, BOX_TOOLS, shellLaunchArgv, type BoxExec, type BoxProcess, type ExecOptions, type ShellCommand }

/** The box's `exec`, with a runner failure (box stopped, gone) reported as the protocol's retryable not-ready answer. */
export const execIn = (box: BoxExec, argv: ReadonlyArray<string>, options?: ExecOptions): BoxProcess => {
  try {
    return box.exec(argv, options)
  } catch (cause) {
    throw new BoxUnavailable(`Sandbox is not available: ${(cause as Error)?.message ?? String(cause)}`)
  }
}

/** A shell command in the box: the box's own `execShell` (one exec) when it has one, else the busybox launcher through `exec`. */
export const execShellIn = (box: BoxExec, command: ShellCommand, options?: ExecOptions): BoxProcess => {
  try {
    return box.execShell ? box.execShell(command, options) : box.exec(shellLaunchArgv(command), options)
  } catch (cause) {
    throw new BoxUnavailable(`Sandbox is not available: ${(cause as Error)?.message ?? String(cause)}`)
  }
}

export class BoxUnavailable extends Error {}
