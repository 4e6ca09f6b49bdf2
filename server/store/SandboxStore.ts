/**
 * The sandbox area's storage seam: organizations' quotas and usage, volumes, templates, pools
 * and sandboxes, in the core's types (quantities as exact bigints plus their canonical text).
 * Every tenant-scoped call takes the tenant, or an id read under the tenant's filter. Writes that
 * would take a name already taken fail with `SandboxConflict`. One Layer per backend; every
 * backend passes `test/store/sandboxStore.suite.ts`.
 */
import { Context, type Effect } from "effect"
import type { BoxLifecycle, ProxyConfig, SandboxConflict } from "../../core/index.ts"
import type { StoreError, Transactional } from "./StoreError.ts"
import type { Page } from "./DeploymentStore.ts"

export interface VolumeRecord {
  readonly id: string
  readonly tenant_id: string
  readonly organization_id: string
  readonly name: string
  readonly size_bytes: bigint
  readonly size: string
  readonly storage_class: string
  readonly created_at: string
  readonly updated_at: string
}

export interface TemplateMount {
  readonly volume_id: string
  readonly volume_name: string
  readonly mount_path: string
}

/** What a template answer shows. */
export interface TemplateView {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly image: string
  readonly cpu: string
  readonly memory: string
  readonly storage: string | null
  readonly proxy_config: typeof ProxyConfig.Type | null
  readonly mounts: ReadonlyArray<TemplateMount>
  readonly created_at: string
  readonly updated_at: string
}

/** A template with its exact quantities (what a runtime needs to start a box). */
export interface TemplateRecord extends TemplateView {
  readonly cpu_millicores: bigint
  readonly memory_bytes: bigint
  readonly storage_bytes: bigint | null
}

export interface NewTemplate extends Omit<TemplateRecord, "mounts"> {
  readonly mounts: ReadonlyArray<{ readonly volume_id: string; readonly mount_path: string }>
}

export interface PoolRecord {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly template_id: string
  readonly template_name: string
  readonly replicas: number
  readonly created_at: string
  readonly updated_at: string
}

/**
 * What a box made without a template runs (the current sandbox model): an image (a snapshot's,
 * or the server's default), its own resources, and the snapshot it came from. All null for a
 * box made from a template.
 */
export interface BoxImageSpec {
  readonly snapshot_id: string | null
  readonly image: string | null
  readonly vcpus: number | null
  readonly mem_bytes: number | null
  readonly fs_capacity_bytes: number | null
}

/** When a box goes away on its own (seconds; null or 0 = never). */
export interface BoxRetention {
  /** Deleted this long after it was created. */
  readonly ttl_seconds: number | null
  /** Stopped after this long without a dataplane request. */
  readonly idle_ttl_seconds: number | null
  /** Deleted this long after it stopped. */
  readonly delete_after_stop_seconds: number | null
}

/** What the dataplane checks per request: the box exists for this tenant, and its state. */
export interface SandboxAccess {
  readonly id: string
  readonly name: string
  readonly status: BoxLifecycle
}

export interface SandboxRecord extends BoxImageSpec, BoxRetention {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  /** Null for a box made from a snapshot or the default image. */
  readonly template_id: string | null
  readonly template_name: string | null
  readonly pool_id: string | null
  readonly pool_name: string | null
  readonly status: BoxLifecycle
  readonly status_message: string | null
  /** When the box last entered `stopped` (null while it is not stopped). */
  readonly stopped_at: string | null
  readonly created_at: string
  readonly updated_at: string
}

/** The image spec and retention are optional on insert (null: a template box, kept until deleted). */
export type NewSandbox = Omit<SandboxRecord, "template_name" | "pool_name" | "stopped_at" | keyof BoxImageSpec | keyof BoxRetention> &
  Partial<BoxImageSpec & BoxRetention>

export const snapshotStatuses = ["building", "ready", "failed"] as const
export type SnapshotStatus = (typeof snapshotStatuses)[number]

/** A snapshot: an image reference and a filesystem capacity, pulled into the image store. */
export interface SnapshotRecord {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly docker_image: string
  /** The manifest digest the reference resolved to when it was built (null until ready, or on a runtime without images). */
  readonly image_digest: string | null
  readonly fs_capacity_bytes: number
  readonly status: SnapshotStatus
  readonly status_message: string | null
  /** The box a captured snapshot was made from; null for one built from an image reference. */
  readonly source_sandbox_id: string | null
  readonly created_at: string
  readonly updated_at: string
}

export interface SnapshotPage {
  readonly limit: number
  readonly offset: number
  /** Case-insensitive substring of the name. */
  readonly nameContains?: string
  readonly status?: SnapshotStatus
}

