/** Where the local runtime keeps its state (beside the database), and the cgroup parent of its boxes. */
import { createHash } from "node:crypto"
import { dirname, join, resolve } from "node:path"
import { Context, Layer } from "effect"
import { ServerEnv } from "../../module.ts"

export class RuntimeRoot extends Context.Service<
  RuntimeRoot,
  {
    /** `<dir of the database>/runtime`: images/, boxes/, volumes/ and the deployments' state below it. */
    readonly root: string
    /** The cgroup parent of this runtime's boxes: servers with other data directories on the host never touch them. */
    readonly cgroupParent: string
  }
>()("slipway/RuntimeRoot") {}

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
