/**
 * What this host offers the local runtime: which tools are installed (absolute paths) and how cgroups
 * are mounted. Synchronous and cheap (a few stat calls): meant for start-up, choosing the runtime and
 * the start-up log line (`hostToolsSummary`).
 */
import { accessSync, closeSync, constants, existsSync, openSync, readFileSync, readSync, statSync } from "node:fs"
import { delimiter, join } from "node:path"

export type HostToolName = "bwrap" | "skopeo" | "umoci" | "nsenter" | "busybox" | "mkfs.btrfs" | "runsc"

/** The Debian package that provides each tool (for "install Debian package X" messages). */
export const TOOL_PACKAGES: Readonly<Record<HostToolName, string>> = {
  bwrap: "bubblewrap",
  skopeo: "skopeo",
  umoci: "umoci",
  nsenter: "util-linux",
  busybox: "busybox-static",
  "mkfs.btrfs": "btrfs-progs",
  runsc: "runsc"
}

const TOOL_NAMES: ReadonlyArray<HostToolName> = ["bwrap", "skopeo", "umoci", "nsenter", "busybox", "mkfs.btrfs", "runsc"]

export type CgroupMode =
  /** cgroup v2, one unified hierarchy at `root`. */
  | { readonly mode: "v2"; readonly root: string; readonly controllers: ReadonlyArray<string>; readonly writable: boolean }
  /** cgroup v1: one hierarchy per controller under `root` (memory, cpu, pids are the ones we use). */
  | { readonly mode: "v1"; readonly root: string; readonly controllers: ReadonlyArray<string>; readonly writable: boolean }
  | { readonly mode: "none" }

export interface HostTools {
  /** Absolute path of each tool, or null when missing. `busybox` is only reported when statically linked. */
  readonly tools: Readonly<Record<HostToolName, string | null>>
  readonly cgroup: CgroupMode
}

const SEARCH_EXTRA = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]

const isExecutableFile = (path: string): boolean => {
  try {
    if (!statSync(path).isFile()) return false
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** The absolute path of `name` on PATH (and the usual sbin directories), or null. */
export const which = (name: string, pathEnv: string = process.env.PATH ?? ""): string | null => {
  const dirs = [...pathEnv.split(delimiter).filter((d) => d.startsWith("/")), ...SEARCH_EXTRA]
  for (const dir of new Set(dirs)) {
    const candidate = join(dir, name)
    if (isExecutableFile(candidate)) return candidate
  }
  return null
}

/**
 * True when `path` is an ELF executable without a program interpreter (statically linked): such a
 * binary runs inside any root filesystem, which is why boxes get a static busybox.
 */
export const isStaticElf = (path: string): boolean => {
  let fd: number | undefined
  try {
    fd = openSync(path, "r")
    const header = Buffer.alloc(64)
    if (readSync(fd, header, 0, 64, 0) < 64) return false
    if (header.readUInt32BE(0) !== 0x7f454c46) return false // "\x7fELF"
    const is64 = header[4] === 2
    const little = header[5] === 1
    const u16 = (b: Buffer, o: number) => (little ? b.readUInt16LE(o) : b.readUInt16BE(o))
    const u32 = (b: Buffer, o: number) => (little ? b.readUInt32LE(o) : b.readUInt32BE(o))
    const phoff = is64 ? Number(little ? header.readBigUInt64LE(32) : header.readBigUInt64BE(32)) : u32(header, 28)
    const phentsize = u16(header, is64 ? 54 : 42)
    const phnum = u16(header, is64 ? 56 : 44)
    if (phnum === 0 || phentsize < 8 || phnum > 512) return false
    const table = Buffer.alloc(phentsize * phnum)
    if (readSync(fd, table, 0, table.length, phoff) < table.length) return false
    for (let i = 0; i < phnum; i++) {
      if (u32(table, i * phentsize) === 3 /* PT_INTERP */) return false
    }
    return true
  } catch {
    return false
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

const writable = (path: string): boolean => {
  try {
    accessSync(path, constants.W_OK)
    return true
  } catch {
    return false
  }
}

/** How cgroups are mounted under `root` (default /sys/fs/cgroup) and whether we may create groups. */
export const cgroupMode = (root: string = "/sys/fs/cgroup"): CgroupMode => {
  const unified = join(root, "cgroup.controllers")
  if (existsSync(unified)) {
    let controllers: Array<string> = []
    try {
      controllers = readFileSync(unified, "utf8").trim().split(/\s+/).filter((c) => c.length > 0)
    } catch {
      // unreadable: report no controllers
    }
    return { mode: "v2", root, controllers, writable: writable(root) }
  }
  const wanted = ["memory", "cpu", "pids"]
  const present = wanted.filter((c) => {
    try {
      return statSync(join(root, c)).isDirectory()
    } catch {
      return false
    }
  })
  if (present.length === 0) return { mode: "none" }
  return { mode: "v1", root, controllers: present, writable: present.length === wanted.length && present.every((c) => writable(join(root, c))) }
}

/** Which runtime tools this host has, and its cgroup mode. */
export const hostTools = (options: { readonly pathEnv?: string; readonly cgroupRoot?: string } = {}): HostTools => {
  const tools = {} as Record<HostToolName, string | null>
  for (const name of TOOL_NAMES) {
    const path = which(name, options.pathEnv)
    tools[name] = name === "busybox" && path !== null && !isStaticElf(path) ? null : path
  }
  return { tools, cgroup: cgroupMode(options.cgroupRoot) }
}

/** The tools among `names` that are missing, as a message naming their Debian packages; null when all are present. */
export const missingToolsMessage = (host: HostTools, names: ReadonlyArray<HostToolName>): string | null => {
  const missing = names.filter((n) => host.tools[n] === null)
  if (missing.length === 0) return null
  const packages = [...new Set(missing.map((n) => TOOL_PACKAGES[n]))]
  return `missing ${missing.join(", ")}: install Debian package${packages.length > 1 ? "s" : ""} ${packages.join(" ")}`
}

/** One line for the server's start-up log. */
export const hostToolsSummary = (host: HostTools): string => {
  const tools = TOOL_NAMES.map((n) => {
    const path = host.tools[n]
    const label = n === "busybox" ? "busybox(static)" : n
    return path ? `${label}=${path}` : `${label}=missing(${TOOL_PACKAGES[n]})`
  }).join(" ")
  const cg = host.cgroup
  const cgroup =
    cg.mode === "none"
      ? "cgroup=none"
      : `cgroup=${cg.mode}(${cg.controllers.join(",") || "no controllers"}${cg.writable ? ", writable" : ", read-only"})`
  return `host tools: ${tools} ${cgroup}`
}
