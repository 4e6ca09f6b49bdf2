/**
 * What the deployment area serves besides its API table, whichever driver runs: the log store
 * behind the CLI's log endpoints and the deployment URL proxy (a driver that runs nothing leaves
 * it without routes, so it answers nothing).
 */
import { join } from "node:path"
import { Context, Effect, Layer } from "effect"
import { ServerEnv } from "../../module.ts"
import { runtimeRoot } from "../../runtime/local/RuntimeRoot.ts"
import { type LogStore, makeLogStore } from "./logs.ts"
import { type DeploymentProxy, makeDeploymentProxy } from "./proxy.ts"

export class DeploymentServing extends Context.Service<
  DeploymentServing,
  {
    readonly logs: LogStore
    readonly proxy: DeploymentProxy
  }
>()("slipway/DeploymentServing") {}

/** Paths of Slipway's own that no deployment URL under the public base may take. */
export const RESERVED_PATHS = ["/v1", "/v2", "/health", "/openapi.json", "/docs", "/sandboxes", "/metrics", "/console"]

export const DeploymentServingLive = Layer.effect(
  DeploymentServing,
  Effect.gen(function* () {
    const { config, publicUrl, log } = yield* ServerEnv
    const logs = makeLogStore({ root: join(runtimeRoot(config.databasePath), "deployment-logs") })
    const proxy = makeDeploymentProxy({
      publicUrl,
      reservedPaths: RESERVED_PATHS,
      log: (event) => log.debug("deployment proxy", { ...event })
    })
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        proxy.close()
        logs.close()
      })
    )
    return DeploymentServing.of({ logs, proxy })
  })
)

/** The deployments area's raw HTTP: each deployment's URL, HTTP and WebSocket. */
export const deploymentHttp = Effect.map(DeploymentServing, ({ proxy }) => ({
  request: proxy.handle,
  upgrade: proxy.handleUpgrade
}))
