/** `/v2/deployments/{deployment_id}/revisions`: list, create, get and redeploy revisions. */
import { Effect, Result } from "effect"
import {
  Api,
  type ApiError,
  BadRequest,
  checkRedeploy,
  controlPage,
  databaseReadyOf,
  defaultTimeoutMs,
  deploymentStatus,
  NotFound,
  Pagination,
  planRevision,
  ServerError
} from "../../../core/index.ts"
import type { DeploymentRecord } from "../../store/DeploymentStore.ts"
import { implement, now } from "../../module.ts"
import { deploymentNotFound, toDeployment, toRevision } from "../wire.ts"
import type { DeploymentWrites, NewRevisionChange } from "../writes.ts"

/**
 * How long a redeploy waits for the URL to serve the revision before answering 503 (sent again,
 * it waits on the same start): under the clients' own request timeout (30 s).
 */
const redeployWaitMs = defaultTimeoutMs - 5_000

export const revisionRoutes = (writes: DeploymentWrites) =>
  Effect.sync(() => {
    const { transaction, deploymentStore, revisionStore, controller, sealSecrets, storedOf, mustGetDeployment, deletingConflict, foreignImage, checkTarball, newRevision, announce, maxScaleOf } = writes

    /** Makes `previous` (the deployment before a redeploy) active again, if nothing else changed it since. */
    const restoreActive = (tenantId: string, previous: DeploymentRecord, redeployed: string) =>
      transaction(
        Effect.gen(function* () {
          const current = yield* deploymentStore.deployment(tenantId, previous.id)
          if (current?.active_revision_id !== redeployed) return
          yield* deploymentStore.setDeploymentState(tenantId, previous.id, previous.status, previous.active_revision_id, now())
        })
      )

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
            return { deployment: { ...deployment, status, active_revision_id: allowed.id, updated_at: at }, previous: deployment, stopped }
          })
        )
        yield* controller.revisionsStopped(result.stopped)
        // Answered once the URL serves the revision (the README's promise), at most `redeployWaitMs`.
        const served = yield* controller.revisionActivated(auth.tenantId, params.deployment_id, params.revision_id).pipe(
          Effect.as("serving" as const),
          Effect.timeoutOrElse({ duration: redeployWaitMs, orElse: () => Effect.succeed("starting" as const) }),
          Effect.catchTag("ServeError", (error) => Effect.succeed(error))
        )
        if (served === "starting") {
          return yield* new ServerError({
            status: 503,
            message: `Revision ${params.revision_id} is still starting (its replicas are not healthy yet); the deployment serves its previous revision meanwhile. Send the redeploy again to go on waiting`
          })
        }
        if (served !== "serving") {
          // It will not serve: the revision that still serves is the active one again.
          yield* restoreActive(auth.tenantId, result.previous, params.revision_id)
          return yield* new BadRequest({ message: `Revision ${params.revision_id} could not be served again: ${served.message}` })
        }
        return toDeployment(result.deployment)
      }))
    ]
  })
