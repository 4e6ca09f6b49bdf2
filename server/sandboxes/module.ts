/** The sandbox area (/v2/sandboxes) as a server area: its runtime (driver, dataplane, the observation queue), its controller, its routes and the dataplane's URLs. */
import { Effect, Layer } from "effect"
import { LocalRuntimeLive } from "../runtime/local/LocalRuntime.ts"
import { RuntimeChoice } from "../runtime/select.ts"
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
import { makeSandboxRouteContext } from "./routeContext.ts"
import { volumeCallsHttp } from "./volumeCalls.ts"
import type { RawHttp } from "../module.ts"

/**
 * The driver and the dataplane over the server's one `LocalRuntimeLive` (the deployment area
 * provides the same Layer: memoized, it is built once per server); the box registry between them
 * (the driver writes, the dataplane reads).
 */
const local = Layer.mergeAll(LocalSandboxDriver, LocalDataplane).pipe(Layer.provide(BoxRegistryLive), Layer.provide(LocalRuntimeLive))
const simulated = Layer.mergeAll(SimulatedSandboxDriver, UnavailableDataplane)

/**
 * The driver and the dataplane `SLIPWAY_RUNTIME` selects, and the queue the driver reports on
 * (shared with the controller built on this).
 */
export const sandboxRuntime = Layer.unwrap(RuntimeChoice.useSync((runtime) => (runtime.name === "local" ? local : simulated))).pipe(
  Layer.provideMerge(SandboxObservationsLive)
)

/** The controller, built on the runtime: it consumes the driver's queue. */
export const sandboxController = SandboxControllerLive

export const sandboxModule = {
  name: "sandboxes",
  routes: Effect.map(makeSandboxRouteContext, (context) => [...templateRoutes(context), ...volumeRoutes(context), ...poolRoutes(context), ...boxRoutes(context), ...snapshotRoutes(context)]),
  // The dataplane's URLs, and the calls other replicas make to the one that holds a volume.
  http: Effect.map(Effect.all([dataplaneHttp, volumeCallsHttp]), ([dataplane, volumeCalls]) => ({
    request: (request, response) => volumeCalls.request(request, response) || (dataplane.request?.(request, response) ?? false),
    ...(dataplane.upgrade ? { upgrade: dataplane.upgrade } : {})
  }) satisfies RawHttp)
}
