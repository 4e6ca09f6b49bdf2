/**
 * The PostgreSQL backends of the sandbox area's stores (`SandboxStore`, `SandboxVolumeStore`,
 * `TemplateStore`, `PoolStore`, `SnapshotStore`, `QuotaStore`, `RegistryStore`,
 * `ServiceGrantStore`). Quantities come back as exact `bigint`s. Deep list pages start from
 * checkpoints (pages.ts), not an OFFSET walk. The quota holds across replicas because the routes
 * read usage and write inside `transaction` (SERIALIZABLE: two creates or resizes of one
 * organization that both read the old usage cannot both commit; the loser runs again and sees
 * the winner's volume).
 */
import { Effect, Layer } from "effect"
import { type Page, SandboxConflict } from "../../../core/index.ts"
import { type PoolRecord, PoolStore } from "../PoolStore.ts"
import { QuotaStore } from "../QuotaStore.ts"
import { type RegistryRecord, RegistryStore } from "../RegistryStore.ts"
import {
  columns,
  poolFrom,
  type SandboxRow,
  sandboxFrom,
  type SnapshotRow,
  type TemplateRow,
  type TemplateViewRow,
  toSandboxRecord,
  toSnapshotRecord,
  toTemplateRecord,
  toTemplateRow,
  toTemplateView
} from "../rows.ts"
import { type SandboxAccess, SandboxStore } from "../SandboxStore.ts"
import { type ServiceGrantRecord, ServiceGrantStore } from "../ServiceGrantStore.ts"
import { SnapshotStore } from "../SnapshotStore.ts"
import { sqlPage } from "../page.ts"
import type { StoreError } from "../StoreError.ts"
import { TemplateStore } from "../TemplateStore.ts"
import { type VolumeRecord, SandboxVolumeStore } from "../SandboxVolumeStore.ts"
import type { Sql } from "./client.ts"
import { isShallow, makePager, pageWhere, type SeqTable } from "./pages.ts"
import { CurrentTransaction, onPostgres, type PgStoreKit, toStoreError } from "./PostgresDatabase.ts"

const volumeColumns = columns.volume

const mountsOf = (alias: string) => `coalesce((SELECT json_agg(json_build_object('volume_id', m.volume_id, 'volume_name', mv.name, 'mount_path', m.mount_path) ORDER BY m.position)
     FROM sandbox_template_mounts m JOIN sandbox_volumes mv ON mv.id = m.volume_id WHERE m.template_id = ${alias}.id), '[]'::json) AS mounts`

const templateViewColumns = `t.id, t.tenant_id, t.name, t.image, t.cpu, t.memory, t.storage, t.proxy_config, t.created_at, t.updated_at, ${mountsOf("t")}`
const templateColumns = `t.cpu_millicores, t.memory_bytes, t.storage_bytes, ${templateViewColumns}`
const poolColumns = columns.pool
const sandboxColumns = columns.sandbox
const snapshotColumns = columns.snapshot

const sandboxes = <E, R>(effect: Effect.Effect<Array<SandboxRow>, E, R>) => Effect.map(effect, (rows) => rows.map(toSandboxRecord))
const sandbox = <E, R>(effect: Effect.Effect<SandboxRow | undefined, E, R>) => Effect.map(effect, (row) => row && toSandboxRecord(row))


const registryColumns = columns.registry
const grantColumns = columns.serviceGrant

/** The list queries ($1 tenant, $2 limit, $3 checkpoint seq, $4 rows to skip from it). */
export const pgListSql = {
  volumes: `SELECT ${volumeColumns} FROM sandbox_volumes v WHERE ${pageWhere("sandbox_volumes", "v")}`,
  templates: `SELECT ${templateViewColumns} FROM sandbox_templates t WHERE ${pageWhere("sandbox_templates", "t")}`,
  pools: `SELECT ${poolColumns} ${poolFrom} WHERE ${pageWhere("sandbox_pools", "p")}`,
  sandboxes: `SELECT ${sandboxColumns} ${sandboxFrom} WHERE ${pageWhere("sandboxes", "s")}`
}

const conflict = (kind: string, name: string) => () => new SandboxConflict({ message: `${kind} ${name} already exists` })

