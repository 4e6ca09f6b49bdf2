/**
 * The runtime moves revisions through their states and finishes deletions. It is an interface:
 * the local runtime below advances states on a timer; a Kubernetes runtime would apply objects
 * and report their progress through the same calls.
 *
 * Local runtime: every revision that is not terminal has one timer; each tick applies one
 * `advanceRevision` step (core) in one transaction, so a revision spends `stepMs` in each state.
 * Nothing is kept only in memory: the step is due `stepMs` after the revision's `updated_at`, so
 * `start()` reloads unfinished revisions and pending deletes from the database and resumes them
 * where a previous process stopped (or was killed).
 */
import {
  activate,
  advanceRevision,
  deploymentStatus,
  type RevisionStatus
} from "../../core/deployments/revision.ts"
import type { Logger } from "../log.ts"
import type { DeploymentRepository } from "./repository.ts"

export interface RevisionRef {
  readonly tenantId: string
  readonly deploymentId: string
  readonly revisionId: string
}

export interface DeploymentRuntime {
  /** Resumes the work recorded in the database (unfinished revisions, pending deletes). */
  readonly start: () => void
  /** A revision was committed in its first state: roll it out. */
  readonly revisionCreated: (ref: RevisionRef) => void
  /** The caller's transaction superseded a revision (SKIPPED or INTERRUPTED): stop its work. */
  readonly revisionStopped: (revisionId: string) => void
  /** The deployment was marked AWAITING_DELETE: tear it down, then remove it. */
  readonly deleteRequested: (tenantId: string, deploymentId: string) => void
  /** Stops all timers; no database access happens after it returns. */
  readonly close: () => Promise<void>
}

export interface LocalRuntimeOptions {
  readonly repository: DeploymentRepository
  /** Time spent in each revision state (SLIPWAY_REVISION_STEP_MS). */
  readonly stepMs: number
  readonly log: Logger
  /** Delay before retrying a step that hit a busy database. */
  readonly retryMs?: number
}

const maxScaleOf = (sourceConfig: string): number | null => {
  const spec = (JSON.parse(sourceConfig) as { resource_spec?: { max_scale?: number | null } | null }).resource_spec
  return spec?.max_scale ?? null
}

export const makeLocalRuntime = ({ repository, stepMs, log, retryMs = 50 }: LocalRuntimeOptions): DeploymentRuntime => {
  const timers = new Map<string, NodeJS.Timeout>()
  let closed = false

  const schedule = (key: string, delay: number, work: () => void) => {
    if (closed) return
    clearTimeout(timers.get(key))
    const timer = setTimeout(() => {
      timers.delete(key)
      if (closed) return
      try {
        work()
      } catch (error) {
        const code = (error as { code?: string })?.code
        if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") return schedule(key, retryMs, work)
        log.error("runtime step failed", { key, error: String((error as Error)?.stack ?? error) })
      }
    }, Math.max(0, delay))
    timer.unref()
    timers.set(key, timer)
  }

  const dueIn = (updatedAt: string) => Date.parse(updatedAt) + stepMs - Date.now()

  /** One state transition; answers when the revision has more states to go. */
  const step = (ref: RevisionRef): boolean =>
    repository.transaction(() => {
      const revision = repository.revision(ref.tenantId, ref.deploymentId, ref.revisionId)
      if (!revision) return false
      const next = advanceRevision(revision.status as RevisionStatus, revision.source as any, JSON.parse(revision.source_revision_config))
      if (!next) return false
      const now = new Date().toISOString()
      const deployed = next.status === "DEPLOYED"
      repository.setRevisionStatus(ref.tenantId, ref.revisionId, next.status, next.status_message, deployed ? now : null, now)
      if (deployed) {
        const deployment = repository.deployment(ref.tenantId, ref.deploymentId)
        if (deployment && deployment.status !== "AWAITING_DELETE") {
          const { active_revision_id } = activate(ref.revisionId)
          const status = deploymentStatus({ activeRevisionId: active_revision_id, maxScale: maxScaleOf(deployment.source_config), deleting: false })
          repository.setDeploymentState(ref.tenantId, ref.deploymentId, status, active_revision_id, now)
        }
      }
      log.debug("revision advanced", { revision_id: ref.revisionId, status: next.status })
      return advanceRevision(next.status, revision.source as any, JSON.parse(revision.source_revision_config)) !== null
    })

  const track = (ref: RevisionRef, delay: number) =>
    schedule(ref.revisionId, delay, () => {
      if (step(ref)) track(ref, stepMs)
    })

  const finishDelete = (tenantId: string, deploymentId: string) =>
    repository.transaction(() => {
      const deployment = repository.deployment(tenantId, deploymentId)
      if (deployment?.status === "AWAITING_DELETE") repository.deleteDeployment(tenantId, deploymentId)
    })

  return {
    start: () => {
      const revisions = repository.inProgressRevisions()
      for (const row of revisions) {
        track({ tenantId: row.tenant_id, deploymentId: row.deployment_id, revisionId: row.id }, dueIn(row.updated_at))
      }
      const deletes = repository.pendingDeletes()
      for (const row of deletes) schedule(`delete:${row.id}`, dueIn(row.updated_at), () => finishDelete(row.tenant_id, row.id))
      if (revisions.length + deletes.length > 0) log.info("runtime resumed", { revisions: revisions.length, deletes: deletes.length })
    },
    revisionCreated: (ref) => track(ref, stepMs),
    revisionStopped: (revisionId) => {
      clearTimeout(timers.get(revisionId))
      timers.delete(revisionId)
    },
    deleteRequested: (tenantId, deploymentId) => schedule(`delete:${deploymentId}`, stepMs, () => finishDelete(tenantId, deploymentId)),
    close: async () => {
      closed = true
      for (const timer of timers.values()) clearTimeout(timer)
      timers.clear()
    }
  }
}
