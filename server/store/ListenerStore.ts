/**
 * Listeners (the compute a deployment is placed on), in the core's types. Every call takes the
 * tenant. One Layer per backend; every backend passes `test/store/deploymentStore.suite.ts`.
 */
import { Context } from "effect"
import type { ComputeConfig, Conflict, Page } from "../../core/index.ts"
import type { StoreOp as Op } from "./StoreError.ts"

export interface ListenerRecord {
  readonly id: string
  readonly tenant_id: string
  readonly compute_type: "k8s"
  /** Unique per tenant (the real API's field); the listener's id unless the client named it. */
  readonly compute_id: string
  readonly version: string | null
  readonly compute_config: typeof ComputeConfig.Type
  readonly created_at: string
  readonly updated_at: string
}

export class ListenerStore extends Context.Service<
  ListenerStore,
  {
    readonly listener: (tenantId: string, id: string) => Op<ListenerRecord | undefined>
    /** A `compute_id` the tenant already uses fails with `Conflict`. */
    readonly insertListener: (listener: ListenerRecord) => Op<void, Conflict>
    readonly updateListener: (listener: ListenerRecord) => Op<boolean>
    readonly deleteListener: (tenantId: string, id: string) => Op<boolean>
    readonly listListeners: (tenantId: string, page: Page) => Op<ReadonlyArray<ListenerRecord>>
    /** The deployments on a listener and the namespace each deploys into. */
    readonly listenerUsers: (tenantId: string, id: string) => Op<ReadonlyArray<{ readonly name: string; readonly namespace: string | null }>>
  }
>()("slipway/ListenerStore") {}
