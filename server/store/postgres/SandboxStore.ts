/**
 * The PostgreSQL backend of `SandboxStore`. Quantities come back as exact `bigint`s. Deep list
 * pages start from checkpoints (pages.ts), not an OFFSET walk. The quota holds across replicas
 * because the routes read usage and write inside `transaction` (SERIALIZABLE: two creates or
 * resizes of one organization that both read the old usage cannot both commit; the loser runs
 * again and sees the winner's volume).
 */
import { Effect, Layer } from "effect"
import { SandboxConflict } from "../../../core/index.ts"
import type { Page } from "../DeploymentStore.ts"
import { type PoolRecord, type SandboxRecord, SandboxStore, type TemplateMount, type TemplateRecord, type TemplateView, type VolumeRecord } from "../SandboxStore.ts"
import type { StoreError } from "../StoreError.ts"
import type { Sql } from "./client.ts"
import { isShallow, makePager, pageWhere, type SeqTable } from "./pages.ts"
import { type TemplateRow, type TemplateViewRow, toTemplateRecord, toTemplateView } from "../rows.ts"
import { CurrentTransaction, PostgresDatabase, type PgStoreKit, toStoreError } from "./PostgresDatabase.ts"

const volumeColumns = "v.id, v.tenant_id, v.organization_id, v.name, v.size_bytes, v.size, v.storage_class, v.created_at, v.updated_at"

const mountsOf = (alias: string) => `coalesce((SELECT json_agg(json_build_object('volume_id', m.volume_id, 'volume_name', mv.name, 'mount_path', m.mount_path) ORDER BY m.position)
     FROM sandbox_template_mounts m JOIN sandbox_volumes mv ON mv.id = m.volume_id WHERE m.template_id = ${alias}.id), '[]'::json) AS mounts`

const templateViewColumns = `t.id, t.tenant_id, t.name, t.image, t.cpu, t.memory, t.storage, t.proxy_config, t.created_at, t.updated_at, ${mountsOf("t")}`
const templateColumns = `t.cpu_millicores, t.memory_bytes, t.storage_bytes, ${templateViewColumns}`
const poolColumns = "p.id, p.tenant_id, p.name, p.template_id, pt.name AS template_name, p.replicas, p.created_at, p.updated_at"
const poolFrom = "FROM sandbox_pools p JOIN sandbox_templates pt ON pt.id = p.template_id"
const sandboxColumns =
  "s.id, s.tenant_id, s.name, s.template_id, st.name AS template_name, s.pool_id, sp.name AS pool_name, s.status, s.status_message, s.created_at, s.updated_at"
const sandboxFrom = "FROM sandboxes s JOIN sandbox_templates st ON st.id = s.template_id LEFT JOIN sandbox_pools sp ON sp.id = s.pool_id"

/** The list queries ($1 tenant, $2 limit, $3 checkpoint seq, $4 rows to skip from it). */
export const pgListSql = {
  volumes: `SELECT ${volumeColumns} FROM sandbox_volumes v WHERE ${pageWhere("sandbox_volumes", "v")}`,
  templates: `SELECT ${templateViewColumns} FROM sandbox_templates t WHERE ${pageWhere("sandbox_templates", "t")}`,
  pools: `SELECT ${poolColumns} ${poolFrom} WHERE ${pageWhere("sandbox_pools", "p")}`,
  sandboxes: `SELECT ${sandboxColumns} ${sandboxFrom} WHERE ${pageWhere("sandboxes", "s")}`
}

