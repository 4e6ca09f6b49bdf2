/**
 * The deployment control plane as a server area: its runtime (the driver and what serves each
 * deployment's URL and logs), its controller, its routes and each deployment's URL.
 */
import { Effect, Layer } from "effect"
import { ServerEnv } from "../module.ts"
import { LocalHostLive } from "../runtime/local/LocalHost.ts"
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
import { makeDeploymentWrites } from "./writes.ts"

/** The driver `SLIPWAY_RUNTIME` selects: `local` runs external_container images under bubblewrap (gitrepo stays simulated). */
const DriverLive = Layer.unwrap(
  Effect.gen(function* () {
    const { config } = yield* ServerEnv
    const runtime = yield* chooseRuntime
    if (runtime.name !== "local") return SimulatedDeploymentDriver({ stepMs: config.revisionStepMs })
    return LocalDeploymentDriver(localDeploymentOptionsFromEnv(process.env, config.revisionStepMs)).pipe(Layer.provide(LocalHostLive))
  })
)

/** The driver, and the deployment URLs' proxy and log store it serves through. */
export const deploymentRuntime = DriverLive.pipe(Layer.provideMerge(DeploymentServingLive))

/** The controller, built on the runtime. */
export const deploymentController = DeploymentControllerLive

export const deploymentsModule = {
  name: "deployments",
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
