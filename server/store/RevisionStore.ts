/**
 * A deployment's revisions, in the core's types: reads for answers and the runtime, and the
 * controller's moves of a revision's status. Revisions are created with their deployment
 * (`DeploymentStore.createDeployment`, `changeDeployment`, `addRevision`). Every tenant-scoped
 * call takes the tenant; the system scans of the controller's resume at start say so. One Layer
 * per backend; every backend passes `test/store/deploymentStore.suite.ts`.
 */
import { Context } from "effect"
import type { Page, RevisionStatus, Secret, Source, SourceRevisionConfig } from "../../core/index.ts"
import type { StoreOp as Op } from "./StoreError.ts"

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

export class RevisionStore extends Context.Service<
  RevisionStore,
  {
    readonly revision: (tenantId: string, deploymentId: string, id: string) => Op<RevisionRecord | undefined>
    /** Newest first. */
    readonly listRevisions: (tenantId: string, deploymentId: string, statuses: ReadonlyArray<string> | null, page: Page) => Op<ReadonlyArray<RevisionRecord>>
    /**
     * Moves every unfinished revision of the deployment to the state the core gives a superseded
     * one (`supersededStatus`: SKIPPED or INTERRUPTED), with a message saying so. Answers their ids.
     */
    readonly supersedeUnfinished: (tenantId: string, deploymentId: string, now: string) => Op<ReadonlyArray<string>>
    /** Moves a revision on only if it is still in `from` (nothing superseded it meanwhile); `deployedAt` is kept once set. */
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
    /** Records the commit a revision's build checked out (`source_revision_config.repo_commit_sha`). */
    readonly recordCommit: (tenantId: string, id: string, commitSha: string) => Op<boolean>
    /** Whether a revision of the deployment already built `commitSha` for `repoRef` (whatever became of it). */
    readonly commitBuilt: (tenantId: string, deploymentId: string, commitSha: string, repoRef: string) => Op<boolean>
  }
>()("slipway/RevisionStore") {}
