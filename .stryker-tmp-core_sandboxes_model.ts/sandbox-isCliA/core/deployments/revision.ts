/**
 * The revision state machine and the deployment status derived from it (design.md section 5).
 * Pure: the local runtime (server/) calls `advanceRevision` on a timer and stores the answer;
 * a Kubernetes runtime would call the same functions when its objects change.
 */
// @ts-nocheck

import { Schema } from "effect"
import type { DeploymentStatus, Source, SourceRevisionConfig } from "./model.ts"

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
export const happyPath: Record<Source, ReadonlyArray<RevisionStatus>> = {
  gitrepo: ["CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"],
  // An external container image is already built: nothing to wait for or build.
  external_container: ["CREATING", "QUEUED", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"]
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

/**
 * Failure hooks of the local runtime, so users and tests can watch the failure paths without a
 * real build system. The marker is looked for in `image_uri` (external_container) or in
 * `graph_config_path` and `repo_ref` (gitrepo, which has no image uri to carry it):
 *
 * - `fail-create`: leaves CREATING as CREATE_FAILED.
 * - `fail-build`: leaves BUILDING as BUILD_FAILED. external_container has no build state, so
 *   there the image check that stands in for the build fails: it leaves QUEUED as BUILD_FAILED.
 * - `fail-deploy`: leaves DEPLOYING as DEPLOY_FAILED.
 */
export interface FailureHook {
  readonly marker: string
  /** The state the revision is in when it fails. */
  readonly at: RevisionStatus
  readonly becomes: RevisionStatus
  readonly message: string
}

const failureHooks = (source: Source): ReadonlyArray<FailureHook> => [
  { marker: "fail-create", at: "CREATING", becomes: "CREATE_FAILED", message: "Revision could not be created (fail-create marker)" },
  {
    marker: "fail-build",
    at: source === "gitrepo" ? "BUILDING" : "QUEUED",
    becomes: "BUILD_FAILED",
    message: source === "gitrepo" ? "Build failed (fail-build marker)" : "Image could not be prepared (fail-build marker)"
  },
  { marker: "fail-deploy", at: "DEPLOYING", becomes: "DEPLOY_FAILED", message: "Deploy failed (fail-deploy marker)" }
]

const markerFields = (source: Source, config: SourceRevisionConfig): ReadonlyArray<string | null | undefined> =>
  source === "external_container" ? [config.image_uri] : [config.graph_config_path, config.repo_ref]

/** The failure hook a revision's config asks for, if any (the first marker found wins). */
export const failureHookFor = (source: Source, config: SourceRevisionConfig): FailureHook | null =>
  failureHooks(source).find((hook) => markerFields(source, config).some((field) => field?.includes(hook.marker) === true)) ?? null

export interface RevisionStep {
  readonly status: RevisionStatus
  readonly status_message: string | null
}

/**
 * One tick of the local runtime: the state after `status`, taking the failure hooks into
 * account, or null when the revision is terminal (or in a state this source never visits).
 */
export const advanceRevision = (status: RevisionStatus, source: Source, config: SourceRevisionConfig): RevisionStep | null => {
  const hook = failureHookFor(source, config)
  if (hook && hook.at === status) return { status: hook.becomes, status_message: hook.message }
  const next = nextStatus(status, source)
  return next === null ? null : { status: next, status_message: next === "DEPLOYED" ? "Deployed" : null }
}

export interface DeploymentStatusInput {
  /** The revision currently serving traffic; null until a revision first deploys. */
  readonly activeRevisionId: string | null
  /** The effective `resource_spec.max_scale`; null or undefined when not set. */
  readonly maxScale: number | null | undefined
  readonly deleting: boolean
}

/**
 * The deployment status is derived, never stored on its own, so it cannot disagree with the
 * revisions: AWAITING_DELETE while a delete runs; AWAITING_DATABASE until some revision has
 * deployed; then UNUSED when scaled to zero, else READY. UNKNOWN is never produced locally.
 */
export const deploymentStatus = ({ activeRevisionId, maxScale, deleting }: DeploymentStatusInput): DeploymentStatus => {
  if (deleting) return "AWAITING_DELETE"
  if (activeRevisionId === null) return "AWAITING_DATABASE"
  return maxScale === 0 ? "UNUSED" : "READY"
}

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
