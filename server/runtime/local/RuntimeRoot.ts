/** Where the local runtime keeps its state (beside the database), and the cgroup parent of its boxes. */
import { createHash } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { Context, Effect, Layer } from "effect"
import { ServerEnv } from "../../module.ts"

export class RuntimeRoot extends Context.Service<
  RuntimeRoot,
  {
    /** `<dir of the database>/runtime`: images/, boxes/, volumes/ and the deployments' state below it. */
    readonly root: string
    /** The cgroup parent of this runtime's boxes: servers with other data directories on the host never touch them. */
    readonly cgroupParent: string
    /**
     * A short private directory (0700, this process's) for the host ends of unix sockets (a box's
     * port bridges, the deployments' egress): a socket path has at most 107 bytes, which a deep
     * data directory would exceed. Removed when the runtime stops.
     */
    readonly sockets: string
  }
>()("slipway/RuntimeRoot") {}

/** Where the local runtime keeps its state: beside the database file (or in a temp dir for `:memory:`). */
export const runtimeRoot = (databasePath: string) =>
  databasePath === ":memory:" || databasePath.startsWith("file:") ? join(process.env.TMPDIR ?? "/tmp", `slipway-runtime-${process.pid}`) : join(resolve(dirname(databasePath)), "runtime")

/** The cgroup parent of the boxes of the runtime whose state is under `root`. */
export const cgroupParentFor = (root: string) => `slipway-${createHash("sha256").update(resolve(root)).digest("hex").slice(0, 12)}`

/** Longest base of the socket directory: with the directory's own name and a socket's (about 40 bytes), a path stays under 107. */
const MAX_SOCKET_BASE = 64

/**
 * A fresh private directory for unix sockets, in the temporary directory (in `/tmp` when
 * `TMPDIR` is too long to leave room), removed with the scope.
 */
export const socketDirectory = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir().length <= MAX_SOCKET_BASE ? tmpdir() : "/tmp", "slipway-sockets-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** The runtime root of the server's database. */
export const RuntimeRootLive = Layer.effect(
  RuntimeRoot,
  Effect.gen(function* () {
    const { config } = yield* ServerEnv
    const root = runtimeRoot(config.databasePath)
    return RuntimeRoot.of({ root, cgroupParent: cgroupParentFor(root), sockets: yield* socketDirectory })
  })
)
