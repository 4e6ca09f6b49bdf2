/**
 * The revision runtime's work shared by several replicas on one PostgreSQL database
 * (docs/postgres.md, "Claiming work across replicas").
 *
 * Local runtime (a step is a state transition in the database and nothing else): every replica
 * polls; a tick claims the due steps with `SELECT ... FOR UPDATE OF r, d SKIP LOCKED` and applies
 * them in the SAME transaction. The row locks are the claim: two replicas never hold one revision,
 * the status check in the UPDATE makes each transition happen once, and a replica that dies
 * mid-tick loses its connection, so Postgres rolls its transaction back and frees the rows for
 * the next replica's tick. Nothing lives only in memory, so nothing is lost with a replica.
 * The revision and its deployment are locked together and skipped when either is locked (a
 * PATCH holding the deployment), so the runtime never waits on a lock: no deadlock with requests.
 *
 * Leased steps (a runtime whose step does work outside the database, e.g. applying Kubernetes
 * objects, which cannot sit inside a transaction): `claimLeased` marks due revisions with
 * `lease_owner`/`lease_until` (the database clock) in a short transaction; the owner renews
 * while it works and `completeLeased` moves the revision only if it still owns the lease and the
 * revision is still in the claimed state (a fenced write). A dead owner stops renewing; once its
 * lease has expired another replica's `claimLeased` takes the step over.
 */
import { Effect } from "effect"
import { activate, deploymentStatus, nextStatus, type RevisionStatus, type Source, type SourceRevisionConfig } from "../../../core/index.ts"
import type { Logger } from "../../log.ts"
import type { PgClientShape, PgError, Sql } from "./client.ts"

/** Revision statuses the runtime no longer moves (server/deployments/repository.ts FINAL_REVISION_STATUSES). */
const FINAL = ["DEPLOYED", "CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED", "SKIPPED", "INTERRUPTED", "UNKNOWN"] as const
const finalList = FINAL.map((status) => `'${status}'`).join(", ")

export interface DueRevision {
  readonly id: string
  readonly tenant_id: string
  readonly deployment_id: string
  readonly source: string
  readonly status: string
  readonly source_revision_config: string
  readonly updated_at: string
  readonly deployment_status: string
  readonly source_config: string
}

/**
 * Due revisions (in their state for at least the step time at `cutoff`) and their deployments,
 * locked; rows another transaction holds are skipped, not waited for. Uses `revisions_due`.
 */
export const claimDueSql = `
  SELECT r.id, r.tenant_id, r.deployment_id, r.source, r.status, r.source_revision_config, r.updated_at,
         d.status AS deployment_status, d.source_config
  FROM revisions r JOIN deployments d ON d.id = r.deployment_id
  WHERE r.status NOT IN (${finalList}) AND r.updated_at <= $1::timestamptz AND (r.lease_until IS NULL OR r.lease_until < now())
  ORDER BY r.updated_at
  LIMIT $2
  FOR UPDATE OF r, d SKIP LOCKED`

const claimDeletesSql = `
  SELECT tenant_id, id FROM deployments
  WHERE status = 'AWAITING_DELETE' AND updated_at <= $1::timestamptz
  ORDER BY updated_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED`

const advanceSql = `
  UPDATE revisions SET status = $1, status_message = $2, deployed_at = coalesce(deployed_at, $3::timestamptz), updated_at = $4
  WHERE tenant_id = $5 AND id = $6 AND status = $7`

const setDeploymentStateSql = "UPDATE deployments SET status = $1, active_revision_id = $2, updated_at = $3 WHERE tenant_id = $4 AND id = $5"

const maxScaleOf = (sourceConfig: string): number | null =>
  (JSON.parse(sourceConfig) as { resource_spec?: { max_scale?: number | null } | null }).resource_spec?.max_scale ?? null

/** The state after `status` (and its message), or null when the revision is done: the driver's policy. */
export type StepPolicy = (
  status: RevisionStatus,
  source: Source,
  config: SourceRevisionConfig
) => { readonly status: RevisionStatus; readonly message: string | null } | null

