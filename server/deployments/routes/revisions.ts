/** `/v2/deployments/{deployment_id}/revisions`: list, create, get and redeploy revisions. */
import { Effect, Result } from "effect"
import { Api, type ApiError, checkRedeploy, controlPage, databaseReadyOf, deploymentStatus, NotFound, Pagination, planRevision } from "../../../core/index.ts"
import { implement, now } from "../../module.ts"
import { deploymentNotFound, toDeployment, toRevision } from "../wire.ts"
import type { DeploymentWrites, NewRevisionChange } from "../writes.ts"

export const revisionRoutes = (writes: DeploymentWrites) =>
  Effect.sync(() => {
    const { transaction, deploymentStore, revisionStore, controller, sealSecrets, storedOf, mustGetDeployment, deletingConflict, foreignImage, checkTarball, newRevision, announce, maxScaleOf } = writes
    return [
      implement(Api.listRevisions, Effect.fnUntraced(function* ({ params, query }, { auth }) {
        yield* mustGetDeployment(auth.tenantId, params.deployment_id)
        const page = Pagination.resolve(query, controlPage)
        const statuses = query.status === undefined || query.status.length === 0 ? null : query.status
        const revisions = yield* revisionStore.listRevisions(auth.tenantId, params.deployment_id, statuses, page)
        return Pagination.response("resources", revisions.map(toRevision), page)
      })),

      implement(Api.createRevision, Effect.fnUntraced(function* ({ params, body }, { auth }) {
        yield* checkTarball(auth.tenantId, params.deployment_id, body.source_revision_config)
        const written = yield* deploymentStore.changeDeployment(auth.tenantId, params.deployment_id, (deployment): Result.Result<NewRevisionChange, ApiError> => {
          const deleting = deletingConflict(deployment)
          if (deleting) return Result.fail(deleting)
          const image = foreignImage(deployment, body.source_revision_config)
          if (image) return Result.fail(image)
          const stored = storedOf(deployment, body.secrets != null)
          return Result.map(planRevision(stored, body), (planned) =>
            newRevision({
              deployment,
              sourceConfig: stored.source_config,
              sourceRevisionConfig: planned.source_revision_config,
              secrets: body.secrets ? sealSecrets(planned.secrets) : deployment.secrets,
              imageVersion: deployment.image_version
            })
          )
        })
        if (written === undefined) return yield* deploymentNotFound(params.deployment_id)
        yield* announce(written)
        return toRevision(written.revision)
      })),

      implement(Api.getRevision, ({ params }, { auth }) =>
        Effect.flatMap(revisionStore.revision(auth.tenantId, params.deployment_id, params.revision_id), (revision) =>
          revision
            ? Effect.succeed(toRevision(revision))
            : Effect.flatMap(deploymentStore.deployment(auth.tenantId, params.deployment_id), (deployment) =>
                Effect.fail(
                  deployment
                    ? new NotFound({ message: `Revision ${params.revision_id} not found in deployment ${params.deployment_id}` })
                    : deploymentNotFound(params.deployment_id)
                )
              )
        )
      ),

      implement(Api.redeployRevision, Effect.fnUntraced(function* ({ params }, { auth }) {
        const result = yield* transaction(
          Effect.gen(function* () {
            const deployment = yield* mustGetDeployment(auth.tenantId, params.deployment_id)
            const revision = yield* revisionStore.revision(auth.tenantId, params.deployment_id, params.revision_id)
            const allowed = yield* Effect.fromResult(
              checkRedeploy({ deployment: { id: deployment.id, deleting: deployment.status === "AWAITING_DELETE" }, revisionId: params.revision_id, revision })
            )
            const at = now()
            // Like a new revision, a redeploy supersedes a rollout still under way, which would
            // otherwise replace the redeployed revision moments later.
            const stopped = yield* revisionStore.supersedeUnfinished(auth.tenantId, deployment.id, at)
            const status = deploymentStatus({ activeRevisionId: allowed.id, maxScale: maxScaleOf(deployment.source_config), deleting: false, databaseReady: databaseReadyOf(deployment) })
            yield* deploymentStore.setDeploymentState(auth.tenantId, deployment.id, status, allowed.id, at)
            return { deployment: { ...deployment, status, active_revision_id: allowed.id, updated_at: at }, stopped }
          })
        )
        yield* controller.revisionsStopped(result.stopped)
        yield* controller.revisionActivated(auth.tenantId, params.deployment_id, params.revision_id)
        return toDeployment(result.deployment)
      }))
    ]
  })
