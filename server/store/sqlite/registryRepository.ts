/** SQL of the sandbox area's registries and service URL grants (migration 240), prepared once. */
import type { Page } from "../../../core/index.ts"
import type { RegistryRecord } from "../RegistryStore.ts"
import { columns } from "../rows.ts"
import type { ServiceGrantRecord } from "../ServiceGrantStore.ts"
import { type Db, immediate, perDatabase } from "./database.ts"

const registryColumns = columns.registry
const grantColumns = columns.serviceGrant

/** `%`, `_` and `\\` of a LIKE pattern taken literally. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

export const makeRegistryRepository = (db: Db) => {
  const byName = db.prepare(`SELECT ${registryColumns} FROM sandbox_registries WHERE tenant_id = ? AND name = ?`)
  const byId = db.prepare(`SELECT ${registryColumns} FROM sandbox_registries WHERE tenant_id = ? AND id = ?`)
  const list = db.prepare(`SELECT ${registryColumns} FROM sandbox_registries WHERE tenant_id = ? ORDER BY seq DESC LIMIT ? OFFSET ?`)
  const listContaining = db.prepare(
    `SELECT ${registryColumns} FROM sandbox_registries WHERE tenant_id = ? AND name LIKE ? ESCAPE '\\' ORDER BY seq DESC LIMIT ? OFFSET ?`
  )
  const all = db.prepare(`SELECT ${registryColumns} FROM sandbox_registries WHERE tenant_id = ? ORDER BY seq`)
  const insert = db.prepare(
    `INSERT INTO sandbox_registries (${registryColumns}) VALUES (@id, @tenant_id, @name, @url, @username, @password_sealed, @created_at, @updated_at)`
  )
  const update = db.prepare(
    "UPDATE sandbox_registries SET name = @name, url = @url, username = @username, password_sealed = @password_sealed, updated_at = @updated_at WHERE id = @id"
  )
  const remove = db.prepare("DELETE FROM sandbox_registries WHERE id = ?")
  const sealed = db.prepare("SELECT id, password_sealed FROM sandbox_registries")
  const setSealed = db.prepare("UPDATE sandbox_registries SET password_sealed = ? WHERE id = ?")

  const grant = db.prepare(`SELECT ${grantColumns} FROM sandbox_service_grants WHERE sandbox_id = ? AND port = ?`)
  const grantById = db.prepare(`SELECT ${grantColumns} FROM sandbox_service_grants WHERE id = ?`)
  const grants = db.prepare(`SELECT ${grantColumns} FROM sandbox_service_grants WHERE sandbox_id = ? AND expires_at > ? ORDER BY port`)
  const dropGrant = db.prepare("DELETE FROM sandbox_service_grants WHERE sandbox_id = ? AND port = ?")
  const insertGrant = db.prepare(`INSERT INTO sandbox_service_grants (${grantColumns}) VALUES (@id, @tenant_id, @sandbox_id, @port, @created_at, @expires_at)`)
  const extendGrant = db.prepare("UPDATE sandbox_service_grants SET expires_at = ? WHERE id = ?")
  const dropGrants = db.prepare("DELETE FROM sandbox_service_grants WHERE sandbox_id = ?")

  return {
    registryByName: (tenantId: string, name: string) => byName.get(tenantId, name) as RegistryRecord | undefined,
    registryById: (tenantId: string, id: string) => byId.get(tenantId, id) as RegistryRecord | undefined,
    listRegistries: (tenantId: string, page: Page, nameContains: string | undefined) =>
      (nameContains
        ? listContaining.all(tenantId, `%${likeLiteral(nameContains)}%`, page.limit, page.offset)
        : list.all(tenantId, page.limit, page.offset)) as Array<RegistryRecord>,
    tenantRegistries: (tenantId: string) => all.all(tenantId) as Array<RegistryRecord>,
    insertRegistry: (registry: RegistryRecord) => void insert.run(registry),
    updateRegistry: (registry: RegistryRecord) => void update.run(registry),
    deleteRegistry: (id: string) => void remove.run(id),
    resealRegistryPasswords: (reseal: (stored: string) => string) =>
      immediate(db)(() => {
        const rows = sealed.all() as Array<{ id: string; password_sealed: string }>
        for (const row of rows) setSealed.run(reseal(row.password_sealed), row.id)
        return rows.length
      }),

    serviceGrant: (sandboxId: string, port: number) => grant.get(sandboxId, port) as ServiceGrantRecord | undefined,
    serviceGrantById: (id: string) => grantById.get(id) as ServiceGrantRecord | undefined,
    listServiceGrants: (sandboxId: string, now: string) => grants.all(sandboxId, now) as Array<ServiceGrantRecord>,
    putServiceGrant: (record: ServiceGrantRecord) =>
      immediate(db)(() => {
        dropGrant.run(record.sandbox_id, record.port)
        insertGrant.run(record)
      }),
    extendServiceGrant: (id: string, expiresAt: string) => void extendGrant.run(expiresAt, id),
    deleteServiceGrants: (sandboxId: string, port: number | undefined) =>
      (port === undefined ? dropGrants.run(sandboxId) : dropGrant.run(sandboxId, port)).changes
  }
}

/** The repository of a connection, its statements prepared once for every store that uses them. */
export const registryRepositoryOf = perDatabase(makeRegistryRepository)
