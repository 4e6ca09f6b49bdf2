/**
 * The local runtime's machinery, shared by both areas: ONE image store (skopeo + umoci, cached
 * by digest), ONE box runner (bubblewrap, cgroups, overlay) and the volume store, under the
 * server's data directory (`<dir of the database>/runtime/`). Deployments and sandboxes each
 * have a driver over it; neither owns it.
 */
import { createHash } from "node:crypto"
import { existsSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { Context, Effect, Layer } from "effect"
import { ServerEnv } from "../../module.ts"
import { type BoxRunner, makeBoxRunner, type RunningBox } from "./boxes.ts"
import { unsearchableAncestor } from "./host.ts"
import { type ImageStore, imageStoreOptionsFromEnv, makeImageStore } from "./images.ts"
import { hostTools, hostToolsSummary, missingToolsMessage } from "./tools.ts"
import { makeVolumeStore, type SandboxVolumeStore } from "./volumes.ts"

export class LocalHost extends Context.Service<
  LocalHost,
  {
    readonly root: string
    readonly images: ImageStore
    readonly boxes: BoxRunner
    readonly volumes: SandboxVolumeStore
    /** Boxes running now, by id (sandbox boxes by sandbox id, replicas by their own ids). */
    readonly running: Map<string, RunningBox>
  }
>()("slipway/LocalHost") {}

/** Why the local runtime cannot run here with its state under `root`, or null when it can. */
export const localRuntimeUnavailable = (root: string): string | null => {
  if (process.platform !== "linux") return "the local runtime needs Linux"
  if (process.getuid?.() !== 0) return "the local runtime needs root (mounts, cgroups, user namespaces)"
  const missing = missingToolsMessage(hostTools(), ["bwrap", "skopeo", "umoci", "nsenter", "busybox", "mkfs.btrfs"])
  if (missing) return missing
  // Boxes run as unprivileged uids that must reach their state: every ancestor needs o+x.
  let existing = resolve(root)
  while (!existsSync(existing)) existing = dirname(existing)
  const blocked = unsearchableAncestor(join(existing, "child"))
  return blocked ? `${blocked} is not searchable by others (chmod o+x ${blocked}, or put the database elsewhere)` : null
}

/** Where the local runtime keeps its state: beside the database file (or in a temp dir for `:memory:`). */
export const runtimeRoot = (databasePath: string) =>
  databasePath === ":memory:" || databasePath.startsWith("file:") ? join(process.env.TMPDIR ?? "/tmp", `slipway-runtime-${process.pid}`) : join(resolve(dirname(databasePath)), "runtime")

/** The cgroup parent of the boxes of the runtime whose state is under `root`. */
export const cgroupParentFor = (root: string) => `slipway-${createHash("sha256").update(resolve(root)).digest("hex").slice(0, 12)}`

export const LocalHostLive = Layer.effect(
  LocalHost,
  Effect.gen(function* () {
    const { config, log } = yield* ServerEnv
    const root = runtimeRoot(config.databasePath)
    const trace = (event: string, detail?: Record<string, unknown>) => log.debug(event, detail)
    const images = makeImageStore({ root: join(root, "images"), ...imageStoreOptionsFromEnv(), log })
    // A cgroup parent of this runtime's own: servers with other data directories on the host never touch its boxes.
    // SLIPWAY_EXEC_HELPER=off: every exec spawns nsenter from the server (the per-box exec helper is not used).
    const helperOff = process.env.SLIPWAY_EXEC_HELPER === "off"
    const boxes = makeBoxRunner({ root: join(root, "boxes"), log: trace, cgroupParent: cgroupParentFor(root), ...(helperOff ? { execHelper: false as const } : {}) })
    const volumes = makeVolumeStore({ root: join(root, "volumes"), log: trace })
    yield* Effect.promise(() => volumes.remountAll())
    const exec = boxes.execMode()
    log.info("local runtime", { root, host: hostToolsSummary(hostTools()), limits: boxes.limitsMode(), exec: exec.reason ? `${exec.mode} (${exec.reason})` : exec.mode })
    const running = new Map<string, RunningBox>()
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        await Promise.allSettled([...running.values()].map((box) => box.stop()))
        running.clear()
        // What is left of boxes that were stopping or half-removed (mounts, cgroups) is cleaned; their files stay.
        await boxes.recover().catch((error) => log.warn("local runtime cleanup failed", { error: String(error) }))
        await volumes.unmountAll()
      })
    )
    return LocalHost.of({ root, images, boxes, volumes, running })
  })
)
