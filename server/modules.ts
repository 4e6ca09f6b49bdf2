/**
 * The server's composition: the services it builds, in the order `startServer` (index.ts)
 * builds them, and the areas it serves. A new area adds its Layers and its module here.
 *
 * 1. the base services, from the configuration: `ServerEnv`, `Metrics`, the stores (with the
 *    backend's `RevisionLeases` and `ClusterStore`), the `RuntimeChoice` (`SLIPWAY_RUNTIME` and
 *    this host), `Replicas` (this replica among those sharing the database: docs/replicas.md);
 * 2. the runtimes it selects, on the base services: each area's driver and the channel it reports
 *    on (`DeploymentObservations`, `SandboxObservations`), the deployments' `LogStore` and
 *    `DeploymentProxy`, the sandboxes' `Dataplane`. With the local runtime both areas' drivers
 *    run on one `LocalRuntimeLive` (process runner, ports, images, boxes, volumes, egress): each
 *    area provides that same Layer, and a Layer is built once per server build (memoized);
 * 3. the substitutions a caller asked for (tests: a failing driver, a slow store), on 1 and 2:
 *    they replace the service of the same tag (and may wrap it);
 * 4. the controllers, on all of that;
 * 5. each module's routes and raw HTTP, from any of these services (the replicas' hook first: it
 *    refuses internal requests without the shared secret before any other hook sees them).
 *
 * Everything is typed: a Layer or a module that needs a service nothing here provides does not
 * compile.
 */
import { Layer } from "effect"
import { deploymentController, deploymentRuntime, deploymentsModule } from "./deployments/module.ts"
import { type Metrics, metricsModule } from "./metrics.ts"
import type { ServerEnv, ServerModule } from "./module.ts"
import { sandboxAccessModule } from "./sandboxes/access/module.ts"
import { sandboxController, sandboxModule, sandboxRuntime } from "./sandboxes/module.ts"
import type { Replicas } from "./replicas/Replicas.ts"
import { replicasModule } from "./replicas/module.ts"
import type { RuntimeChoice } from "./runtime/select.ts"
import type { Stores } from "./store/index.ts"
import { systemModule } from "./system/routes.ts"

/** What `startServer` builds from the configuration, before any area. */
export type BaseServices = ServerEnv | Metrics | Stores | RuntimeChoice | Replicas

/** The runtimes of both areas, built on the base services. */
export const runtimes = Layer.mergeAll(deploymentRuntime, sandboxRuntime)

/** The services a caller may substitute (`StartOptions.substitute`): the base services and the runtimes. */
export type SubstitutableServices = BaseServices | Layer.Success<typeof runtimes>

/** The controllers of both areas, built on the runtimes (or their substitutes). */
export const controllers = Layer.mergeAll(deploymentController, sandboxController)

/** Every service of a running server: what routes, raw HTTP and `SlipwayServer.run` may use. */
export type ServerServices = SubstitutableServices | Layer.Success<typeof controllers>

/** A substitution for `startServer`: services that replace the server's own of the same tag, built on them. */
export type Substitution = Layer.Layer<never, unknown, SubstitutableServices>

/** Every area the server serves. */
export const modules: ReadonlyArray<ServerModule<ServerServices>> = [replicasModule, systemModule, deploymentsModule, sandboxModule, sandboxAccessModule, metricsModule]
