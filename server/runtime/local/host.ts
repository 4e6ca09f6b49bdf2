/**
 * Facts of the host the box runner and the volume store check: tools present, directories
 * reachable by unprivileged uids, processes alive (and the same ones: pids are reused).
 */
import { existsSync, readFileSync, statSync } from "node:fs"
import path from "node:path"

/** A Debian package that provides each host tool the local runtime runs by absolute path. */
const TOOL_PACKAGES: Readonly<Record<string, string>> = {
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
  "/bin/sh": "dash",
  "/usr/bin/runsc": "runsc"
}

/** The tools among `tools` that are missing, as a message naming the Debian packages; undefined when all are there. */
export const missingTools = (tools: ReadonlyArray<string>): string | undefined => {
  const missing = tools.filter((t) => !existsSync(t))
  if (missing.length === 0) return undefined
  const pkgs = [...new Set(missing.map((t) => TOOL_PACKAGES[t] ?? "?"))]
  return `local runtime: missing ${missing.join(", ")} (install the Debian package(s): ${pkgs.join(", ")})`
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

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces): state first, then the parent's pid…; undefined when the process is gone. */
const statFields = (pid: number): ReadonlyArray<string> | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  } catch {
    return undefined
  }
}

/** Kernel clock ticks since boot at which `pid` started (field 22 of /proc/<pid>/stat), or undefined. */
export const processStartTicks = (pid: number): string | undefined => statFields(pid)?.[19]

/** The pid of `pid`'s parent (field 4 of /proc/<pid>/stat), or undefined when it is gone. */
export const parentPid = (pid: number): number | undefined => {
  const fields = statFields(pid)
  return fields === undefined ? undefined : Number(fields[1])
}

/** Is `pid` alive and the same process that started at `startTicks` (guards against pid reuse)? One read of its stat. */
export const processAlive = (pid: number, startTicks: string): boolean => {
  const fields = statFields(pid)
  return fields !== undefined && fields[19] === startTicks && fields[0] !== "Z" && fields[0] !== "X"
}

/**
 * Whether a TCP table (the text of /proc/net/tcp and tcp6, the kernel's or gVisor's) has a socket
 * listening (state 0A) on `port`, any address.
 */
export const listensOn = (tables: string, port: number): boolean => {
  const hex = port.toString(16).toUpperCase().padStart(4, "0")
  for (const line of tables.split("\n")) {
    const cols = line.trim().split(/\s+/)
    if (cols.length > 3 && cols[3] === "0A" && cols[1]!.endsWith(`:${hex}`)) return true
  }
  return false
}
