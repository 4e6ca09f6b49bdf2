/**
 * The revision state machine and the deployment status derived from it (design.md section 5).
 * Pure: the local runtime (server/) calls `advanceRevision` on a timer and stores the answer;
 * a Kubernetes runtime would call the same functions when its objects change.
 */
import { Schema } from "effect"

/**
 * Where a deployment's code comes from: a git repository built by the server (`gitrepo`), an image
 * built elsewhere (`external_container`), an image `langgraph deploy` built and pushed to the
 * server's own registry (`internal_docker`), a source tarball it uploaded for the server to build
 * (`internal_source`). See docs/registry.md.
 */
export const sources = ["gitrepo", "external_container", "internal_docker", "internal_source"] as const
export const Source = Schema.Literals(sources)
export type Source = typeof Source.Type

/** The sources the server builds an image for (the others arrive as an image). */
export const isBuiltSource = (source: Source): boolean => source === "gitrepo" || source === "internal_source"

export const deploymentStatuses = ["AWAITING_DATABASE", "READY", "UNUSED", "AWAITING_DELETE", "UNKNOWN"] as const
export const DeploymentStatus = Schema.Literals(deploymentStatuses)
export type DeploymentStatus = typeof DeploymentStatus.Type

export const revisionStatuses = [
  "CREATING",
  "QUEUED",
  "AWAITING_BUILD",
  "BUILDING",
  "AWAITING_DEPLOY",
  "DEPLOYING",
  "DEPLOYED",
  "CREATE_FAILED",
  "BUILD_FAILED",
  "DEPLOY_FAILED",
  "SKIPPED",
  "INTERRUPTED",
  "UNKNOWN"
] as const

export const RevisionStatus = Schema.Literals(revisionStatuses)
export type RevisionStatus = typeof RevisionStatus.Type

/** The states a revision passes through when nothing fails, per source. */
const builtPath: ReadonlyArray<RevisionStatus> = ["CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"]
// An image is already built: nothing to wait for or build.
const imagePath: ReadonlyArray<RevisionStatus> = ["CREATING", "QUEUED", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"]
export const happyPath: Record<Source, ReadonlyArray<RevisionStatus>> = {
  gitrepo: builtPath,
  external_container: imagePath,
  internal_docker: imagePath,
  internal_source: builtPath
}

const failedStatuses: ReadonlySet<RevisionStatus> = new Set(["CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED"])
/** Created but not yet picked up: superseding it means it never ran (SKIPPED). */
const pendingStatuses: ReadonlySet<RevisionStatus> = new Set(["CREATING", "QUEUED"])
/** Work has started: superseding it stops that work (INTERRUPTED). */
const inProgressStatuses: ReadonlySet<RevisionStatus> = new Set(["AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING"])

export const isFailed = (status: RevisionStatus): boolean => failedStatuses.has(status)
export const isPending = (status: RevisionStatus): boolean => pendingStatuses.has(status)
export const isInProgress = (status: RevisionStatus): boolean => inProgressStatuses.has(status)
/**
 * Nothing will move the revision any further. UNKNOWN counts as terminal because no runtime
 * knows how to advance it (the local runtime never assigns it).
 */
export const isTerminal = (status: RevisionStatus): boolean => !isPending(status) && !isInProgress(status)

/** The next state on the happy path, or null when the revision has nowhere further to go. */
export const nextStatus = (status: RevisionStatus, source: Source): RevisionStatus | null => {
  const path = happyPath[source]
  const index = path.indexOf(status)
  return index === -1 || index === path.length - 1 ? null : path[index + 1]!
}

/**
 * What a revision becomes when a newer one replaces it before it finished: SKIPPED if it never
 * started, INTERRUPTED if it was under way. A finished revision keeps its status (a DEPLOYED
 * one stays DEPLOYED in the history, it just stops being the active revision).
 */
export const supersededStatus = (status: RevisionStatus): RevisionStatus =>
  isPending(status) ? "SKIPPED" : isInProgress(status) ? "INTERRUPTED" : status

/** The `status_message` of a superseded revision. */
export const supersededMessage = "Superseded by a newer revision"

/**
 * Whether a runtime may report `from` → `to`: the next state of the happy path, or a failure
 * from a state still in progress. The controller refuses anything else (a driver bug must not
 * corrupt the history).
 */
export const canAdvance = (from: RevisionStatus, to: RevisionStatus, source: Source): boolean =>
  !isTerminal(from) && (to === nextStatus(from, source) || isFailed(to))

export interface DeploymentStatusInput {
  /** The revision currently serving traffic; null until a revision first deploys. */
  readonly activeRevisionId: string | null
  /** The effective `resource_spec.max_scale`; null or undefined when not set. */
  readonly maxScale: number | null | undefined
  readonly deleting: boolean
  /**
   * Whether the deployment's database and cache are provisioned (a runtime that provisions them
   * says so; false while they are not). Absent: a runtime without databases.
   */
  readonly databaseReady?: boolean | undefined
}

/**
 * The deployment status is derived, never stored on its own, so it cannot disagree with the
 * revisions (design.md §5): AWAITING_DELETE while a delete runs; AWAITING_DATABASE until a
 * revision has deployed (whatever became of its database meanwhile: a deployment whose only
 * revision failed serves nothing) and while a runtime says its database and cache are not
 * provisioned; then UNUSED when scaled to zero, else READY. UNKNOWN is never produced locally.
 */
export const deploymentStatus = ({ activeRevisionId, maxScale, deleting, databaseReady }: DeploymentStatusInput): DeploymentStatus => {
  if (deleting) return "AWAITING_DELETE"
  if (activeRevisionId === null || databaseReady === false) return "AWAITING_DATABASE"
  return maxScale === 0 ? "UNUSED" : "READY"
}

/**
 * Whether a stored deployment's database is known to be ready: its status says so (READY or
 * UNUSED, written once a runtime reported it), or a revision deployed. Used to derive the status
 * again when something else about the deployment changes.
 */
export const databaseReadyOf = (deployment: { readonly status: DeploymentStatus; readonly active_revision_id: string | null }): boolean =>
  deployment.status === "READY" || deployment.status === "UNUSED" || deployment.active_revision_id !== null

/**
 * A revision can be made active again only if it reached DEPLOYED at some point: its image
 * exists and once ran. `deployed_at` records that, because its current status may since have
 * changed (nothing in the local runtime changes a DEPLOYED status, but a store may).
 */
export const everDeployed = (revision: { readonly status: RevisionStatus; readonly deployed_at: string | null }): boolean =>
  revision.deployed_at !== null || revision.status === "DEPLOYED"

/**
 * What a revision reaching DEPLOYED (or being redeployed) does to its deployment: it becomes the
 * active revision. `latest_revision_id` is untouched: redeploy creates no revision, so the
 * deployment's `source_revision_config` keeps describing the latest one (spec 2.1).
 */
export const activate = (revisionId: string): { readonly active_revision_id: string } => ({ active_revision_id: revisionId })
