/**
 * Seeding in two steps, so that the data is exactly what the server writes and still takes
 * seconds, not minutes:
 *
 * 1. `seedSamples`: through the HTTP API of a running server, each tenant gets a few volumes,
 *    templates (one mounting a volume, one with ephemeral storage, one with a proxy config) and
 *    deployments (`external_container` and `gitrepo`), which the runtime takes to DEPLOYED.
 * 2. `cloneSamples`, with the server stopped: those rows are read back through the server's own
 *    repositories and cloned (new id, name and timestamps; everything else as the server wrote
 *    it) with the same repositories' insert functions, in transactions of 5,000 rows, until each
 *    tenant has its share. A deployment is cloned with its revisions and its tracing project.
 *
 * Tenants and keys are created with the server's key store (`server/auth/keys.ts`): each tenant
 * is its own organization with its own key, and its storage quota is raised so that volume
 * resizes never hit it.
 */
// @ts-nocheck

import { randomUUID } from "node:crypto"
import type { Db } from "../server/db/database.ts"
import { makeKeyStore } from "../server/auth/keys.ts"
import { type DeploymentRow, makeDeploymentRepository, type RevisionRow } from "../server/deployments/repository.ts"
import { makeSandboxRepository, parseMounts } from "../server/sandboxes/repository.ts"

export const DEFAULT_TENANT_ID = "00000000-0000-4000-8000-000000000001"
export const DEFAULT_ORGANIZATION_ID = "00000000-0000-4000-8000-000000000000"

export interface Tenant {
  readonly index: number
  readonly id: string
  readonly organizationId: string
  readonly key: string
}

export interface Shares {
  /** Per tenant, by index. */
  readonly deployments: ReadonlyArray<number>
  readonly templates: ReadonlyArray<number>
  readonly volumes: ReadonlyArray<number>
}

/**
 * 10 tenants. Deployments and volumes are spread evenly; templates are skewed so that one
 * tenant (index 0, the default tenant) holds 91% of them and a list at offset 90% of the
 * total exists: with the full scale, 91,000 + 9 × 1,000 = 100,000 templates, 10,000 deployments,
 * 10,000 volumes.
 */
export const shares = (scale: number, tenants = 10): Shares => {
  const even = (total: number) => Array.from({ length: tenants }, () => Math.round((total * scale) / tenants))
  const templates = Math.round(100_000 * scale)
  const others = Math.round((1_000 * scale))
  return {
    deployments: even(10_000),
    volumes: even(10_000),
    templates: Array.from({ length: tenants }, (_, index) => (index === 0 ? templates - others * (tenants - 1) : others))
  }
}

export const benchKey = (index: number) => `slw_bench_tenant_${String(index).padStart(2, "0")}_0123456789abcdefghijklmnop`

/** Tenant 0 is the server's default tenant (its key comes from SLIPWAY_API_KEY); the others get an organization each. */
export const createTenants = (db: Db, count: number): Array<Tenant> => {
  const keys = makeKeyStore(db)
  const sandboxes = makeSandboxRepository(db)
  return Array.from({ length: count }, (_, index) => {
    const id = index === 0 ? DEFAULT_TENANT_ID : `00000000-0000-4000-8000-${String(100 + index).padStart(12, "0")}`
    const organizationId = index === 0 ? DEFAULT_ORGANIZATION_ID : randomUUID()
    const { key } = keys.createKey({ tenantId: id, organizationId, key: benchKey(index), description: "bench" })
    sandboxes.setOrganizationQuota(organizationId, "1Pi")
    return { index, id, organizationId, key }
  })
}

type Call = (method: string, path: string, key: string, body?: unknown) => Promise<{ status: number; body: any }>

