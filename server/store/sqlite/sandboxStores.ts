/**
 * The SQLite backends of the sandbox area's stores (`SandboxStore`, `SandboxVolumeStore`,
 * `TemplateStore`, `PoolStore`, `SnapshotStore`, `QuotaStore`, `RegistryStore`,
 * `ServiceGrantStore`): the repositories' prepared statements, rows to records. Every call is
 * synchronous SQLite work (it completes within its fiber's first poll).
 */
import { Layer } from "effect"
import { SandboxConflict } from "../../../core/index.ts"
import { PoolStore } from "../PoolStore.ts"
import { QuotaStore } from "../QuotaStore.ts"
import { RegistryStore } from "../RegistryStore.ts"
import { toSandboxRecord, toSnapshotRecord, toTemplateRecord, toTemplateRow, toTemplateView } from "../rows.ts"
import { SandboxStore } from "../SandboxStore.ts"
import { ServiceGrantStore } from "../ServiceGrantStore.ts"
import { SnapshotStore } from "../SnapshotStore.ts"
import { TemplateStore } from "../TemplateStore.ts"
import { SandboxVolumeStore } from "../SandboxVolumeStore.ts"
import type { Db } from "./database.ts"
import { op, opNaming } from "./errors.ts"
import { sqlPage } from "../page.ts"
import { registryRepositoryOf } from "./registryRepository.ts"
import { sandboxRepositoryOf } from "./sandboxRepository.ts"
import { onSqlite } from "./SqliteDatabase.ts"

/** A write that may take a name already taken: `SandboxConflict`. */
const naming = <A>(kind: string, name: string, work: () => A) => opNaming(() => new SandboxConflict({ message: `${kind} ${name} already exists` }), work)

export const makeSqliteSandboxStore = (db: Db): SandboxStore["Service"] => {
  const repo = sandboxRepositoryOf(db)
  return {
    sandboxByName: (tenantId, name) =>
      op(() => {
        const row = repo.sandboxByName(tenantId, name)
        return row && toSandboxRecord(row)
      }),
    sandboxById: (tenantId, id) =>
      op(() => {
        const row = repo.sandboxById(tenantId, id)
        return row && toSandboxRecord(row)
      }),
    sandboxAccess: (tenantId, id) => op(() => repo.sandboxAccess(tenantId, id)),
    sandboxNameTaken: (tenantId, name) => op(() => repo.sandboxNameTaken(tenantId, name)),
    listSandboxes: (tenantId, page) => op(() => repo.listSandboxes(tenantId, sqlPage(page)).map(toSandboxRecord)),
    listSandboxesMatching: (tenantId, filter) => op(() => repo.listSandboxesMatching(tenantId, { ...filter, ...sqlPage(filter) }).map(toSandboxRecord)),
    insertSandbox: (sandbox) => naming("sandbox", sandbox.name, () => repo.insertSandbox(sandbox)),
    renameSandbox: (sandbox, name, now) => naming("sandbox", name, () => repo.renameSandbox(sandbox.id, name, now)),
    deleteSandbox: (id) => op(() => repo.deleteSandbox(id)),
    setSandboxStatus: (id, from, to, message, now) => op(() => repo.setSandboxStatus(id, from, to, message, now)),
    allSandboxes: () => op(() => repo.allSandboxes().map(toSandboxRecord)),
    updateSandboxRetention: (id, retention, now) => op(() => repo.updateSandboxRetention(id, retention, now)),
    sandboxesWithRetention: () => op(() => repo.sandboxesWithRetention().map(toSandboxRecord)),
    poolSandboxes: (poolId) => op(() => repo.poolSandboxes(poolId).map(toSandboxRecord)),
    readyPoolSandboxes: (tenantId, templateId, limit) => op(() => repo.readyPoolSandboxes(tenantId, templateId, limit).map(toSandboxRecord)),
    claimSandbox: (sandbox, name, now) =>
      naming("sandbox", name, () => (sandbox.pool_id === null ? false : repo.claimSandbox(sandbox.id, sandbox.pool_id, name, now)))
  }
}

export const makeSqliteSandboxVolumeStore = (db: Db): SandboxVolumeStore["Service"] => {
  const repo = sandboxRepositoryOf(db)
  return {
    volumeByName: (tenantId, name) => op(() => repo.volumeByName(tenantId, name)),
    listVolumes: (tenantId, page) => op(() => repo.listVolumes(tenantId, sqlPage(page))),
    insertVolume: (volume) => naming("volume", volume.name, () => repo.insertVolume(volume)),
    updateVolume: (before, after) => naming("volume", after.name, () => repo.updateVolume(before, after)),
    deleteVolume: (id) => op(() => repo.deleteVolume(id)),
    templatesMounting: (volumeId) => op(() => repo.templatesMounting(volumeId)),
    volumesAttached: (volumeIds) => op(() => repo.volumesAttached(volumeIds))
  }
}

export const makeSqliteTemplateStore = (db: Db): TemplateStore["Service"] => {
  const repo = sandboxRepositoryOf(db)
  return {
    templateByName: (tenantId, name) =>
      op(() => {
        const row = repo.templateByName(tenantId, name)
        return row && toTemplateRecord(row)
      }),
    templateById: (id) =>
      op(() => {
        const row = repo.templateById(id)
        return row && toTemplateRecord(row)
      }),
    listTemplates: (tenantId, page) => op(() => repo.listTemplates(tenantId, sqlPage(page)).map(toTemplateView)),
    insertTemplate: (template) => naming("template", template.name, () => repo.insertTemplate(toTemplateRow(template))),
    renameTemplate: (template, name, now) => naming("template", name, () => repo.renameTemplate(template.id, name, now)),
    deleteTemplate: (id) => op(() => repo.deleteTemplate(id)),
    templateUsage: (templateId) => op(() => repo.templateUsage(templateId))
  }
}

