/**
 * The deployment control plane's storage seam: deployments, revisions, tracing projects,
 * listeners and git-host integrations, in the core's types. Every tenant-scoped call takes the
 * tenant; the few system scans (the controller's resume at start, the webhook's lookup of
 * integrations by owner) say so. One Layer per backend (`server/store/sqlite/`, ...); every
 * backend passes `test/store/deploymentStore.suite.ts`.
 */
import { Context, type Effect, type Result } from "effect"
import type {
  ComputeConfig,
  Conflict,
  DeploymentStatus,
  RevisionStatus,
  Secret,
  Source,
  SourceConfig,
  SourceRevisionConfig
} from "../../core/index.ts"
import type { StoreError, Transactional } from "./StoreError.ts"

export interface DeploymentRecord {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly source: Source
  readonly source_config: SourceConfig
  /** The latest revision's config. */
  readonly source_revision_config: SourceRevisionConfig
  /** Values sealed (see `server/deployments/secrets.ts`): the store never sees plaintext. */
  readonly secrets: ReadonlyArray<Secret>
  readonly image_version: string | null
  readonly status: DeploymentStatus
  readonly latest_revision_id: string | null
  readonly active_revision_id: string | null
  /** The number of revisions ever created (the next one is `revision_seq + 1`). */
  readonly revision_seq: number
  readonly created_at: string
  readonly updated_at: string
}

export interface RevisionRecord {
  readonly id: string
  readonly tenant_id: string
  readonly deployment_id: string
  readonly seq: number
  readonly source: Source
  readonly status: RevisionStatus
  readonly status_message: string | null
  readonly source_revision_config: SourceRevisionConfig
  readonly deployed_at: string | null
  readonly created_at: string
  readonly updated_at: string
}

/** A new revision as written: with the (sealed) secrets it runs with. */
export interface NewRevision extends RevisionRecord {
  readonly secrets: ReadonlyArray<Secret>
}

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

export interface TracingProjectRecord {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly deployment_id: string | null
  readonly created_at: string
}

export interface DeploymentFilter {
  readonly nameContains: string | null
  readonly statuses: ReadonlyArray<string> | null
  readonly imageVersion: string | null
  readonly deploymentType: string | null
  readonly ids: ReadonlyArray<string> | null
}

export interface Page {
  readonly limit: number
  readonly offset: number
}

type Op<A, E = never> = Effect.Effect<A, StoreError | E>

/** What a change to one deployment writes, as the caller's rules decided it from the stored record. */
export interface DeploymentChange {
  /** The deployment as it is to be stored. */
  readonly deployment: DeploymentRecord
  /** A new revision (the deployment points at it): the deployment's unfinished revisions are superseded first. */
  readonly revision?: NewRevision | undefined
}

/** A change as written, with the revisions a new one superseded (none without a new revision). */
export type ChangedDeployment<C extends DeploymentChange = DeploymentChange> = C & { readonly stopped: ReadonlyArray<string> }

