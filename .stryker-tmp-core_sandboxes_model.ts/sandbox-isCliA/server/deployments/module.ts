/** The deployment control plane as a server area: its migrations, routes and the revision runtime. */
// @ts-nocheck

import type { ServerContext, ServerModule } from "../module.ts"
import { deploymentMigrations } from "./migrations.ts"
import { type DeploymentRepository, makeDeploymentRepository } from "./repository.ts"
import { deploymentRoutes } from "./routes.ts"
import { type DeploymentRuntime, makeLocalRuntime } from "./runtime.ts"

interface State {
  readonly repository: DeploymentRepository
  readonly runtime: DeploymentRuntime
}

// routes() and start() receive the same context: they share one repository and one runtime.
const states = new WeakMap<ServerContext, State>()

const stateOf = (context: ServerContext): State => {
  let state = states.get(context)
  if (!state) {
    const repository = makeDeploymentRepository(context.db)
    state = { repository, runtime: makeLocalRuntime({ repository, stepMs: context.config.revisionStepMs, log: context.log }) }
    states.set(context, state)
  }
  return state
}

export const deploymentsModule: ServerModule = {
  name: "deployments",
  migrations: deploymentMigrations,
  routes: (context) => deploymentRoutes(context, stateOf(context)),
  start: (context) => {
    const { runtime } = stateOf(context)
    runtime.start()
    return { stop: () => runtime.close() }
  }
}
