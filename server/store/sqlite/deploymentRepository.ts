/**
 * All SQL of the deployment control plane: deployments, revisions, secrets (a column of the
 * deployment), tracing projects, listeners and git-host integrations. Statements are prepared
 * once. Every statement that touches tenant data filters by `tenant_id`, except the two system
 * scans that have no tenant yet: the runtime's reload at start (`inProgressRevisions`,
 * `pendingDeletes`) and the webhook's lookup of integrations by repository owner (the
 * signature, checked afterwards, decides which tenant it is).
 */
import { columns, type DeploymentRow, finalRevisionStatusList as finalList, type ListenerRow, type RevisionRow, type RevisionView } from "../rows.ts"
import type { TracingProjectRecord } from "../DeploymentStore.ts"
import type { IntegrationRecord } from "../IntegrationStore.ts"
import { type Db, immediate, perDatabase } from "./database.ts"

export type { DeploymentRow, ListenerRow, RevisionRow, RevisionView }

/** Integrations and tracing projects are stored as their records (no JSON columns). */
type IntegrationRow = IntegrationRecord
type TracingProjectRow = TracingProjectRecord

export interface DeploymentFilter {
  readonly nameContains: string | null
  /** JSON array text of statuses, or null for any. */
  readonly statuses: string | null
  readonly imageVersion: string | null
  readonly deploymentType: string | null
  /** JSON array text of ids, or null for any. */
  readonly ids: string | null
}

const deploymentColumns = columns.deployment
const revisionColumns = columns.revision
const revisionViewColumns = columns.revisionView

