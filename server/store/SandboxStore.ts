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

export interface SandboxRecord {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly template_id: string
  readonly template_name: string
  readonly pool_id: string | null
  readonly pool_name: string | null
  readonly status: BoxLifecycle
  readonly status_message: string | null
  readonly created_at: string
  readonly updated_at: string
}

export type NewSandbox = Omit<SandboxRecord, "template_name" | "pool_name">

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
    readonly sandboxNameTaken: (tenantId: string, name: string) => Op<boolean>
    readonly listSandboxes: (tenantId: string, page: Page) => Op<ReadonlyArray<SandboxRecord>>
    readonly insertSandbox: (sandbox: NewSandbox) => Op<void, SandboxConflict>
    readonly renameSandbox: (sandbox: SandboxRecord, name: string, now: string) => Op<void, SandboxConflict>
    readonly deleteSandbox: (id: string) => Op<void>
    /** Moves a sandbox on only if it is still in `from` (nothing else moved it meanwhile). */
    readonly setSandboxStatus: (id: string, from: BoxLifecycle, to: BoxLifecycle, message: string | null, now: string) => Op<boolean>
    /** System scan for the controller's resume at start: every sandbox (any tenant) with its state. */
    readonly allSandboxes: () => Op<ReadonlyArray<SandboxRecord>>
  }
>()("slipway/SandboxStore") {}
