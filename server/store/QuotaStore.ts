/**
 * Organizations' storage quotas and what their volumes use. One Layer per backend; every
 * backend passes `test/store/sandboxStore.suite.ts`.
 */
import { Context } from "effect"
import type { StoreOp as Op } from "./StoreError.ts"

export class QuotaStore extends Context.Service<
  QuotaStore,
  {
    /** The organization's own quota (canonical text), null when it uses the default, undefined when there is no such organization. */
    readonly organizationQuota: (organizationId: string) => Op<string | null | undefined>
    readonly setOrganizationQuota: (organizationId: string, quota: string | null) => Op<boolean>
    /** Bytes of every volume of the organization's tenants. */
    readonly organizationUsage: (organizationId: string) => Op<bigint>
  }
>()("slipway/QuotaStore") {}