/** The core's happy path, "Deployed" on arrival (the simulated driver adds failure hooks). */
export const happyPath: StepPolicy = (status, source) => {
  const next = nextStatus(status, source)
  return next === null ? null : { status: next, message: next === "DEPLOYED" ? "Deployed" : null }
}

export interface StepOutcome {
  readonly revisions: number
  readonly deletes: number
}

/**
 * One tick: claims at most `limit` due steps (revisions, then pending deletes) and applies them,
 * all in one transaction. Safe to run on every replica at once.
 */
export const applyDueSteps = (
  client: PgClientShape,
  { nowMs, stepMs, limit, step = happyPath }: { nowMs: number; stepMs: number; limit: number; step?: StepPolicy }
): Effect.Effect<StepOutcome, PgError> => {
  const now = new Date(nowMs).toISOString()
  const cutoff = new Date(nowMs - stepMs).toISOString()
  return client.transaction((sql) =>
    Effect.gen(function* () {
      const due = yield* sql.query<DueRevision>(claimDueSql, [cutoff, limit])
      let moved = 0
      for (const row of due) if (yield* applyStep(sql, row, now, step)) moved++
      const deletes = limit - due.length > 0 ? yield* sql.query<{ tenant_id: string; id: string }>(claimDeletesSql, [cutoff, limit - due.length]) : []
      for (const row of deletes) yield* sql.execute("DELETE FROM deployments WHERE tenant_id = $1 AND id = $2", [row.tenant_id, row.id])
      return { revisions: moved, deletes: deletes.length }
    })
  )
}

/** Moves one locked revision a step on; sets its deployment live when it reaches DEPLOYED. */
const applyStep = (sql: Sql, row: DueRevision, now: string, step: StepPolicy): Effect.Effect<boolean, PgError> =>
  Effect.gen(function* () {
    const config = JSON.parse(row.source_revision_config) as SourceRevisionConfig
    const next = step(row.status as RevisionStatus, row.source as Source, config)
    if (!next) return false
    const deployed = next.status === "DEPLOYED"
    const changed = yield* sql.execute(advanceSql, [next.status, next.message, deployed ? now : null, now, row.tenant_id, row.id, row.status])
    if (changed === 0) return false
    if (deployed && row.deployment_status !== "AWAITING_DELETE") {
      const { active_revision_id } = activate(row.id)
      const status = deploymentStatus({ activeRevisionId: active_revision_id, maxScale: maxScaleOf(row.source_config), deleting: false })
      yield* sql.execute(setDeploymentStateSql, [status, active_revision_id, now, row.tenant_id, row.deployment_id])
    }
    return true
  })

// ---------------------------------------------------------------------------------------------
// Leased claims: for steps that do work outside the database

export interface LeasedRevision {
  readonly id: string
  readonly tenant_id: string
  readonly deployment_id: string
  readonly source: string
  readonly status: string
  readonly source_revision_config: string
  readonly lease_until: string
}

/**
 * Leases at most `limit` due revisions to `owner` for `leaseMs` (the database clock decides
 * expiry, not the replicas'). A revision whose lease has expired counts as free: its owner died.
 */
export const claimLeased = (sql: Sql, { owner, cutoff, leaseMs, limit }: { owner: string; cutoff: string; leaseMs: number; limit: number }) =>
  sql.query<LeasedRevision>(
    `UPDATE revisions r SET lease_owner = $1, lease_until = now() + make_interval(secs => $2::double precision / 1000)
     FROM (SELECT id FROM revisions
           WHERE status NOT IN (${finalList}) AND updated_at <= $3::timestamptz AND (lease_until IS NULL OR lease_until < now())
           ORDER BY updated_at LIMIT $4 FOR UPDATE SKIP LOCKED) due
     WHERE r.id = due.id
     RETURNING r.id, r.tenant_id, r.deployment_id, r.source, r.status, r.source_revision_config, r.lease_until`,
    [owner, leaseMs, cutoff, limit]
  )

/** Extends `owner`'s lease; false when it has lost it (expired and taken over). */
export const renewLease = (sql: Sql, { owner, revisionId, leaseMs }: { owner: string; revisionId: string; leaseMs: number }) =>
  Effect.map(
    sql.execute(
      `UPDATE revisions SET lease_until = now() + make_interval(secs => $3::double precision / 1000)
       WHERE id = $2 AND lease_owner = $1 AND lease_until >= now()`,
      [owner, revisionId, leaseMs]
    ),
    (n) => n > 0
  )