export const makeSqlitePoolStore = (db: Db): PoolStore["Service"] => {
  const repo = sandboxRepositoryOf(db)
  return {
    poolByName: (tenantId, name) => op(() => repo.poolByName(tenantId, name)),
    listPools: (tenantId, page) => op(() => repo.listPools(tenantId, sqlPage(page))),
    insertPool: (pool) => naming("pool", pool.name, () => repo.insertPool(pool)),
    updatePool: (before, after) => naming("pool", after.name, () => repo.updatePool(before, after)),
    deletePool: (id) => op(() => repo.immediate(() => repo.deletePool(id)))
  }
}

export const makeSqliteSnapshotStore = (db: Db): SnapshotStore["Service"] => {
  const repo = sandboxRepositoryOf(db)
  return {
    snapshotById: (tenantId, id) =>
      op(() => {
        const row = repo.snapshotById(tenantId, id)
        return row && toSnapshotRecord(row)
      }),
    snapshotByName: (tenantId, name) =>
      op(() => {
        const row = repo.snapshotByName(tenantId, name)
        return row && toSnapshotRecord(row)
      }),
    listSnapshots: (tenantId, page) => op(() => repo.listSnapshots(tenantId, { ...page, ...sqlPage(page) }).map(toSnapshotRecord)),
    insertSnapshot: (snapshot) => naming("snapshot", snapshot.name, () => repo.insertSnapshot(snapshot)),
    setSnapshotStatus: (id, from, to, message, digest, now) => op(() => repo.setSnapshotStatus(id, from, to, message, digest, now)),
    deleteSnapshot: (id) => op(() => repo.deleteSnapshot(id)),
    snapshotUsage: (snapshotId) => op(() => repo.snapshotUsage(snapshotId)),
    buildingSnapshots: () => op(() => repo.buildingSnapshots().map(toSnapshotRecord))
  }
}

export const makeSqliteQuotaStore = (db: Db): QuotaStore["Service"] => {
  const repo = sandboxRepositoryOf(db)
  return {
    organizationQuota: (organizationId) => op(() => repo.organizationQuota(organizationId)),
    setOrganizationQuota: (organizationId, quota) => op(() => repo.setOrganizationQuota(organizationId, quota)),
    organizationUsage: (organizationId) => op(() => repo.organizationUsage(organizationId))
  }
}

export const makeSqliteRegistryStore = (db: Db): RegistryStore["Service"] => {
  const registries = registryRepositoryOf(db)
  return {
    registryByName: (tenantId, name) => op(() => registries.registryByName(tenantId, name)),
    registryById: (tenantId, id) => op(() => registries.registryById(tenantId, id)),
    listRegistries: (tenantId, page, nameContains) => op(() => registries.listRegistries(tenantId, sqlPage(page), nameContains)),
    tenantRegistries: (tenantId) => op(() => registries.tenantRegistries(tenantId)),
    insertRegistry: (registry) => naming("registry", registry.name, () => registries.insertRegistry(registry)),
    updateRegistry: (registry) => naming("registry", registry.name, () => registries.updateRegistry(registry)),
    deleteRegistry: (id) => op(() => registries.deleteRegistry(id)),
    resealRegistryPasswords: (reseal) => op(() => registries.resealRegistryPasswords(reseal))
  }
}

export const makeSqliteServiceGrantStore = (db: Db): ServiceGrantStore["Service"] => {
  const grants = registryRepositoryOf(db)
  return {
    serviceGrant: (sandboxId, port) => op(() => grants.serviceGrant(sandboxId, port)),
    serviceGrantById: (id) => op(() => grants.serviceGrantById(id)),
    listServiceGrants: (sandboxId, now) => op(() => grants.listServiceGrants(sandboxId, now)),
    putServiceGrant: (grant) => op(() => grants.putServiceGrant(grant)),
    extendServiceGrant: (id, expiresAt) => op(() => grants.extendServiceGrant(id, expiresAt)),
    deleteServiceGrants: (sandboxId, port) => op(() => grants.deleteServiceGrants(sandboxId, port))
  }
}

export const SqliteSandboxStore = Layer.effect(SandboxStore, onSqlite(makeSqliteSandboxStore))
export const SqliteSandboxVolumeStore = Layer.effect(SandboxVolumeStore, onSqlite(makeSqliteSandboxVolumeStore))
export const SqliteTemplateStore = Layer.effect(TemplateStore, onSqlite(makeSqliteTemplateStore))
export const SqlitePoolStore = Layer.effect(PoolStore, onSqlite(makeSqlitePoolStore))
export const SqliteSnapshotStore = Layer.effect(SnapshotStore, onSqlite(makeSqliteSnapshotStore))
export const SqliteQuotaStore = Layer.effect(QuotaStore, onSqlite(makeSqliteQuotaStore))
export const SqliteRegistryStore = Layer.effect(RegistryStore, onSqlite(makeSqliteRegistryStore))
export const SqliteServiceGrantStore = Layer.effect(ServiceGrantStore, onSqlite(makeSqliteServiceGrantStore))
