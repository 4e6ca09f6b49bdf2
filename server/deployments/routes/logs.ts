/**
 * The log endpoints the langgraph CLI calls (core/api/logs.ts): a revision's build log, the
 * deployment's deploy logs, one revision's deploy log. Another tenant's deployment (or a revision
 * of another deployment) is answered 404; an `offset` this server did not issue is 422.
 */
import { Effect } from "effect"
import { Api, NotFound, ValidationError } from "../../../core/index.ts"
import { implement, ServerEnv } from "../../module.ts"
import { StoreError } from "../../store/StoreError.ts"
import { buildLogs, deployLogs, type LogStoreError, LogStore } from "../logs/LogStore.ts"
import { deploymentNotFound } from "../wire.ts"
import type { DeploymentWrites } from "../writes.ts"

export const logRoutes = ({ deploymentStore, revisionStore }: DeploymentWrites) =>
  Effect.gen(function* () {
    const logs = yield* LogStore
    const { log } = yield* ServerEnv

    const mustExist = Effect.fnUntraced(function* (tenantId: string, deploymentId: string, revisionId?: string) {
      const deployment = yield* deploymentStore.deployment(tenantId, deploymentId)
      if (!deployment) return yield* Effect.fail(deploymentNotFound(deploymentId))
      if (revisionId !== undefined && !(yield* revisionStore.revision(tenantId, deploymentId, revisionId)))
        return yield* Effect.fail(new NotFound({ message: `Revision ${revisionId} not found in deployment ${deploymentId}` }))
    })

    /**
     * A bad offset (or other input the store refuses) is a 422 at the body's offset; storage that
     * did not answer is a 503 whose cause is logged, not sent (it names the server's paths).
     */
    const read = <A>(effect: Effect.Effect<A, LogStoreError>): Effect.Effect<A, StoreError | ValidationError> =>
      Effect.catch(effect, (error): Effect.Effect<never, StoreError | ValidationError> =>
        error.unavailable
          ? Effect.andThen(
              Effect.sync(() => log.warn("deployment logs unavailable", { error: error.message })),
              Effect.fail(new StoreError({ message: "Deployment logs are unavailable, retry shortly", busy: true }))
            )
          : Effect.fail(ValidationError.single(["body", "offset"], error.message))
      )

    return [
      implement(Api.getBuildLogs, ({ params, body }, { auth }) =>
        Effect.andThen(mustExist(auth.tenantId, params.deployment_id, params.revision_id), read(buildLogs(logs, params.deployment_id, params.revision_id, body)))
      ),
      implement(Api.getDeployLogs, ({ params, body }, { auth }) =>
        Effect.andThen(mustExist(auth.tenantId, params.deployment_id), read(deployLogs(logs, params.deployment_id, body)))
      ),
      implement(Api.getRevisionDeployLogs, ({ params, body }, { auth }) =>
        Effect.andThen(mustExist(auth.tenantId, params.deployment_id, params.revision_id), read(deployLogs(logs, params.deployment_id, body, params.revision_id)))
      )
    ]
  })
