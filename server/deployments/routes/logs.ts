/**
 * The log endpoints the langgraph CLI calls (core/api/logs.ts): a revision's build log, the
 * deployment's deploy logs, one revision's deploy log. Another tenant's deployment (or a revision
 * of another deployment) is answered 404; an `offset` this server did not issue is 422.
 */
import { Effect } from "effect"
import { Api, NotFound, ValidationError } from "../../../core/index.ts"
import { implement } from "../../module.ts"
import { buildLogs, deployLogs, LogStoreError } from "../local/logs.ts"
import { DeploymentServing } from "../local/services.ts"
import { deploymentNotFound } from "../wire.ts"
import type { DeploymentWrites } from "../writes.ts"

export const logRoutes = ({ deploymentStore, revisionStore }: DeploymentWrites) =>
  Effect.gen(function* () {
    const { logs } = yield* DeploymentServing

    const mustExist = Effect.fnUntraced(function* (tenantId: string, deploymentId: string, revisionId?: string) {
      const deployment = yield* deploymentStore.deployment(tenantId, deploymentId)
      if (!deployment) return yield* Effect.fail(deploymentNotFound(deploymentId))
      if (revisionId !== undefined && !(yield* revisionStore.revision(tenantId, deploymentId, revisionId)))
        return yield* Effect.fail(new NotFound({ message: `Revision ${revisionId} not found in deployment ${deploymentId}` }))
    })

    const read = <A>(f: () => A) =>
      Effect.try({
        try: f,
        catch: (error) =>
          error instanceof LogStoreError
            ? ValidationError.single(["body", "offset"], error.message)
            : ValidationError.single(["body"], String((error as Error)?.message ?? error))
      })

    return [
      implement(Api.getBuildLogs, ({ params, body }, { auth }) =>
        Effect.andThen(mustExist(auth.tenantId, params.deployment_id, params.revision_id), read(() => buildLogs(logs, params.deployment_id, params.revision_id, body)))
      ),
      implement(Api.getDeployLogs, ({ params, body }, { auth }) =>
        Effect.andThen(mustExist(auth.tenantId, params.deployment_id), read(() => deployLogs(logs, params.deployment_id, body)))
      ),
      implement(Api.getRevisionDeployLogs, ({ params, body }, { auth }) =>
        Effect.andThen(mustExist(auth.tenantId, params.deployment_id, params.revision_id), read(() => deployLogs(logs, params.deployment_id, body, params.revision_id)))
      )
    ]
  })
