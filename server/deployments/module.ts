/**
 * The deployment control plane as a server area: its routes, its runtime (the controller, a
 * driver, the observation channel between them) and each deployment's URL (`DeploymentProxy`),
 * with the `LogStore` behind the log endpoints. The local driver also has the deployments'
 * databases (`DeploymentDatabases`) and the local host's machinery.
 */
import { Effect, Layer } from "effect"
import type { ServerModule } from "../module.ts"
import { ServerEnv } from "../module.ts"
import { LocalRuntimeLive } from "../runtime/local/LocalRuntime.ts"
import { RuntimeRootLive } from "../runtime/local/RuntimeRoot.ts"
import { chooseRuntime } from "../runtime/select.ts"
import { DeploymentControllerLive } from "./controller.ts"
import { LocalDeploymentDriver, localDeploymentOptionsFromEnv } from "./drivers/local.ts"
import { DeploymentObservationsLive } from "./Driver.ts"
import { SimulatedDeploymentDriver } from "./drivers/simulated.ts"
import { DeploymentDatabasesLive } from "./local/databases.ts"
import { LogStoreLive } from "./local/logs.ts"
import { DeploymentProxy, DeploymentProxyLive } from "./local/proxy.ts"
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
    return LocalDeploymentDriver(localDeploymentOptionsFromEnv(process.env, config.revisionStepMs)).pipe(
      Layer.provide(DeploymentDatabasesLive),
      Layer.provide(LocalRuntimeLive)
    )
  })
)

/** The deployments area's raw HTTP: each deployment's URL, HTTP and WebSocket (a driver that runs nothing sets no route: it answers nothing). */
const deploymentHttp = Effect.map(DeploymentProxy, (proxy) => ({ request: proxy.handle, upgrade: proxy.handleUpgrade }))

export const deploymentsModule: ServerModule = {
  name: "deployments",
  layer: DeploymentControllerLive.pipe(
    Layer.provide(DriverLive),
    Layer.provide(DeploymentObservationsLive),
    Layer.provideMerge(Layer.mergeAll(LogStoreLive, DeploymentProxyLive)),
    Layer.provide(RuntimeRootLive)
  ),
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
