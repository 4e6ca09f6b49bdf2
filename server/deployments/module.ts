/** The deployment control plane as a server area: its routes, its runtime (controller + driver) and each deployment's URL. */
import { Effect, Layer } from "effect"
import type { ServerModule } from "../module.ts"
import { ServerEnv } from "../module.ts"
import { LocalHostLive } from "../runtime/local/legacy.ts"
import { chooseRuntime } from "../runtime/select.ts"
import { DeploymentControllerLive } from "./controller.ts"
import { LocalDeploymentDriver, localDeploymentOptionsFromEnv } from "./drivers/local.ts"
import { SimulatedDeploymentDriver } from "./drivers/simulated.ts"
import { deploymentHttp, DeploymentServingLive } from "./local/services.ts"
import { deploymentRoutes } from "./routes/deployments.ts"
import { integrationRoutes } from "./routes/integrations.ts"
import { listenerRoutes } from "./routes/listeners.ts"
import { logRoutes } from "./routes/logs.ts"
import { realApiRoutes } from "./routes/realApi.ts"
import { revisionRoutes } from "./routes/revisions.ts"
import { makeDeploymentWrites } from "./shared.ts"

/** The driver `SLIPWAY_RUNTIME` selects: `local` runs external_container images under bubblewrap (gitrepo stays simulated). */
const DriverLive = Layer.unwrap(
  Effect.gen(function* () {
    const { config } = yield* ServerEnv
    const runtime = yield* chooseRuntime
    if (runtime.name !== "local") return SimulatedDeploymentDriver({ stepMs: config.revisionStepMs })
    return LocalDeploymentDriver(localDeploymentOptionsFromEnv(process.env, config.revisionStepMs)).pipe(Layer.provide(LocalHostLive))
  })
)

export const deploymentsModule: ServerModule = {
  name: "deployments",
  layer: DeploymentControllerLive.pipe(Layer.provide(DriverLive), Layer.provideMerge(DeploymentServingLive)),
  routes: Effect.gen(function* () {
    const writes = yield* makeDeploymentWrites
    const spec = [
      ...(yield* deploymentRoutes(writes)),
      ...(yield* revisionRoutes(writes)),
      ...(yield* listenerRoutes(writes)),
      ...(yield* integrationRoutes(writes)),
      ...(yield* logRoutes(writes))
    ]
    return [...spec, ...(yield* realApiRoutes(writes, spec))]
  }),
  http: deploymentHttp
}
