/** The sandbox area (/v2/sandboxes) as a server area: its routes and its runtime (controller, driver, dataplane). */
import { Effect, Layer } from "effect"
import type { ServerModule } from "../module.ts"
import { SandboxControllerLive } from "./controller.ts"
import { UnavailableDataplane } from "./Dataplane.ts"
import { SimulatedSandboxDriver } from "./drivers/simulated.ts"
import { boxRoutes } from "./routes/boxes.ts"
import { poolRoutes } from "./routes/pools.ts"
import { templateRoutes } from "./routes/templates.ts"
import { volumeRoutes } from "./routes/volumes.ts"
import { makeSandboxShared } from "./shared.ts"

export const sandboxModule: ServerModule = {
  name: "sandboxes",
  layer: Layer.mergeAll(SandboxControllerLive.pipe(Layer.provide(SimulatedSandboxDriver)), UnavailableDataplane),
  routes: Effect.map(makeSandboxShared, (shared) => [...templateRoutes(shared), ...volumeRoutes(shared), ...poolRoutes(shared), ...boxRoutes(shared)])
}
