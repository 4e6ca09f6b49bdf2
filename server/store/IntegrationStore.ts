/**
 * Git-host integrations (their webhook secrets sealed) and the webhook deliveries remembered
 * for each. Every tenant-scoped call takes the tenant; the webhook's lookup by owner says it is a
 * system lookup. One Layer per backend; every backend passes `test/store/deploymentStore.suite.ts`.
 */
import { Context } from "effect"
import type { StoreOp as Op } from "./StoreError.ts"

export interface IntegrationRecord {
  readonly id: string
  readonly tenant_id: string
  readonly provider: string
  readonly owner: string
  /** `owner` folded for lookups (GitHub logins are case-insensitive). */
  readonly owner_key: string
  /** Sealed. */
  readonly webhook_secret: string
  readonly installed_at: string
}

export class IntegrationStore extends Context.Service<
  IntegrationStore,
  {
    readonly insertIntegration: (integration: IntegrationRecord) => Op<void>
    readonly integrations: (tenantId: string) => Op<ReadonlyArray<IntegrationRecord>>
    readonly integration: (tenantId: string, id: string) => Op<IntegrationRecord | undefined>
    /** System lookup for the webhook: the signature checked afterwards decides the tenant. */
    readonly integrationsByOwner: (provider: string, ownerKey: string) => Op<ReadonlyArray<IntegrationRecord>>
    readonly integrationByOwner: (tenantId: string, provider: string, ownerKey: string) => Op<IntegrationRecord | undefined>
    /** The repositories (url and ref) of the tenant's deployments built through an integration, oldest first. */
    readonly repositoriesOfIntegration: (tenantId: string, integrationId: string) => Op<ReadonlyArray<{ readonly repo_url: string; readonly repo_ref: string | null }>>
    /**
     * Sets (sealed) or clears (null) the integration's read token for the provider's private
     * repositories (given to git for a build's checkout); false when the tenant has none of that id.
     */
    readonly setReadToken: (tenantId: string, id: string, sealedToken: string | null) => Op<boolean>
    /** The integration's read token, sealed; undefined when it has none (or there is no such integration). */
    readonly readToken: (tenantId: string, id: string) => Op<string | undefined>
    /** Removes the integration (and the deliveries remembered for it); false when the tenant has none of that id. */
    readonly deleteIntegration: (tenantId: string, id: string) => Op<boolean>
    /**
     * Remembers a webhook delivery id of an integration until `expiresAt`: true the first time,
     * false while an unexpired entry of the same id exists (a redelivery or a replay). Entries
     * expired at `receivedAt` are pruned.
     */
    readonly rememberDelivery: (integrationId: string, deliveryId: string, receivedAt: string, expiresAt: string) => Op<boolean>
    /** Rewrites every webhook secret and read token through `reseal` (secrets key rotation); answers how many. */
    readonly resealWebhookSecrets: (reseal: (stored: string) => string) => Op<number>
  }
>()("slipway/IntegrationStore") {}
