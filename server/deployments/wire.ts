/** The deployment area's records as the API answers them (the spec's wire shapes), and its NotFound. */
import { type Listener, NotFound, secretMask } from "../../core/index.ts"
import type { DeploymentRecord } from "../store/DeploymentStore.ts"
import type { ListenerRecord } from "../store/ListenerStore.ts"
import type { RevisionRecord } from "../store/RevisionStore.ts"

export const deploymentNotFound = (id: string) => new NotFound({ message: `Deployment ${id} not found` })

export const toDeployment = (record: DeploymentRecord) => ({
  name: record.name,
  source: record.source,
  source_config: record.source_config,
  source_revision_config: record.source_revision_config,
  secrets: record.secrets.map(({ name }) => ({ name, value: secretMask })),
  id: record.id,
  tenant_id: record.tenant_id,
  created_at: record.created_at,
  updated_at: record.updated_at,
  status: record.status,
  latest_revision_id: record.latest_revision_id,
  active_revision_id: record.active_revision_id,
  image_version: record.image_version
})

export const toRevision = (record: RevisionRecord) => ({
  id: record.id,
  created_at: record.created_at,
  updated_at: record.updated_at,
  status: record.status,
  source: record.source,
  source_revision_config: record.source_revision_config,
  deployment_id: record.deployment_id,
  status_message: record.status_message
})

export const toListener = (record: ListenerRecord): Listener => ({
  id: record.id,
  compute_type: record.compute_type,
  compute_id: record.compute_id,
  version: record.version,
  compute_config: record.compute_config,
  created_at: record.created_at,
  updated_at: record.updated_at
})
