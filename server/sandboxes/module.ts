/** The sandbox area (/v2/sandboxes) as a server area: its routes, its runtime (controller, driver, dataplane) and the dataplane's URLs. */
import { Effect, Layer } from "effect"
import type { ServerModule } from "../module.ts"
import { LocalRuntimeLive } from "../runtime/local/LocalRuntime.ts"
import { chooseRuntime } from "../runtime/select.ts"
import { BoxRegistryLive } from "./BoxRegistry.ts"
import { SandboxControllerLive } from "./controller.ts"
import { UnavailableDataplane } from "./dataplane/Dataplane.ts"
import { dataplaneHttp } from "./dataplane/http.ts"
import { LocalDataplane } from "./dataplane/local.ts"
import { SandboxObservationsLive } from "./Driver.ts"
import { LocalSandboxDriver } from "./drivers/local.ts"
import { SimulatedSandboxDriver } from "./drivers/simulated.ts"
import { boxRoutes } from "./routes/boxes.ts"
import { poolRoutes } from "./routes/pools.ts"
import { snapshotRoutes } from "./routes/snapshots.ts"
import { templateRoutes } from "./routes/templates.ts"
import { volumeRoutes } from "./routes/volumes.ts"
import { makeSandboxShared } from "./shared.ts"

/** The driver and the dataplane over the local runtime; the box registry between them (the driver writes, the dataplane reads). */
const local = SandboxControllerLive.pipe(
  Layer.provideMerge(Layer.mergeAll(LocalSandboxDriver, LocalDataplane)),
  Layer.provideMerge(Layer.mergeAll(BoxRegistryLive, SandboxObservationsLive)),
  Layer.provide(LocalRuntimeLive)
)
const simulated = SandboxControllerLive.pipe(Layer.provideMerge(Layer.mergeAll(SimulatedSandboxDriver, UnavailableDataplane)), Layer.provideMerge(SandboxObservationsLive))

export const sandboxModule: ServerModule = {
  name: "sandboxes",
  layer: Layer.unwrap(Effect.map(chooseRuntime, (runtime) => (runtime.name === "local" ? local : simulated))),
  routes: Effect.map(makeSandboxShared, (shared) => [...templateRoutes(shared), ...volumeRoutes(shared), ...poolRoutes(shared), ...boxRoutes(shared), ...snapshotRoutes(shared)]),
  http: dataplaneHttp
}
