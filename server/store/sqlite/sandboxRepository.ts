/**
 * All SQL of the sandbox area, prepared once. Every statement filters by tenant (or by an id
 * that was read under the tenant's filter). Quantities come back as exact `bigint`s.
 *
 * The repository holds no rules: callers read state, let the core decide, then write, inside
 * `immediate` when the decision must hold until the write (quota, name uniqueness).
 */
import type Database from "better-sqlite3"
import type { BoxLifecycle, Page } from "../../../core/index.ts"
import type { PoolRecord } from "../PoolStore.ts"
import { columns, poolFrom, type SandboxRow, sandboxFrom, type SnapshotRow, type TemplateRow, type TemplateViewRow } from "../rows.ts"
import type { BoxRetention, SandboxAccess, SandboxFilter } from "../SandboxStore.ts"
import type { SnapshotPage, SnapshotStatus } from "../SnapshotStore.ts"
import type { TemplateMount } from "../TemplateStore.ts"
import type { VolumeRecord } from "../SandboxVolumeStore.ts"
import { type Db, deferred, immediate, perDatabase } from "./database.ts"
import { isShallow, makeOffsetIndex } from "./offsets.ts"

export type SandboxStatus = BoxLifecycle

/** Volumes, pools and sandboxes are stored as the store's records (no JSON columns). */
export type VolumeRow = VolumeRecord

export type MountRow = TemplateMount

export type PoolRow = PoolRecord

export type NewVolume = Omit<VolumeRow, never>
/** The columns a template answer needs (see `templateViewColumns`). */
export type TemplateView = TemplateViewRow

export type NewTemplate = Omit<TemplateRow, "mounts"> & {
  readonly mounts: ReadonlyArray<{ readonly volume_id: string; readonly mount_path: string }>
}
export type NewPool = Omit<PoolRow, "template_name">
export type NewSandbox = Omit<SandboxRow, "template_name" | "pool_name" | "stopped_at">

export const parseMounts = (json: string): ReadonlyArray<MountRow> => JSON.parse(json) as ReadonlyArray<MountRow>

/**
 * The page of a tenant's rows at `offset`: the subquery finds the `seq` of the first row by
 * walking only the `(tenant_id, seq)` index from `@from` (a checkpoint, see offsets.ts), then the
 * page is read by key from there. When `offset` is past the end the subquery is NULL and nothing matches.
 */
const pageWhere = (table: string, alias: string) =>
  `${alias}.tenant_id = @tenant AND ${alias}.seq >= (SELECT seq FROM ${table} WHERE tenant_id = @tenant AND seq >= @from ORDER BY seq LIMIT 1 OFFSET @offset)
   ORDER BY ${alias}.seq LIMIT @limit`

const volumeColumns = columns.volume

/** What a template answer shows: lists read only these (no exact-integer columns, no bigints). */
const templateViewColumns = `t.id, t.tenant_id, t.name, t.image, t.cpu, t.memory, t.storage, t.proxy_config, t.created_at, t.updated_at,
  (SELECT json_group_array(json_object('volume_id', m.volume_id, 'volume_name', mv.name, 'mount_path', m.mount_path) ORDER BY m.position)
     FROM sandbox_template_mounts m JOIN sandbox_volumes mv ON mv.id = m.volume_id WHERE m.template_id = t.id) AS mounts`

const templateColumns = `t.cpu_millicores, t.memory_bytes, t.storage_bytes, ${templateViewColumns}`

const poolColumns = columns.pool
const sandboxColumns = columns.sandbox
const snapshotColumns = columns.snapshot

/** The list queries, exported so tests can check their query plans. */
export const listSql = {
  volumes: `SELECT ${volumeColumns} FROM sandbox_volumes v WHERE ${pageWhere("sandbox_volumes", "v")}`,
  templates: `SELECT ${templateViewColumns} FROM sandbox_templates t WHERE ${pageWhere("sandbox_templates", "t")}`,
  pools: `SELECT ${poolColumns} ${poolFrom} WHERE ${pageWhere("sandbox_pools", "p")}`,
  sandboxes: `SELECT ${sandboxColumns} ${sandboxFrom} WHERE ${pageWhere("sandboxes", "s")}`
}

