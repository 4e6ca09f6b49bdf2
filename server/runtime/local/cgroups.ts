/**
 * Resource limits for a box: a cgroup per box (v2 when the host's hierarchy is unified, v1 with the
 * memory, cpu and pids controllers otherwise), or rlimits when no cgroup is writable.
 */
import { mkdirSync, writeFileSync, readFileSync, rmdirSync, existsSync, readdirSync, realpathSync } from "node:fs"
import path from "node:path"
import { Effect, Schedule } from "effect"
import { mounts } from "./mounts.ts"

export type LimitsMode = "cgroup-v2" | "cgroup-v1" | "rlimit"

export interface Resources {
  readonly memoryBytes?: number
  /** CPU in millicores: 500 = half a core. */
  readonly cpuMillis?: number
  readonly pids?: number
}

const CGROUP_ROOT = "/sys/fs/cgroup"
const V1_CONTROLLERS = ["memory", "cpu", "pids"] as const
const CPU_PERIOD_US = 100_000

const tryWritable = (dir: string): boolean => {
  try {
    mkdirSync(dir, { recursive: true })
    return true
  } catch {
    return false
  }
}

/** Which mechanism enforces box limits on this host (probes by creating the parent cgroups). */
export const detectLimitsMode = (parent: string): LimitsMode => {
  const table = mounts()
  const rootMount = table.find((m) => m.mountPoint === CGROUP_ROOT)
  if (rootMount?.fsType === "cgroup2") {
    const controllers = readFileSync(path.join(CGROUP_ROOT, "cgroup.controllers"), "utf8")
    const need = ["memory", "cpu", "pids"]
    if (need.every((c) => controllers.split(/\s+/).includes(c)) && tryWritable(path.join(CGROUP_ROOT, parent))) {
      try {
        writeFileSync(path.join(CGROUP_ROOT, "cgroup.subtree_control"), "+memory +cpu +pids")
        writeFileSync(path.join(CGROUP_ROOT, parent, "cgroup.subtree_control"), "+memory +cpu +pids")
        return "cgroup-v2"
      } catch {
        return "rlimit"
      }
    }
    return "rlimit"
  }
  // v1: each controller's hierarchy at /sys/fs/cgroup/<controller> (a mount, or a symlink to a
  // joint one such as cpu,cpuacct).
  const v1 = V1_CONTROLLERS.every((c) => {
    try {
      const real = realpathSync(path.join(CGROUP_ROOT, c))
      return table.some((m) => m.mountPoint === real && m.fsType === "cgroup") && existsSync(path.join(real, "cgroup.procs"))
    } catch {
      return false
    }
  })
  if (v1 && V1_CONTROLLERS.every((c) => tryWritable(path.join(CGROUP_ROOT, c, parent)))) return "cgroup-v1"
  return "rlimit"
}

/** The directories of one box's cgroup (one per controller in v1, one in v2). */
export const cgroupDirs = (mode: LimitsMode, parent: string, id: string): Array<string> =>
  mode === "cgroup-v2"
    ? [path.join(CGROUP_ROOT, parent, id)]
    : mode === "cgroup-v1"
      ? V1_CONTROLLERS.map((c) => path.join(CGROUP_ROOT, c, parent, id))
      : []

/** Creates the box's cgroup(s) and writes the limits; returns the cgroup.procs files to join. */
export const createCgroup = (mode: LimitsMode, parent: string, id: string, r: Resources): Array<string> => {
  const dirs = cgroupDirs(mode, parent, id)
  for (const d of dirs) mkdirSync(d, { recursive: true })
  if (mode === "cgroup-v2") {
    const d = dirs[0]!
    if (r.memoryBytes !== undefined) {
      writeFileSync(path.join(d, "memory.max"), String(r.memoryBytes))
      if (existsSync(path.join(d, "memory.swap.max"))) writeFileSync(path.join(d, "memory.swap.max"), "0")
    }
    if (r.cpuMillis !== undefined)
      writeFileSync(path.join(d, "cpu.max"), `${Math.max(1000, Math.round((r.cpuMillis * CPU_PERIOD_US) / 1000))} ${CPU_PERIOD_US}`)
    if (r.pids !== undefined) writeFileSync(path.join(d, "pids.max"), String(r.pids))
  } else if (mode === "cgroup-v1") {
    const [mem, cpu, pids] = dirs as [string, string, string]
    if (r.memoryBytes !== undefined) {
      writeFileSync(path.join(mem, "memory.limit_in_bytes"), String(r.memoryBytes))
      const memsw = path.join(mem, "memory.memsw.limit_in_bytes")
      if (existsSync(memsw)) writeFileSync(memsw, String(r.memoryBytes))
    }
    if (r.cpuMillis !== undefined) {
      writeFileSync(path.join(cpu, "cpu.cfs_period_us"), String(CPU_PERIOD_US))
      writeFileSync(path.join(cpu, "cpu.cfs_quota_us"), String(Math.max(1000, Math.round((r.cpuMillis * CPU_PERIOD_US) / 1000))))
    }
    if (r.pids !== undefined) writeFileSync(path.join(pids, "pids.max"), String(r.pids))
  }
  return dirs.map((d) => path.join(d, "cgroup.procs"))
}