export class DeploymentStore extends Context.Service<
  DeploymentStore,
  {
    readonly transaction: Transactional

    readonly deployment: (tenantId: string, id: string) => Op<DeploymentRecord | undefined>
    /** Inserts the deployment, its first revision and its tracing project; a taken name fails with `Conflict`. */
    readonly createDeployment: (deployment: DeploymentRecord, revision: NewRevision, tracingProjectId: string) => Op<void, Conflict>
    readonly updateDeployment: (deployment: DeploymentRecord) => Op<boolean>
    /**
     * Reads the deployment, asks `decide` what to write, and writes it, in one transaction (or
     * the caller's): undefined when the tenant has no such deployment, the decision's failure as
     * is (nothing written). `decide` is synchronous and pure: the rules of the core.
     */
    readonly changeDeployment: <C extends DeploymentChange, E>(
      tenantId: string,
      id: string,
      decide: (current: DeploymentRecord) => Result.Result<C, E>
    ) => Op<ChangedDeployment<C> | undefined, E>
    readonly setDeploymentState: (tenantId: string, id: string, status: DeploymentStatus, activeRevisionId: string | null, now: string) => Op<boolean>
    readonly setDeploymentStatus: (tenantId: string, id: string, status: DeploymentStatus, now: string) => Op<boolean>
    readonly deleteDeployment: (tenantId: string, id: string) => Op<boolean>
    readonly listDeployments: (tenantId: string, filter: DeploymentFilter, page: Page) => Op<ReadonlyArray<DeploymentRecord>>
    /**
     * `gitrepo` deployments with build_on_push bound to `integrationId` (their
     * `source_config.integration_id`) whose repo_ref is `ref` or `branch`: the core decides which match.
     */
    readonly pushTargets: (tenantId: string, integrationId: string, ref: string, branch: string) => Op<ReadonlyArray<DeploymentRecord>>
    /** Whether a revision of the deployment already built `commitSha` for `repoRef` (whatever became of it). */
    readonly commitBuilt: (tenantId: string, deploymentId: string, commitSha: string, repoRef: string) => Op<boolean>
    /** System scan: deployments marked AWAITING_DELETE (any tenant). */
    readonly pendingDeletes: () => Op<ReadonlyArray<{ readonly tenant_id: string; readonly id: string; readonly updated_at: string }>>

    readonly revision: (tenantId: string, deploymentId: string, id: string) => Op<RevisionRecord | undefined>
    readonly insertRevision: (revision: NewRevision) => Op<void>
    /**
     * A new revision: supersedes the deployment's unfinished ones (as `supersedeUnfinished`),
     * inserts `revision` and stores `deployment` (which points at it). Answers the superseded ids.
     */
    readonly addRevision: (deployment: DeploymentRecord, revision: NewRevision) => Op<ReadonlyArray<string>>
    /**
     * Moves every unfinished revision of the deployment to the state the core gives a superseded
     * one (`supersededStatus`: SKIPPED or INTERRUPTED), with a message saying so. Answers their ids.
     */
    readonly supersedeUnfinished: (tenantId: string, deploymentId: string, now: string) => Op<ReadonlyArray<string>>
    /** Newest first. */
    readonly listRevisions: (tenantId: string, deploymentId: string, statuses: ReadonlyArray<string> | null, page: Page) => Op<ReadonlyArray<RevisionRecord>>
    readonly unfinishedRevisions: (tenantId: string, deploymentId: string) => Op<ReadonlyArray<{ readonly id: string; readonly status: RevisionStatus }>>
    readonly setRevisionStatus: (tenantId: string, id: string, status: RevisionStatus, message: string | null, deployedAt: string | null, now: string) => Op<boolean>
    /** Moves a revision on only if it is still in `from` (nothing superseded it meanwhile). */
    readonly advanceRevision: (
      tenantId: string,
      id: string,
      from: RevisionStatus,
      to: RevisionStatus,
      message: string | null,
      deployedAt: string | null,
      now: string
    ) => Op<boolean>
    /** System scan: every revision not in a final state (any tenant), oldest first. */
    readonly inProgressRevisions: () => Op<ReadonlyArray<RevisionRecord>>
    /** The (sealed) secrets a revision runs with; undefined when there is no such revision. */
    readonly revisionSecrets: (tenantId: string, id: string) => Op<ReadonlyArray<Secret> | undefined>
    /** System scan: the active revision of every deployment not being deleted (any tenant). */
    readonly activeRevisions: () => Op<ReadonlyArray<{ readonly tenant_id: string; readonly deployment_id: string; readonly revision_id: string }>>

    readonly listTracingProjects: (tenantId: string, name: string | null, page: Page) => Op<ReadonlyArray<TracingProjectRecord>>
    /** Deletes a deployment's tracing projects (`delete_tracing_project=true`); answers how many. */
    readonly deleteTracingProjects: (tenantId: string, deploymentId: string) => Op<number>

    readonly listener: (tenantId: string, id: string) => Op<ListenerRecord | undefined>
    /** A `compute_id` the tenant already uses fails with `Conflict`. */
    readonly insertListener: (listener: ListenerRecord) => Op<void, Conflict>
    readonly updateListener: (listener: ListenerRecord) => Op<boolean>
    readonly deleteListener: (tenantId: string, id: string) => Op<boolean>
    readonly listListeners: (tenantId: string, page: Page) => Op<ReadonlyArray<ListenerRecord>>
    /** The deployments on a listener and the namespace each deploys into. */
    readonly listenerUsers: (tenantId: string, id: string) => Op<ReadonlyArray<{ readonly name: string; readonly namespace: string | null }>>

    readonly insertIntegration: (integration: IntegrationRecord) => Op<void>
    readonly integrations: (tenantId: string) => Op<ReadonlyArray<IntegrationRecord>>
    readonly integration: (tenantId: string, id: string) => Op<IntegrationRecord | undefined>
    /** System lookup for the webhook: the signature checked afterwards decides the tenant. */
    readonly integrationsByOwner: (provider: string, ownerKey: string) => Op<ReadonlyArray<IntegrationRecord>>
    readonly integrationByOwner: (tenantId: string, provider: string, ownerKey: string) => Op<IntegrationRecord | undefined>
    /** The repositories (url and ref) of the tenant's deployments built through an integration, oldest first. */
    readonly repositoriesOfIntegration: (tenantId: string, integrationId: string) => Op<ReadonlyArray<{ readonly repo_url: string; readonly repo_ref: string | null }>>
    /** Removes the integration (and the deliveries remembered for it); false when the tenant has none of that id. */
    readonly deleteIntegration: (tenantId: string, id: string) => Op<boolean>
    /**
     * Remembers a webhook delivery id of an integration until `expiresAt`: true the first time,
     * false while an unexpired entry of the same id exists (a redelivery or a replay). Entries
     * expired at `receivedAt` are pruned.
     */
    readonly rememberDelivery: (integrationId: string, deliveryId: string, receivedAt: string, expiresAt: string) => Op<boolean>
    /** Drops deliveries expired at `now`; answers how many. */
    readonly pruneDeliveries: (now: string) => Op<number>

    /**
     * Rewrites every sealed value the store holds (deployments' and revisions' secret values,
     * integrations' webhook secrets) through `reseal`, in one transaction: a throw rolls all of
     * it back. Answers how many values were rewritten. Used by key rotation.
     */
    readonly resealSecrets: (reseal: (stored: string) => string) => Op<{ readonly secretValues: number; readonly webhookSecrets: number }>
  }
>()("slipway/DeploymentStore") {}
