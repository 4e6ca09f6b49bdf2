/**
 * The deployment control plane's deployments: each with its latest revision's config, its
 * (sealed) secrets and its tracing project, changed together with the revision a change
 * creates. Revisions, listeners and integrations have their own stores (`RevisionStore`,
 * `ListenerStore`, `IntegrationStore`). Every tenant-scoped call takes the tenant; the system
 * scans (the controller's resume at start) say so. One Layer per backend
 * (`server/store/sqlite/`, ...); every backend passes `test/store/deploymentStore.suite.ts`.
 */
import { Context, type Result } from "effect"
import type { Conflict, DeploymentStatus, Page, Secret, Source, SourceConfig, SourceRevisionConfig } from "../../core/index.ts"
import type { NewRevision } from "./RevisionStore.ts"
import type { StoreOp as Op } from "./StoreError.ts"

export interface DeploymentRecord {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly source: Source
  readonly source_config: SourceConfig
  /** The latest revision's config. */
  readonly source_revision_config: SourceRevisionConfig
  /** Values sealed (see `server/secrets/secrets.ts`): the store never sees plaintext. */
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

/** What a change to one deployment writes, as the caller's rules decided it from the stored record. */
export interface DeploymentChange {
  /** The deployment as it is to be stored. */
  readonly deployment: DeploymentRecord
  /** A new revision (the deployment points at it): the deployment's unfinished revisions are superseded first. */
  readonly revision?: NewRevision | undefined
}

/** A change as written, with the revisions a new one superseded (none without a new revision). */
export type ChangedDeployment<C extends DeploymentChange = DeploymentChange> = C & { readonly stopped: ReadonlyArray<string> }

export interface AddRevisionOptions {
  /** Supersede only the revisions that have not started (a push queues behind a build under way). */
  readonly queue?: boolean | undefined
}

export class DeploymentStore extends Context.Service<
  DeploymentStore,
  {
    readonly deployment: (tenantId: string, id: string) => Op<DeploymentRecord | undefined>
    /** Inserts the deployment, its first revision and its tracing project; a taken name fails with `Conflict`. */
    /**
     * A new deployment, its first revision and its tracing project, in one transaction. Without
     * a revision for a deployment that waits for its first image or tarball (`latest_revision_id` null).
     */
    readonly createDeployment: (deployment: DeploymentRecord, revision: NewRevision | undefined, tracingProjectId: string) => Op<void, Conflict>
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
    /**
     * A new revision: supersedes the deployment's unfinished ones (as
     * `RevisionStore.supersedeUnfinished`), inserts `revision` and stores `deployment` (which
     * points at it). Answers the superseded ids. With `queue` (a push), only the revisions that
     * have not started are superseded (SKIPPED): one under way goes on, and the new one waits behind it.
     */
    readonly addRevision: (deployment: DeploymentRecord, revision: NewRevision, options?: AddRevisionOptions) => Op<ReadonlyArray<string>>
    readonly setDeploymentState: (tenantId: string, id: string, status: DeploymentStatus, activeRevisionId: string | null, now: string) => Op<boolean>
    readonly setDeploymentStatus: (tenantId: string, id: string, status: DeploymentStatus, now: string) => Op<boolean>
    readonly deleteDeployment: (tenantId: string, id: string) => Op<boolean>
    readonly listDeployments: (tenantId: string, filter: DeploymentFilter, page: Page) => Op<ReadonlyArray<DeploymentRecord>>
    /**
     * `gitrepo` deployments with build_on_push bound to `integrationId` (their
     * `source_config.integration_id`) whose repo_ref is `ref` or `branch`: the core decides which match.
     */
    readonly pushTargets: (tenantId: string, integrationId: string, ref: string, branch: string) => Op<ReadonlyArray<DeploymentRecord>>
    /** System scan: deployments marked AWAITING_DELETE (any tenant). */
    readonly pendingDeletes: () => Op<ReadonlyArray<{ readonly tenant_id: string; readonly id: string; readonly updated_at: string }>>

    readonly listTracingProjects: (tenantId: string, name: string | null, page: Page) => Op<ReadonlyArray<TracingProjectRecord>>
    /** Deletes a deployment's tracing projects (`delete_tracing_project=true`); answers how many. */
    readonly deleteTracingProjects: (tenantId: string, deploymentId: string) => Op<number>

    /**
     * Rewrites every sealed secret value of deployments and revisions through `reseal` (secrets
     * key rotation; a throw rolls it back). Answers how many values were rewritten.
     */
    readonly resealSecrets: (reseal: (stored: string) => string) => Op<number>
  }
>()("slipway/DeploymentStore") {}