const procsOf = (dir: string): Array<number> => {
  try {
    return readFileSync(path.join(dir, "cgroup.procs"), "utf8")
      .split("\n")
      .filter((l) => l.length > 0)
      .map(Number)
  } catch {
    return []
  }
}

/** Kills whatever is in one cgroup directory; answers whether it is gone (removed, or never there). */
const killAndRemove = (mode: LimitsMode, dir: string): boolean => {
  if (!existsSync(dir)) return true
  if (mode === "cgroup-v2" && existsSync(path.join(dir, "cgroup.kill"))) {
    try {
      writeFileSync(path.join(dir, "cgroup.kill"), "1")
    } catch {
      /* already empty */
    }
  }
  for (const pid of procsOf(dir)) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      /* gone */
    }
  }
  try {
    rmdirSync(dir)
    return true
  } catch {
    return false
  }
}

/** The processes of a killed cgroup take a moment to leave it: try again every 20 ms, for 2 seconds. */
const untilEmpty = Schedule.spaced("20 millis").pipe(Schedule.upTo({ times: 100 }))

/**
 * v1 hierarchies other than ours that hold a directory of `relative`: runsc puts a gVisor box's
 * sandbox in its cgroup path in every hierarchy it knows (cpuset, blkio, ...), creating what is
 * missing. It removes the box's own there, not the parents it made.
 */
const foreignDirs = (mode: LimitsMode, relative: string): Array<string> => {
  if (mode !== "cgroup-v1") return []
  try {
    return readdirSync(CGROUP_ROOT)
      .filter((h) => !(V1_CONTROLLERS as ReadonlyArray<string>).includes(h))
      .map((h) => path.join(CGROUP_ROOT, h, relative))
      .filter((dir) => existsSync(dir))
  } catch {
    return []
  }
}

/** Kills whatever is left in the box's cgroup(s) and removes them. */
export const removeCgroup = (mode: LimitsMode, parent: string, id: string): Effect.Effect<void> =>
  Effect.forEach(
    [...cgroupDirs(mode, parent, id), ...foreignDirs(mode, path.join(parent, id))],
    (dir) => Effect.sync(() => killAndRemove(mode, dir)).pipe(Effect.repeat({ schedule: untilEmpty, until: (gone) => gone })),
    { discard: true }
  )

/**
 * Removes the parent cgroup(s) `detectLimitsMode` made, and those runsc made in the other v1
 * hierarchies for gVisor boxes, when nothing is left in them (a box still running keeps its
 * parent): a stopped server leaves no empty `slipway-*` directory behind. Answers whether they are gone.
 */
export const removeCgroupParent = (mode: LimitsMode, parent: string): boolean => {
  const dirs = mode === "cgroup-v2" ? [path.join(CGROUP_ROOT, parent)] : mode === "cgroup-v1" ? V1_CONTROLLERS.map((c) => path.join(CGROUP_ROOT, c, parent)) : []
  let gone = true
  for (const dir of [...dirs, ...foreignDirs(mode, parent)]) {
    try {
      // rmdir of a cgroup succeeds only when it has no child cgroup and no process.
      if (existsSync(dir)) rmdirSync(dir)
    } catch {
      gone = false
    }
  }
  return gone
}

/** Box ids that have a cgroup under `parent` (for recovery after a restart). */
export const listCgroups = (mode: LimitsMode, parent: string): Array<string> => {
  const base = mode === "cgroup-v2" ? path.join(CGROUP_ROOT, parent) : mode === "cgroup-v1" ? path.join(CGROUP_ROOT, "pids", parent) : ""
  if (!base || !existsSync(base)) return []
  return readdirSync(base, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
}

/** rlimits applied (with prlimit) when no cgroup is available. CPU quota has no rlimit equivalent. */
export const rlimitArgs = (r: Resources): Array<string> => {
  const args: Array<string> = []
  if (r.pids !== undefined) args.push(`--nproc=${r.pids}`)
  if (r.memoryBytes !== undefined) args.push(`--as=${r.memoryBytes}`)
  return args
}
