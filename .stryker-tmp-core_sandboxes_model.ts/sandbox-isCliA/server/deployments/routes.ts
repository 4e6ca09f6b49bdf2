/**
 * HTTP handlers of the deployment control plane. Every decision comes from core (planCreate,
 * planPatch, planRevision, revisionForPush, checkRedeploy, the revision state machine and the
 * deployment status); this file looks things up in the caller's tenant, writes in one
 * transaction and tells the runtime what changed.
 */
// @ts-nocheck

import { randomUUID } from "node:crypto"
import { Effect, Result } from "effect"
import {
  Api,
  type ApiError,
  checkRedeploy,
  Conflict,
  controlPage,
  decodeWithIssues,
  deploymentStatus,
  type Listener,
  listenerIssues,
  NotFound,
  Pagination,
  planCreate,
  planPatch,
  planRevision,
  PushEvent,
  revisionForPush,
  type RevisionStatus,
  secretMask,
  type Secret,
  type Source,
  type SourceConfig,
  type SourceRevisionConfig,
  type StoredDeployment,
  supersededStatus,
  Unauthorized,
  ValidationError
} from "../../core/index.ts"
import type { Route } from "../http/app.ts"
import { implement, type ServerContext } from "../module.ts"
import { ownerKey } from "./admin.ts"
import type { DeploymentRepository, DeploymentRow, ListenerRow, RevisionRow, RevisionView } from "./repository.ts"
import type { DeploymentRuntime } from "./runtime.ts"
import { makeSecretBox } from "./secrets.ts"
import { verifySignature } from "./webhook.ts"
import { orRefuse, refusable, refuse } from "../refusal.ts"

/** Runs synchronous repository work; a `Refusal` becomes the typed failure, anything else a defect. */
const run = <A>(work: () => A) => refusable(work)

const deploymentNotFound = (id: string) => new NotFound({ message: `Deployment ${id} not found` })

const now = () => new Date().toISOString()

const maxScaleOf = (config: SourceConfig): number | null | undefined => config.resource_spec?.max_scale

// -----------------------------------------------------------------------------------------------
// Rows to wire shapes

const maskedSecrets = (stored: string): Array<Secret> =>
  (JSON.parse(stored) as Array<Secret>).map(({ name }) => ({ name, value: secretMask }))

export const toDeployment = (row: DeploymentRow) => ({
  name: row.name,
  source: row.source as Source,
  source_config: JSON.parse(row.source_config) as SourceConfig,
  source_revision_config: JSON.parse(row.source_revision_config) as SourceRevisionConfig,
  secrets: maskedSecrets(row.secrets),
  id: row.id,
  created_at: row.created_at,
  updated_at: row.updated_at,
  status: row.status as ReturnType<typeof deploymentStatus>,
  latest_revision_id: row.latest_revision_id,
  active_revision_id: row.active_revision_id,
  image_version: row.image_version
})

export const toRevision = (row: RevisionView) => ({
  id: row.id,
  created_at: row.created_at,
  updated_at: row.updated_at,
  status: row.status as RevisionStatus,
  source: row.source as Source,
  source_revision_config: JSON.parse(row.source_revision_config) as SourceRevisionConfig,
  deployment_id: row.deployment_id,
  status_message: row.status_message
})

const toListener = (row: ListenerRow): Listener => ({
  id: row.id,
  compute_type: row.compute_type as "k8s",
  compute_config: JSON.parse(row.compute_config),
  created_at: row.created_at,
  updated_at: row.updated_at
})

// -----------------------------------------------------------------------------------------------

export interface DeploymentRoutesDeps {
  readonly repository: DeploymentRepository
  readonly runtime: DeploymentRuntime
}

