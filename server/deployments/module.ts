/** The deployment control plane as a server area: its routes and its runtime (controller + driver). */
import { Effect, Layer } from "effect"
import type { ServerModule } from "../module.ts"
import { ServerEnv } from "../module.ts"
import { DeploymentControllerLive } from "./controller.ts"
import { SimulatedDeploymentDriver } from "./drivers/simulated.ts"
import { deploymentRoutes } from "./routes/deployments.ts"
import { integrationRoutes } from "./routes/integrations.ts"
import { listenerRoutes } from "./routes/listeners.ts"
import { realApiRoutes } from "./routes/realApi.ts"
import { revisionRoutes } from "./routes/revisions.ts"
import { makeDeploymentWrites } from "./shared.ts"

/** The driver `SLIPWAY_RUNTIME` selects (only `simulated` drives deployments so far). */
const DriverLive = Layer.unwrap(Effect.map(ServerEnv, ({ config }) => SimulatedDeploymentDriver({ stepMs: config.revisionStepMs })))

export const deploymentsModule: ServerModule = {
  name: "deployments",
  layer: DeploymentControllerLive.pipe(Layer.provide(DriverLive)),
  routes: Effect.gen(function* () {
    const writes = yield* makeDeploymentWrites
    const spec = [
      ...(yield* deploymentRoutes(writes)),
      ...(yield* revisionRoutes(writes)),
      ...(yield* listenerRoutes(writes)),
      ...(yield* integrationRoutes(writes))
    ]
    return [...spec, ...(yield* realApiRoutes(writes, spec))]
  })
}
