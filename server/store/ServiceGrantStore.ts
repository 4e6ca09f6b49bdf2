/**
 * Service URL grants: one port of one box shared by service URLs; every token minted for it
 * names its grant and dies with it. One Layer per backend; every backend passes
 * `test/store/sandboxStore.suite.ts`.
 */
import { Context } from "effect"
import type { StoreOp as Op } from "./StoreError.ts"

/** One port of one box shared by service URLs: every token minted for it names this grant, and dies with it. */
export interface ServiceGrantRecord {
  readonly id: string
  readonly tenant_id: string
  readonly sandbox_id: string
  readonly port: number
  readonly created_at: string
  readonly expires_at: string
}

export class ServiceGrantStore extends Context.Service<
  ServiceGrantStore,
  {
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
>()("slipway/ServiceGrantStore") {}
