/**
 * The sandbox area's pools of warm boxes of one template (the boxes themselves are in
 * `SandboxStore`). Calls take the tenant, or an id read under the tenant's filter; a taken name
 * fails with `SandboxConflict`. One Layer per backend; every backend passes
 * `test/store/sandboxStore.suite.ts`.
 */
import { Context } from "effect"
import type { Page, SandboxConflict } from "../../core/index.ts"
import type { StoreOp as Op } from "./StoreError.ts"

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

export class PoolStore extends Context.Service<
  PoolStore,
  {
    readonly poolByName: (tenantId: string, name: string) => Op<PoolRecord | undefined>
    readonly listPools: (tenantId: string, page: Page) => Op<ReadonlyArray<PoolRecord>>
    readonly insertPool: (pool: Omit<PoolRecord, "template_name">) => Op<void, SandboxConflict>
    /** Writes the fields of `after` that differ from `before`. */
    readonly updatePool: (before: PoolRecord, after: Pick<PoolRecord, "name" | "replicas" | "updated_at">) => Op<void, SandboxConflict>
    /** Deletes the pool and every sandbox of it. */
    readonly deletePool: (id: string) => Op<void>
  }
>()("slipway/PoolStore") {}