export const deploymentRoutes = (context: ServerContext, { repository: repo, runtime }: DeploymentRoutesDeps): ReadonlyArray<Route> => {
  const box = makeSecretBox(context.config.secretsKey)
  const sealSecrets = (secrets: ReadonlyArray<Secret>) => JSON.stringify(secrets.map(({ name, value }) => ({ name, value: box.seal(value) })))
  const openSecrets = (stored: string): Array<Secret> =>
    (JSON.parse(stored) as Array<Secret>).map(({ name, value }) => ({ name, value: box.open(value) }))

  const storedOf = (row: DeploymentRow): StoredDeployment => ({
    name: row.name,
    source: row.source as Source,
    source_config: JSON.parse(row.source_config),
    source_revision_config: JSON.parse(row.source_revision_config),
    secrets: openSecrets(row.secrets),
    image_version: row.image_version
  })

  const mustGetDeployment = (tenantId: string, id: string) => repo.deployment(tenantId, id) ?? refuse(deploymentNotFound(id))

  /** Supersedes the deployment's unfinished revisions (core: SKIPPED or INTERRUPTED); answers their ids. */
  const supersedeUnfinished = (tenantId: string, deploymentId: string, at: string): Array<string> =>
    repo.unfinishedRevisions(tenantId, deploymentId).map((revision) => {
      repo.setRevisionStatus(tenantId, revision.id, supersededStatus(revision.status as RevisionStatus), "Superseded by a newer revision", null, at)
      return revision.id
    })

  interface NewRevisionWrite {
    readonly row: DeploymentRow
    readonly sourceConfig: SourceConfig
    readonly sourceRevisionConfig: SourceRevisionConfig
    /** Sealed secrets JSON, as stored. */
    readonly secrets: string
    readonly imageVersion: string | null
  }

  /** Inside a transaction: supersedes unfinished revisions, adds the next one and points the deployment at it. */
  const writeNewRevision = ({ row, sourceConfig, sourceRevisionConfig, secrets, imageVersion }: NewRevisionWrite) => {
    const at = now()
    const stopped = supersedeUnfinished(row.tenant_id, row.id, at)
    const revision: RevisionRow = {
      id: randomUUID(),
      tenant_id: row.tenant_id,
      deployment_id: row.id,
      seq: row.revision_seq + 1,
      source: row.source,
      status: "CREATING",
      status_message: null,
      source_revision_config: JSON.stringify(sourceRevisionConfig),
      secrets,
      deployed_at: null,
      created_at: at,
      updated_at: at
    }
    repo.insertRevision(revision)
    const updated: DeploymentRow = {
      ...row,
      source_config: JSON.stringify(sourceConfig),
      source_revision_config: revision.source_revision_config,
      secrets,
      image_version: imageVersion,
      status: deploymentStatus({ activeRevisionId: row.active_revision_id, maxScale: maxScaleOf(sourceConfig), deleting: false }),
      latest_revision_id: revision.id,
      revision_seq: revision.seq,
      updated_at: at
    }
    repo.updateDeployment(updated)
    return { revision, updated, stopped }
  }

  const workOf = (revision: RevisionRow) => ({
    tenantId: revision.tenant_id,
    deploymentId: revision.deployment_id,
    revisionId: revision.id,
    source: revision.source,
    status: revision.status,
    sourceRevisionConfig: revision.source_revision_config,
    since: revision.updated_at
  })

  const announce = (written: { revision: RevisionRow; stopped: ReadonlyArray<string> }) => {
    for (const id of written.stopped) runtime.revisionStopped(id)
    runtime.revisionCreated(workOf(written.revision))
  }

  const refuseIfDeleting = (row: DeploymentRow) => {
    if (row.status === "AWAITING_DELETE") refuse(new Conflict({ message: `Deployment ${row.id} is being deleted` }))
  }

  const listenerOf = (tenantId: string, id: string | null | undefined): Listener | undefined => {
    if (!id) return undefined
    const row = repo.listener(tenantId, id)
    return row && toListener(row)
  }

  const decodePush = decodeWithIssues(PushEvent, ["body"], { excess: "ignore" })

  const installUrl = `${context.publicUrl}/docs#getGitIntegrations`

  return [
    implement(Api.createDeployment, ({ body }, { auth }) =>
      run(() => {
        const plan = planCreate(body, { publicUrl: context.publicUrl })
        const listenerProblems = listenerIssues(body.source_config, listenerOf(auth.tenantId, body.source_config?.listener_id))
        if (Result.isFailure(plan) || listenerProblems.length > 0) {
          refuse(new ValidationError({ issues: [...(Result.isFailure(plan) ? plan.failure.issues : []), ...listenerProblems] }))
        }
        const planned = orRefuse(plan)
        const at = now()
        const deploymentId = randomUUID()
        const secrets = sealSecrets(planned.secrets)
        const revision: RevisionRow = {
          id: randomUUID(),
          tenant_id: auth.tenantId,
          deployment_id: deploymentId,
          seq: 1,
          source: planned.source,
          status: "CREATING",
          status_message: null,
          source_revision_config: JSON.stringify(planned.source_revision_config),
          secrets,
          deployed_at: null,
          created_at: at,
          updated_at: at
        }
        const row: DeploymentRow = {
          id: deploymentId,
          tenant_id: auth.tenantId,
          name: planned.name,
          source: planned.source,
          source_config: JSON.stringify(planned.source_config),
          source_revision_config: revision.source_revision_config,
          secrets,
          image_version: planned.image_version,
          status: deploymentStatus({ activeRevisionId: null, maxScale: maxScaleOf(planned.source_config), deleting: false }),
          latest_revision_id: revision.id,
          active_revision_id: null,
          revision_seq: 1,
          created_at: at,
          updated_at: at
        }
        const taken = () => refuse(new Conflict({ message: `A deployment named '${planned.name}' already exists` }))
        try {
          repo.transaction(() => {
            repo.insertDeployment(row)
            repo.insertRevision(revision)
            repo.upsertTracingProject(randomUUID(), auth.tenantId, planned.name, deploymentId, at)
          })
        } catch (error) {
          // UNIQUE (tenant_id, name) decides, also between processes sharing the file.
          const { code, message } = error as { code?: string; message?: string }
          if (code === "SQLITE_CONSTRAINT_UNIQUE" && message?.includes("deployments.name")) taken()
          throw error
        }
        runtime.revisionCreated(workOf(revision))
        return toDeployment(row)
      })
    ),

    implement(Api.listDeployments, ({ query }, { auth }) =>
      run(() => {
        const page = Pagination.resolve(query, controlPage)
        const rows = repo.listDeployments(
          auth.tenantId,
          {
            nameContains: query.name_contains ?? null,
            statuses: query.status === undefined ? null : JSON.stringify([query.status]),
            imageVersion: query.image_version ?? null,
            deploymentType: query.deployment_type ?? null,
            ids: query.deployment_ids === undefined ? null : JSON.stringify(query.deployment_ids.map((id) => id.toLowerCase()))
          },
          page.limit,
          page.offset
        )
        return Pagination.response("resources", rows.map(toDeployment), page)
      })
    ),

    // The benchmarked read path: one prepared statement, one mapping.
    implement(Api.getDeployment, ({ params }, { auth }) => {
      const row = repo.deployment(auth.tenantId, params.deployment_id)
      return row ? Effect.succeed(toDeployment(row)) : Effect.fail(deploymentNotFound(params.deployment_id))
    }),

    implement(Api.updateDeployment, ({ params, body }, { auth }) =>
      run(() => {
        const written = repo.transaction(() => {
          const row = mustGetDeployment(auth.tenantId, params.deployment_id)
          refuseIfDeleting(row)
          const plan = orRefuse(planPatch(storedOf(row), body))
          if (plan.newRevision) {
            return writeNewRevision({
              row,
              sourceConfig: plan.source_config,
              sourceRevisionConfig: plan.newRevision.source_revision_config,
              secrets: body.secrets ? sealSecrets(plan.newRevision.secrets) : row.secrets,
              imageVersion: plan.image_version
            })
          }
          const updated: DeploymentRow = {
            ...row,
            source_config: JSON.stringify(plan.source_config),
            image_version: plan.image_version,
            status: deploymentStatus({ activeRevisionId: row.active_revision_id, maxScale: maxScaleOf(plan.source_config), deleting: false }),
            updated_at: now()
          }
          repo.updateDeployment(updated)
          return { updated, revision: undefined, stopped: [] }
        })
        if (written.revision) announce({ revision: written.revision, stopped: written.stopped })
        return toDeployment(written.updated)
      })
    ),

    implement(Api.deleteDeployment, ({ params }, { auth }) =>
      run(() => {
        const deleting = repo.transaction(() => {
          const row = mustGetDeployment(auth.tenantId, params.deployment_id)
          if (row.status === "AWAITING_DELETE") return undefined
          const at = now()
          const stopped = supersedeUnfinished(auth.tenantId, row.id, at)
          repo.setDeploymentStatus(auth.tenantId, row.id, deploymentStatus({ activeRevisionId: row.active_revision_id, maxScale: null, deleting: true }), at)
          return { stopped, at }
        })
        if (deleting) {
          for (const id of deleting.stopped) runtime.revisionStopped(id)
          runtime.deleteRequested(auth.tenantId, params.deployment_id, deleting.at)
        }
      })
    ),

    implement(Api.listRevisions, ({ params, query }, { auth }) =>
      run(() => {
        mustGetDeployment(auth.tenantId, params.deployment_id)
        const page = Pagination.resolve(query, controlPage)
        const statuses = query.status === undefined || query.status.length === 0 ? null : JSON.stringify(query.status)
        const rows = repo.listRevisions(auth.tenantId, params.deployment_id, statuses, page.limit, page.offset)
        return Pagination.response("resources", rows.map(toRevision), page)
      })
    ),

    implement(Api.createRevision, ({ params, body }, { auth }) =>
      run(() => {
        const written = repo.transaction(() => {
          const row = mustGetDeployment(auth.tenantId, params.deployment_id)
          refuseIfDeleting(row)
          const stored = storedOf(row)
          const planned = orRefuse(planRevision(stored, body))
          return writeNewRevision({
            row,
            sourceConfig: stored.source_config,
            sourceRevisionConfig: planned.source_revision_config,
            secrets: body.secrets ? sealSecrets(planned.secrets) : row.secrets,
            imageVersion: row.image_version
          })
        })
        announce(written)
        return toRevision(written.revision)
      })
    ),

    implement(Api.getRevision, ({ params }, { auth }) => {
      const row = repo.revision(auth.tenantId, params.deployment_id, params.revision_id)
      if (row) return Effect.succeed(toRevision(row))
      return Effect.fail(
        repo.deployment(auth.tenantId, params.deployment_id)
          ? new NotFound({ message: `Revision ${params.revision_id} not found in deployment ${params.deployment_id}` })
          : deploymentNotFound(params.deployment_id)
      )
    }),

    implement(Api.redeployRevision, ({ params }, { auth }) =>
      run(() => {
        const result = repo.transaction(() => {
          const row = mustGetDeployment(auth.tenantId, params.deployment_id)
          const revision = repo.revision(auth.tenantId, params.deployment_id, params.revision_id)
          const allowed = orRefuse(
            checkRedeploy({
              deployment: { id: row.id, deleting: row.status === "AWAITING_DELETE" },
              revisionId: params.revision_id,
              revision: revision && { ...revision, status: revision.status as RevisionStatus }
            })
          )
          const at = now()
          // Like a new revision, a redeploy supersedes a rollout still under way, which would
          // otherwise replace the redeployed revision moments later.
          const stopped = supersedeUnfinished(auth.tenantId, row.id, at)
          const status = deploymentStatus({ activeRevisionId: allowed.id, maxScale: maxScaleOf(JSON.parse(row.source_config)), deleting: false })
          repo.setDeploymentState(auth.tenantId, row.id, status, allowed.id, at)
          return { updated: { ...row, status, active_revision_id: allowed.id, updated_at: at }, stopped }
        })
        for (const id of result.stopped) runtime.revisionStopped(id)
        return toDeployment(result.updated)
      })
    ),

    implement(Api.listListeners, ({ query }, { auth }) =>
      run(() => {
        const page = Pagination.resolve(query, controlPage)
        return Pagination.response("resources", repo.listListeners(auth.tenantId, page.limit, page.offset).map(toListener), page)
      })
    ),

    implement(Api.createListener, ({ body }, { auth }) =>
      run(() => {
        const at = now()
        const row: ListenerRow = {
          id: randomUUID(),
          tenant_id: auth.tenantId,
          compute_type: body.compute_type,
          compute_config: JSON.stringify(body.compute_config),
          created_at: at,
          updated_at: at
        }
        repo.insertListener(row)
        return toListener(row)
      })
    ),

    implement(Api.getListener, ({ params }, { auth }) =>
      run(() => toListener(repo.listener(auth.tenantId, params.listener_id) ?? refuse(new NotFound({ message: `Listener ${params.listener_id} not found` }))))
    ),

    implement(Api.updateListener, ({ params, body }, { auth }) =>
      run(() =>
        repo.transaction(() => {
          const row = repo.listener(auth.tenantId, params.listener_id) ?? refuse(new NotFound({ message: `Listener ${params.listener_id} not found` }))
          const computeConfig = body.compute_config ?? JSON.parse(row.compute_config)
          const served = new Set<string>(computeConfig.k8s_namespaces)
          const stranded = repo.listenerUsers(auth.tenantId, row.id).filter((user) => user.namespace !== null && !served.has(user.namespace))
          if (stranded.length > 0) {
            refuse(
              new Conflict({
                message: `Namespace '${stranded[0]!.namespace}' is still used by deployment '${stranded[0]!.name}' on listener ${row.id}`
              })
            )
          }
          const updated: ListenerRow = {
            ...row,
            compute_type: body.compute_type ?? row.compute_type,
            compute_config: JSON.stringify(computeConfig),
            updated_at: now()
          }
          repo.updateListener(updated)
          return toListener(updated)
        })
      )
    ),

    implement(Api.deleteListener, ({ params }, { auth }) =>
      run(() =>
        repo.transaction(() => {
          if (!repo.listener(auth.tenantId, params.listener_id)) refuse(new NotFound({ message: `Listener ${params.listener_id} not found` }))
          const users = repo.listenerUsers(auth.tenantId, params.listener_id)
          if (users.length > 0) {
            refuse(new Conflict({ message: `Listener ${params.listener_id} is used by ${users.length} deployment(s): ${users.map((user) => user.name).join(", ")}` }))
          }
          repo.deleteListener(auth.tenantId, params.listener_id)
        })
      )
    ),

    implement(Api.getGitIntegrations, (_input, { auth }) =>
      run(() => ({
        integrations: repo.integrations(auth.tenantId).map(({ id, provider, owner, installed_at }) => ({ id, provider, owner, installed_at })),
        install_url: installUrl
      }))
    ),

    implement(Api.gitPushWebhook, ({ body }, { headers, rawBody }) =>
      run(() => {
        const signature = headers["x-hub-signature-256"]
        if (typeof signature !== "string" || signature === "") refuse(new Unauthorized({ message: "Missing X-Hub-Signature-256 header" }))
        const payload = body as Record<string, any>
        const owner: unknown =
          payload.repository?.owner?.login ?? payload.repository?.owner?.name ?? payload.repository?.full_name?.split?.("/")[0] ?? payload.organization?.login
        const integration =
          typeof owner === "string"
            ? repo.integrationsByOwner("github", ownerKey(owner)).find((candidate) => verifySignature(box.open(candidate.webhook_secret), rawBody, signature as string))
            : undefined
        if (!integration) return refuse(new Unauthorized({ message: "Invalid webhook signature" }))
        const event = headers["x-github-event"]
        if (event === "ping") return { revision_ids: [] }
        if (event !== "push") {
          refuse(ValidationError.single(["header", "x-github-event"], "Input should be 'push' or 'ping'", "literal_error"))
        }
        const push = orRefuse(Result.mapError(decodePush(body), (issues) => new ValidationError({ issues })))
        const tenantId = integration.tenant_id
        const branch = push.ref.startsWith("refs/heads/") ? push.ref.slice("refs/heads/".length) : push.ref
        const created = repo.transaction(() =>
          repo.pushTargets(tenantId, push.ref, branch).flatMap((row) => {
            // The deployment's secrets travel sealed: no need to open them to copy them.
            const stored: StoredDeployment = { ...storedOf({ ...row, secrets: "[]" }) }
            const next = revisionForPush(stored, push)
            if (!next) return []
            return [
              writeNewRevision({
                row,
                sourceConfig: stored.source_config,
                sourceRevisionConfig: next.source_revision_config,
                secrets: row.secrets,
                imageVersion: row.image_version
              })
            ]
          })
        )
        for (const written of created) announce(written)
        return { revision_ids: created.map((written) => written.revision.id) }
      })
    ),

    implement(Api.listTracingProjects, ({ query }, { auth }) =>
      run(() => {
        const page = Pagination.resolve(query, controlPage)
        return repo.listTracingProjects(auth.tenantId, query.name ?? null, page.limit, page.offset).map(({ id, name, created_at }) => ({ id, name, created_at }))
      })
    )
  ]
}