/** A filtered page of boxes (the real API's list filters); unfiltered lists use `listSandboxes`. */
export interface SandboxFilter {
  readonly limit: number
  readonly offset: number
  /** Case-insensitive substring of the name. */
  readonly nameContains?: string
  readonly status?: BoxLifecycle
}

/** A private image registry's credentials; `password` is sealed (server/deployments/secrets.ts), never plaintext. */
export interface RegistryRecord {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly url: string
  readonly username: string
  /** The password as sealed with the server's secrets key. */
  readonly password_sealed: string
  readonly created_at: string
  readonly updated_at: string
}

/** One port of one box shared by service URLs: every token minted for it names this grant, and dies with it. */
export interface ServiceGrantRecord {
  readonly id: string
  readonly tenant_id: string
  readonly sandbox_id: string
  readonly port: number
  readonly created_at: string
  readonly expires_at: string
}

type Op<A, E = never> = Effect.Effect<A, StoreError | E>

export class SandboxStore extends Context.Service<
  SandboxStore,
  {
    readonly transaction: Transactional

    /** The organization's own quota (canonical text), null when it uses the default, undefined when there is no such organization. */
    readonly organizationQuota: (organizationId: string) => Op<string | null | undefined>
    readonly setOrganizationQuota: (organizationId: string, quota: string | null) => Op<boolean>
    /** Bytes of every volume of the organization's tenants. */
    readonly organizationUsage: (organizationId: string) => Op<bigint>

    readonly volumeByName: (tenantId: string, name: string) => Op<VolumeRecord | undefined>
    readonly listVolumes: (tenantId: string, page: Page) => Op<ReadonlyArray<VolumeRecord>>
    readonly insertVolume: (volume: VolumeRecord) => Op<void, SandboxConflict>
    /** Writes the fields of `after` that differ from `before`. */
    readonly updateVolume: (before: VolumeRecord, after: VolumeRecord) => Op<void, SandboxConflict>
    readonly deleteVolume: (id: string) => Op<void>
    /** Names of the templates that mount the volume. */
    readonly templatesMounting: (volumeId: string) => Op<ReadonlyArray<string>>
    /** The sandboxes (of any template) that mount any of these volumes, oldest first: a volume attaches to one sandbox. */
    readonly volumesAttached: (volumeIds: ReadonlyArray<string>) => Op<ReadonlyArray<{ readonly volume_name: string; readonly sandbox_name: string }>>

    readonly templateByName: (tenantId: string, name: string) => Op<TemplateRecord | undefined>
    readonly templateById: (id: string) => Op<TemplateRecord | undefined>
    readonly listTemplates: (tenantId: string, page: Page) => Op<ReadonlyArray<TemplateView>>
    readonly insertTemplate: (template: NewTemplate) => Op<void, SandboxConflict>
    readonly renameTemplate: (template: TemplateView, name: string, now: string) => Op<void, SandboxConflict>
    readonly deleteTemplate: (id: string) => Op<void>
    readonly templateUsage: (templateId: string) => Op<{ readonly sandboxes: number; readonly pools: number }>

    readonly poolByName: (tenantId: string, name: string) => Op<PoolRecord | undefined>
    readonly listPools: (tenantId: string, page: Page) => Op<ReadonlyArray<PoolRecord>>
    readonly insertPool: (pool: Omit<PoolRecord, "template_name">) => Op<void, SandboxConflict>
    /** Writes the fields of `after` that differ from `before`. */
    readonly updatePool: (before: PoolRecord, after: Pick<PoolRecord, "name" | "replicas" | "updated_at">) => Op<void, SandboxConflict>
    /** Deletes the pool and every sandbox of it. */
    readonly deletePool: (id: string) => Op<void>
    readonly poolSandboxes: (poolId: string) => Op<ReadonlyArray<SandboxRecord>>
    /** Up to `limit` `ready` boxes of the tenant's pools of this template, oldest first: candidates for a warm claim. */
    readonly readyPoolSandboxes: (tenantId: string, templateId: string, limit: number) => Op<ReadonlyArray<SandboxRecord>>
    /**
     * Warm claim: the pool box leaves its pool and takes `name`, only if it is still in that pool
     * and `ready` (false when another claim or a state change came first).
     */
    readonly claimSandbox: (sandbox: SandboxRecord, name: string, now: string) => Op<boolean, SandboxConflict>

    readonly sandboxByName: (tenantId: string, name: string) => Op<SandboxRecord | undefined>
    readonly sandboxById: (tenantId: string, id: string) => Op<SandboxRecord | undefined>
    /**
     * The few fields the dataplane needs on every request (each exec), read from the sandboxes
     * table alone by its unique id, no joins: cheaper than `sandboxById` on the exec hot path.
     */
    readonly sandboxAccess: (tenantId: string, id: string) => Op<SandboxAccess | undefined>
    readonly sandboxNameTaken: (tenantId: string, name: string) => Op<boolean>
    readonly listSandboxes: (tenantId: string, page: Page) => Op<ReadonlyArray<SandboxRecord>>
    /** In creation order, like `listSandboxes`, filtered (a plain OFFSET walk over the matches). */
    readonly listSandboxesMatching: (tenantId: string, filter: SandboxFilter) => Op<ReadonlyArray<SandboxRecord>>
    readonly insertSandbox: (sandbox: NewSandbox) => Op<void, SandboxConflict>
    readonly renameSandbox: (sandbox: SandboxRecord, name: string, now: string) => Op<void, SandboxConflict>
    readonly deleteSandbox: (id: string) => Op<void>
    /** Moves a sandbox on only if it is still in `from` (nothing else moved it meanwhile). */
    readonly setSandboxStatus: (id: string, from: BoxLifecycle, to: BoxLifecycle, message: string | null, now: string) => Op<boolean>
    /** System scan for the controller's resume at start: every sandbox (any tenant) with its state. */
    readonly allSandboxes: () => Op<ReadonlyArray<SandboxRecord>>
    /** Writes the retention fields given (undefined: unchanged). */
    readonly updateSandboxRetention: (id: string, retention: Partial<BoxRetention>, now: string) => Op<void>
    /** System scan for the retention sweep: every sandbox (any tenant) with a retention setting above 0. */
    readonly sandboxesWithRetention: () => Op<ReadonlyArray<SandboxRecord>>

    readonly snapshotById: (tenantId: string, id: string) => Op<SnapshotRecord | undefined>
    readonly snapshotByName: (tenantId: string, name: string) => Op<SnapshotRecord | undefined>
    /** Oldest first. */
    readonly listSnapshots: (tenantId: string, page: SnapshotPage) => Op<ReadonlyArray<SnapshotRecord>>
    readonly insertSnapshot: (snapshot: SnapshotRecord) => Op<void, SandboxConflict>
    /** Moves a snapshot on only if it is still in `from`; `digest` is written when given. */
    readonly setSnapshotStatus: (id: string, from: SnapshotStatus, to: SnapshotStatus, message: string | null, digest: string | null, now: string) => Op<boolean>
    readonly deleteSnapshot: (id: string) => Op<void>
    /** How many sandboxes were made from the snapshot (and still exist). */
    readonly snapshotUsage: (snapshotId: string) => Op<number>
    /** System scan at start: snapshots (any tenant) still building, to build again. */
    readonly buildingSnapshots: () => Op<ReadonlyArray<SnapshotRecord>>

    // Registries (credentials sealed by the caller) and service URL grants (migration 240).
    readonly registryByName: (tenantId: string, name: string) => Op<RegistryRecord | undefined>
    /** By id (a snapshot's `registry_id`), within the tenant. */
    readonly registryById: (tenantId: string, id: string) => Op<RegistryRecord | undefined>
    /** A page of the tenant's registries, newest first; `nameContains` filters by substring (case-sensitive). */
    readonly listRegistries: (tenantId: string, page: Page, nameContains?: string) => Op<ReadonlyArray<RegistryRecord>>
    /** Every registry of the tenant (what an image pull chooses its credentials from). */
    readonly tenantRegistries: (tenantId: string) => Op<ReadonlyArray<RegistryRecord>>
    readonly insertRegistry: (registry: RegistryRecord) => Op<void, SandboxConflict>
    /** Writes name, url, username, password_sealed and updated_at of `after`. */
    readonly updateRegistry: (after: RegistryRecord) => Op<void, SandboxConflict>
    readonly deleteRegistry: (id: string) => Op<void>
    /** Every sealed password through `reseal` (secrets key rotation); answers how many. */
    readonly resealRegistryPasswords: (reseal: (sealed: string) => string) => Op<number>

    readonly serviceGrant: (sandboxId: string, port: number) => Op<ServiceGrantRecord | undefined>
    readonly serviceGrantById: (id: string) => Op<ServiceGrantRecord | undefined>
    /** The box's grants expiring after `now`, by port. */
    readonly listServiceGrants: (sandboxId: string, now: string) => Op<ReadonlyArray<ServiceGrantRecord>>
    /** Inserts the grant, replacing any grant of the same box and port. */
    readonly putServiceGrant: (grant: ServiceGrantRecord) => Op<void>
    readonly extendServiceGrant: (id: string, expiresAt: string) => Op<void>
    /** Removes the box's grant for `port`, or all of them; answers how many. */
    readonly deleteServiceGrants: (sandboxId: string, port?: number) => Op<number>
  }
>()("slipway/SandboxStore") {}
