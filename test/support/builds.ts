/**
 * A build environment for tests: the real ImageBuilder and GitSource (real buildah, git, bwrap,
 * cgroups, loop mounts) with their state in a temporary directory and their cgroups under a
 * parent of their own, in one ManagedRuntime (one builder: its queue is shared by the test's builds).
 *
 *   const env = await startBuildEnv({ registries: { insecureRegistries: [registry.host] } })
 *   const image = await env.run(Effect.scoped(…builder.build(…)…))
 *   await env.stop()         // disposes the runtime, unmounts, removes the directory and cgroups
 *
 * `collectLog()` gives an `onLog` that keeps every event (and its formatted line).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import { type BuildLogEvent, formatBuildLogEvent } from "../../server/builds/buildLog.ts"
import { GitSource, GitSourceLive } from "../../server/builds/GitSource.ts"
import { ImageBuilder, ImageBuilderLive } from "../../server/builds/ImageBuilder.ts"
import { type BuildConfig, BuildSettings, defaultBuildSettings } from "../../server/builds/settings.ts"
import { HOST_ENV, ProcessRunnerLive, processRunner } from "../../server/runtime/ProcessRunner.ts"
import { which } from "../../server/runtime/local/tools.ts"

export interface BuildEnv {
  readonly root: string
  readonly settings: BuildConfig
  readonly run: <A, E>(effect: Effect.Effect<A, E, ImageBuilder | GitSource>) => Promise<A>
  readonly runtime: ManagedRuntime.ManagedRuntime<ImageBuilder | GitSource, never>
  readonly stop: () => Promise<void>
}

const REQUIRED: ReadonlyArray<readonly [string, string]> = [
  ["buildah", "buildah"],
  ["skopeo", "skopeo"],
  ["bwrap", "bubblewrap"],
  ["mkfs.btrfs", "btrfs-progs"],
  ["perl", "perl-base"],
  ["git", "git"],
  ["umoci", "umoci"]
]

/** Fails naming the Debian package when a tool the builds need is missing. */
export const requireBuildTools = () => {
  for (const [tool, pkg] of REQUIRED) if (which(tool) === null) throw new Error(`${tool} not found: install Debian package ${pkg}`)
}

export const host = (argv: ReadonlyArray<string>) =>
  Effect.runPromise(processRunner.run(argv, { cleanEnv: true, env: HOST_ENV, timeout: "5 minutes" })).then((r) => r.stdout)

export const startBuildEnv = async (overrides: Partial<BuildConfig> = {}): Promise<BuildEnv> => {
  requireBuildTools()
  const root = mkdtempSync(join(tmpdir(), "slipway-builds-"))
  const cgroupParent = `slipway-test-builds-${process.pid}-${Math.random().toString(36).slice(2, 8)}`
  const settings: BuildConfig = { ...defaultBuildSettings(root, cgroupParent), ...overrides }
  const layer = Layer.mergeAll(ImageBuilderLive, GitSourceLive).pipe(Layer.provide(Layer.succeed(BuildSettings, settings)), Layer.provide(ProcessRunnerLive))
  const runtime = ManagedRuntime.make(layer)
  const stop = async () => {
    await runtime.dispose()
    const caches = join(root, "caches")
    if (existsSync(caches)) {
      for (const key of readdirSync(caches)) {
        const mnt = join(caches, key, "mnt")
        const mounted = await host(["findmnt", "-n", "--mountpoint", mnt]).catch(() => "")
        if (mounted.trim() !== "") await host(["umount", "-l", mnt]).catch(() => undefined)
      }
    }
    rmSync(root, { recursive: true, force: true })
    for (const controller of ["memory", "cpu", "pids", ""]) {
      const dir = join("/sys/fs/cgroup", controller, cgroupParent)
      if (!existsSync(dir)) continue
      for (const child of readdirSync(dir, { withFileTypes: true })) if (child.isDirectory()) rmdirSafe(join(dir, child.name))
      rmdirSafe(dir)
    }
  }
  return { root, settings, runtime, run: (effect) => runtime.runPromise(effect), stop }
}

const rmdirSafe = (dir: string) => {
  try {
    rmdirSync(dir)
  } catch {
    // busy or gone
  }
}

/**
 * Command lines of the live host processes running as one cache's uids (its builds' processes).
 * Exited ones not yet reaped (zombies: orphans wait for the host's init) are not counted.
 */
export const processesOfCache = async (env: BuildEnv, cacheKey: string): Promise<Array<string>> => {
  const { hostUid } = JSON.parse(readFileSync(join(env.root, "caches", cacheKey, "owner.json"), "utf8")) as { hostUid: number }
  const lines = (await host(["ps", "-eo", "uid=,stat=,args="])).split("\n")
  return lines
    .map((l) => /^\s*(\d+)\s+(\S+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null && Number(m[1]) >= hostUid && Number(m[1]) < hostUid + 65_536 && !m[2]!.startsWith("Z"))
    .map((m) => m[3]!)
}

/** An `onLog` that keeps the build's events. */
export const collectLog = () => {
  const events: Array<BuildLogEvent> = []
  return {
    events,
    onLog: (event: BuildLogEvent) => Effect.sync(() => void events.push(event)),
    lines: () => events.map(formatBuildLogEvent),
    text: () => events.map(formatBuildLogEvent).join("\n")
  }
}

/** Unpacks `layout:tag` with umoci into `dir` (as root: owners kept); answers the bundle's rootfs. */
export const unpackLayout = async (layout: string, tag: string, dir: string): Promise<string> => {
  await host(["umoci", "unpack", "--image", `${layout}:${tag}`, dir])
  return join(dir, "rootfs")
}
