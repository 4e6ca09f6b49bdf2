/**
 * All SQL of the deployment control plane: deployments, revisions, secrets (a column of the
 * deployment), tracing projects, listeners and git-host integrations. Statements are prepared
 * once. Every statement that touches tenant data filters by `tenant_id`, except the two system
 * scans that have no tenant yet: the runtime's reload at start (`inProgressRevisions`,
 * `pendingDeletes`) and the webhook's lookup of integrations by repository owner (the
 * signature, checked afterwards, decides which tenant it is).
 */
// @ts-nocheck

import { type Db, immediate } from "../db/database.ts"

export interface DeploymentRow {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly source: string
  /** JSON text of the stored SourceConfig. */
  readonly source_config: string
  /** JSON text of the latest revision's SourceRevisionConfig. */
  readonly source_revision_config: string
  /** JSON text: `[{name, value}]` with sealed values. */
  readonly secrets: string
  readonly image_version: string | null
  readonly status: string
  readonly latest_revision_id: string | null
  readonly active_revision_id: string | null
  readonly revision_seq: number
  readonly created_at: string
  readonly updated_at: string
}

export interface RevisionRow {
  readonly id: string
  readonly tenant_id: string
  readonly deployment_id: string
  readonly seq: number
  readonly source: string
  readonly status: string
  readonly status_message: string | null
  /** JSON text of this revision's SourceRevisionConfig. */
  readonly source_revision_config: string
  /** JSON text: the secrets this revision runs with, values sealed. */
  readonly secrets: string
  readonly deployed_at: string | null
  readonly created_at: string
  readonly updated_at: string
}

/** A revision as read back for answers, the runtime and redeploys: without its secrets. */
export type RevisionView = Omit<RevisionRow, "secrets">

export interface ListenerRow {
  readonly id: string
  readonly tenant_id: string
  readonly compute_type: string
  /** JSON text. */
  readonly compute_config: string
  readonly created_at: string
  readonly updated_at: string
}

export interface IntegrationRow {
  readonly id: string
  readonly tenant_id: string
  readonly provider: string
  readonly owner: string
  readonly owner_key: string
  /** Sealed (see secrets.ts). */
  readonly webhook_secret: string
  readonly installed_at: string
}

export interface TracingProjectRow {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly deployment_id: string | null
  readonly created_at: string
}

export interface DeploymentFilter {
  readonly nameContains: string | null
  /** JSON array text of statuses, or null for any. */
  readonly statuses: string | null
  readonly imageVersion: string | null
  readonly deploymentType: string | null
  /** JSON array text of ids, or null for any. */
  readonly ids: string | null
}

/** Revision statuses the runtime still has to move (anything not final). */
export const FINAL_REVISION_STATUSES = ["DEPLOYED", "CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED", "SKIPPED", "INTERRUPTED", "UNKNOWN"] as const
const finalList = FINAL_REVISION_STATUSES.map((status) => `'${status}'`).join(", ")

const deploymentColumns =
  "id, tenant_id, name, source, source_config, source_revision_config, secrets, image_version, status, latest_revision_id, active_revision_id, revision_seq, created_at, updated_at"
const revisionColumns = "id, tenant_id, deployment_id, seq, source, status, status_message, source_revision_config, secrets, deployed_at, created_at, updated_at"
/** What reads of a revision need: everything but its (sealed) secrets, which only a rollout would use. */
const revisionViewColumns = "id, tenant_id, deployment_id, seq, source, status, status_message, source_revision_config, deployed_at, created_at, updated_at"

