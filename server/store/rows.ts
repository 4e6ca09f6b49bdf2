/**
 * Rows as both SQL backends store them (documents as JSON text, statuses as text), the columns
 * they are read with, and their mapping to the stores' records and back: one place, so SQLite
 * and PostgreSQL read and write the same shapes. Each backend's statements and their parameter
 * order stay in its own folder.
 */
import { isTerminal, type DeploymentStatus, type RevisionStatus, revisionStatuses, type Secret, type Source } from "../../core/index.ts"
import type { DeploymentRecord } from "./DeploymentStore.ts"
import type { ListenerRecord } from "./ListenerStore.ts"
import type { NewRevision, RevisionRecord } from "./RevisionStore.ts"
import type { SandboxRecord } from "./SandboxStore.ts"
import type { SnapshotRecord } from "./SnapshotStore.ts"
import type { NewTemplate, TemplateMount, TemplateRecord, TemplateView } from "./TemplateStore.ts"

/**
 * The revision statuses nothing moves any further (the core's `isTerminal`), as the SQL list the
 * queries of unfinished revisions exclude: `status NOT IN (${finalRevisionStatusList})`. The
 * migrations keep the list they were applied with (the same statuses, in the same order, which
 * SQLite's `INDEXED BY revisions_unfinished` checks on every start).
 */
export const finalRevisionStatusList = revisionStatuses
  .filter(isTerminal)
  .map((status) => `'${status}'`)
  .join(", ")

/** The columns each record is read with (aliases as the statements use them: v, t, p, s, n). */
export const columns = {
  deployment:
    "id, tenant_id, name, source, source_config, source_revision_config, secrets, image_version, status, latest_revision_id, active_revision_id, revision_seq, created_at, updated_at",
  /** What reads of a revision need: everything but its (sealed) secrets, which only a rollout uses. */
  revisionView: "id, tenant_id, deployment_id, seq, source, status, status_message, source_revision_config, deployed_at, created_at, updated_at",
  revision: "id, tenant_id, deployment_id, seq, source, status, status_message, source_revision_config, secrets, deployed_at, created_at, updated_at",
  tracingProject: "id, tenant_id, name, deployment_id, created_at",
  listener: "id, tenant_id, compute_type, compute_id, version, compute_config, created_at, updated_at",
  integration: "id, tenant_id, provider, owner, owner_key, webhook_secret, installed_at",
  volume: "v.id, v.tenant_id, v.organization_id, v.name, v.size_bytes, v.size, v.storage_class, v.created_at, v.updated_at",
  pool: "p.id, p.tenant_id, p.name, p.template_id, pt.name AS template_name, p.replicas, p.created_at, p.updated_at",
  sandbox: `s.id, s.tenant_id, s.name, s.template_id, st.name AS template_name, s.pool_id, sp.name AS pool_name, s.status, s.status_message, s.created_at, s.updated_at,
  s.snapshot_id, s.image, s.vcpus, s.mem_bytes, s.fs_capacity_bytes, s.ttl_seconds, s.idle_ttl_seconds, s.delete_after_stop_seconds, s.stopped_at`,
  snapshot: "n.id, n.tenant_id, n.name, n.docker_image, n.image_digest, n.fs_capacity_bytes, n.status, n.status_message, n.source_sandbox_id, n.created_at, n.updated_at",
  registry: "id, tenant_id, name, url, username, password_sealed, created_at, updated_at",
  serviceGrant: "id, tenant_id, sandbox_id, port, created_at, expires_at"
} as const

/** What `columns.sandbox` selects from (the template and pool names joined). */
export const sandboxFrom = "FROM sandboxes s LEFT JOIN sandbox_templates st ON st.id = s.template_id LEFT JOIN sandbox_pools sp ON sp.id = s.pool_id"
/** What `columns.pool` selects from (the template's name joined). */
export const poolFrom = "FROM sandbox_pools p JOIN sandbox_templates pt ON pt.id = p.template_id"

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
  /** Unique per tenant (real API field); the listener's id unless the client named it. */
  readonly compute_id: string
  readonly version: string | null
  /** JSON text. */
  readonly compute_config: string
  readonly created_at: string
  readonly updated_at: string
}

/** A template as read for answers: documents as JSON text. */
export interface TemplateViewRow extends Omit<TemplateView, "proxy_config" | "mounts"> {
  /** JSON text of the proxy config, or null. */
  readonly proxy_config: string | null
  /** JSON text: `[{volume_id, volume_name, mount_path}]` in mount order. */
  readonly mounts: string
}

