/** The SQLite backend of `SandboxStore`: the repository's prepared statements, rows to records. */
import { Effect, Layer } from "effect"
import { SandboxConflict } from "../../../core/index.ts"
import { SandboxStore } from "../SandboxStore.ts"
import type { StoreError } from "../StoreError.ts"
import { type Db, sqliteTransactional } from "./database.ts"
import { isUniqueViolation, op, toStoreError } from "./errors.ts"
import { toTemplateRecord, toTemplateView } from "../rows.ts"
import { makeRegistryRepository } from "./registryRepository.ts"
import { makeSandboxRepository } from "./sandboxRepository.ts"
import { sqlPage } from "./page.ts"
import { SqliteDatabase } from "./SqliteDatabase.ts"

/** A write that may take a name already taken (a lost race the UNIQUE index still guards). */
const naming = <A>(kind: string, name: string, work: () => A): Effect.Effect<A, SandboxConflict | StoreError> =>
  Effect.suspend((): Effect.Effect<A, SandboxConflict | StoreError> => {
    try {
      return Effect.succeed(work())
    } catch (error) {
      return isUniqueViolation(error) ? Effect.fail(new SandboxConflict({ message: `${kind} ${name} already exists` })) : Effect.fail(toStoreError(error))
    }
  })

export const makeSqliteSandboxStore = (db: Db): SandboxStore["Service"] => {
  const repo = makeSandboxRepository(db)
  const registries = makeRegistryRepository(db)
  return {
    transaction: sqliteTransactional(db),

    organizationQuota: (organizationId) => op(() => repo.organizationQuota(organizationId)),
    setOrganizationQuota: (organizationId, quota) => op(() => repo.setOrganizationQuota(organizationId, quota)),
    organizationUsage: (organizationId) => op(() => repo.organizationUsage(organizationId)),

    volumeByName: (tenantId, name) => op(() => repo.volumeByName(tenantId, name)),
    listVolumes: (tenantId, page) => op(() => repo.listVolumes(tenantId, sqlPage(page))),
    insertVolume: (volume) => naming("volume", volume.name, () => repo.insertVolume(volume)),
    updateVolume: (before, after) => naming("volume", after.name, () => repo.updateVolume(before, after)),
    deleteVolume: (id) => op(() => repo.deleteVolume(id)),
    templatesMounting: (volumeId) => op(() => repo.templatesMounting(volumeId)),
    volumesAttached: (volumeIds) => op(() => repo.volumesAttached(volumeIds)),

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
    insertTemplate: (template) =>
      naming("template", template.name, () =>
        repo.insertTemplate({ ...template, proxy_config: template.proxy_config === null ? null : JSON.stringify(template.proxy_config) })
      ),
    renameTemplate: (template, name, now) => naming("template", name, () => repo.renameTemplate(template.id, name, now)),
    deleteTemplate: (id) => op(() => repo.deleteTemplate(id)),
    templateUsage: (templateId) => op(() => repo.templateUsage(templateId)),

    poolByName: (tenantId, name) => op(() => repo.poolByName(tenantId, name)),
    listPools: (tenantId, page) => op(() => repo.listPools(tenantId, sqlPage(page))),
    insertPool: (pool) => naming("pool", pool.name, () => repo.insertPool(pool)),
    updatePool: (before, after) => naming("pool", after.name, () => repo.updatePool(before, after)),
    deletePool: (id) => op(() => repo.deletePool(id)),
    poolSandboxes: (poolId) => op(() => repo.poolSandboxes(poolId)),
    readyPoolSandboxes: (tenantId, templateId, limit) => op(() => repo.readyPoolSandboxes(tenantId, templateId, limit)),
    claimSandbox: (sandbox, name, now) =>
      naming("sandbox", name, () => (sandbox.pool_id === null ? false : repo.claimSandbox(sandbox.id, sandbox.pool_id, name, now))),

    sandboxByName: (tenantId, name) => op(() => repo.sandboxByName(tenantId, name)),
    sandboxById: (tenantId, id) => op(() => repo.sandboxById(tenantId, id)),
    sandboxAccess: (tenantId, id) => op(() => repo.sandboxAccess(tenantId, id)),
    sandboxNameTaken: (tenantId, name) => op(() => repo.sandboxNameTaken(tenantId, name)),
    listSandboxes: (tenantId, page) => op(() => repo.listSandboxes(tenantId, sqlPage(page))),
    insertSandbox: (sandbox) => naming("sandbox", sandbox.name, () => repo.insertSandbox(sandbox)),
    renameSandbox: (sandbox, name, now) => naming("sandbox", name, () => repo.renameSandbox(sandbox.id, name, now)),
    deleteSandbox: (id) => op(() => repo.deleteSandbox(id)),
    setSandboxStatus: (id, from, to, message, now) => op(() => repo.setSandboxStatus(id, from, to, message, now)),
    allSandboxes: () => op(() => repo.allSandboxes()),
    updateSandboxRetention: (id, retention, now) => op(() => repo.updateSandboxRetention(id, retention, now)),
    sandboxesWithRetention: () => op(() => repo.sandboxesWithRetention()),

    snapshotById: (tenantId, id) => op(() => repo.snapshotById(tenantId, id)),
    snapshotByName: (tenantId, name) => op(() => repo.snapshotByName(tenantId, name)),
    listSnapshots: (tenantId, page) => op(() => repo.listSnapshots(tenantId, { ...page, ...sqlPage(page) })),
    listSandboxesMatching: (tenantId, filter) => op(() => repo.listSandboxesMatching(tenantId, { ...filter, ...sqlPage(filter) })),
    insertSnapshot: (snapshot) => naming("snapshot", snapshot.name, () => repo.insertSnapshot(snapshot)),
    setSnapshotStatus: (id, from, to, message, digest, now) => op(() => repo.setSnapshotStatus(id, from, to, message, digest, now)),
    deleteSnapshot: (id) => op(() => repo.deleteSnapshot(id)),
    snapshotUsage: (snapshotId) => op(() => repo.snapshotUsage(snapshotId)),
    buildingSnapshots: () => op(() => repo.buildingSnapshots()),

    registryByName: (tenantId, name) => op(() => registries.registryByName(tenantId, name)),
    registryById: (tenantId, id) => op(() => registries.registryById(tenantId, id)),
    listRegistries: (tenantId, page, nameContains) => op(() => registries.listRegistries(tenantId, sqlPage(page), nameContains)),
    tenantRegistries: (tenantId) => op(() => registries.tenantRegistries(tenantId)),
    insertRegistry: (registry) => naming("registry", registry.name, () => registries.insertRegistry(registry)),
    updateRegistry: (registry) => naming("registry", registry.name, () => registries.updateRegistry(registry)),
    deleteRegistry: (id) => op(() => registries.deleteRegistry(id)),
    resealRegistryPasswords: (reseal) => op(() => registries.resealRegistryPasswords(reseal)),
    serviceGrant: (sandboxId, port) => op(() => registries.serviceGrant(sandboxId, port)),
    serviceGrantById: (id) => op(() => registries.serviceGrantById(id)),
    listServiceGrants: (sandboxId, now) => op(() => registries.listServiceGrants(sandboxId, now)),
    putServiceGrant: (grant) => op(() => registries.putServiceGrant(grant)),
    extendServiceGrant: (id, expiresAt) => op(() => registries.extendServiceGrant(id, expiresAt)),
    deleteServiceGrants: (sandboxId, port) => op(() => registries.deleteServiceGrants(sandboxId, port))
  }
}

/** `SandboxStore` over the server's SQLite file. */
export const SqliteSandboxStore = Layer.effect(
  SandboxStore,
  Effect.gen(function* () {
    const { db } = yield* SqliteDatabase
    return makeSqliteSandboxStore(db)
  })
)

