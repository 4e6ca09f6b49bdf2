/** `DeploymentDatabases` over a data directory for tests, its calls as Promises, open until `close` (a clean stop: its servers are stopped). */
import { Effect, Exit, Layer, Scope } from "effect"
import { type DeploymentDatabasesOptions, makeDeploymentDatabases, type ProvisionOptions } from "../../server/deployments/local/databases.ts"
import { PortAllocatorLive } from "../../server/runtime/PortAllocator.ts"
import { ProcessRunnerLive } from "../../server/runtime/ProcessRunner.ts"

export const openDatabases = async (options: DeploymentDatabasesOptions) => {
  const scope = Scope.makeUnsafe()
  const service = await Effect.runPromise(makeDeploymentDatabases(options).pipe(Scope.provide(scope), Effect.provide(Layer.mergeAll(ProcessRunnerLive, PortAllocatorLive))))
  return {
    provision: (id: string, o?: ProvisionOptions) => Effect.runPromise(service.provision(id, o)),
    release: (id: string) => Effect.runPromise(service.release(id)),
    recover: () => Effect.runPromise(service.recover()),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export type TestDatabases = Awaited<ReturnType<typeof openDatabases>>
