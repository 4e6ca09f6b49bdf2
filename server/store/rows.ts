/**
 * Rows as both SQL backends store them (documents as JSON text, statuses as text) and their
 * mapping to the stores' records and back: one place, so SQLite and PostgreSQL read and write the
 * same shapes.
 */
import type { DeploymentStatus, RevisionStatus, Secret, Source } from "../../core/index.ts"
import type { DeploymentRecord, ListenerRecord, NewRevision, RevisionRecord } from "./DeploymentStore.ts"
import type { TemplateMount, TemplateRecord, TemplateView } from "./SandboxStore.ts"

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
