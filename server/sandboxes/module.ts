/** The sandbox area (/v2/sandboxes) as a server area: its runtime (driver, dataplane), its controller, its routes and the dataplane's URLs. */
import { Effect, Layer } from "effect"
import { LocalHostLive } from "../runtime/local/LocalHost.ts"
import { chooseRuntime } from "../runtime/select.ts"
import { SandboxControllerLive } from "./controller.ts"
import { UnavailableDataplane } from "./Dataplane.ts"
import { LocalDataplane } from "./dataplanes/local.ts"
import { dataplaneHttp } from "./dataplaneHttp.ts"
import { LocalSandboxDriver } from "./drivers/local.ts"
import { SimulatedSandboxDriver } from "./drivers/simulated.ts"
import { boxRoutes } from "./routes/boxes.ts"
import { poolRoutes } from "./routes/pools.ts"
import { snapshotRoutes } from "./routes/snapshots.ts"
import { templateRoutes } from "./routes/templates.ts"
import { volumeRoutes } from "./routes/volumes.ts"
import { makeSandboxRouteContext } from "./routeContext.ts"

const local = Layer.mergeAll(LocalSandboxDriver, LocalDataplane).pipe(Layer.provide(LocalHostLive))
const simulated = Layer.mergeAll(SimulatedSandboxDriver, UnavailableDataplane)

/** The driver and the dataplane SLIPWAY_RUNTIME selects. */
export const sandboxRuntime = Layer.unwrap(Effect.map(chooseRuntime, (runtime) => (runtime.name === "local" ? local : simulated)))

/** The controller, built on the runtime. */
export const sandboxController = SandboxControllerLive

export const sandboxModule = {
  name: "sandboxes",
  routes: Effect.map(makeSandboxRouteContext, (context) => [...templateRoutes(context), ...volumeRoutes(context), ...poolRoutes(context), ...boxRoutes(context), ...snapshotRoutes(context)]),
  http: dataplaneHttp
}