export const makeSandboxRepository = (db: Db) => {
  const prepare = <R = unknown>(source: string) => db.prepare<unknown[], R>(source).safeIntegers(true)
  /** For statements with no quantities: plain numbers. */
  const prepareNumbers = <R = unknown>(source: string) => db.prepare<unknown[], R>(source)

  // Organizations (quota)
  const orgQuota = prepareNumbers<{ storage_quota: string | null }>("SELECT storage_quota FROM organizations WHERE id = ?")
  const setOrgQuota = prepareNumbers("UPDATE organizations SET storage_quota = ? WHERE id = ?")
  const orgUsage = prepare<{ usage: bigint }>(
    "SELECT coalesce(sum(size_bytes), 0) AS usage FROM sandbox_volumes WHERE organization_id = ?"
  )

  // Volumes
  const volumeByName = prepare<VolumeRow>(`SELECT ${volumeColumns} FROM sandbox_volumes v WHERE v.tenant_id = ? AND v.name = ?`)
  const volumePage = prepare<VolumeRow>(listSql.volumes)
  const insertVolume = prepare(
    `INSERT INTO sandbox_volumes (id, tenant_id, organization_id, name, size_bytes, size, storage_class, created_at, updated_at)
     VALUES (@id, @tenant_id, @organization_id, @name, @size_bytes, @size, @storage_class, @created_at, @updated_at)`
  )
  // Renames and resizes are separate statements: an UPDATE that names a column rewrites that
  // column's index entries even when the value stays the same (a resize would rewrite the name index).
  const renameVolume = prepare("UPDATE sandbox_volumes SET name = ?, updated_at = ? WHERE id = ?")
  const resizeVolume = prepare("UPDATE sandbox_volumes SET size_bytes = ?, size = ?, updated_at = ? WHERE id = ?")
  const deleteVolume = prepare("DELETE FROM sandbox_volumes WHERE id = ?")
  const templatesMounting = prepareNumbers<{ name: string }>(
    `SELECT DISTINCT t.name FROM sandbox_template_mounts m JOIN sandbox_templates t ON t.id = m.template_id
     WHERE m.volume_id = ? ORDER BY t.name`
  )
  const volumesAttached = prepareNumbers<{ volume_name: string; sandbox_name: string }>(
    `SELECT mv.name AS volume_name, s.name AS sandbox_name
     FROM sandbox_template_mounts m
     JOIN sandboxes s ON s.template_id = m.template_id
     JOIN sandbox_volumes mv ON mv.id = m.volume_id
     WHERE m.volume_id IN (SELECT value FROM json_each(?))
     ORDER BY s.seq`
  )

  // Templates
  const templateByName = prepare<TemplateRow>(`SELECT ${templateColumns} FROM sandbox_templates t WHERE t.tenant_id = ? AND t.name = ?`)
  const templateById = prepare<TemplateRow>(`SELECT ${templateColumns} FROM sandbox_templates t WHERE t.id = ?`)
  const templatePage = prepareNumbers<TemplateView>(listSql.templates)
  const insertTemplate = prepare(
    `INSERT INTO sandbox_templates (id, tenant_id, name, image, cpu_millicores, cpu, memory_bytes, memory, storage_bytes, storage,
       proxy_config, created_at, updated_at)
     VALUES (@id, @tenant_id, @name, @image, @cpu_millicores, @cpu, @memory_bytes, @memory, @storage_bytes, @storage,
       @proxy_config, @created_at, @updated_at)`
  )
  const insertMount = prepare(
    "INSERT INTO sandbox_template_mounts (template_id, position, volume_id, mount_path) VALUES (?, ?, ?, ?)"
  )
  const renameTemplate = prepare("UPDATE sandbox_templates SET name = ?, updated_at = ? WHERE id = ?")
  const deleteTemplate = prepare("DELETE FROM sandbox_templates WHERE id = ?")
  const templateSandboxCount = prepareNumbers<{ n: number }>("SELECT count(*) AS n FROM sandboxes WHERE template_id = ?")
  const templatePoolCount = prepareNumbers<{ n: number }>("SELECT count(*) AS n FROM sandbox_pools WHERE template_id = ?")

  // Pools
  const poolByName = prepareNumbers<PoolRow>(`SELECT ${poolColumns} ${poolFrom} WHERE p.tenant_id = ? AND p.name = ?`)
  const poolPage = prepareNumbers<PoolRow>(listSql.pools)
  const insertPool = prepareNumbers(
    `INSERT INTO sandbox_pools (id, tenant_id, name, template_id, replicas, created_at, updated_at)
     VALUES (@id, @tenant_id, @name, @template_id, @replicas, @created_at, @updated_at)`
  )
  const renamePool = prepareNumbers("UPDATE sandbox_pools SET name = ?, updated_at = ? WHERE id = ?")
  const scalePool = prepareNumbers("UPDATE sandbox_pools SET replicas = ?, updated_at = ? WHERE id = ?")
  const deletePool = prepareNumbers("DELETE FROM sandbox_pools WHERE id = ?")
  const deletePoolSandboxes = prepareNumbers("DELETE FROM sandboxes WHERE pool_id = ?")

  // Sandboxes
  const sandboxByName = prepareNumbers<SandboxRow>(`SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.tenant_id = ? AND s.name = ?`)
  const sandboxPage = prepareNumbers<SandboxRow>(listSql.sandboxes)
  const poolSandboxes = prepareNumbers<SandboxRow>(`SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.pool_id = ? ORDER BY s.seq`)
  const sandboxById = prepareNumbers<SandboxRow>(`SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.tenant_id = ? AND s.id = ?`)
  const sandboxAccess = prepareNumbers<SandboxAccess>("SELECT id, name, status FROM sandboxes WHERE id = ? AND tenant_id = ?")
  const allSandboxes = prepareNumbers<SandboxRow>(`SELECT ${sandboxColumns} ${sandboxFrom} ORDER BY s.seq`)
  const setSandboxStatus = prepareNumbers(
    "UPDATE sandboxes SET status = @to, status_message = @message, updated_at = @now, stopped_at = CASE WHEN @to = 'stopped' THEN @now ELSE NULL END WHERE id = @id AND status = @from"
  )
  const sandboxNameTaken = prepareNumbers("SELECT 1 FROM sandboxes WHERE tenant_id = ? AND name = ?").pluck()
  const insertSandbox = prepareNumbers(
    `INSERT INTO sandboxes (id, tenant_id, name, template_id, pool_id, status, status_message, created_at, updated_at,
       snapshot_id, image, vcpus, mem_bytes, fs_capacity_bytes, ttl_seconds, idle_ttl_seconds, delete_after_stop_seconds)
     VALUES (@id, @tenant_id, @name, @template_id, @pool_id, @status, @status_message, @created_at, @updated_at,
       @snapshot_id, @image, @vcpus, @mem_bytes, @fs_capacity_bytes, @ttl_seconds, @idle_ttl_seconds, @delete_after_stop_seconds)`
  )
  const setRetention = prepareNumbers(
    `UPDATE sandboxes SET ttl_seconds = coalesce(@ttl_seconds, ttl_seconds), idle_ttl_seconds = coalesce(@idle_ttl_seconds, idle_ttl_seconds),
       delete_after_stop_seconds = coalesce(@delete_after_stop_seconds, delete_after_stop_seconds), updated_at = @now WHERE id = @id`
  )
  const withRetention = prepareNumbers<SandboxRow>(
    `SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.ttl_seconds > 0 OR s.idle_ttl_seconds > 0 OR s.delete_after_stop_seconds > 0 ORDER BY s.seq`
  )

  // instr over lower(): a substring match with no LIKE wildcards to escape.
  const sandboxesMatching = prepareNumbers<SandboxRow>(
    `SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.tenant_id = @tenant
       AND (@contains IS NULL OR instr(lower(s.name), lower(@contains)) > 0) AND (@status IS NULL OR s.status = @status)
     ORDER BY s.seq LIMIT @limit OFFSET @offset`
  )

  // Snapshots
  const snapshotById = prepareNumbers<SnapshotRow>(`SELECT ${snapshotColumns} FROM sandbox_snapshots n WHERE n.tenant_id = ? AND n.id = ?`)
  const snapshotByName = prepareNumbers<SnapshotRow>(`SELECT ${snapshotColumns} FROM sandbox_snapshots n WHERE n.tenant_id = ? AND n.name = ?`)
  // instr over lower(): a substring match with no LIKE wildcards to escape.
  const snapshotPage = prepareNumbers<SnapshotRow>(
    `SELECT ${snapshotColumns} FROM sandbox_snapshots n WHERE n.tenant_id = @tenant AND (@contains IS NULL OR instr(lower(n.name), lower(@contains)) > 0)
       AND (@status IS NULL OR n.status = @status)
     ORDER BY n.seq LIMIT @limit OFFSET @offset`
  )
  const insertSnapshot = prepareNumbers(
    `INSERT INTO sandbox_snapshots (id, tenant_id, name, docker_image, image_digest, fs_capacity_bytes, status, status_message, source_sandbox_id, created_at, updated_at)
     VALUES (@id, @tenant_id, @name, @docker_image, @image_digest, @fs_capacity_bytes, @status, @status_message, @source_sandbox_id, @created_at, @updated_at)`
  )
  const setSnapshotStatus = prepareNumbers(
    `UPDATE sandbox_snapshots SET status = @to, status_message = @message, image_digest = coalesce(@digest, image_digest), updated_at = @now
     WHERE id = @id AND status = @from`
  )
  const deleteSnapshot = prepareNumbers("DELETE FROM sandbox_snapshots WHERE id = ?")
  const snapshotUsage = prepareNumbers<{ n: number }>("SELECT count(*) AS n FROM sandboxes WHERE snapshot_id = ?")
  const buildingSnapshots = prepareNumbers<SnapshotRow>(`SELECT ${snapshotColumns} FROM sandbox_snapshots n WHERE n.status = 'building' ORDER BY n.seq`)
  const renameSandbox = prepareNumbers("UPDATE sandboxes SET name = ?, updated_at = ? WHERE id = ?")
  const readyPoolSandboxes = prepareNumbers<SandboxRow>(
    `SELECT ${sandboxColumns} ${sandboxFrom} WHERE s.pool_id IN (SELECT p.id FROM sandbox_pools p WHERE p.template_id = ? AND p.tenant_id = ?)
       AND s.status = 'ready' ORDER BY s.seq LIMIT ?`
  )
  const claimSandbox = prepareNumbers("UPDATE sandboxes SET pool_id = NULL, name = ?, updated_at = ? WHERE id = ? AND pool_id = ? AND status = 'ready'")
  const deleteSandbox = prepareNumbers("DELETE FROM sandboxes WHERE id = ?")

  const read = deferred(db)
  const offsetIndexes = new Map<string, ReturnType<typeof makeOffsetIndex>>()
  const offsetIndex = (table: string) => offsetIndexes.get(table) ?? offsetIndexes.set(table, makeOffsetIndex(db, table)).get(table)!
  const page = <R>(statement: Database.Statement<any, R>, table: string, tenantId: string, { limit, offset }: Page): Array<R> => {
    const pageFrom = () => {
      const start = offsetIndex(table).locate(tenantId, offset)
      return statement.all({ tenant: tenantId, limit, offset: start.offset, from: start.from })
    }
    // A deep page reads its checkpoints and its rows in one read transaction, so both see the
    // same database state; a shallow page is one statement, consistent on its own.
    return isShallow(offset) ? pageFrom() : read(pageFrom)
  }

  return {
    /**
     * Runs `work` in one `BEGIN IMMEDIATE` transaction: the write lock is taken before the first
     * read, so what `work` reads cannot change (in this or any other process) before it writes.
     * A throw rolls back.
     */
    immediate: immediate(db),

    // Organizations
    organizationQuota: (organizationId: string): string | null | undefined => orgQuota.get(organizationId)?.storage_quota,
    setOrganizationQuota: (organizationId: string, quota: string | null): boolean => setOrgQuota.run(quota, organizationId).changes > 0,
    organizationUsage: (organizationId: string): bigint => orgUsage.get(organizationId)!.usage,

    // Volumes
    volumeByName: (tenantId: string, name: string) => volumeByName.get(tenantId, name),
    listVolumes: (tenantId: string, p: Page) => page(volumePage, "sandbox_volumes", tenantId, p),
    insertVolume: (row: NewVolume) => void insertVolume.run(row),
    /** Writes the columns of `after` that differ from `before`. */
    updateVolume: (before: VolumeRow, after: VolumeRow) => {
      if (after.name !== before.name) renameVolume.run(after.name, after.updated_at, after.id)
      if (after.size_bytes !== before.size_bytes) resizeVolume.run(after.size_bytes, after.size, after.updated_at, after.id)
    },
    deleteVolume: (id: string) => void deleteVolume.run(id),
    templatesMounting: (volumeId: string): Array<string> => templatesMounting.all(volumeId).map((row) => row.name),
    volumesAttached: (volumeIds: ReadonlyArray<string>) => (volumeIds.length === 0 ? [] : volumesAttached.all(JSON.stringify(volumeIds))),

    // Templates
    templateByName: (tenantId: string, name: string) => templateByName.get(tenantId, name),
    templateById: (id: string) => templateById.get(id),
    listTemplates: (tenantId: string, p: Page) => page(templatePage, "sandbox_templates", tenantId, p),
    insertTemplate: ({ mounts, ...row }: NewTemplate) => {
      insertTemplate.run(row)
      mounts.forEach((mount, position) => insertMount.run(row.id, position, mount.volume_id, mount.mount_path))
    },
    renameTemplate: (id: string, name: string, updatedAt: string) => void renameTemplate.run(name, updatedAt, id),
    deleteTemplate: (id: string) => void deleteTemplate.run(id),
    templateUsage: (templateId: string) => ({
      sandboxes: templateSandboxCount.get(templateId)!.n,
      pools: templatePoolCount.get(templateId)!.n
    }),

    // Pools
    poolByName: (tenantId: string, name: string) => poolByName.get(tenantId, name),
    listPools: (tenantId: string, p: Page) => page(poolPage, "sandbox_pools", tenantId, p),
    insertPool: (row: NewPool) => void insertPool.run(row),
    /** Writes the columns of `after` that differ from `before`. */
    updatePool: (before: PoolRow, after: Pick<PoolRow, "name" | "replicas" | "updated_at">) => {
      if (after.name !== before.name) renamePool.run(after.name, after.updated_at, before.id)
      if (after.replicas !== before.replicas) scalePool.run(after.replicas, after.updated_at, before.id)
    },
    /** Deletes the pool and every sandbox of it; call inside `immediate`. */
    deletePool: (id: string) => {
      deletePoolSandboxes.run(id)
      deletePool.run(id)
    },
    poolSandboxes: (poolId: string) => poolSandboxes.all(poolId),

    // Sandboxes
    sandboxByName: (tenantId: string, name: string) => sandboxByName.get(tenantId, name),
    sandboxById: (tenantId: string, id: string) => sandboxById.get(tenantId, id),
    sandboxAccess: (tenantId: string, id: string) => sandboxAccess.get(id, tenantId),
    allSandboxes: () => allSandboxes.all(),
    setSandboxStatus: (id: string, from: SandboxStatus, to: SandboxStatus, message: string | null, updatedAt: string) =>
      setSandboxStatus.run({ to, message, now: updatedAt, id, from }).changes > 0,
    sandboxNameTaken: (tenantId: string, name: string) => sandboxNameTaken.get(tenantId, name) !== undefined,
    listSandboxes: (tenantId: string, p: Page) => page(sandboxPage, "sandboxes", tenantId, p),
    insertSandbox: (row: Partial<NewSandbox> & Omit<NewSandbox, keyof BoxRetention | "snapshot_id" | "image" | "vcpus" | "mem_bytes" | "fs_capacity_bytes">) =>
      void insertSandbox.run({
        snapshot_id: null,
        image: null,
        vcpus: null,
        mem_bytes: null,
        fs_capacity_bytes: null,
        ttl_seconds: null,
        idle_ttl_seconds: null,
        delete_after_stop_seconds: null,
        ...row
      }),
    updateSandboxRetention: (id: string, retention: Partial<BoxRetention>, now: string) =>
      void setRetention.run({
        ttl_seconds: retention.ttl_seconds ?? null,
        idle_ttl_seconds: retention.idle_ttl_seconds ?? null,
        delete_after_stop_seconds: retention.delete_after_stop_seconds ?? null,
        now,
        id
      }),
    sandboxesWithRetention: () => withRetention.all(),

    // Snapshots
    snapshotById: (tenantId: string, id: string) => snapshotById.get(tenantId, id),
    snapshotByName: (tenantId: string, name: string) => snapshotByName.get(tenantId, name),
    listSnapshots: (tenantId: string, p: SnapshotPage) =>
      snapshotPage.all({ tenant: tenantId, contains: p.nameContains ?? null, status: p.status ?? null, limit: p.limit, offset: p.offset }),
    listSandboxesMatching: (tenantId: string, f: SandboxFilter) =>
      sandboxesMatching.all({ tenant: tenantId, contains: f.nameContains ?? null, status: f.status ?? null, limit: f.limit, offset: f.offset }),
    insertSnapshot: (row: SnapshotRow) => void insertSnapshot.run(row),
    setSnapshotStatus: (id: string, from: SnapshotStatus, to: SnapshotStatus, message: string | null, digest: string | null, now: string) =>
      setSnapshotStatus.run({ id, from, to, message, digest, now }).changes > 0,
    deleteSnapshot: (id: string) => void deleteSnapshot.run(id),
    snapshotUsage: (snapshotId: string) => snapshotUsage.get(snapshotId)!.n,
    buildingSnapshots: () => buildingSnapshots.all(),
    renameSandbox: (id: string, name: string, updatedAt: string) => void renameSandbox.run(name, updatedAt, id),
    readyPoolSandboxes: (tenantId: string, templateId: string, limit: number) => readyPoolSandboxes.all(templateId, tenantId, limit),
    claimSandbox: (id: string, poolId: string, name: string, updatedAt: string) => claimSandbox.run(name, updatedAt, id, poolId).changes > 0,
    deleteSandbox: (id: string) => void deleteSandbox.run(id)
  }
}

export type SandboxRepository = ReturnType<typeof makeSandboxRepository>

/** The repository of a connection, its statements prepared once for every store that uses them. */
export const sandboxRepositoryOf = perDatabase(makeSandboxRepository)
