/**
 * The runtime moves revisions through their states and finishes deletions. It is an interface:
 * the local runtime below advances states on a timer; a Kubernetes runtime would apply objects
 * and report their progress through the same calls.
 *
 * Local runtime: each unfinished revision is due for its next `advanceRevision` step (core)
 * `stepMs` after it entered its current state. One timer serves them all: when it fires, every
 * step that is due is applied in ONE transaction, one conditional UPDATE per revision (it only
 * moves a revision still in the state the runtime believes, so a revision superseded meanwhile,
 * by this process or another, is simply dropped). The deployment is read and written only when a
 * revision reaches DEPLOYED. Nothing is kept only in memory: `start()` reloads unfinished
 * revisions and pending deletes from the database and resumes them where a previous process
 * stopped (or was killed).
 */
// @ts-nocheck

import { activate, advanceRevision, deploymentStatus, type RevisionStatus, type Source, type SourceRevisionConfig } from "../../core/index.ts"
import type { Logger } from "../log.ts"
import type { DeploymentRepository } from "./repository.ts"

/** A revision the runtime is to roll out, as it was committed. */
export interface RevisionWork {
  readonly tenantId: string
  readonly deploymentId: string
  readonly revisionId: string
  readonly source: string
  readonly status: string
  /** JSON text of the revision's SourceRevisionConfig (failure hooks read it). */
  readonly sourceRevisionConfig: string
  /** When it entered `status` (ISO 8601). */
  readonly since: string
}

export interface DeploymentRuntime {
  /** Resumes the work recorded in the database (unfinished revisions, pending deletes). */
  readonly start: () => void
  /** A revision was committed in its first state: roll it out. */
  readonly revisionCreated: (work: RevisionWork) => void
  /** The caller's transaction superseded a revision (SKIPPED or INTERRUPTED): stop its work. */
  readonly revisionStopped: (revisionId: string) => void
  /** The deployment was marked AWAITING_DELETE: tear it down, then remove it. */
  readonly deleteRequested: (tenantId: string, deploymentId: string, since: string) => void
  /** Stops the timer; no database access happens after it returns. */
  readonly close: () => Promise<void>
}

export interface LocalRuntimeOptions {
  readonly repository: DeploymentRepository
  /** Time spent in each revision state (SLIPWAY_REVISION_STEP_MS). */
  readonly stepMs: number
  readonly log: Logger
  /** Delay before retrying after a busy database. */
  readonly retryMs?: number
  /** Most steps (revision steps and deletes) applied in one transaction; see `DEFAULT_BATCH`. */
  readonly batch?: number
}

/**
 * A tick holds the event loop for its whole transaction. After a restart every resumed revision
 * is due at once (tens of thousands after a busy day), so a tick applies at most this many steps
 * and lets waiting requests in before the next slice, instead of stalling them for seconds.
 */
export const DEFAULT_BATCH = 512

interface Tracked {
  readonly tenantId: string
  readonly deploymentId: string
  readonly revisionId: string
  readonly source: Source
  readonly config: SourceRevisionConfig
  status: RevisionStatus
  due: number
}

interface PendingDelete {
  readonly tenantId: string
  readonly deploymentId: string
  readonly due: number
}

/** Up to `limit` items whose step is due at `nowMs`. */
const dueOf = <A extends { readonly due: number }>(items: Map<string, A>, nowMs: number, limit: number): Array<A> => {
  const due: Array<A> = []
  if (limit <= 0) return due
  for (const item of items.values()) {
    if (item.due <= nowMs && due.push(item) >= limit) break
  }
  return due
}

const maxScaleOf = (sourceConfig: string): number | null => {
  const spec = (JSON.parse(sourceConfig) as { resource_spec?: { max_scale?: number | null } | null }).resource_spec
  return spec?.max_scale ?? null
}

