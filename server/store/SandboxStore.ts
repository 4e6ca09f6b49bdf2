/**
 * The sandbox area's boxes (sandboxes): made from a template, a snapshot or the default image,
 * alone or in a pool. Calls take the tenant, or an id read under the tenant's filter; a taken
 * name fails with `SandboxConflict`; the system scans (the controller's resume and retention
 * sweep) say so. One Layer per backend; every backend passes `test/store/sandboxStore.suite.ts`.
 */
import { Context } from "effect"
import type { BoxLifecycle, Page, SandboxConflict } from "../../core/index.ts"
import type { StoreOp as Op } from "./StoreError.ts"

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

/** A filtered page of boxes (the real API's list filters); unfiltered lists use `listSandboxes`. */
export interface SandboxFilter {
  readonly limit: number
  readonly offset: number
  /** Case-insensitive substring of the name. */
  readonly nameContains?: string
  readonly status?: BoxLifecycle
}

export class SandboxStore extends Context.Service<
  SandboxStore,
  {
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
    readonly poolSandboxes: (poolId: string) => Op<ReadonlyArray<SandboxRecord>>
    /** Up to `limit` `ready` boxes of the tenant's pools of this template, oldest first: candidates for a warm claim. */
    readonly readyPoolSandboxes: (tenantId: string, templateId: string, limit: number) => Op<ReadonlyArray<SandboxRecord>>
    /**
     * Warm claim: the pool box leaves its pool and takes `name`, only if it is still in that pool
     * and `ready` (false when another claim or a state change came first).
     */
    readonly claimSandbox: (sandbox: SandboxRecord, name: string, now: string) => Op<boolean, SandboxConflict>
  }
>()("slipway/SandboxStore") {}
