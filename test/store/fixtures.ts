/** Records for the store conformance suites: valid domain values, unique per call; and the stores themselves. */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { type DeploymentRecord, DeploymentStore } from "../../server/store/DeploymentStore.ts"
import { IntegrationStore } from "../../server/store/IntegrationStore.ts"
import { KeyStore } from "../../server/store/KeyStore.ts"
import { ListenerStore } from "../../server/store/ListenerStore.ts"
import { PoolStore } from "../../server/store/PoolStore.ts"
import { QuotaStore } from "../../server/store/QuotaStore.ts"
import { RegistryStore } from "../../server/store/RegistryStore.ts"
import { type NewRevision, RevisionStore } from "../../server/store/RevisionStore.ts"
import { SandboxStore } from "../../server/store/SandboxStore.ts"
import { ServiceGrantStore } from "../../server/store/ServiceGrantStore.ts"
import { SnapshotStore } from "../../server/store/SnapshotStore.ts"
import { TemplateStore } from "../../server/store/TemplateStore.ts"
import { Transactions } from "../../server/store/Transactions.ts"
import { SandboxVolumeStore } from "../../server/store/SandboxVolumeStore.ts"

/** Every store of a backend (and its transaction combinator), by the names the suites use. */
export const allStores = Effect.all({
  transaction: Effect.map(Transactions, (transactions) => transactions.transaction),
  keyStore: KeyStore,
  deploymentStore: DeploymentStore,
  revisionStore: RevisionStore,
  listenerStore: ListenerStore,
  integrationStore: IntegrationStore,
  sandboxStore: SandboxStore,
  volumeStore: SandboxVolumeStore,
  templateStore: TemplateStore,
  poolStore: PoolStore,
  snapshotStore: SnapshotStore,
  quotaStore: QuotaStore,
  registryStore: RegistryStore,
  grantStore: ServiceGrantStore
})

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
