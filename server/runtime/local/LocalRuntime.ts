/**
 * The local runtime's machinery, shared by both areas: ONE process runner, ONE port allocator,
 * ONE image store (skopeo + umoci, cached by digest), ONE box runner (bubblewrap, cgroups,
 * overlay), the volume store and the egress bridges, each a service with its layer, with their
 * state under the server's data directory (`RuntimeRoot`). Deployments and sandboxes each have a
 * driver over them; neither owns them.
 */
import { dirname, join, resolve } from "node:path"
import { existsSync } from "node:fs"
import { Layer } from "effect"
import { PortAllocatorLive } from "../PortAllocator.ts"
import { ProcessRunnerLive } from "../ProcessRunner.ts"
import { BoxRunnerLive } from "./BoxRunner.ts"
import { EgressLive } from "./egress.ts"
import { unsearchableAncestor } from "./host.ts"
import { ImageStoreLive } from "./ImageStore.ts"
import { RuntimeRootLive } from "./RuntimeRoot.ts"
import { hostTools, missingToolsMessage } from "./tools.ts"
import { VolumeStoreLive } from "./VolumeStore.ts"

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

/**
 * Every service of the local runtime, over the server's environment. The sandbox and deployment
 * areas provide this same layer (memoized: built once per server), so they share one box runner
 * and one image store.
 */
export const LocalRuntimeLive = Layer.mergeAll(ImageStoreLive, VolumeStoreLive, BoxRunnerLive, EgressLive, PortAllocatorLive).pipe(
  Layer.provideMerge(Layer.mergeAll(ProcessRunnerLive, RuntimeRootLive))
)
