/** Records for the store conformance suites: valid domain values, unique per call. */
import { randomUUID } from "node:crypto"
import type { DeploymentRecord, NewRevision } from "../../server/store/DeploymentStore.ts"

let counter = 0
export const unique = (prefix: string) => `${prefix}-${process.pid}-${++counter}`

export const at = (offsetMs = 0) => new Date(Date.UTC(2026, 0, 1) + offsetMs).toISOString()

export const deploymentRecord = (tenantId: string, overrides: Partial<DeploymentRecord> = {}): DeploymentRecord => {
  const id = randomUUID()
  return {
    id,
    tenant_id: tenantId,
    name: unique("dep"),
    source: "external_container",
    source_config: { custom_url: null, resource_spec: { min_scale: 1, max_scale: 2, labels: { team: "a" } } },
    source_revision_config: { image_uri: "ghcr.io/acme/agent:1" },
    secrets: [{ name: "OPENAI_API_KEY", value: "enc:v1:sealed" }],
    image_version: null,
    status: "AWAITING_DATABASE",
    latest_revision_id: null,
    active_revision_id: null,
    revision_seq: 1,
    created_at: at(),
    updated_at: at(),
    ...overrides
  }
}

export const revisionFor = (deployment: DeploymentRecord, seq: number, overrides: Partial<NewRevision> = {}): NewRevision => ({
  id: randomUUID(),
  tenant_id: deployment.tenant_id,
  deployment_id: deployment.id,
  seq,
  source: deployment.source,
  status: "CREATING",
  status_message: null,
  source_revision_config: deployment.source_revision_config,
  secrets: deployment.secrets,
  deployed_at: null,
  created_at: at(seq),
  updated_at: at(seq),
  ...overrides
})

/** A deployment with its first revision, as `createDeployment` takes them. */
export const deploymentWithRevision = (tenantId: string, overrides: Partial<DeploymentRecord> = {}) => {
  const draft = deploymentRecord(tenantId, overrides)
  const revision = revisionFor(draft, 1)
  return { deployment: { ...draft, latest_revision_id: revision.id }, revision }
}