export const makeLocalRuntime = ({ repository, stepMs, log, retryMs = 50, batch = DEFAULT_BATCH }: LocalRuntimeOptions): DeploymentRuntime => {
  const revisions = new Map<string, Tracked>()
  const deletes = new Map<string, PendingDelete>()
  let timer: NodeJS.Timeout | undefined
  let armedFor = Infinity
  let closed = false

  const arm = (due: number) => {
    if (closed || due >= armedFor) return
    clearTimeout(timer)
    armedFor = due
    timer = setTimeout(tick, Math.max(0, due - Date.now()))
    timer.unref()
  }

  const rearm = () => {
    let next = Infinity
    for (const item of revisions.values()) if (item.due < next) next = item.due
    for (const item of deletes.values()) if (item.due < next) next = item.due
    if (next !== Infinity) arm(next)
  }

  /** Applies one step to a due revision; answers its new state, or null when it stops here. */
  const step = (item: Tracked, now: string): { readonly status: RevisionStatus; readonly more: boolean } | null => {
    const next = advanceRevision(item.status, item.source, item.config)
    if (!next) return null
    const deployed = next.status === "DEPLOYED"
    if (!repository.advanceRevision(item.tenantId, item.revisionId, item.status, next.status, next.status_message, deployed ? now : null, now)) {
      return null // superseded or gone meanwhile
    }
    if (deployed) {
      const deployment = repository.deployment(item.tenantId, item.deploymentId)
      if (deployment && deployment.status !== "AWAITING_DELETE") {
        const { active_revision_id } = activate(item.revisionId)
        const status = deploymentStatus({ activeRevisionId: active_revision_id, maxScale: maxScaleOf(deployment.source_config), deleting: false })
        repository.setDeploymentState(item.tenantId, item.deploymentId, status, active_revision_id, now)
      }
    }
    return { status: next.status, more: advanceRevision(next.status, item.source, item.config) !== null }
  }

  const tick = () => {
    timer = undefined
    armedFor = Infinity
    if (closed) return
    const nowMs = Date.now()
    const dueRevisions = dueOf(revisions, nowMs, batch)
    const dueDeletes = dueOf(deletes, nowMs, batch - dueRevisions.length)
    try {
      const now = new Date(nowMs).toISOString()
      // In-memory states change only once the transaction has committed.
      const outcomes = repository.transaction(() => {
        const stepped = dueRevisions.map((item) => step(item, now))
        for (const item of dueDeletes) {
          if (repository.deployment(item.tenantId, item.deploymentId)?.status === "AWAITING_DELETE") {
            repository.deleteDeployment(item.tenantId, item.deploymentId)
          }
        }
        return stepped
      })
      dueRevisions.forEach((item, index) => {
        const outcome = outcomes[index]
        if (outcome?.more) {
          item.status = outcome.status
          item.due = nowMs + stepMs
        } else revisions.delete(item.revisionId)
      })
      for (const item of dueDeletes) deletes.delete(item.deploymentId)
      if (dueRevisions.length > 0) log.debug("revisions advanced", { revisions: dueRevisions.length })
    } catch (error) {
      const code = (error as { code?: string })?.code
      // The transaction rolled back: nothing moved, and the in-memory states are still right.
      if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") {
        arm(Date.now() + retryMs)
        return
      }
      log.error("runtime step failed", { error: String((error as Error)?.stack ?? error) })
      // Drop what failed rather than retry it forever; a restart reloads it from the database.
      for (const item of dueRevisions) revisions.delete(item.revisionId)
      for (const item of dueDeletes) deletes.delete(item.deploymentId)
    }
    // A full slice may have left due work behind: come back after the waiting requests.
    if (dueRevisions.length + dueDeletes.length >= batch) arm(Date.now())
    else rearm()
  }

  const track = (work: RevisionWork) => {
    const item: Tracked = {
      tenantId: work.tenantId,
      deploymentId: work.deploymentId,
      revisionId: work.revisionId,
      source: work.source as Source,
      config: JSON.parse(work.sourceRevisionConfig),
      status: work.status as RevisionStatus,
      due: Date.parse(work.since) + stepMs
    }
    revisions.set(item.revisionId, item)
    arm(item.due)
  }

  const trackDelete = (tenantId: string, deploymentId: string, since: string) => {
    const item = { tenantId, deploymentId, due: Date.parse(since) + stepMs }
    deletes.set(deploymentId, item)
    arm(item.due)
  }

  return {
    start: () => {
      const unfinished = repository.inProgressRevisions()
      for (const row of unfinished) {
        track({
          tenantId: row.tenant_id,
          deploymentId: row.deployment_id,
          revisionId: row.id,
          source: row.source,
          status: row.status,
          sourceRevisionConfig: row.source_revision_config,
          since: row.updated_at
        })
      }
      const pending = repository.pendingDeletes()
      for (const row of pending) trackDelete(row.tenant_id, row.id, row.updated_at)
      if (unfinished.length + pending.length > 0) log.info("runtime resumed", { revisions: unfinished.length, deletes: pending.length })
    },
    revisionCreated: track,
    revisionStopped: (revisionId) => void revisions.delete(revisionId),
    deleteRequested: trackDelete,
    close: async () => {
      closed = true
      clearTimeout(timer)
      timer = undefined
      revisions.clear()
      deletes.clear()
    }
  }
}