export const makePostgresSandboxStore = (kit: PgStoreKit): SandboxStore["Service"] => {
  const { query, one, execute, executeNaming, transaction, client } = kit
  const conflict = (kind: string, name: string) => () => new SandboxConflict({ message: `${kind} ${name} already exists` })
  const pagers = new Map<SeqTable, ReturnType<typeof makePager>>()
  const pagerOf = (table: SeqTable) => pagers.get(table) ?? pagers.set(table, makePager(table)).get(table)!

  /** A page: shallow in one statement; deep in one read-only snapshot (or the caller's transaction). */
  const list = <R extends object>(table: SeqTable, sql: string, tenantId: string, { limit, offset }: Page): Effect.Effect<Array<R>, StoreError> => {
    if (isShallow(offset)) return query<R>(sql, [tenantId, limit, "0", offset])
    const read = (tx: Sql) =>
      Effect.flatMap(pagerOf(table).locate(tx, tenantId, offset), (start) => tx.query<R>(sql, [tenantId, limit, start.from.toString(), start.offset]))
    return Effect.gen(function* () {
      const current = yield* CurrentTransaction
      return yield* Effect.mapError(current ? read(current) : client.transaction(read, { isolation: "repeatable read", readOnly: true }), toStoreError)
    })
  }

  return {
    transaction,

    organizationQuota: (organizationId) =>
      Effect.map(one<{ storage_quota: string | null }>("SELECT storage_quota FROM organizations WHERE id = $1", [organizationId]), (row) => row?.storage_quota),
    setOrganizationQuota: (organizationId, quota) =>
      Effect.map(execute("UPDATE organizations SET storage_quota = $1 WHERE id = $2", [quota, organizationId]), (n) => n > 0),
    organizationUsage: (organizationId) =>
      Effect.map(
        one<{ usage: bigint }>("SELECT coalesce(sum(size_bytes), 0)::bigint AS usage FROM sandbox_volumes WHERE organization_id = $1", [organizationId]),
        (row) => row!.usage
      ),

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
    updateVolume: (before, after) =>
      Effect.gen(function* () {
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
          ),

    templateByName: (tenantId, name) =>
      Effect.map(one<TemplateRow>(`SELECT ${templateColumns} FROM sandbox_templates t WHERE t.tenant_id = $1 AND t.name = $2`, [tenantId, name]), (row) => row && toTemplateRecord(row)),
    templateById: (id) => Effect.map(one<TemplateRow>(`SELECT ${templateColumns} FROM sandbox_templates t WHERE t.id = $1`, [id]), (row) => row && toTemplateRecord(row)),
    listTemplates: (tenantId, page) => Effect.map(list<TemplateViewRow>("sandbox_templates", pgListSql.templates, tenantId, page), (rows) => rows.map(toTemplateView)),
    insertTemplate: (t) =>
      transaction(
        Effect.gen(function* () {
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
              t.proxy_config === null ? null : JSON.stringify(t.proxy_config),
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
      ),

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
    updatePool: (before, after) =>
      Effect.gen(function* () {
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
      ),
    poolSandboxes: (poolId) => query<SandboxRecord>(`SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.pool_id = $1 ORDER BY s.seq`, [poolId]),
    readyPoolSandboxes: (tenantId, templateId, limit) =>
      query<SandboxRecord>(
        `SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.pool_id IN (SELECT p.id FROM sandbox_pools p WHERE p.template_id = $1 AND p.tenant_id = $2)
           AND s.status = 'ready' ORDER BY s.seq LIMIT $3`,
        [templateId, tenantId, limit]
      ),
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
          ),

    sandboxByName: (tenantId, name) => one<SandboxRecord>(`SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.tenant_id = $1 AND s.name = $2`, [tenantId, name]),
    sandboxById: (tenantId, id) => one<SandboxRecord>(`SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.tenant_id = $1 AND s.id = $2`, [tenantId, id]),
    sandboxNameTaken: (tenantId, name) =>
      Effect.map(one("SELECT 1 AS taken FROM sandboxes WHERE tenant_id = $1 AND name = $2", [tenantId, name]), (row) => row !== undefined),
    listSandboxes: (tenantId, page) => list<SandboxRecord>("sandboxes", pgListSql.sandboxes, tenantId, page),
    insertSandbox: (s) =>
      Effect.asVoid(
        executeNaming(
          `INSERT INTO sandboxes (id, tenant_id, name, template_id, pool_id, status, status_message, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          [s.id, s.tenant_id, s.name, s.template_id, s.pool_id, s.status, s.status_message, s.created_at, s.updated_at],
          conflict("sandbox", s.name)
        )
      ),
    renameSandbox: (sandbox, name, now) =>
      Effect.asVoid(executeNaming("UPDATE sandboxes SET name = $1, updated_at = $2 WHERE id = $3", [name, now, sandbox.id], conflict("sandbox", name))),
    deleteSandbox: (id) => Effect.asVoid(execute("DELETE FROM sandboxes WHERE id = $1", [id])),
    setSandboxStatus: (id, from, to, message, now) =>
      Effect.map(execute("UPDATE sandboxes SET status = $1, status_message = $2, updated_at = $3 WHERE id = $4 AND status = $5", [to, message, now, id, from]), (n) => n > 0),
    allSandboxes: () => query<SandboxRecord>(`SELECT ${sandboxColumns} ${sandboxFrom} ORDER BY s.seq`)
  }
}

/** `SandboxStore` over the server's PostgreSQL database. */
export const PostgresSandboxStore = Layer.effect(
  SandboxStore,
  Effect.gen(function* () {
    return makePostgresSandboxStore(yield* PostgresDatabase)
  })
)
