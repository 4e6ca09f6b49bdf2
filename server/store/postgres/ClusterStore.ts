/** The PostgreSQL `ClusterStore`: the `replicas` table, ownership columns, `cluster_settings`; the database's clock decides expiry. */
import { Effect, Layer } from "effect"
import { type BoxOwnership, ClusterStore, type ReplicaRecord } from "../ClusterStore.ts"
import { onPostgres, type PgStoreKit } from "./PostgresDatabase.ts"

const leaseFor = (param: string) => `now() + make_interval(secs => ${param}::double precision / 1000)`

/** The columns of a replica joined as `r`, prefixed `r_` (null when the join found none). */
const replicaColumns = "r.id AS r_id, r.internal_url AS r_internal_url, r.started_at AS r_started_at, r.lease_until AS r_lease_until, r.lease_until >= now() AS r_alive"

interface ReplicaJoin {
  readonly r_id: string | null
  readonly r_internal_url: string | null
  readonly r_started_at: string | null
  readonly r_lease_until: string | null
  readonly r_alive: boolean | null
}

const replicaOf = (row: ReplicaJoin): ReplicaRecord | undefined =>
  row.r_id === null
    ? undefined
    : { id: row.r_id, internal_url: row.r_internal_url!, started_at: row.r_started_at!, lease_until: row.r_lease_until!, alive: row.r_alive === true }

type BoxRow = ReplicaJoin & { readonly id: string; readonly tenant_id: string; readonly status: string; readonly replica_id: string | null }
const boxOf = (row: BoxRow): BoxOwnership => ({ id: row.id, tenant_id: row.tenant_id, status: row.status, replica_id: row.replica_id, replica: replicaOf(row) })