/**
 * Moves a leased revision from `from` to `to` and frees it, only while `owner` still holds an
 * unexpired lease and the revision is still in `from`: a replica that lost its lease (paused past
 * expiry) writes nothing, so the step is applied once.
 */
export const completeLeased = (
  sql: Sql,
  args: { owner: string; revisionId: string; from: string; to: string; message: string | null; deployedAt: string | null; now: string }
) =>
  Effect.map(
    sql.execute(
      `UPDATE revisions SET status = $4, status_message = $5, deployed_at = coalesce(deployed_at, $6::timestamptz), updated_at = $7,
         lease_owner = NULL, lease_until = NULL
       WHERE id = $2 AND lease_owner = $1 AND lease_until >= now() AND status = $3`,
      [args.owner, args.revisionId, args.from, args.to, args.message, args.deployedAt, args.now]
    ),
    (n) => n > 0
  )

// ---------------------------------------------------------------------------------------------
// The polling runtime

export interface PostgresRuntimeOptions {
  readonly client: PgClientShape
  /** Time spent in each revision state (SLIPWAY_REVISION_STEP_MS). */
  readonly stepMs: number
  readonly log: Logger
  /** How often an idle replica looks for due work (default: stepMs / 2, between 10 ms and 1 s). */
  readonly pollMs?: number
  /** Most steps per transaction (default 256). */
  readonly batch?: number
  /** What a step does (default: the core's happy path). */
  readonly step?: StepPolicy
}

export interface PostgresRuntime {
  /** Starts polling; work left by any replica (alive or dead) is found by the first tick. */
  readonly start: () => void
  /** A revision was committed: look for due work at its due time rather than at the next poll. */
  readonly revisionCreated: (work: { readonly since: string }) => void
  /** Nothing to do: the superseded revision's status already stops it. */
  readonly revisionStopped: (revisionId: string) => void
  readonly deleteRequested: (tenantId: string, deploymentId: string, since: string) => void
  /** Stops polling and waits for the tick in flight. */
  readonly close: () => Promise<void>
  /** Runs one tick now (tests). */
  readonly tick: () => Promise<StepOutcome>
}

export const makePostgresRuntime = ({ client, stepMs, log, pollMs, batch = 256, step }: PostgresRuntimeOptions): PostgresRuntime => {
  const interval = pollMs ?? Math.min(1000, Math.max(10, Math.floor(stepMs / 2)))
  let timer: NodeJS.Timeout | undefined
  let armedFor = Infinity
  let running: Promise<StepOutcome> | undefined
  let closed = false

  const arm = (due: number) => {
    if (closed || due >= armedFor) return
    clearTimeout(timer)
    armedFor = due
    timer = setTimeout(() => void loop(), Math.max(0, due - Date.now()))
    timer.unref()
  }

  const tick = (): Promise<StepOutcome> =>
    (running ??= Effect.runPromise(applyDueSteps(client, { nowMs: Date.now(), stepMs, limit: batch, ...(step ? { step } : {}) })).finally(() => (running = undefined)))

  const loop = async () => {
    timer = undefined
    armedFor = Infinity
    if (closed) return
    let full = false
    try {
      const outcome = await tick()
      full = outcome.revisions + outcome.deletes >= batch
      if (outcome.revisions > 0) log.debug("revisions advanced", { revisions: outcome.revisions })
    } catch (error) {
      // Busy or unreachable database: nothing moved; the next tick tries again.
      log.warn("runtime tick failed", { error: String((error as Error)?.message ?? error) })
    }
    arm(Date.now() + (full ? 0 : interval))
  }

  return {
    start: () => arm(Date.now()),
    revisionCreated: ({ since }) => arm(Date.parse(since) + stepMs),
    revisionStopped: () => undefined,
    deleteRequested: (_tenantId, _deploymentId, since) => arm(Date.parse(since) + stepMs),
    close: async () => {
      closed = true
      clearTimeout(timer)
      timer = undefined
      await running?.catch(() => undefined)
    },
    tick
  }
}