export const makeDeploymentRepository = (db: Db) => {
  // Deployments
  const deploymentById = db.prepare(`SELECT ${deploymentColumns} FROM deployments WHERE tenant_id = ? AND id = ?`)
  const deploymentIdByName = db.prepare("SELECT id FROM deployments WHERE tenant_id = ? AND name = ?").pluck()
  const insertDeployment = db.prepare(
    `INSERT INTO deployments (${deploymentColumns}) VALUES (@id, @tenant_id, @name, @source, @source_config, @source_revision_config, @secrets, @image_version, @status, @latest_revision_id, @active_revision_id, @revision_seq, @created_at, @updated_at)`
  )
  const updateDeployment = db.prepare(
    `UPDATE deployments SET source_config = @source_config, source_revision_config = @source_revision_config, secrets = @secrets,
       image_version = @image_version, status = @status, latest_revision_id = @latest_revision_id, active_revision_id = @active_revision_id,
       revision_seq = @revision_seq, updated_at = @updated_at
     WHERE tenant_id = @tenant_id AND id = @id`
  )
  const setDeploymentState = db.prepare(
    "UPDATE deployments SET status = ?, active_revision_id = ?, updated_at = ? WHERE tenant_id = ? AND id = ?"
  )
  const setDeploymentStatus = db.prepare("UPDATE deployments SET status = ?, updated_at = ? WHERE tenant_id = ? AND id = ?")
  const deleteDeployment = db.prepare("DELETE FROM deployments WHERE tenant_id = ? AND id = ?")
  const listDeployments = db.prepare(
    `SELECT ${deploymentColumns} FROM deployments
     WHERE tenant_id = @tenant_id
       AND (@name_contains IS NULL OR instr(name, lower(@name_contains)) > 0)
       AND (@statuses IS NULL OR status IN (SELECT value FROM json_each(@statuses)))
       AND (@image_version IS NULL OR image_version = @image_version)
       AND (@deployment_type IS NULL OR deployment_type = @deployment_type)
       AND (@ids IS NULL OR id IN (SELECT value FROM json_each(@ids)))
     ORDER BY created_at DESC, id DESC
     LIMIT @limit OFFSET @offset`
  )
  const pushTargets = db.prepare(
    `SELECT ${deploymentColumns} FROM deployments
     WHERE tenant_id = ? AND source = 'gitrepo' AND build_on_push = 1 AND status != 'AWAITING_DELETE' AND repo_ref IN (?, ?)`
  )
  const pendingDeletes = db.prepare("SELECT tenant_id, id, updated_at FROM deployments WHERE status = 'AWAITING_DELETE'")

  // Revisions
  const revisionById = db.prepare(`SELECT ${revisionViewColumns} FROM revisions WHERE tenant_id = ? AND deployment_id = ? AND id = ?`)
  const insertRevision = db.prepare(
    `INSERT INTO revisions (${revisionColumns}) VALUES (@id, @tenant_id, @deployment_id, @seq, @source, @status, @status_message, @source_revision_config, @secrets, @deployed_at, @created_at, @updated_at)`
  )
  const listRevisions = db.prepare(
    `SELECT ${revisionColumns} FROM revisions
     WHERE tenant_id = @tenant_id AND deployment_id = @deployment_id
       AND (@statuses IS NULL OR status IN (SELECT value FROM json_each(@statuses)))
     ORDER BY seq DESC LIMIT @limit OFFSET @offset`
  )
  const unfinishedRevisions = db.prepare(
    // The partial index holds only unfinished revisions: no walk through the deployment's history.
    `SELECT id, status FROM revisions INDEXED BY revisions_unfinished WHERE tenant_id = ? AND deployment_id = ? AND status NOT IN (${finalList})`
  )
  const setRevisionStatus = db.prepare(
    "UPDATE revisions SET status = ?, status_message = ?, deployed_at = coalesce(deployed_at, ?), updated_at = ? WHERE tenant_id = ? AND id = ?"
  )
  const advanceRevision = db.prepare(
    "UPDATE revisions SET status = ?, status_message = ?, deployed_at = coalesce(deployed_at, ?), updated_at = ? WHERE tenant_id = ? AND id = ? AND status = ?"
  )
  const inProgressRevisions = db.prepare(`SELECT ${revisionViewColumns} FROM revisions WHERE status NOT IN (${finalList}) ORDER BY seq`)

  // Tracing projects
  const upsertTracingProject = db.prepare(
    `INSERT INTO tracing_projects (id, tenant_id, name, deployment_id, created_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (tenant_id, name) DO UPDATE SET deployment_id = excluded.deployment_id`
  )
  const listTracingProjects = db.prepare(
    `SELECT id, tenant_id, name, deployment_id, created_at FROM tracing_projects
     WHERE tenant_id = @tenant_id AND (@name IS NULL OR name = @name) ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`
  )

  // Listeners
  const listenerColumns = "id, tenant_id, compute_type, compute_config, created_at, updated_at"
  const listenerById = db.prepare(`SELECT ${listenerColumns} FROM listeners WHERE tenant_id = ? AND id = ?`)
  const insertListener = db.prepare(
    `INSERT INTO listeners (${listenerColumns}) VALUES (@id, @tenant_id, @compute_type, @compute_config, @created_at, @updated_at)`
  )
  const updateListener = db.prepare(
    "UPDATE listeners SET compute_type = @compute_type, compute_config = @compute_config, updated_at = @updated_at WHERE tenant_id = @tenant_id AND id = @id"
  )
  const deleteListener = db.prepare("DELETE FROM listeners WHERE tenant_id = ? AND id = ?")
  const listListeners = db.prepare(`SELECT ${listenerColumns} FROM listeners WHERE tenant_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?`)
  const listenerUsers = db.prepare(
    `SELECT name, json_extract(source_config, '$.listener_config.k8s_namespace') AS namespace FROM deployments
     WHERE tenant_id = ? AND json_extract(source_config, '$.listener_id') = ? ORDER BY name`
  )

  // Integrations
  const integrationColumns = "id, tenant_id, provider, owner, owner_key, webhook_secret, installed_at"
  const insertIntegration = db.prepare(
    `INSERT INTO integrations (${integrationColumns}) VALUES (@id, @tenant_id, @provider, @owner, @owner_key, @webhook_secret, @installed_at)`
  )
  const integrationsOfTenant = db.prepare(`SELECT ${integrationColumns} FROM integrations WHERE tenant_id = ? ORDER BY installed_at, id`)
  const integrationById = db.prepare(`SELECT ${integrationColumns} FROM integrations WHERE tenant_id = ? AND id = ?`)
  const integrationsByOwner = db.prepare(`SELECT ${integrationColumns} FROM integrations WHERE provider = ? AND owner_key = ?`)
  const integrationByOwnerOfTenant = db.prepare(
    `SELECT ${integrationColumns} FROM integrations WHERE tenant_id = ? AND provider = ? AND owner_key = ?`
  )

  return {
    /** Runs `work` in one BEGIN IMMEDIATE transaction. */
    transaction: immediate(db),

    deployment: (tenantId: string, id: string) => deploymentById.get(tenantId, id) as DeploymentRow | undefined,
    deploymentIdByName: (tenantId: string, name: string) => deploymentIdByName.get(tenantId, name) as string | undefined,
    insertDeployment: (row: DeploymentRow) => void insertDeployment.run(row),
    updateDeployment: (row: DeploymentRow) => updateDeployment.run(row).changes > 0,
    setDeploymentState: (tenantId: string, id: string, status: string, activeRevisionId: string | null, now: string) =>
      setDeploymentState.run(status, activeRevisionId, now, tenantId, id).changes > 0,
    setDeploymentStatus: (tenantId: string, id: string, status: string, now: string) =>
      setDeploymentStatus.run(status, now, tenantId, id).changes > 0,
    deleteDeployment: (tenantId: string, id: string) => deleteDeployment.run(tenantId, id).changes > 0,
    listDeployments: (tenantId: string, filter: DeploymentFilter, limit: number, offset: number) =>
      listDeployments.all({
        tenant_id: tenantId,
        name_contains: filter.nameContains,
        statuses: filter.statuses,
        image_version: filter.imageVersion,
        deployment_type: filter.deploymentType,
        ids: filter.ids,
        limit,
        offset
      }) as Array<DeploymentRow>,
    /** Candidates for a push to `ref` (a full ref, or its branch name): the core decides which match. */
    pushTargets: (tenantId: string, ref: string, branch: string) => pushTargets.all(tenantId, ref, branch) as Array<DeploymentRow>,
    pendingDeletes: () => pendingDeletes.all() as Array<{ tenant_id: string; id: string; updated_at: string }>,

    revision: (tenantId: string, deploymentId: string, id: string) => revisionById.get(tenantId, deploymentId, id) as RevisionView | undefined,
    insertRevision: (row: RevisionRow) => void insertRevision.run(row),
    listRevisions: (tenantId: string, deploymentId: string, statuses: string | null, limit: number, offset: number) =>
      listRevisions.all({ tenant_id: tenantId, deployment_id: deploymentId, statuses, limit, offset }) as Array<RevisionRow>,
    unfinishedRevisions: (tenantId: string, deploymentId: string) => unfinishedRevisions.all(tenantId, deploymentId) as Array<{ id: string; status: string }>,
    setRevisionStatus: (tenantId: string, id: string, status: string, message: string | null, deployedAt: string | null, now: string) =>
      setRevisionStatus.run(status, message, deployedAt, now, tenantId, id).changes > 0,
    /** Moves a revision on only if it is still in `from` (nothing else superseded it meanwhile). */
    advanceRevision: (tenantId: string, id: string, from: string, to: string, message: string | null, deployedAt: string | null, now: string) =>
      advanceRevision.run(to, message, deployedAt, now, tenantId, id, from).changes > 0,
    inProgressRevisions: () => inProgressRevisions.all() as Array<RevisionView>,

    upsertTracingProject: (id: string, tenantId: string, name: string, deploymentId: string, now: string) =>
      void upsertTracingProject.run(id, tenantId, name, deploymentId, now),
    listTracingProjects: (tenantId: string, name: string | null, limit: number, offset: number) =>
      listTracingProjects.all({ tenant_id: tenantId, name, limit, offset }) as Array<TracingProjectRow>,

    listener: (tenantId: string, id: string) => listenerById.get(tenantId, id) as ListenerRow | undefined,
    insertListener: (row: ListenerRow) => void insertListener.run(row),
    updateListener: (row: ListenerRow) => updateListener.run(row).changes > 0,
    deleteListener: (tenantId: string, id: string) => deleteListener.run(tenantId, id).changes > 0,
    listListeners: (tenantId: string, limit: number, offset: number) => listListeners.all(tenantId, limit, offset) as Array<ListenerRow>,
    /** The deployments on a listener and the namespace each deploys into. */
    listenerUsers: (tenantId: string, id: string) => listenerUsers.all(tenantId, id) as Array<{ name: string; namespace: string | null }>,

    insertIntegration: (row: IntegrationRow) => void insertIntegration.run(row),
    integrations: (tenantId: string) => integrationsOfTenant.all(tenantId) as Array<IntegrationRow>,
    integration: (tenantId: string, id: string) => integrationById.get(tenantId, id) as IntegrationRow | undefined,
    integrationsByOwner: (provider: string, ownerKey: string) => integrationsByOwner.all(provider, ownerKey) as Array<IntegrationRow>,
    integrationByOwner: (tenantId: string, provider: string, ownerKey: string) =>
      integrationByOwnerOfTenant.get(tenantId, provider, ownerKey) as IntegrationRow | undefined
  }
}

export type DeploymentRepository = ReturnType<typeof makeDeploymentRepository>
