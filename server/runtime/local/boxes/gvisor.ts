/**
 * Boxes under gVisor: each box is a gVisor sandbox (`runsc run`), its system calls served by
 * gVisor's own kernel (the sentry, a user-space process on the host under seccomp), its files
 * through gVisor's file proxy (the gofer), its network a network stack of its own with only a
 * loopback (`--network=none`). The root filesystem is the box's overlay (image + writable layer,
 * the same as under bwrap), the bundle's `config.json` is generated here, and the sandbox joins
 * the box's own cgroup (`linux.cgroupsPath`): sentry, gofer and every process of the box are
 * charged to it.
 *
 * The sandbox's pid 1 is the exec helper (`--init`): its channel to the server is the sandbox's
 * stdin (a socketpair; runsc passes only stdio into a sandbox), so the box is up when the helper
 * says hello, and every exec is one fork + exec inside the sandbox, never a `runsc exec`. A server
 * that adopts a running sandbox (after a restart) starts another helper with `runsc exec`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { createHash } from "node:crypto"
import path from "node:path"
import type { Duplex } from "node:stream"
import { Effect, type Scope } from "effect"
import { BOX_HOME, BOX_TOOLS } from "../../BoxProcess.ts"
import type { ProcessRunner } from "../../ProcessRunner.ts"
import type { LimitsMode, Resources } from "../cgroups.ts"
import { EXEC_HELPER, type HelperChannel } from "../execHelper.ts"
import { helperChannelOver } from "./exec.ts"
import { type BoxInit, watchInit } from "./init.ts"
import { BoxError, type BoxSpec } from "./model.ts"
import { DEFAULT_PATH, HOST_PATH, tmpBytesOf } from "./spec.ts"

/** runsc's settings: `SLIPWAY_GVISOR_PLATFORM`, `SLIPWAY_GVISOR_FILE_ACCESS` (docs/runtime-isolation.md). */
export interface GvisorSettings {
  /** How the sentry intercepts the box's system calls: `ptrace` (works anywhere), `kvm` (needs /dev/kvm), `systrap` (newer runsc). */
  readonly platform: string
  /** `exclusive`: the sentry caches the root filesystem (only the box changes it); `shared`: it revalidates against the host. */
  readonly fileAccess: "exclusive" | "shared"
}

export const DEFAULT_GVISOR: GvisorSettings = { platform: "ptrace", fileAccess: "exclusive" }

export interface Gvisor extends GvisorSettings {
  /** The runsc binary. */
  readonly runsc: string
  /** runsc's state directory (`--root`): one runsc per runtime root. */
  readonly stateRoot: string
}

/**
 * The sandbox's name for runsc: runsc names its control socket after it in the host's abstract
 * socket namespace, so it must be unique on the host (another runtime root, another server, may
 * run a box of the same id): the box id behind a hash of runsc's state directory and the id.
 */
export const sandboxId = (gvisor: Gvisor, id: string): string =>
  `sw-${createHash("sha256").update(`${gvisor.stateRoot}\0${id}`).digest("hex").slice(0, 12)}-${id}`.slice(0, 80)

/** runsc and its global flags. */
export const runscArgv = (gvisor: Gvisor): Array<string> => [
  gvisor.runsc,
  "--root",
  gvisor.stateRoot,
  `--platform=${gvisor.platform}`,
  "--network=none",
  `--file-access=${gvisor.fileAccess}`
]

/**
 * The box's limits as its cgroup must hold them under gVisor. Every process of the box is one or
 * more host tasks of the sentry (its address space's stub process and threads, about 8 per idle
 * process, measured), and the sentry's own threads count too: the pids limit is scaled so that the
 * box gets about as many processes as under bwrap. The sentry's and the gofer's own memory is
 * charged to the box's cgroup as well: about 12 MiB idle, and the sentry grows with the commands
 * the box has run (measured with runsc 2022-12: +100 MiB after 1000 execs, levelling off near
 * 180 MiB after 2000), so the memory limit gets `GVISOR_MEMORY_OVERHEAD` on top of the box's own:
 * without it a 64 MiB box would be ended after a few hundred commands.
 */
