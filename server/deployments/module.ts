/**
 * The deployment control plane as a server area: its runtime (a driver, the observation channel
 * between the driver and the controller, the `LogStore` behind the log endpoints and each
 * deployment's URL, `DeploymentProxy`, the `Registry` `langgraph deploy` pushes to and the
 * `SourceUploads` it uploads to; the local driver also has the deployments' databases,
 * `DeploymentDatabases`, and the local runtime's machinery), its controller, its routes, each
 * deployment's URL and the registry's token realm and upload URLs.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Duplex } from "node:stream"
import { Effect, Layer } from "effect"
import { BuildPipelineLive } from "../builds/BuildPipeline.ts"
import { GitSourceLive } from "../builds/GitSource.ts"
import { ImageBuilderLive } from "../builds/ImageBuilder.ts"
import { BuildSettingsLive } from "../builds/settings.ts"
import { type RawHttp, ServerEnv } from "../module.ts"
import { RegistryLive } from "../registry/Registry.ts"
import { Replicas } from "../replicas/Replicas.ts"
import { SourceUploadsLive } from "../uploads/SourceUploads.ts"
import { LocalRuntimeLive } from "../runtime/local/LocalRuntime.ts"
import { RuntimeRootLive } from "../runtime/local/RuntimeRoot.ts"
import { RuntimeChoice } from "../runtime/select.ts"
import { DeploymentController, DeploymentControllerLive } from "./controller.ts"
import { LocalDeploymentDriver, localDeploymentOptionsFromEnv } from "./drivers/local.ts"
import { SimulatedDeploymentDriver } from "./drivers/simulated.ts"
import { DeploymentObservationsLive } from "./Driver.ts"
import { DeploymentDatabasesLive } from "./local/databases.ts"
import { LogStoreLive } from "./logs/index.ts"
import { DeploymentProxy, DeploymentProxyLive } from "./local/proxy.ts"
import { deploymentRoutes } from "./routes/deployments.ts"
import { integrationRoutes } from "./routes/integrations.ts"
import { listenerRoutes } from "./routes/listeners.ts"
import { logRoutes } from "./routes/logs.ts"
import { realApiRoutes } from "./routes/realApi.ts"
import { revisionRoutes } from "./routes/revisions.ts"
import { sourceRoutes } from "./routes/sources.ts"
import { sourceHttp } from "./sourceHttp.ts"
import { makeDeploymentWrites } from "./writes.ts"

/**
 * The build pipeline of the local runtime (server/builds/: a revision's source checked out or
 * unpacked, built with buildah in the build sandbox, imported into the image store). It unpacks
 * uploaded tarballs with the runtime's `SourceUploads` (`deploymentRuntime`).
 */
export const BuildsLive = BuildPipelineLive.pipe(
  Layer.provide(Layer.mergeAll(GitSourceLive, ImageBuilderLive)),
  Layer.provide(BuildSettingsLive),
  Layer.provide(LocalRuntimeLive)
)

/**
 * The driver `SLIPWAY_RUNTIME` selects: `local` runs external_container and internal_docker
 * images and builds gitrepo and internal_source revisions under bubblewrap, on the server's one `LocalRuntimeLive` (the sandbox area
 * provides the same Layer: memoized, it is built once per server), the deployments' databases and
 * the build pipeline.
 */
const DriverLive = Layer.unwrap(
  Effect.gen(function* () {
    const { config } = yield* ServerEnv
    const runtime = yield* RuntimeChoice
    if (runtime.name !== "local") return SimulatedDeploymentDriver({ stepMs: config.revisionStepMs })
    return LocalDeploymentDriver(localDeploymentOptionsFromEnv(process.env)).pipe(
      Layer.provide(DeploymentDatabasesLive),
      Layer.provide(BuildsLive),
      Layer.provide(LocalRuntimeLive)
    )
  })
)

/**
 * The driver, the channel it reports on (one queue, shared with the controller built on this),
 * the log store and URL proxy it serves through, and the registry and uploads (the driver pulls
 * what was pushed; the controller removes both when a deployment is deleted).
 */
export const deploymentRuntime = DriverLive.pipe(
  Layer.provideMerge(DeploymentObservationsLive),
  Layer.provideMerge(Layer.mergeAll(LogStoreLive, DeploymentProxyLive, RegistryLive, SourceUploadsLive)),
  Layer.provide(RuntimeRootLive)
)

/** The controller, built on the runtime: it consumes the driver's channel. */
export const deploymentController = DeploymentControllerLive

/**
 * The deployments area's raw HTTP: the registry's token realm and the upload URLs, then each
 * deployment's URL, HTTP and WebSocket (a driver that runs nothing sets no route: it answers
 * nothing). Several replicas: a `{public}/d/{name}` URL that matches nothing here may be a
 * deployment another replica started serving a moment ago: the routes are read again (at most
 * twice a second) and the request matched once more.
 */
const deploymentHttp = Effect.gen(function* () {
  const proxy = yield* DeploymentProxy
  const sources = yield* sourceHttp
  const replicas = yield* Replicas
  const here = (request: IncomingMessage, response: ServerResponse) => sources.request(request, response) || proxy.handle(request, response)
  if (!replicas.shared || replicas.forwarder === undefined) return { request: here, upgrade: proxy.handleUpgrade } satisfies RawHttp
  const { publicUrl } = yield* ServerEnv
  const controller = yield* DeploymentController
  const runFork = Effect.runForkWith(yield* Effect.context<never>())
  const prefix = `${new URL(publicUrl).pathname.replace(/\/+$/, "")}/d/`
  let last = 0
  let pending: Promise<void> | undefined
  const refreshed = (): Promise<void> => {
    if (pending) return pending
    if (Date.now() - last < 500) return Promise.resolve()
    last = Date.now()
    pending = new Promise<void>((resolve) => runFork(controller.refreshRoutes).addObserver(() => resolve())).finally(() => (pending = undefined))
    return pending
  }
  const notFound = (response: ServerResponse) => {
    response.writeHead(404, { "content-type": "application/json", "content-length": "22" })
    response.end('{"detail":"Not Found"}')
  }
  return {
    request: (request: IncomingMessage, response: ServerResponse) => {
      if (here(request, response)) return true
      if (!(request.url ?? "").startsWith(prefix)) return false
      void refreshed().then(() => {
        if (!proxy.handle(request, response)) {
          request.resume()
          notFound(response)
        }
      })
      return true
    },
    upgrade: (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (proxy.handleUpgrade(request, socket, head)) return true
      if (!(request.url ?? "").startsWith(prefix)) return false
      void refreshed().then(() => {
        if (!proxy.handleUpgrade(request, socket, head)) socket.end("HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 22\r\nconnection: close\r\n\r\n{\"detail\":\"Not Found\"}")
      })
      return true
    }
  } satisfies RawHttp
})

export const deploymentsModule = {
  name: "deployments",
  routes: Effect.gen(function* () {
    const writes = yield* makeDeploymentWrites
    const spec = [
      ...(yield* deploymentRoutes(writes)),
      ...(yield* revisionRoutes(writes)),
      ...(yield* listenerRoutes(writes)),
      ...(yield* integrationRoutes(writes)),
      ...(yield* logRoutes(writes)),
      ...(yield* sourceRoutes(writes))
    ]
    return [...spec, ...(yield* realApiRoutes(writes, spec))]
  }),
  http: deploymentHttp
}
