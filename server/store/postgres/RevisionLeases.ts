/** The PostgreSQL `RevisionLeases`: `lease_owner` / `lease_until` on revisions, the database's clock deciding expiry. */
import { randomUUID } from "node:crypto"
import { hostname } from "node:os"
import { Effect, Layer } from "effect"
import { RevisionLeases } from "../RevisionLeases.ts"
import { PostgresDatabase, type PgStoreKit } from "./PostgresDatabase.ts"
import { finalRevisionStatusList as FINAL, type RevisionView, toRevisionRecord } from "../rows.ts"
const columns = "r.id, r.tenant_id, r.deployment_id, r.seq, r.source, r.status, r.status_message, r.source_revision_config, r.deployed_at, r.created_at, r.updated_at"
const leaseFor = "now() + make_interval(secs => $2::double precision / 1000)"

export const makePostgresRevisionLeases = (kit: PgStoreKit, leaseMs: number, owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`): RevisionLeases["Service"] => ({
  owner,
  leaseMs,
  claim: (limit) =>
    Effect.map(
      kit.query<RevisionView>(
        `UPDATE revisions r SET lease_owner = $1, lease_until = ${leaseFor}
         FROM (SELECT id FROM revisions
               WHERE status NOT IN (${FINAL}) AND (lease_until IS NULL OR lease_until < now())
               ORDER BY updated_at LIMIT $3 FOR UPDATE SKIP LOCKED) free
         WHERE r.id = free.id
         RETURNING ${columns}`,
        [owner, leaseMs, limit]
      ),
      (rows) => rows.map(toRevisionRecord)
    ),
  claimOne: (tenantId, revisionId) =>
    Effect.map(
      kit.execute(
        `UPDATE revisions SET lease_owner = $1, lease_until = ${leaseFor}
         WHERE tenant_id = $3 AND id = $4 AND status NOT IN (${FINAL}) AND (lease_until IS NULL OR lease_until < now() OR lease_owner = $1)`,
        [owner, leaseMs, tenantId, revisionId]
      ),
      (n) => n > 0
    ),
  renew: (revisionIds) =>
    revisionIds.length === 0
      ? Effect.succeed([])
      : Effect.map(
          kit.query<{ id: string }>(
            `UPDATE revisions SET lease_until = ${leaseFor}
             WHERE id = ANY($3::text[]) AND lease_owner = $1 AND lease_until >= now() AND status NOT IN (${FINAL}) RETURNING id`,
            [owner, leaseMs, revisionIds]
          ),
          (rows) => rows.map((row) => row.id)
        ),
  release: (revisionIds) =>
    revisionIds.length === 0
      ? Effect.void
      : Effect.asVoid(kit.execute("UPDATE revisions SET lease_owner = NULL, lease_until = NULL WHERE id = ANY($2::text[]) AND lease_owner = $1", [owner, revisionIds]))
})

export interface LeaseOptions {
  /** SLIPWAY_LEASE_MS (default 15 s). */
  readonly leaseMs?: number
  /** This replica's id (`lease_owner`); default a new one per process. */
  readonly owner?: string
}

export const PostgresRevisionLeases = (options: LeaseOptions = {}) =>
  Layer.effect(
    RevisionLeases,
    Effect.gen(function* () {
      return makePostgresRevisionLeases(yield* PostgresDatabase, options.leaseMs ?? 15_000, options.owner)
    })
  )