/** Pages of the tables listed by `seq`: shallow in one statement; deep in one read-only snapshot (or the caller's transaction). */
const makeLister = ({ query, client }: PgStoreKit) => {
  const pagers = new Map<SeqTable, ReturnType<typeof makePager>>()
  const pagerOf = (table: SeqTable) => pagers.get(table) ?? pagers.set(table, makePager(table)).get(table)!
  return <R extends object>(table: SeqTable, sql: string, tenantId: string, { limit, offset }: Page): Effect.Effect<Array<R>, StoreError> => {
    if (isShallow(offset)) return query<R>(sql, [tenantId, limit, "0", offset])
    const read = (tx: Sql) =>
      Effect.flatMap(pagerOf(table).locate(tx, tenantId, offset), (start) => tx.query<R>(sql, [tenantId, limit, start.from.toString(), start.offset]))
    return Effect.gen(function* () {
      const current = yield* CurrentTransaction
      return yield* Effect.mapError(current ? read(current) : client.transaction(read, { isolation: "repeatable read", readOnly: true }), toStoreError)
    })
  }
}

export const makePostgresSandboxStore = (kit: PgStoreKit): SandboxStore["Service"] => {
  const { query, one, execute, executeNaming } = kit
  const list = makeLister(kit)
  return {
    sandboxByName: (tenantId, name) => sandbox(one<SandboxRow>(`SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.tenant_id = $1 AND s.name = $2`, [tenantId, name])),
    sandboxById: (tenantId, id) => sandbox(one<SandboxRow>(`SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.tenant_id = $1 AND s.id = $2`, [tenantId, id])),
    sandboxAccess: (tenantId, id) => one<SandboxAccess>("SELECT id, name, status FROM sandboxes WHERE id = $1 AND tenant_id = $2", [id, tenantId]),
    sandboxNameTaken: (tenantId, name) =>
      Effect.map(one("SELECT 1 AS taken FROM sandboxes WHERE tenant_id = $1 AND name = $2", [tenantId, name]), (row) => row !== undefined),
    listSandboxes: (tenantId, page) => sandboxes(list<SandboxRow>("sandboxes", pgListSql.sandboxes, tenantId, page)),
    listSandboxesMatching: (tenantId, filter) =>
      sandboxes(
        query<SandboxRow>(
          `SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.tenant_id = $1 AND ($2::text IS NULL OR strpos(lower(s.name), lower($2::text)) > 0)
             AND ($5::text IS NULL OR s.status = $5::text)
           ORDER BY s.seq LIMIT $3 OFFSET $4`,
          [tenantId, filter.nameContains ?? null, filter.limit, sqlPage(filter).offset, filter.status ?? null]
        )
      ),
    insertSandbox: (s) =>
      Effect.asVoid(
        executeNaming(
          `INSERT INTO sandboxes (id, tenant_id, name, template_id, pool_id, status, status_message, created_at, updated_at,
             snapshot_id, image, vcpus, mem_bytes, fs_capacity_bytes, ttl_seconds, idle_ttl_seconds, delete_after_stop_seconds)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
          [
            s.id,
            s.tenant_id,
            s.name,
            s.template_id,
            s.pool_id,
            s.status,
            s.status_message,
            s.created_at,
            s.updated_at,
            s.snapshot_id ?? null,
            s.image ?? null,
            s.vcpus ?? null,
            s.mem_bytes ?? null,
            s.fs_capacity_bytes ?? null,
            s.ttl_seconds ?? null,
            s.idle_ttl_seconds ?? null,
            s.delete_after_stop_seconds ?? null
          ],
          conflict("sandbox", s.name)
        )
      ),
    renameSandbox: (sandbox, name, now) =>
      Effect.asVoid(executeNaming("UPDATE sandboxes SET name = $1, updated_at = $2 WHERE id = $3", [name, now, sandbox.id], conflict("sandbox", name))),
    deleteSandbox: (id) => Effect.asVoid(execute("DELETE FROM sandboxes WHERE id = $1", [id])),
    setSandboxStatus: (id, from, to, message, now) =>
      Effect.map(
        execute(
          "UPDATE sandboxes SET status = $1, status_message = $2, updated_at = $3, stopped_at = CASE WHEN $1 = 'stopped' THEN $3::timestamptz ELSE NULL END WHERE id = $4 AND status = $5",
          [to, message, now, id, from]
        ),
        (n) => n > 0
      ),
    allSandboxes: () => sandboxes(query<SandboxRow>(`SELECT ${sandboxColumns} ${sandboxFrom} ORDER BY s.seq`)),
    updateSandboxRetention: (id, retention, now) =>
      Effect.asVoid(
        execute(
          `UPDATE sandboxes SET ttl_seconds = coalesce($1, ttl_seconds), idle_ttl_seconds = coalesce($2, idle_ttl_seconds),
             delete_after_stop_seconds = coalesce($3, delete_after_stop_seconds), updated_at = $4 WHERE id = $5`,
          [retention.ttl_seconds ?? null, retention.idle_ttl_seconds ?? null, retention.delete_after_stop_seconds ?? null, now, id]
        )
      ),
    sandboxesWithRetention: () =>
      sandboxes(
        query<SandboxRow>(
          `SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.ttl_seconds > 0 OR s.idle_ttl_seconds > 0 OR s.delete_after_stop_seconds > 0 ORDER BY s.seq`
        )
      ),
    poolSandboxes: (poolId) => sandboxes(query<SandboxRow>(`SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.pool_id = $1 ORDER BY s.seq`, [poolId])),
    readyPoolSandboxes: (tenantId, templateId, limit) =>
      sandboxes(query<SandboxRow>(
        `SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.pool_id IN (SELECT p.id FROM sandbox_pools p WHERE p.template_id = $1 AND p.tenant_id = $2)
           AND s.status = 'ready' ORDER BY s.seq LIMIT $3`,
        [templateId, tenantId, limit]
      )),
    claimSandbox: (sandbox, name, now) =>
      sandbox.pool_id === null
        ? Effect.succeed(false)
        : Effect.map(
            executeNaming(
              "UPDATE sandboxes SET pool_id = NULL, name = $1, updated_at = $2 WHERE id = $3 AND pool_id = $4 AND status = 'ready'",
              [name, now, sandbox.id, sandbox.pool_id],
              conflict("sandbox", name)
            ),
            (n) => n > 0
          )
  }
}

export const makePostgresSandboxVolumeStore = (kit: PgStoreKit): SandboxVolumeStore["Service"] => {
  const { query, one, execute, executeNaming } = kit
  const list = makeLister(kit)
  return {
    volumeByName: (tenantId, name) => one<VolumeRecord>(`SELECT ${volumeColumns} FROM sandbox_volumes v WHERE v.tenant_id = $1 AND v.name = $2`, [tenantId, name]),
    listVolumes: (tenantId, page) => list<VolumeRecord>("sandbox_volumes", pgListSql.volumes, tenantId, page),
    insertVolume: (v) =>
      Effect.asVoid(
        executeNaming(
          `INSERT INTO sandbox_volumes (id, tenant_id, organization_id, name, size_bytes, size, storage_class, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          [v.id, v.tenant_id, v.organization_id, v.name, v.size_bytes, v.size, v.storage_class, v.created_at, v.updated_at],
          conflict("volume", v.name)
        )
      ),
    updateVolume: Effect.fnUntraced(function* (before, after) {
      if (after.name !== before.name) {
        yield* executeNaming("UPDATE sandbox_volumes SET name = $1, updated_at = $2 WHERE id = $3", [after.name, after.updated_at, after.id], conflict("volume", after.name))
      }
      if (after.size_bytes !== before.size_bytes) {
        yield* execute("UPDATE sandbox_volumes SET size_bytes = $1, size = $2, updated_at = $3 WHERE id = $4", [after.size_bytes, after.size, after.updated_at, after.id])
      }
    }),
    deleteVolume: (id) => Effect.asVoid(execute("DELETE FROM sandbox_volumes WHERE id = $1", [id])),
    templatesMounting: (volumeId) =>
      Effect.map(
        query<{ name: string }>(
          `SELECT DISTINCT t.name FROM sandbox_template_mounts m JOIN sandbox_templates t ON t.id = m.template_id WHERE m.volume_id = $1 ORDER BY t.name`,
          [volumeId]
        ),
        (rows) => rows.map((row) => row.name)
      ),
    volumesAttached: (volumeIds) =>
      volumeIds.length === 0
        ? Effect.succeed([])
        : query<{ volume_name: string; sandbox_name: string }>(
            `SELECT mv.name AS volume_name, s.name AS sandbox_name
             FROM sandbox_template_mounts m
             JOIN sandboxes s ON s.template_id = m.template_id
             JOIN sandbox_volumes mv ON mv.id = m.volume_id
             WHERE m.volume_id = ANY($1::text[])
             ORDER BY s.seq, m.position`,
            [volumeIds]
          )
  }
}

export const makePostgresTemplateStore = (kit: PgStoreKit): TemplateStore["Service"] => {
  const { one, execute, executeNaming, transaction } = kit
  const list = makeLister(kit)
  return {
    templateByName: (tenantId, name) =>
      Effect.map(one<TemplateRow>(`SELECT ${templateColumns} FROM sandbox_templates t WHERE t.tenant_id = $1 AND t.name = $2`, [tenantId, name]), (row) => row && toTemplateRecord(row)),
    templateById: (id) => Effect.map(one<TemplateRow>(`SELECT ${templateColumns} FROM sandbox_templates t WHERE t.id = $1`, [id]), (row) => row && toTemplateRecord(row)),
    listTemplates: (tenantId, page) => Effect.map(list<TemplateViewRow>("sandbox_templates", pgListSql.templates, tenantId, page), (rows) => rows.map(toTemplateView)),
    insertTemplate: (template) =>
      transaction(
        Effect.gen(function* () {
          const t = toTemplateRow(template)
          yield* executeNaming(
            `INSERT INTO sandbox_templates (id, tenant_id, name, image, cpu_millicores, cpu, memory_bytes, memory, storage_bytes, storage, proxy_config, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
            [
              t.id,
              t.tenant_id,
              t.name,
              t.image,
              t.cpu_millicores,
              t.cpu,
              t.memory_bytes,
              t.memory,
              t.storage_bytes,
              t.storage,
              t.proxy_config,
              t.created_at,
              t.updated_at
            ],
            conflict("template", t.name)
          )
          for (const [position, mount] of t.mounts.entries()) {
            yield* execute("INSERT INTO sandbox_template_mounts (template_id, position, volume_id, mount_path) VALUES ($1, $2, $3, $4)", [
              t.id,
              position,
              mount.volume_id,
              mount.mount_path
            ])
          }
        })
      ),
    renameTemplate: (template, name, now) =>
      Effect.asVoid(executeNaming("UPDATE sandbox_templates SET name = $1, updated_at = $2 WHERE id = $3", [name, now, template.id], conflict("template", name))),
    deleteTemplate: (id) => Effect.asVoid(execute("DELETE FROM sandbox_templates WHERE id = $1", [id])),
    templateUsage: (templateId) =>
      Effect.map(
        one<{ sandboxes: number; pools: number }>(
          `SELECT (SELECT count(*)::int FROM sandboxes WHERE template_id = $1) AS sandboxes, (SELECT count(*)::int FROM sandbox_pools WHERE template_id = $1) AS pools`,
          [templateId]
        ),
        (row) => row!
      )
  }
}

export const makePostgresPoolStore = (kit: PgStoreKit): PoolStore["Service"] => {
  const { one, execute, executeNaming, transaction } = kit
  const list = makeLister(kit)
  return {
    poolByName: (tenantId, name) => one<PoolRecord>(`SELECT ${poolColumns} ${poolFrom} WHERE p.tenant_id = $1 AND p.name = $2`, [tenantId, name]),
    listPools: (tenantId, page) => list<PoolRecord>("sandbox_pools", pgListSql.pools, tenantId, page),
    insertPool: (p) =>
      Effect.asVoid(
        executeNaming(
          `INSERT INTO sandbox_pools (id, tenant_id, name, template_id, replicas, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [p.id, p.tenant_id, p.name, p.template_id, p.replicas, p.created_at, p.updated_at],
          conflict("pool", p.name)
        )
      ),
    updatePool: Effect.fnUntraced(function* (before, after) {
      if (after.name !== before.name) {
        yield* executeNaming("UPDATE sandbox_pools SET name = $1, updated_at = $2 WHERE id = $3", [after.name, after.updated_at, before.id], conflict("pool", after.name))
      }
      if (after.replicas !== before.replicas) {
        yield* execute("UPDATE sandbox_pools SET replicas = $1, updated_at = $2 WHERE id = $3", [after.replicas, after.updated_at, before.id])
      }
    }),
    deletePool: (id) =>
      transaction(
        Effect.gen(function* () {
          yield* execute("DELETE FROM sandboxes WHERE pool_id = $1", [id])
          yield* execute("DELETE FROM sandbox_pools WHERE id = $1", [id])
        })
      )
  }
}

export const makePostgresSnapshotStore = ({ query, one, execute, executeNaming }: PgStoreKit): SnapshotStore["Service"] => {
  return {
    snapshotById: (tenantId, id) =>
      Effect.map(one<SnapshotRow>(`SELECT ${snapshotColumns} FROM sandbox_snapshots n WHERE n.tenant_id = $1 AND n.id = $2`, [tenantId, id]), (row) => row && toSnapshotRecord(row)),
    snapshotByName: (tenantId, name) =>
      Effect.map(one<SnapshotRow>(`SELECT ${snapshotColumns} FROM sandbox_snapshots n WHERE n.tenant_id = $1 AND n.name = $2`, [tenantId, name]), (row) => row && toSnapshotRecord(row)),
    listSnapshots: (tenantId, page) =>
      Effect.map(
        query<SnapshotRow>(
          `SELECT ${snapshotColumns} FROM sandbox_snapshots n WHERE n.tenant_id = $1 AND ($2::text IS NULL OR strpos(lower(n.name), lower($2::text)) > 0)
             AND ($5::text IS NULL OR n.status = $5::text)
           ORDER BY n.seq LIMIT $3 OFFSET $4`,
          [tenantId, page.nameContains ?? null, page.limit, sqlPage(page).offset, page.status ?? null]
        ),
        (rows) => rows.map(toSnapshotRecord)
      ),
    insertSnapshot: (n) =>
      Effect.asVoid(
        executeNaming(
          `INSERT INTO sandbox_snapshots (id, tenant_id, name, docker_image, image_digest, fs_capacity_bytes, status, status_message, source_sandbox_id, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
          [n.id, n.tenant_id, n.name, n.docker_image, n.image_digest, n.fs_capacity_bytes, n.status, n.status_message, n.source_sandbox_id, n.created_at, n.updated_at],
          conflict("snapshot", n.name)
        )
      ),
    setSnapshotStatus: (id, from, to, message, digest, now) =>
      Effect.map(
        execute(
          "UPDATE sandbox_snapshots SET status = $1, status_message = $2, image_digest = coalesce($3, image_digest), updated_at = $4 WHERE id = $5 AND status = $6",
          [to, message, digest, now, id, from]
        ),
        (n) => n > 0
      ),
    deleteSnapshot: (id) => Effect.asVoid(execute("DELETE FROM sandbox_snapshots WHERE id = $1", [id])),
    snapshotUsage: (snapshotId) =>
      Effect.map(one<{ n: number }>("SELECT count(*)::int AS n FROM sandboxes WHERE snapshot_id = $1", [snapshotId]), (row) => row!.n),
    buildingSnapshots: () =>
      Effect.map(query<SnapshotRow>(`SELECT ${snapshotColumns} FROM sandbox_snapshots n WHERE n.status = 'building' ORDER BY n.seq`), (rows) => rows.map(toSnapshotRecord))
  }
}

export const makePostgresQuotaStore = ({ one, execute }: PgStoreKit): QuotaStore["Service"] => {
  return {
    organizationQuota: (organizationId) =>
      Effect.map(one<{ storage_quota: string | null }>("SELECT storage_quota FROM organizations WHERE id = $1", [organizationId]), (row) => row?.storage_quota),
    setOrganizationQuota: (organizationId, quota) =>
      Effect.map(execute("UPDATE organizations SET storage_quota = $1 WHERE id = $2", [quota, organizationId]), (n) => n > 0),
    organizationUsage: (organizationId) =>
      Effect.map(
        one<{ usage: bigint }>("SELECT coalesce(sum(size_bytes), 0)::bigint AS usage FROM sandbox_volumes WHERE organization_id = $1", [organizationId]),
        (row) => row!.usage
      )
  }
}

export const makePostgresRegistryStore = ({ query, one, execute, executeNaming, transaction }: PgStoreKit): RegistryStore["Service"] => {
  return {
    registryByName: (tenantId, name) => one<RegistryRecord>(`SELECT ${registryColumns} FROM sandbox_registries WHERE tenant_id = $1 AND name = $2`, [tenantId, name]),
    registryById: (tenantId, id) => one<RegistryRecord>(`SELECT ${registryColumns} FROM sandbox_registries WHERE tenant_id = $1 AND id = $2`, [tenantId, id]),
    listRegistries: (tenantId, page, nameContains) => {
      const { limit, offset } = sqlPage(page)
      return nameContains
        ? query<RegistryRecord>(
            `SELECT ${registryColumns} FROM sandbox_registries WHERE tenant_id = $1 AND strpos(name, $4) > 0 ORDER BY seq DESC LIMIT $2 OFFSET $3`,
            [tenantId, limit, offset, nameContains]
          )
        : query<RegistryRecord>(`SELECT ${registryColumns} FROM sandbox_registries WHERE tenant_id = $1 ORDER BY seq DESC LIMIT $2 OFFSET $3`, [tenantId, limit, offset])
    },
    tenantRegistries: (tenantId) => query<RegistryRecord>(`SELECT ${registryColumns} FROM sandbox_registries WHERE tenant_id = $1 ORDER BY seq`, [tenantId]),
    insertRegistry: (r) =>
      Effect.asVoid(
        executeNaming(
          `INSERT INTO sandbox_registries (id, tenant_id, name, url, username, password_sealed, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [r.id, r.tenant_id, r.name, r.url, r.username, r.password_sealed, r.created_at, r.updated_at],
          conflict("registry", r.name)
        )
      ),
    updateRegistry: (r) =>
      Effect.asVoid(
        executeNaming(
          "UPDATE sandbox_registries SET name = $1, url = $2, username = $3, password_sealed = $4, updated_at = $5 WHERE id = $6",
          [r.name, r.url, r.username, r.password_sealed, r.updated_at, r.id],
          conflict("registry", r.name)
        )
      ),
    deleteRegistry: (id) => Effect.asVoid(execute("DELETE FROM sandbox_registries WHERE id = $1", [id])),
    resealRegistryPasswords: (reseal) =>
      transaction(
        Effect.gen(function* () {
          const rows = yield* query<{ id: string; password_sealed: string }>("SELECT id, password_sealed FROM sandbox_registries ORDER BY seq")
          for (const row of rows) yield* execute("UPDATE sandbox_registries SET password_sealed = $1 WHERE id = $2", [reseal(row.password_sealed), row.id])
          return rows.length
        })
      )
  }
}

export const makePostgresServiceGrantStore = ({ query, one, execute }: PgStoreKit): ServiceGrantStore["Service"] => {
  return {
    serviceGrant: (sandboxId, port) => one<ServiceGrantRecord>(`SELECT ${grantColumns} FROM sandbox_service_grants WHERE sandbox_id = $1 AND port = $2`, [sandboxId, port]),
    serviceGrantById: (id) => one<ServiceGrantRecord>(`SELECT ${grantColumns} FROM sandbox_service_grants WHERE id = $1`, [id]),
    listServiceGrants: (sandboxId, now) =>
      query<ServiceGrantRecord>(`SELECT ${grantColumns} FROM sandbox_service_grants WHERE sandbox_id = $1 AND expires_at > $2 ORDER BY port`, [sandboxId, now]),
    putServiceGrant: (g) =>
      Effect.asVoid(
        execute(
          `INSERT INTO sandbox_service_grants (id, tenant_id, sandbox_id, port, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (sandbox_id, port) DO UPDATE SET id = EXCLUDED.id, tenant_id = EXCLUDED.tenant_id, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at`,
          [g.id, g.tenant_id, g.sandbox_id, g.port, g.created_at, g.expires_at]
        )
      ),
    extendServiceGrant: (id, expiresAt) => Effect.asVoid(execute("UPDATE sandbox_service_grants SET expires_at = $1 WHERE id = $2", [expiresAt, id])),
    deleteServiceGrants: (sandboxId, port) =>
      port === undefined
        ? execute("DELETE FROM sandbox_service_grants WHERE sandbox_id = $1", [sandboxId])
        : execute("DELETE FROM sandbox_service_grants WHERE sandbox_id = $1 AND port = $2", [sandboxId, port])
  }
}

export const PostgresSandboxStore = Layer.effect(SandboxStore, onPostgres(makePostgresSandboxStore))
export const PostgresSandboxVolumeStore = Layer.effect(SandboxVolumeStore, onPostgres(makePostgresSandboxVolumeStore))
export const PostgresTemplateStore = Layer.effect(TemplateStore, onPostgres(makePostgresTemplateStore))
export const PostgresPoolStore = Layer.effect(PoolStore, onPostgres(makePostgresPoolStore))
export const PostgresSnapshotStore = Layer.effect(SnapshotStore, onPostgres(makePostgresSnapshotStore))
export const PostgresQuotaStore = Layer.effect(QuotaStore, onPostgres(makePostgresQuotaStore))
export const PostgresRegistryStore = Layer.effect(RegistryStore, onPostgres(makePostgresRegistryStore))
export const PostgresServiceGrantStore = Layer.effect(ServiceGrantStore, onPostgres(makePostgresServiceGrantStore))
