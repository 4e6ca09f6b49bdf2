/**
 * The local runtime's machinery, shared by both areas: ONE process runner, ONE port allocator,
 * ONE image store (skopeo + umoci, cached by digest), ONE box runner (bubblewrap, cgroups,
 * overlay), the volume store and the egress bridges, each a service with its layer, with their
 * state under the server's data directory (`<dir of the database>/runtime/`, `RuntimeRoot`).
 * Deployments and sandboxes each have a driver over them; neither owns them.
 */
import { createHash } from "node:crypto"
import { existsSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { Context, Layer } from "effect"
import { ServerEnv } from "../../module.ts"
import { unsearchableAncestor } from "./host.ts"
import { hostTools, missingToolsMessage } from "./tools.ts"

/** Where the local runtime keeps its state, and the cgroup parent of its boxes. */
export class RuntimeRoot extends Context.Service<
  RuntimeRoot,
  {
    /** `<dir of the database>/runtime`: images/, boxes/, volumes/ and the deployments' state below it. */
    readonly root: string
    /** The cgroup parent of this runtime's boxes: servers with other data directories on the host never touch them. */
    readonly cgroupParent: string
  }
>()("slipway/RuntimeRoot") {}

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

/** The runtime root of the server's database. */
export const RuntimeRootLive = Layer.effect(
  RuntimeRoot,
  ServerEnv.useSync(({ config }) => {
    const root = runtimeRoot(config.databasePath)
    return RuntimeRoot.of({ root, cgroupParent: cgroupParentFor(root) })
  })
)