export interface TemplateRow extends TemplateViewRow {
  readonly cpu_millicores: bigint
  readonly memory_bytes: bigint
  readonly storage_bytes: bigint | null
}

export const toDeploymentRecord = (row: DeploymentRow): DeploymentRecord => ({
  id: row.id,
  tenant_id: row.tenant_id,
  name: row.name,
  source: row.source as Source,
  source_config: JSON.parse(row.source_config),
  source_revision_config: JSON.parse(row.source_revision_config),
  secrets: JSON.parse(row.secrets) as Array<Secret>,
  image_version: row.image_version,
  status: row.status as DeploymentStatus,
  latest_revision_id: row.latest_revision_id,
  active_revision_id: row.active_revision_id,
  revision_seq: row.revision_seq,
  created_at: row.created_at,
  updated_at: row.updated_at
})

export const toDeploymentRow = (record: DeploymentRecord): DeploymentRow => ({
  ...record,
  source_config: JSON.stringify(record.source_config),
  source_revision_config: JSON.stringify(record.source_revision_config),
  secrets: JSON.stringify(record.secrets)
})

export const toRevisionRecord = (row: RevisionView): RevisionRecord => ({
  id: row.id,
  tenant_id: row.tenant_id,
  deployment_id: row.deployment_id,
  seq: row.seq,
  source: row.source as Source,
  status: row.status as RevisionStatus,
  status_message: row.status_message,
  source_revision_config: JSON.parse(row.source_revision_config),
  deployed_at: row.deployed_at,
  created_at: row.created_at,
  updated_at: row.updated_at
})

export const toRevisionRow = (revision: NewRevision): RevisionRow => ({
  ...revision,
  source_revision_config: JSON.stringify(revision.source_revision_config),
  secrets: JSON.stringify(revision.secrets)
})

export const toListenerRecord = (row: ListenerRow): ListenerRecord => ({
  ...row,
  compute_type: row.compute_type as "k8s",
  compute_config: JSON.parse(row.compute_config)
})

export const toListenerRow = (record: ListenerRecord): ListenerRow => ({ ...record, compute_config: JSON.stringify(record.compute_config) })

export const toTemplateView = (row: TemplateViewRow): TemplateView => ({
  id: row.id,
  tenant_id: row.tenant_id,
  name: row.name,
  image: row.image,
  cpu: row.cpu,
  memory: row.memory,
  storage: row.storage,
  proxy_config: row.proxy_config === null ? null : JSON.parse(row.proxy_config),
  mounts: JSON.parse(row.mounts) as Array<TemplateMount>,
  created_at: row.created_at,
  updated_at: row.updated_at
})

export const toTemplateRecord = (row: TemplateRow): TemplateRecord => ({
  ...toTemplateView(row),
  cpu_millicores: row.cpu_millicores,
  memory_bytes: row.memory_bytes,
  storage_bytes: row.storage_bytes
})

/** A template as inserted: its proxy config as JSON text. */
export const toTemplateRow = (template: NewTemplate): Omit<NewTemplate, "proxy_config"> & { readonly proxy_config: string | null } => ({
  ...template,
  proxy_config: template.proxy_config === null ? null : JSON.stringify(template.proxy_config)
})

/** Byte counts as a backend reads them: PostgreSQL's int8 as `bigint`, SQLite's INTEGER as a number. */
type Bytes = number | bigint

export type SandboxRow = Omit<SandboxRecord, "mem_bytes" | "fs_capacity_bytes"> & { readonly mem_bytes: Bytes | null; readonly fs_capacity_bytes: Bytes | null }
export type SnapshotRow = Omit<SnapshotRecord, "fs_capacity_bytes"> & { readonly fs_capacity_bytes: Bytes }

/** The records hold byte counts as numbers (the API bounds them to safe integers). */
export const toSandboxRecord = (row: SandboxRow): SandboxRecord =>
  typeof row.mem_bytes === "bigint" || typeof row.fs_capacity_bytes === "bigint"
    ? { ...row, mem_bytes: row.mem_bytes === null ? null : Number(row.mem_bytes), fs_capacity_bytes: row.fs_capacity_bytes === null ? null : Number(row.fs_capacity_bytes) }
    : (row as SandboxRecord)

export const toSnapshotRecord = (row: SnapshotRow): SnapshotRecord =>
  typeof row.fs_capacity_bytes === "bigint" ? { ...row, fs_capacity_bytes: Number(row.fs_capacity_bytes) } : (row as SnapshotRecord)