export const makePostgresClusterStore = (kit: PgStoreKit): ClusterStore["Service"] => {
  const { query, one, execute, transaction } = kit
  return ClusterStore.of({
    shared: true,
    register: (replicaId, internalUrl, leaseMs) =>
      Effect.asVoid(
        execute(
          `INSERT INTO replicas (id, internal_url, started_at, lease_until) VALUES ($1, $2, now(), ${leaseFor("$3")})
           ON CONFLICT (id) DO UPDATE SET internal_url = EXCLUDED.internal_url, lease_until = EXCLUDED.lease_until`,
          [replicaId, internalUrl, leaseMs]
        )
      ),
    heartbeat: (replicaId, leaseMs) => Effect.map(execute(`UPDATE replicas SET lease_until = ${leaseFor("$2")} WHERE id = $1`, [replicaId, leaseMs]), (n) => n > 0),
    replica: (replicaId) =>
      Effect.map(one<ReplicaJoin>(`SELECT ${replicaColumns} FROM replicas r WHERE r.id = $1`, [replicaId]), (row) => (row ? replicaOf(row) : undefined)),
    liveReplicas: Effect.map(query<ReplicaJoin>(`SELECT ${replicaColumns} FROM replicas r WHERE r.lease_until >= now() ORDER BY r.id`), (rows) => rows.map((row) => replicaOf(row)!)),
    adopt: (from, to) =>
      transaction(
        Effect.all(
          [
            execute("UPDATE sandboxes SET replica_id = $2 WHERE replica_id = $1", [from, to]),
            execute("UPDATE sandbox_volumes SET replica_id = $2 WHERE replica_id = $1", [from, to]),
            execute("UPDATE deployments SET serving_replica = $2 WHERE serving_replica = $1", [from, to]),
            execute("UPDATE revisions SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1", [from]),
            execute("DELETE FROM replicas WHERE id = $1", [from])
          ],
          { discard: true }
        )
      ),
    forgetDead: (afterMs) =>
      execute(
        `DELETE FROM replicas r WHERE r.lease_until < now() - make_interval(secs => $1::double precision / 1000)
         AND NOT EXISTS (SELECT 1 FROM sandboxes s WHERE s.replica_id = r.id)
         AND NOT EXISTS (SELECT 1 FROM sandbox_volumes v WHERE v.replica_id = r.id)
         AND NOT EXISTS (SELECT 1 FROM deployments d WHERE d.serving_replica = r.id)`,
        [afterMs]
      ),

    boxOwner: (sandboxId) =>
      Effect.map(
        one<BoxRow>(`SELECT s.id, s.tenant_id, s.status, s.replica_id, ${replicaColumns} FROM sandboxes s LEFT JOIN replicas r ON r.id = s.replica_id WHERE s.id = $1`, [sandboxId]),
        (row) => (row ? boxOf(row) : undefined)
      ),
    placeBoxes: (sandboxIds, replicaId) =>
      sandboxIds.length === 0 ? Effect.void : Effect.asVoid(execute("UPDATE sandboxes SET replica_id = $2 WHERE id = ANY($1::text[])", [sandboxIds, replicaId])),
    boxesOf: (replicaId) =>
      Effect.map(
        query<BoxRow>(`SELECT s.id, s.tenant_id, s.status, s.replica_id, ${replicaColumns} FROM sandboxes s LEFT JOIN replicas r ON r.id = s.replica_id WHERE s.replica_id = $1`, [
          replicaId
        ]),
        (rows) => rows.map(boxOf)
      ),
    orphanedBoxes: (unplacedAfterMs) =>
      Effect.map(
        query<BoxRow>(
          `SELECT s.id, s.tenant_id, s.status, s.replica_id, ${replicaColumns} FROM sandboxes s LEFT JOIN replicas r ON r.id = s.replica_id
           WHERE s.status IN ('provisioning', 'ready')
             AND ((s.replica_id IS NOT NULL AND (r.id IS NULL OR r.lease_until < now()))
               OR (s.replica_id IS NULL AND s.updated_at < now() - make_interval(secs => $1::double precision / 1000)))`,
          [unplacedAfterMs]
        ),
        (rows) => rows.map(boxOf)
      ),

    volumeHolders: (volumeIds) =>
      volumeIds.length === 0
        ? Effect.succeed([])
        : Effect.map(
            query<ReplicaJoin & { readonly id: string; readonly replica_id: string | null }>(
              `SELECT v.id, v.replica_id, ${replicaColumns} FROM sandbox_volumes v LEFT JOIN replicas r ON r.id = v.replica_id WHERE v.id = ANY($1::text[])`,
              [volumeIds]
            ),
            (rows) => rows.map((row) => ({ volume_id: row.id, replica_id: row.replica_id, replica: replicaOf(row) }))
          ),
    holdVolume: (volumeId, replicaId) => Effect.asVoid(execute("UPDATE sandbox_volumes SET replica_id = $2 WHERE id = $1", [volumeId, replicaId])),

    claimDeployments: (replicaId, limit) =>
      Effect.map(
        query<{ tenant_id: string; id: string }>(
          `UPDATE deployments d SET serving_replica = $1
           FROM (SELECT d2.id FROM deployments d2 LEFT JOIN replicas r ON r.id = d2.serving_replica
                 WHERE d2.active_revision_id IS NOT NULL AND d2.status <> 'AWAITING_DELETE'
                   AND (d2.serving_replica IS NULL OR r.id IS NULL OR r.lease_until < now())
                 ORDER BY d2.id LIMIT $2 FOR UPDATE OF d2 SKIP LOCKED) free
           WHERE d.id = free.id
           RETURNING d.tenant_id, d.id`,
          [replicaId, limit]
        ),
        (rows) => rows.map((row) => ({ tenant_id: row.tenant_id, deployment_id: row.id }))
      ),
    serveDeployment: (tenantId, deploymentId, replicaId) =>
      Effect.asVoid(execute("UPDATE deployments SET serving_replica = $3 WHERE tenant_id = $1 AND id = $2", [tenantId, deploymentId, replicaId])),
    deploymentsOf: (replicaId) =>
      Effect.map(
        query<{ tenant_id: string; id: string }>(
          "SELECT tenant_id, id FROM deployments WHERE serving_replica = $1 AND active_revision_id IS NOT NULL AND status <> 'AWAITING_DELETE'",
          [replicaId]
        ),
        (rows) => rows.map((row) => ({ tenant_id: row.tenant_id, deployment_id: row.id }))
      ),
    releaseDeployments: (replicaId, deploymentIds) =>
      deploymentIds.length === 0
        ? Effect.void
        : Effect.asVoid(execute("UPDATE deployments SET serving_replica = NULL WHERE serving_replica = $1 AND id = ANY($2::text[])", [replicaId, deploymentIds])),
    remoteDeployments: (replicaId) =>
      Effect.map(
        query<ReplicaJoin & { readonly tenant_id: string; readonly id: string; readonly name: string; readonly custom_url: string | null }>(
          `SELECT d.tenant_id, d.id, d.name, d.source_config ->> 'custom_url' AS custom_url, ${replicaColumns}
           FROM deployments d JOIN replicas r ON r.id = d.serving_replica
           WHERE d.serving_replica <> $1 AND d.active_revision_id IS NOT NULL AND d.status <> 'AWAITING_DELETE'`,
          [replicaId]
        ),
        (rows) => rows.map((row) => ({ tenant_id: row.tenant_id, deployment_id: row.id, name: row.name, custom_url: row.custom_url, replica: replicaOf(row)! }))
      ),

    setting: (name) => Effect.map(one<{ value: string }>("SELECT value FROM cluster_settings WHERE name = $1", [name]), (row) => row?.value),
    initSetting: (name, value) =>
      transaction(
        Effect.andThen(
          execute("INSERT INTO cluster_settings (name, value, updated_at) VALUES ($1, $2, now()) ON CONFLICT (name) DO NOTHING", [name, value]),
          Effect.map(one<{ value: string }>("SELECT value FROM cluster_settings WHERE name = $1", [name]), (row) => row!.value)
        )
      ),
    putSetting: (name, value) =>
      Effect.asVoid(
        execute("INSERT INTO cluster_settings (name, value, updated_at) VALUES ($1, $2, now()) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = now()", [
          name,
          value
        ])
      )
  })
}

export const PostgresClusterStore = Layer.effect(ClusterStore, onPostgres(makePostgresClusterStore))
