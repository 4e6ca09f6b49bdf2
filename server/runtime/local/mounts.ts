/**
 * The host's mount table and loop devices, as the box runner and the volume store see them:
 * reading /proc/self/mountinfo, unmounting what is under a directory, detaching loop devices.
 * Root-only operations; host tools run through the ProcessRunner, never through a shell string.
 */
import { readFileSync } from "node:fs"
import { Duration, Effect } from "effect"
import { type CommandFailed, HOST_ENV, type ProcessRunner } from "../ProcessRunner.ts"

const unescapeMount = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)))

export interface MountEntry {
  readonly mountPoint: string
  readonly fsType: string
  readonly source: string
}

/** The host's mount table (this process's mount namespace). */
export const mounts = (): Array<MountEntry> =>
  readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .map((line) => {
      const [left, right = ""] = line.split(" - ")
      const fields = left!.split(" ")
      const rightFields = right.split(" ")
      return { mountPoint: unescapeMount(fields[4]!), fsType: rightFields[0]!, source: unescapeMount(rightFields[1] ?? "") }
    })

/** Mount points at or below `dir`, most recent first (the order to unmount them). */
export const mountsUnder = (dir: string): Array<MountEntry> => {
  const prefix = dir.endsWith("/") ? dir : dir + "/"
  return mounts()
    .filter((m) => m.mountPoint === dir || m.mountPoint.startsWith(prefix))
    .reverse()
}

export const isMountPoint = (dir: string): boolean => mounts().some((m) => m.mountPoint === dir)

/** Host tools of the runtime (mount, losetup, mkfs, ...): a clean environment, 30 s unless said otherwise. */
export interface HostCommands {
  /** Runs a host tool; its stdout. */
  readonly run: (argv: ReadonlyArray<string>, timeout?: Duration.Input) => Effect.Effect<string, CommandFailed>
  /** Unmounts one mount point (lazily when busy); nothing when it is not mounted. */
  readonly unmount: (dir: string) => Effect.Effect<void>
  /** Unmounts everything at or below `dir` (deepest first); lazily when busy. */
  readonly unmountAll: (dir: string) => Effect.Effect<void>
  /** Loop devices whose backing file is `file` (there should be at most one). */
  readonly loopDevicesOf: (file: string) => Effect.Effect<ReadonlyArray<string>>
  /** Detaches loop devices left behind for `file` (a mount that was lost without autoclear). */
  readonly detachLoops: (file: string) => Effect.Effect<void>
}

export const hostCommands = (runner: ProcessRunner["Service"]): HostCommands => {
  const run = (argv: ReadonlyArray<string>, timeout: Duration.Input = Duration.seconds(30)) =>
    Effect.map(runner.run(argv, { cleanEnv: true, env: HOST_ENV, timeout }), (result) => result.stdout)
  const unmountPoint = (dir: string) =>
    run(["/usr/bin/umount", dir]).pipe(
      Effect.catch(() => run(["/usr/bin/umount", "-l", dir])),
      Effect.ignore
    )
  const loopDevicesOf = (file: string) =>
    run(["/usr/sbin/losetup", "-j", file]).pipe(
      Effect.orElseSucceed(() => ""),
      Effect.map((out) =>
        out
          .split("\n")
          .map((l) => l.split(":")[0]!)
          .filter((d) => d.startsWith("/dev/loop"))
      )
    )
  return {
    run,
    unmount: (dir) => Effect.suspend(() => (isMountPoint(dir) ? unmountPoint(dir) : Effect.void)),
    unmountAll: (dir) => Effect.suspend(() => Effect.forEach(mountsUnder(dir), (m) => unmountPoint(m.mountPoint), { discard: true })),
    loopDevicesOf,
    detachLoops: (file) =>
      Effect.flatMap(loopDevicesOf(file), (devices) => Effect.forEach(devices, (dev) => Effect.ignore(run(["/usr/sbin/losetup", "-d", dev])), { discard: true }))
  }
}