export const gvisorResources = (resources: Resources): Resources => ({
  ...resources,
  ...(resources.pids === undefined ? {} : { pids: GVISOR_BASE_TASKS + resources.pids * GVISOR_TASKS_PER_PROCESS }),
  ...(resources.memoryBytes === undefined ? {} : { memoryBytes: resources.memoryBytes + GVISOR_MEMORY_OVERHEAD })
})
export const GVISOR_BASE_TASKS = 96
export const GVISOR_TASKS_PER_PROCESS = 10
export const GVISOR_MEMORY_OVERHEAD = 192 * 1024 * 1024

/** Every capability: box root holds them inside gVisor's kernel, as it does in its user namespace under bwrap (runsc drops CAP_NET_RAW: no raw sockets). */
const CAPABILITIES = [
  "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID",
  "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
  "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN",
  "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
  "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
  "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ"
]

/** The OCI runtime spec of the box's sandbox (its bundle's config.json). */
export const ociConfig = (options: {
  readonly spec: BoxSpec
  readonly merged: string
  readonly volumeSources: ReadonlyArray<string>
  /** The box's read-only view of the runner's tools directory (`gvisorToolsDir`). */
  readonly tools: string
  /** The box's cgroup, relative to the hierarchies' root (`/<parent>/<id>`). */
  readonly cgroupsPath: string
}) => {
  const { spec } = options
  const bind = (source: string, destination: string, readOnly: boolean) => ({ destination, type: "bind", source, options: ["rbind", readOnly ? "ro" : "rw"] })
  return {
    ociVersion: "1.0.2",
    process: {
      terminal: false,
      user: { uid: 0, gid: 0 },
      args: [EXEC_HELPER, "--init"],
      env: [`PATH=${DEFAULT_PATH}`, `HOME=${BOX_HOME}`],
      cwd: spec.workingDir ?? BOX_HOME,
      capabilities: { bounding: CAPABILITIES, effective: CAPABILITIES, permitted: CAPABILITIES, inheritable: [], ambient: [] },
      rlimits: [{ type: "RLIMIT_NOFILE", hard: 1048576, soft: 1048576 }],
      noNewPrivileges: true
    },
    root: { path: options.merged, readonly: false },
    hostname: spec.hostname ?? "box",
    mounts: [
      { destination: "/proc", type: "proc", source: "proc" },
      { destination: "/dev", type: "tmpfs", source: "tmpfs", options: ["nosuid", "strictatime", "mode=755", "size=65536k"] },
      { destination: "/dev/pts", type: "devpts", source: "devpts", options: ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"] },
      { destination: "/dev/shm", type: "tmpfs", source: "shm", options: ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"] },
      { destination: "/sys", type: "sysfs", source: "sysfs", options: ["nosuid", "noexec", "nodev", "ro"] },
      // tmpfs pages are charged to the box's memory (the sentry's): capped like the bwrap box's /tmp.
      { destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=1777", `size=${tmpBytesOf(spec)}`] },
      bind(path.join(options.tools, "busybox"), BOX_TOOLS, true),
      bind(path.join(options.tools, "exec"), EXEC_HELPER, true),
      ...(spec.volumes ?? []).map((v, i) => bind(options.volumeSources[i]!, v.mountPath, v.readOnly === true))
    ],
    linux: {
      namespaces: [{ type: "pid" }, { type: "network" }, { type: "ipc" }, { type: "uts" }, { type: "mount" }],
      cgroupsPath: options.cgroupsPath
    }
  }
}

/**
 * The runner's directory of the files every gVisor box gets read-only (`busybox`, `exec`): copies,
 * replaced (by rename) when the originals change. Boxes see it through read-only mounts of their
 * own, so no box can write a file of the host or of another box through gVisor's file proxy.
 */
export const gvisorToolsDir = (dir: string, busybox: string, execHelper: string): string => {
  mkdirSync(dir, { recursive: true, mode: 0o755 })
  for (const [name, source] of [["busybox", busybox], ["exec", execHelper]] as const) {
    const target = path.join(dir, name)
    const wanted = readFileSync(source)
    if (existsSync(target) && readFileSync(target).equals(wanted)) continue
    const tmp = `${target}.${process.pid}.tmp`
    writeFileSync(tmp, wanted, { mode: 0o555 })
    renameSync(tmp, target)
  }
  return dir
}

/** How long runsc may take to bring a sandbox up (100 at once on 2 cores take tens of seconds). */
const START_TIMEOUT = "120 seconds"

/** The tail of runsc's log for a message (runsc writes its errors there, the helper its own). */
const logTail = (file: string) => {
  try {
    return readFileSync(file, "utf8").trim().split("\n").slice(-5).join(" | ").slice(-600)
  } catch {
    return ""
  }
}

/**
 * A host command whose stdin is its fd 3 (our socketpair: Node only makes a duplex pipe of the fds
 * from 3 on) and whose output goes to `log` (a file: it outlives the server, which a pipe would not).
 */
const withChannel = (log: string, argv: ReadonlyArray<string>) => ["/bin/sh", "-c", 'log=$1; shift; exec "$@" <&3 3<&- >>"$log" 2>&1', "sh", log, ...argv]

/**
 * Runs the box's sandbox until the scope closes: `runsc run` of the bundle in `dir` (config.json
 * written here), its pid 1 the exec helper. Answers the box's init (the sentry's host pid, watched
 * through `runsc run`, our child, which cleans up after the sandbox) and the helper's channel.
 */
export const startSandbox = (options: {
  readonly runner: ProcessRunner["Service"]
  readonly gvisor: Gvisor
  readonly spec: BoxSpec
  readonly dir: string
  readonly config: ReturnType<typeof ociConfig>
  readonly log: (event: string, detail?: Record<string, unknown>) => void
}): Effect.Effect<{ readonly init: BoxInit; readonly helper: HelperChannel }, BoxError, Scope.Scope> =>
  Effect.gen(function* () {
    const id = options.spec.id
    const bundle = path.join(options.dir, "bundle")
    mkdirSync(bundle, { recursive: true, mode: 0o700 })
    writeFileSync(path.join(bundle, "config.json"), JSON.stringify(options.config), { mode: 0o600 })
    const log = path.join(options.dir, "runsc.log")
    const pidFile = path.join(options.dir, "sandbox.pid")
    writeFileSync(log, "", { mode: 0o600 })
    rmSync(pidFile, { force: true })
    const child = yield* options.runner
      .spawn(withChannel(log, [...runscArgv(options.gvisor), "run", "--bundle", bundle, "--pid-file", pidFile, sandboxId(options.gvisor, id)]), {
        cleanEnv: true,
        env: { PATH: HOST_PATH },
        stdio: ["ignore", "ignore", "ignore", "pipe"],
        killSignal: "SIGKILL"
      })
      .pipe(Effect.mapError((error) => new BoxError({ message: `box ${id} failed to start: ${error.message}` })))
    const helper = yield* helperChannelOver({ socket: child.stdio[3] as Duplex, id, isRunning: child.isRunning, log: options.log, stderr: () => logTail(log), stop: () => undefined })
    // Up once its pid 1 (the helper) says hello; a sandbox that could not start ends runsc first,
    // one that never comes up (the kvm platform hangs on some hosts) is given up.
    yield* Effect.raceFirst(
      helper.hello,
      Effect.flatMap(child.exited, (status) => Effect.fail(new BoxError({ message: `box ${id} failed to start (runsc exit ${status.code ?? status.signal}): ${logTail(log)}` })))
    ).pipe(
      Effect.timeoutOrElse({
        duration: START_TIMEOUT,
        orElse: () => Effect.fail(new BoxError({ message: `box ${id} failed to start: runsc did not start its sandbox within ${START_TIMEOUT} (platform ${options.gvisor.platform}: SLIPWAY_GVISOR_PLATFORM)` }))
      }),
      Effect.mapError((error) => new BoxError({ message: error.message.includes("failed to start") ? error.message : `box ${id} failed to start: ${logTail(log) || error.message}` }))
    )
    const pid = Number(readFileSync(pidFile, "utf8").trim())
    if (!Number.isInteger(pid) || pid <= 1) return yield* new BoxError({ message: `box ${id}: runsc wrote no sandbox pid` })
    // Its end: the sentry killed (runsc run, our child, then cleans up and exits); one that ends on
    // its own (out of memory, out of tasks, killed from the host) is unexpected.
    return { init: yield* watchInit(child, pid), helper }
  })

/**
 * Another exec helper in a running sandbox (one a previous server process started): `runsc exec`
 * of the helper with our socketpair as its stdin (runsc waits for it on the host: `--detach` would
 * leave a runsc of its own waiting instead); it exits when its channel closes, and runsc with it.
 * Synchronous up to the spawn, like every exec.
 */
export const execHelperIn = (options: {
  readonly runner: ProcessRunner["Service"]
  readonly gvisor: Gvisor
  readonly id: string
  readonly dir: string
  readonly isRunning: () => boolean
  readonly log: (event: string, detail?: Record<string, unknown>) => void
}): Effect.Effect<HelperChannel, BoxError, Scope.Scope> =>
  Effect.gen(function* () {
    const log = path.join(options.dir, "runsc.log")
    const child = yield* options.runner
      .spawn(withChannel(log, [...runscArgv(options.gvisor), "exec", sandboxId(options.gvisor, options.id), EXEC_HELPER, "--stdio"]), {
        cleanEnv: true,
        env: { PATH: HOST_PATH },
        stdio: ["ignore", "ignore", "ignore", "pipe"],
        killSignal: "SIGKILL"
      })
      .pipe(Effect.mapError((error) => new BoxError({ message: `box ${options.id}: ${error.message}` })))
    // Not waited for: the first frames wait in the socket (an exec starts synchronously, as under
    // bwrap); a helper that cannot start closes the channel, and its commands report SIGKILL.
    return yield* helperChannelOver({ socket: child.stdio[3] as Duplex, id: options.id, isRunning: options.isRunning, log: options.log, stderr: () => logTail(log), stop: () => undefined })
  })

/** Whether runsc keeps state of box `id`'s sandbox (one whose `runsc run` did not clean up after it). */
const hasState = (gvisor: Gvisor, id: string) =>
  existsSync(gvisor.stateRoot) && readdirSync(gvisor.stateRoot).some((name) => name.startsWith(`${sandboxId(gvisor, id)}_sandbox:`))

/** Forgets sandbox `id` in runsc's state (killing what is left of it): after a crash, before a start or a `destroy`. */
export const deleteSandbox = (runner: ProcessRunner["Service"], gvisor: Gvisor, id: string): Effect.Effect<void> =>
  Effect.suspend(() =>
    hasState(gvisor, id)
      ? runner.run([...runscArgv(gvisor), "delete", "--force", sandboxId(gvisor, id)], { cleanEnv: true, env: { PATH: HOST_PATH }, timeout: "30 seconds" }).pipe(Effect.ignore)
      : Effect.void
  )

/** Whether gVisor can run boxes with these limits. */
export const gvisorLimitsProblem = (mode: LimitsMode): string | undefined =>
  mode === "rlimit" ? "gVisor boxes need writable cgroups (their sandboxes join the box's cgroup): none are writable here" : undefined

/** Whether the installed runsc knows `platform` (and the host has what it needs), or why not. */
export const platformProblem = (runner: ProcessRunner["Service"], runsc: string, platform: string): Effect.Effect<string | undefined> =>
  runner.run([runsc, "help", "platforms"], { cleanEnv: true, env: { PATH: HOST_PATH }, timeout: "30 seconds" }).pipe(
    Effect.map(({ stdout }) => {
      const known = stdout.split(/\s+/).filter((word) => /^[a-z0-9]+$/.test(word))
      if (!known.includes(platform)) return `this runsc knows no platform "${platform}" (it knows ${known.join(", ")}: SLIPWAY_GVISOR_PLATFORM)`
      if (platform === "kvm" && !existsSync("/dev/kvm")) return "the kvm platform needs /dev/kvm, which this host has not"
      return undefined
    }),
    Effect.catch((error) => Effect.succeed(`${runsc} does not run: ${error.message}`))
  )
