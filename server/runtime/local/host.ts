/**
 * Small host helpers shared by the box runner and the volume store: running a host tool,
 * reading the mount table, cgroup mode detection. Root-only operations; no shell strings.
 */
import { execFile } from "node:child_process"
import { readFileSync, existsSync, statSync } from "node:fs"
import path from "node:path"

/** A Debian package that provides each host tool the local runtime needs. */
export const TOOL_PACKAGES: Readonly<Record<string, string>> = {
  "/usr/bin/bwrap": "bubblewrap",
  "/usr/bin/nsenter": "util-linux",
  "/usr/bin/setpriv": "util-linux",
  "/usr/bin/prlimit": "util-linux",
  "/usr/sbin/losetup": "util-linux",
  "/usr/bin/mount": "mount",
  "/usr/bin/umount": "mount",
  "/usr/sbin/mkfs.ext4": "e2fsprogs",
  "/usr/sbin/e2fsck": "e2fsprogs",
  "/usr/sbin/resize2fs": "e2fsprogs",
  "/usr/sbin/mkfs.btrfs": "btrfs-progs",
  "/usr/bin/btrfs": "btrfs-progs",
  "/bin/busybox": "busybox-static",
  "/usr/bin/perl": "perl-base",
  "/usr/bin/unshare": "util-linux",
  "/bin/sh": "dash"
}

/** Throws a clear error naming the Debian package when a host tool is missing. */
export const requireTools = (tools: ReadonlyArray<string>): void => {
  const missing = tools.filter((t) => !existsSync(t))
  if (missing.length > 0) {
    const pkgs = [...new Set(missing.map((t) => TOOL_PACKAGES[t] ?? "?"))]
    throw new Error(`local runtime: missing ${missing.join(", ")} (install the Debian package(s): ${pkgs.join(", ")})`)
  }
}

export class HostCommandError extends Error {
  readonly code: number | null
  readonly stderr: string
  constructor(argv: ReadonlyArray<string>, code: number | null, stderr: string) {
    super(`${argv.join(" ")} failed (exit ${code}): ${stderr.trim().slice(0, 500)}`)
    this.code = code
    this.stderr = stderr
  }
}

/** Runs a host tool with a clean environment; resolves with stdout, rejects with HostCommandError. */
export const run = (argv: ReadonlyArray<string>, timeoutMs = 30_000): Promise<string> =>
  new Promise((resolve, reject) => {
    execFile(
      argv[0]!,
      argv.slice(1),
      { env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" }, timeout: timeoutMs, maxBuffer: 4 << 20 },
      (error, stdout, stderr) => {
        if (error) {
          const code = typeof error.code === "number" ? error.code : null
          reject(new HostCommandError(argv, code, String(stderr || error.message)))
        } else resolve(String(stdout))
      }
    )
  })

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

/** Unmounts everything at or below `dir` (deepest first); lazily when busy. */
export const unmountAll = async (dir: string): Promise<void> => {
  for (const m of mountsUnder(dir)) {
    try {
      await run(["/usr/bin/umount", m.mountPoint])
    } catch {
      await run(["/usr/bin/umount", "-l", m.mountPoint]).catch(() => undefined)
    }
  }
}

/** Loop devices whose backing file is `file` (there should be at most one). */
export const loopDevicesOf = async (file: string): Promise<Array<string>> => {
  const out = await run(["/usr/sbin/losetup", "-j", file]).catch(() => "")
  return out
    .split("\n")
    .map((l) => l.split(":")[0]!)
    .filter((d) => d.startsWith("/dev/loop"))
}

/** Detaches loop devices left behind for `file` (a mount that was lost without autoclear). */
export const detachLoops = async (file: string): Promise<void> => {
  for (const dev of await loopDevicesOf(file)) await run(["/usr/sbin/losetup", "-d", dev]).catch(() => undefined)
}

/**
 * Every ancestor of `dir` must be searchable by others: boxes open their bind sources as an
 * unprivileged host uid. Returns the first ancestor that is not, or undefined.
 */
export const unsearchableAncestor = (dir: string): string | undefined => {
  let current = path.dirname(path.resolve(dir))
  for (;;) {
    const mode = statSync(current).mode
    if ((mode & 0o001) === 0) return current
    const parent = path.dirname(current)
    if (parent === current) return undefined
    current = parent
  }
}

/** Kernel clock ticks since boot at which `pid` started (field 22 of /proc/<pid>/stat), or undefined. */
export const processStartTicks = (pid: number): string | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const afterComm = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return afterComm[19]
  } catch {
    return undefined
  }
}

/** Is `pid` alive and the same process that started at `startTicks` (guards against pid reuse)? */
export const processAlive = (pid: number, startTicks: string): boolean => {
  const ticks = processStartTicks(pid)
  if (ticks !== startTicks) return false
  try {
    const state = readFileSync(`/proc/${pid}/stat`, "utf8")
    const s = state.slice(state.lastIndexOf(")") + 2, state.lastIndexOf(")") + 3)
    return s !== "Z" && s !== "X"
  } catch {
    return false
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))