export const makeDeploymentRepository = (db: Db) => {
  // Deployments
  const deploymentById = db.prepare(`SELECT ${deploymentColumns} FROM deployments WHERE tenant_id = ? AND id = ?`)
  const insertDeployment = db.prepare(
    `INSERT INTO deployments (${deploymentColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
  )
  const updateDeployment = db.prepare(
    `UPDATE deployments SET source_config = ?, source_revision_config = ?, secrets = ?, image_version = ?, status = ?,
       latest_revision_id = ?, active_revision_id = ?, revision_seq = ?, updated_at = ?
     WHERE tenant_id = ? AND id = ?`
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
     WHERE tenant_id = ? AND lower(integration_id) = lower(?) AND source = 'gitrepo' AND build_on_push = 1 AND status != 'AWAITING_DELETE' AND repo_ref IN (?, ?)`
  )
  const commitBuilt = db
    .prepare("SELECT 1 FROM revisions WHERE tenant_id = ? AND deployment_id = ? AND repo_commit_sha = ? AND repo_ref = ? LIMIT 1")
    .pluck()
  // Portable SQL (PostgreSQL has the same ON CONFLICT ... DO NOTHING).
  const rememberDelivery = db.prepare(
    "INSERT INTO webhook_deliveries (integration_id, delivery_id, received_at, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (integration_id, delivery_id) DO NOTHING"
  )
  const pruneDeliveries = db.prepare("DELETE FROM webhook_deliveries WHERE expires_at <= ?")
  const deliverySeen = db.prepare("SELECT 1 FROM webhook_deliveries WHERE integration_id = ? AND delivery_id = ? AND expires_at > ?").pluck()
  const deleteIntegration = db.prepare("DELETE FROM integrations WHERE tenant_id = ? AND id = ?")
  const allDeploymentSecrets = db.prepare("SELECT id, secrets FROM deployments")
  const setDeploymentSecrets = db.prepare("UPDATE deployments SET secrets = ? WHERE id = ?")
  const allRevisionSecrets = db.prepare("SELECT id, secrets FROM revisions")
  const setRevisionSecrets = db.prepare("UPDATE revisions SET secrets = ? WHERE id = ?")
  const allWebhookSecrets = db.prepare("SELECT id, webhook_secret FROM integrations")
  const setWebhookSecret = db.prepare("UPDATE integrations SET webhook_secret = ? WHERE id = ?")
  const allReadTokens = db.prepare("SELECT id, read_token FROM integrations WHERE read_token IS NOT NULL")
  const setReadTokenById = db.prepare("UPDATE integrations SET read_token = ? WHERE id = ?")
  const setReadToken = db.prepare("UPDATE integrations SET read_token = ? WHERE tenant_id = ? AND id = ?")
  const readToken = db.prepare("SELECT read_token FROM integrations WHERE tenant_id = ? AND id = ?").pluck()
  const pendingDeletes = db.prepare("SELECT tenant_id, id, updated_at FROM deployments WHERE status = 'AWAITING_DELETE'")

  // Revisions
  const revisionById = db.prepare(`SELECT ${revisionViewColumns} FROM revisions WHERE tenant_id = ? AND deployment_id = ? AND id = ?`)
  const insertRevision = db.prepare(
    `INSERT INTO revisions (${revisionColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
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
  const recordCommit = db.prepare("UPDATE revisions SET source_revision_config = json_set(source_revision_config, '$.repo_commit_sha', ?) WHERE tenant_id = ? AND id = ?")
  const advanceRevision = db.prepare(
    "UPDATE revisions SET status = ?, status_message = ?, deployed_at = coalesce(deployed_at, ?), updated_at = ? WHERE tenant_id = ? AND id = ? AND status = ?"
  )
  const inProgressRevisions = db.prepare(`SELECT ${revisionViewColumns} FROM revisions WHERE status NOT IN (${finalList}) ORDER BY seq`)
  const revisionSecrets = db.prepare("SELECT secrets FROM revisions WHERE tenant_id = ? AND id = ?").pluck()
  const activeRevisions = db.prepare(
    "SELECT tenant_id, id AS deployment_id, active_revision_id AS revision_id FROM deployments WHERE active_revision_id IS NOT NULL AND status != 'AWAITING_DELETE'"
  )

  // Tracing projects
  const upsertTracingProject = db.prepare(
    `INSERT INTO tracing_projects (id, tenant_id, name, deployment_id, created_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (tenant_id, name) DO UPDATE SET deployment_id = excluded.deployment_id`
  )
  const deleteTracingProjects = db.prepare("DELETE FROM tracing_projects WHERE tenant_id = ? AND deployment_id = ?")
  const listTracingProjects = db.prepare(
    `SELECT ${columns.tracingProject} FROM tracing_projects
     WHERE tenant_id = @tenant_id AND (@name IS NULL OR name = @name) ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`
  )

  // Listeners
  const listenerColumns = columns.listener
  const listenerById = db.prepare(`SELECT ${listenerColumns} FROM listeners WHERE tenant_id = ? AND id = ?`)
  const insertListener = db.prepare(
    `INSERT INTO listeners (${listenerColumns}) VALUES (@id, @tenant_id, @compute_type, @compute_id, @version, @compute_config, @created_at, @updated_at)`
  )
  const updateListener = db.prepare(
    "UPDATE listeners SET compute_type = @compute_type, version = @version, compute_config = @compute_config, updated_at = @updated_at WHERE tenant_id = @tenant_id AND id = @id"
  )
  const deleteListener = db.prepare("DELETE FROM listeners WHERE tenant_id = ? AND id = ?")
  const listListeners = db.prepare(`SELECT ${listenerColumns} FROM listeners WHERE tenant_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?`)
  const listenerUsers = db.prepare(
    `SELECT name, json_extract(source_config, '$.listener_config.k8s_namespace') AS namespace FROM deployments
     WHERE tenant_id = ? AND json_extract(source_config, '$.listener_id') = ? ORDER BY name`
  )

  // Integrations
  const integrationColumns = columns.integration
  const insertIntegration = db.prepare(
    `INSERT INTO integrations (${integrationColumns}) VALUES (@id, @tenant_id, @provider, @owner, @owner_key, @webhook_secret, @installed_at)`
  )
  const integrationsOfTenant = db.prepare(`SELECT ${integrationColumns} FROM integrations WHERE tenant_id = ? ORDER BY installed_at, id`)
  const integrationById = db.prepare(`SELECT ${integrationColumns} FROM integrations WHERE tenant_id = ? AND id = ?`)
  const integrationsByOwner = db.prepare(`SELECT ${integrationColumns} FROM integrations WHERE provider = ? AND owner_key = ?`)
  const repositoriesOfIntegration = db.prepare(
    `SELECT repo_url, repo_ref FROM deployments
     WHERE tenant_id = ? AND lower(json_extract(source_config, '$.integration_id')) = ? AND repo_url IS NOT NULL
     ORDER BY created_at, id`
  )
  const integrationByOwnerOfTenant = db.prepare(
    `SELECT ${integrationColumns} FROM integrations WHERE tenant_id = ? AND provider = ? AND owner_key = ?`
  )

  return {
    /** Runs `work` in one BEGIN IMMEDIATE transaction. */
    transaction: immediate(db),

    deployment: (tenantId: string, id: string) => deploymentById.get(tenantId, id) as DeploymentRow | undefined,
    // The writes of every create and PATCH bind by position: better-sqlite3 looks each named
    // parameter up on the object, about 5 us more per statement of this size.
    insertDeployment: (row: DeploymentRow) =>
      void insertDeployment.run(
        row.id, row.tenant_id, row.name, row.source, row.source_config, row.source_revision_config, row.secrets, row.image_version,
        row.status, row.latest_revision_id, row.active_revision_id, row.revision_seq, row.created_at, row.updated_at
      ),
    updateDeployment: (row: DeploymentRow) =>
      updateDeployment.run(
        row.source_config, row.source_revision_config, row.secrets, row.image_version, row.status,
        row.latest_revision_id, row.active_revision_id, row.revision_seq, row.updated_at, row.tenant_id, row.id
      ).changes > 0,
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
    pushTargets: (tenantId: string, integrationId: string, ref: string, branch: string) =>
      pushTargets.all(tenantId, integrationId, ref, branch) as Array<DeploymentRow>,
    commitBuilt: (tenantId: string, deploymentId: string, commitSha: string, repoRef: string) =>
      commitBuilt.get(tenantId, deploymentId, commitSha, repoRef) !== undefined,
    /** True when the delivery is new; an expired entry of the same id is replaced. */
    rememberDelivery: (integrationId: string, deliveryId: string, receivedAt: string, expiresAt: string) => {
      if (deliverySeen.get(integrationId, deliveryId, receivedAt) !== undefined) return false
      pruneDeliveries.run(receivedAt)
      return rememberDelivery.run(integrationId, deliveryId, receivedAt, expiresAt).changes === 1
    },
    deleteIntegration: (tenantId: string, id: string) => deleteIntegration.run(tenantId, id).changes > 0,
    /** Every sealed secret value of deployments and revisions through `reseal`, in one IMMEDIATE transaction (a throw rolls back). */
    resealSecrets: (reseal: (stored: string) => string) =>
      immediate(db)(() => {
        let values = 0
        const resealList = (text: string) => {
          const secrets = JSON.parse(text) as Array<{ name: string; value: string }>
          values += secrets.length
          return JSON.stringify(secrets.map(({ name, value }) => ({ name, value: reseal(value) })))
        }
        for (const row of allDeploymentSecrets.all() as Array<{ id: string; secrets: string }>) setDeploymentSecrets.run(resealList(row.secrets), row.id)
        for (const row of allRevisionSecrets.all() as Array<{ id: string; secrets: string }>) setRevisionSecrets.run(resealList(row.secrets), row.id)
        return values
      }),
    /** Every webhook secret and read token through `reseal`, in one IMMEDIATE transaction. */
    resealWebhookSecrets: (reseal: (stored: string) => string) =>
      immediate(db)(() => {
        const rows = allWebhookSecrets.all() as Array<{ id: string; webhook_secret: string }>
        for (const row of rows) setWebhookSecret.run(reseal(row.webhook_secret), row.id)
        const tokens = allReadTokens.all() as Array<{ id: string; read_token: string }>
        for (const row of tokens) setReadTokenById.run(reseal(row.read_token), row.id)
        return rows.length + tokens.length
      }),
    setReadToken: (tenantId: string, id: string, sealed: string | null) => setReadToken.run(sealed, tenantId, id).changes > 0,
    readToken: (tenantId: string, id: string) => (readToken.get(tenantId, id) as string | null | undefined) ?? undefined,
    pendingDeletes: () => pendingDeletes.all() as Array<{ tenant_id: string; id: string; updated_at: string }>,

    revision: (tenantId: string, deploymentId: string, id: string) => revisionById.get(tenantId, deploymentId, id) as RevisionView | undefined,
    insertRevision: (row: RevisionRow) =>
      void insertRevision.run(
        row.id, row.tenant_id, row.deployment_id, row.seq, row.source, row.status, row.status_message,
        row.source_revision_config, row.secrets, row.deployed_at, row.created_at, row.updated_at
      ),
    listRevisions: (tenantId: string, deploymentId: string, statuses: string | null, limit: number, offset: number) =>
      listRevisions.all({ tenant_id: tenantId, deployment_id: deploymentId, statuses, limit, offset }) as Array<RevisionRow>,
    unfinishedRevisions: (tenantId: string, deploymentId: string) => unfinishedRevisions.all(tenantId, deploymentId) as Array<{ id: string; status: string }>,
    setRevisionStatus: (tenantId: string, id: string, status: string, message: string | null, deployedAt: string | null, now: string) =>
      setRevisionStatus.run(status, message, deployedAt, now, tenantId, id).changes > 0,
    /** Moves a revision on only if it is still in `from` (nothing else superseded it meanwhile). */
    advanceRevision: (tenantId: string, id: string, from: string, to: string, message: string | null, deployedAt: string | null, now: string) =>
      advanceRevision.run(to, message, deployedAt, now, tenantId, id, from).changes > 0,
    inProgressRevisions: () => inProgressRevisions.all() as Array<RevisionView>,
    recordCommit: (tenantId: string, id: string, commitSha: string) => recordCommit.run(commitSha, tenantId, id).changes > 0,
    /** JSON text of the (sealed) secrets a revision runs with. */
    revisionSecrets: (tenantId: string, id: string) => revisionSecrets.get(tenantId, id) as string | undefined,
    activeRevisions: () => activeRevisions.all() as Array<{ tenant_id: string; deployment_id: string; revision_id: string }>,

    upsertTracingProject: (id: string, tenantId: string, name: string, deploymentId: string, now: string) =>
      void upsertTracingProject.run(id, tenantId, name, deploymentId, now),
    /** `delete_tracing_project=true` on a deployment delete (real API). */
    deleteTracingProjects: (tenantId: string, deploymentId: string) => deleteTracingProjects.run(tenantId, deploymentId).changes,
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
    repositoriesOfIntegration: (tenantId: string, integrationId: string) =>
      repositoriesOfIntegration.all(tenantId, integrationId.toLowerCase()) as Array<{ repo_url: string; repo_ref: string | null }>,
    integrationByOwner: (tenantId: string, provider: string, ownerKey: string) =>
      integrationByOwnerOfTenant.get(tenantId, provider, ownerKey) as IntegrationRow | undefined
  }
}

export type DeploymentRepository = ReturnType<typeof makeDeploymentRepository>

/** The repository of a connection, its statements prepared once for every store that uses them. */
export const deploymentRepositoryOf = perDatabase(makeDeploymentRepository)