export const makeCall =
  (baseUrl: string): Call =>
  async (method, path, key, body) => {
    const response = await fetch(baseUrl + path, {
      method,
      headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await response.text()
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
  }

const expect = async (what: string, call: Promise<{ status: number; body: any }>, status: number) => {
  const response = await call
  if (response.status !== status) throw new Error(`seeding: ${what} answered ${response.status}: ${JSON.stringify(response.body)}`)
  return response.body
}

export interface SampleOptions {
  /** False while the control-plane routes are not served. */
  readonly deployments: boolean
}

/** Step 1: a handful of each resource per tenant, through the API. */
export const seedSamples = async (call: Call, tenants: ReadonlyArray<Tenant>, options: SampleOptions) => {
  for (const tenant of tenants) {
    const t = (path: string, body: unknown) => expect(`POST ${path}`, call("POST", path, tenant.key, body), 201)
    await t("/v2/sandboxes/volumes", { name: "vol-a", size: "1Gi" })
    await t("/v2/sandboxes/volumes", { name: "vol-b", size: "1Gi", storage_class: "fast" })
    await t("/v2/sandboxes/templates", { name: "tpl-a", image: "python:3.12-slim" })
    await t("/v2/sandboxes/templates", { name: "tpl-b", image: "node:24", resources: { cpu: "1", memory: "1Gi", storage: "5Gi" } })
    await t("/v2/sandboxes/templates", {
      name: "tpl-c",
      image: "ghcr.io/acme/agent:1.4.2",
      resources: { cpu: "250m", memory: "256Mi" },
      volume_mounts: [{ volume_name: "vol-a", mount_path: "/data" }]
    })
    await t("/v2/sandboxes/templates", { name: "tpl-d", image: "ubuntu:24.04", resources: { cpu: "2", memory: "4Gi" } })
    if (options.deployments) {
      await t("/v2/deployments", {
        name: "agent-a",
        source: "external_container",
        source_revision_config: { image_uri: "ghcr.io/acme/agent:1.0.0" },
        secrets: [{ name: "OPENAI_API_KEY", value: "sk-bench" }]
      })
      await t("/v2/deployments", {
        name: "agent-b",
        source: "external_container",
        source_revision_config: { image_uri: "ghcr.io/acme/agent:2.3.1" },
        image_version: "2.3.1"
      })
      await t("/v2/deployments", {
        name: "agent-c",
        source: "gitrepo",
        source_config: { repo_url: "https://github.com/acme/agent", deployment_type: "dev", build_on_push: true },
        source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json" }
      })
    }
  }
}

/** Waits until the runtime has taken every sample deployment to READY (their revisions to DEPLOYED). */
export const awaitSamplesDeployed = async (db: Db, tenants: ReadonlyArray<Tenant>, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs
  if (!hasDeployments(db)) return
  const pending = db.prepare("SELECT count(*) FROM deployments WHERE status != 'READY'").pluck()
  for (;;) {
    const left = pending.get() as number
    if (left === 0) return
    if (Date.now() > deadline) throw new Error(`seeding: ${left} sample deployments of ${tenants.length} tenants not READY after ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const BATCH = 5_000

/** Runs `count` inserts in transactions of BATCH rows. */
const inBatches = (db: Db, count: number, insert: (index: number) => void) => {
  for (let start = 0; start < count; start += BATCH) {
    db.transaction(() => {
      for (let index = start; index < Math.min(count, start + BATCH); index++) insert(index)
    }).immediate()
  }
}

export interface Seeded {
  /** Per tenant: the deployments with their latest revision, for requests to pick from. */
  readonly deployments: ReadonlyArray<ReadonlyArray<{ readonly id: string; readonly revisionId: string; readonly source: string }>>
  readonly volumes: ReadonlyArray<ReadonlyArray<string>>
  readonly templates: ReadonlyArray<number>
  readonly rows: { deployments: number; revisions: number; templates: number; volumes: number }
}

/** Step 2: clones each tenant's samples up to its share. Run with the server stopped. */
export const cloneSamples = (db: Db, tenants: ReadonlyArray<Tenant>, share: Shares): Seeded["rows"] => {
  const controlPlane = hasDeployments(db)
  const deployments = controlPlane ? makeDeploymentRepository(db) : (undefined as never)
  const sandboxes = makeSandboxRepository(db)
  const rows = { deployments: 0, revisions: 0, templates: 0, volumes: 0 }
  // Clones are stamped one millisecond apart, starting a day before now, so they sort before the samples.
  let clock = Date.now() - 86_400_000
  const stamp = () => new Date(clock++).toISOString()

  for (const tenant of tenants) {
    const volumes = sandboxes.listVolumes(tenant.id, { limit: 500, offset: 0 })
    const wantVolumes = share.volumes[tenant.index]! - volumes.length
    inBatches(db, wantVolumes, (index) => {
      const proto = volumes[index % volumes.length]!
      const at = stamp()
      sandboxes.insertVolume({ ...proto, id: randomUUID(), name: `${proto.name}-${index}`, created_at: at, updated_at: at })
    })
    rows.volumes += Math.max(0, wantVolumes)

    // Full rows (lists leave out the exact-integer columns the clones need).
    const templates = sandboxes
      .listTemplates(tenant.id, { limit: 500, offset: 0 })
      .map((template) => sandboxes.templateByName(tenant.id, template.name)!)
    const wantTemplates = share.templates[tenant.index]! - templates.length
    inBatches(db, wantTemplates, (index) => {
      const { mounts, ...proto } = templates[index % templates.length]!
      const at = stamp()
      sandboxes.insertTemplate({
        ...proto,
        id: randomUUID(),
        name: `${proto.name}-${index}`,
        created_at: at,
        updated_at: at,
        mounts: parseMounts(mounts).map(({ volume_id, mount_path }) => ({ volume_id, mount_path }))
      })
    })
    rows.templates += Math.max(0, wantTemplates)

    if (!controlPlane) continue
    const samples = deployments.listDeployments(
      tenant.id,
      { nameContains: null, statuses: null, imageVersion: null, deploymentType: null, ids: null },
      100,
      0
    )
    if (samples.length === 0) continue
    const history = new Map(samples.map((sample) => [sample.id, deployments.listRevisions(tenant.id, sample.id, null, 100, 0)]))
    const wantDeployments = share.deployments[tenant.index]! - samples.length
    inBatches(db, wantDeployments, (index) => {
      const proto = samples[index % samples.length]!
      const id = randomUUID()
      const name = `${proto.name}-${index}`
      const at = stamp()
      const revisionIds = new Map<string, string>()
      const revisions: Array<RevisionRow> = history.get(proto.id)!.map((revision) => {
        const revisionId = randomUUID()
        revisionIds.set(revision.id, revisionId)
        return {
          ...revision,
          id: revisionId,
          deployment_id: id,
          created_at: at,
          updated_at: at,
          deployed_at: revision.deployed_at === null ? null : at
        }
      })
      const row: DeploymentRow = {
        ...proto,
        id,
        name,
        // gitrepo deployments carry a generated custom_url that ends with their name.
        source_config: proto.source_config.split(`/d/${proto.name}"`).join(`/d/${name}"`),
        latest_revision_id: proto.latest_revision_id && revisionIds.get(proto.latest_revision_id)!,
        active_revision_id: proto.active_revision_id && revisionIds.get(proto.active_revision_id)!,
        created_at: at,
        updated_at: at
      }
      deployments.insertDeployment(row)
      for (const revision of revisions) deployments.insertRevision(revision)
      deployments.upsertTracingProject(randomUUID(), tenant.id, name, id, at)
      rows.revisions += revisions.length
    })
    rows.deployments += Math.max(0, wantDeployments)
  }
  return rows
}

/** True once the control-plane migration is applied (its routes may land after the bench harness). */
export const hasDeployments = (db: Db) =>
  db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'deployments'").get() !== undefined

/** What the load picks from: every tenant's deployments (with latest revision) and volumes. */
export const loadTargets = (db: Db, tenants: ReadonlyArray<Tenant>): Pick<Seeded, "deployments" | "volumes" | "templates"> => {
  const deployments = hasDeployments(db)
    ? db.prepare("SELECT id, latest_revision_id AS revisionId, source FROM deployments WHERE tenant_id = ? ORDER BY id")
    : { all: () => [] }
  const volumes = db.prepare("SELECT name FROM sandbox_volumes WHERE tenant_id = ? ORDER BY seq").pluck()
  const templates = db.prepare("SELECT count(*) FROM sandbox_templates WHERE tenant_id = ?").pluck()
  return {
    deployments: tenants.map((tenant) => deployments.all(tenant.id) as Array<{ id: string; revisionId: string; source: string }>),
    volumes: tenants.map((tenant) => volumes.all(tenant.id) as Array<string>),
    templates: tenants.map((tenant) => templates.get(tenant.id) as number)
  }
}
