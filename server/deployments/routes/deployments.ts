/** `/v2/deployments`: create, list, get, update and delete deployments. */
import { randomUUID } from "node:crypto"
import { Effect, Result } from "effect"
import {
  Api,
  type ApiError,
  checkRevisionSource,
  controlPage,
  databaseReadyOf,
  deploymentStatus,
  gitrepoCustomUrl,
  type Listener,
  listenerIssues,
  Pagination,
  planCreate,
  type PatchDeployment,
  planPatch,
  ValidationError
} from "../../../core/index.ts"
import { implement, now, ServerEnv } from "../../module.ts"
import { RuntimeChoice } from "../../runtime/select.ts"
import type { DeploymentChange, DeploymentRecord } from "../../store/DeploymentStore.ts"
import type { NewRevision } from "../../store/RevisionStore.ts"
import type { StoreError } from "../../store/StoreError.ts"
import { integrationIssues } from "../integrationBinding.ts"
import { deploymentNotFound, toDeployment, toListener } from "../wire.ts"
import type { DeploymentWrites } from "../writes.ts"

export const deploymentRoutes = (writes: DeploymentWrites) =>
  Effect.gen(function* () {
    const { publicUrl, config } = yield* ServerEnv
    // With a runtime that serves deployments, an external_container deployment without a
    // custom_url is served at {public}/d/{name}, and says so (core's rule for gitrepo URLs).
    const servesUrls = (yield* RuntimeChoice).name === "local"
    const { transaction, deploymentStore, revisionStore, listenerStore, integrationStore, controller, sealSecrets, storedOf, mustGetDeployment, deletingConflict, foreignImage, checkTarball, newRevision, announce, maxScaleOf } =
      writes

    const listenerOf = (tenantId: string, id: string | null | undefined): Effect.Effect<Listener | undefined, StoreError> =>
      id ? Effect.map(listenerStore.listener(tenantId, id), (record) => record && toListener(record)) : Effect.succeed(undefined)

    /** PATCH, decided on the stored deployment: a new revision when the revision's config or secrets change, else the deployment alone. */
    const patchChange = (deployment: DeploymentRecord, body: PatchDeployment): Result.Result<DeploymentChange, ApiError> => {
      const deleting = deletingConflict(deployment)
      if (deleting) return Result.fail(deleting)
      const source = checkRevisionSource(deployment.source, body.revision_source)
      if (Result.isFailure(source)) return Result.fail(source.failure)
      const image = foreignImage(deployment, body.source_revision_config)
      if (image) return Result.fail(image)
      const plan = planPatch(storedOf(deployment, body.secrets != null), body)
      if (Result.isFailure(plan)) return Result.fail(plan.failure)
      const { source_config, image_version, newRevision: revision } = plan.success
      if (revision) {
        return Result.succeed(newRevision({
          deployment,
          sourceConfig: source_config,
          sourceRevisionConfig: revision.source_revision_config,
          secrets: body.secrets ? sealSecrets(revision.secrets) : deployment.secrets,
          imageVersion: image_version
        }))
      }
      const status = deploymentStatus({ activeRevisionId: deployment.active_revision_id, maxScale: maxScaleOf(source_config), deleting: false, databaseReady: databaseReadyOf(deployment) })
      return Result.succeed({ deployment: { ...deployment, source_config, image_version, status, updated_at: now() } })
    }

    return [
      implement(Api.createDeployment, Effect.fnUntraced(function* ({ body }, { auth }) {
        const plan = planCreate(body, { publicUrl, insecureGitHosts: config.insecureGitHosts })
        const listenerProblems = [
          ...listenerIssues(body.source_config, yield* listenerOf(auth.tenantId, body.source_config?.listener_id)),
          ...(yield* integrationIssues(integrationStore, auth.tenantId, body.source_config))
        ]
        if (Result.isFailure(plan) || listenerProblems.length > 0) {
          return yield* new ValidationError({ issues: [...(Result.isFailure(plan) ? plan.failure.issues : []), ...listenerProblems] })
        }
        const planned =
          servesUrls && plan.success.source === "external_container" && !plan.success.source_config.custom_url
            ? { ...plan.success, source_config: { ...plan.success.source_config, custom_url: gitrepoCustomUrl(publicUrl, plan.success.name) } }
            : plan.success
        const at = now()
        const deploymentId = randomUUID()
        const secrets = sealSecrets(planned.secrets)
        // internal_docker / internal_source: no revision until a PATCH brings the image or tarball.
        const revision: NewRevision | undefined = planned.createsRevision ? {
          id: randomUUID(),
          tenant_id: auth.tenantId,
          deployment_id: deploymentId,
          seq: 1,
          source: planned.source,
          status: "CREATING",
          status_message: null,
          source_revision_config: planned.source_revision_config,
          secrets,
          deployed_at: null,
          created_at: at,
          updated_at: at
        } : undefined
        const deployment: DeploymentRecord = {
          id: deploymentId,
          tenant_id: auth.tenantId,
          name: planned.name,
          source: planned.source,
          source_config: planned.source_config,
          source_revision_config: planned.source_revision_config,
          secrets,
          image_version: planned.image_version,
          status: deploymentStatus({ activeRevisionId: null, maxScale: maxScaleOf(planned.source_config), deleting: false }),
          latest_revision_id: revision?.id ?? null,
          active_revision_id: null,
          revision_seq: revision ? 1 : 0,
          created_at: at,
          updated_at: at
        }
        yield* deploymentStore.createDeployment(deployment, revision, randomUUID())
        if (revision) yield* controller.revisionCreated(deployment, revision, secrets)
        return toDeployment(deployment)
      })),

      implement(Api.listDeployments, ({ query }, { auth }) => {
        const page = Pagination.resolve(query, controlPage)
        const filter = {
          nameContains: query.name_contains ?? null,
          statuses: query.status === undefined ? null : [query.status],
          imageVersion: query.image_version ?? null,
          deploymentType: query.deployment_type ?? null,
          ids: query.deployment_ids === undefined ? null : query.deployment_ids.map((id) => id.toLowerCase())
        }
        return Effect.map(deploymentStore.listDeployments(auth.tenantId, filter, page), (records) => Pagination.response("resources", records.map(toDeployment), page))
      }),

      // The benchmarked read path: one statement, one mapping.
      implement(Api.getDeployment, ({ params }, { auth }) =>
        Effect.flatMap(deploymentStore.deployment(auth.tenantId, params.deployment_id), (record) =>
          record ? Effect.succeed(toDeployment(record)) : Effect.fail(deploymentNotFound(params.deployment_id))
        )
      ),

      implement(
        Api.updateDeployment,
        Effect.fnUntraced(function* ({ params, body }, { auth }) {
          yield* checkTarball(auth.tenantId, params.deployment_id, body.source_revision_config)
          const changed = yield* deploymentStore.changeDeployment(auth.tenantId, params.deployment_id, (deployment) => patchChange(deployment, body))
          if (changed === undefined) return yield* deploymentNotFound(params.deployment_id)
          yield* announce(changed)
          return toDeployment(changed.deployment)
        })
      ),

      implement(Api.deleteDeployment, Effect.fnUntraced(function* ({ params, query }, { auth }) {
        const deleting = yield* transaction(
          Effect.gen(function* () {
            const deployment = yield* mustGetDeployment(auth.tenantId, params.deployment_id)
            if (query.delete_tracing_project === true) yield* deploymentStore.deleteTracingProjects(auth.tenantId, deployment.id)
            if (deployment.status === "AWAITING_DELETE") return undefined
            const at = now()
            const stopped = yield* revisionStore.supersedeUnfinished(auth.tenantId, deployment.id, at)
            const status = deploymentStatus({ activeRevisionId: deployment.active_revision_id, maxScale: null, deleting: true })
            yield* deploymentStore.setDeploymentStatus(auth.tenantId, deployment.id, status, at)
            return { stopped, at }
          })
        )
        if (deleting) {
          yield* controller.revisionsStopped(deleting.stopped)
          yield* controller.deleteRequested(auth.tenantId, params.deployment_id, deleting.at)
        }
      })),

      implement(Api.listTracingProjects, ({ query }, { auth }) => {
        const page = Pagination.resolve(query, controlPage)
        return Effect.map(deploymentStore.listTracingProjects(auth.tenantId, query.name ?? null, page), (projects) =>
          projects.map(({ id, name, created_at }) => ({ id, name, created_at }))
        )
      })
    ]
  })
