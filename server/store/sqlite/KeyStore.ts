/** All SQL for organizations, tenants and keys (SQLite), synchronous: the `KeyStore` Layer and the key tool use it. */
import { randomUUID, timingSafeEqual } from "node:crypto"
import { Effect, Layer } from "effect"
import { Forbidden, Unauthorized } from "../../../core/index.ts"
import { type AuthContext, generateKey, hashKey, KeyStore as KeyStoreService, type KeyListing } from "../KeyStore.ts"
import { type Db, immediate } from "./database.ts"
import { op, toStoreError } from "./errors.ts"
import { SqliteDatabase } from "./SqliteDatabase.ts"

interface KeyRow {
  readonly id: string
  readonly organization_id: string
  readonly default_tenant_id: string
  readonly key_hash: string
}

export interface KeyRepository {
  readonly ensureTenant: (tenantId: string, organizationId: string) => void
  /** Registers `key` (or a newly generated one) and returns the plaintext once. */
  readonly createKey: (options: { tenantId: string; organizationId?: string; key?: string; description?: string }) => {
    key: string
    id: string
    organizationId: string
  }
  readonly hasAnyKey: () => boolean
  readonly authenticate: (key: string | undefined, tenantHeader: string | undefined) => AuthContext | Unauthorized | Forbidden
  readonly listKeys: () => ReadonlyArray<KeyListing>
  readonly revokeKey: (id: string) => boolean
  readonly tenantOrganization: (tenantId: string) => string | undefined
}

export const makeKeyRepository = (db: Db): KeyRepository => {
  const insertOrganization = db.prepare("INSERT OR IGNORE INTO organizations (id, name, created_at) VALUES (?, ?, ?)")
  const insertTenant = db.prepare("INSERT OR IGNORE INTO tenants (id, organization_id, name, created_at) VALUES (?, ?, ?, ?)")
  const tenantOrg = db.prepare("SELECT organization_id FROM tenants WHERE id = ?").pluck()
  const insertKey = db.prepare(
    "INSERT INTO api_keys (id, organization_id, default_tenant_id, key_hash, key_prefix, description, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
  )
  const keyByHash = db.prepare("SELECT id, organization_id, default_tenant_id, key_hash FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL")
  const existingKey = db.prepare("SELECT id, organization_id FROM api_keys WHERE key_hash = ?")
  const anyKey = db.prepare("SELECT 1 FROM api_keys WHERE revoked_at IS NULL LIMIT 1").pluck()
  const allKeys = db.prepare("SELECT id, organization_id, default_tenant_id, key_prefix, created_at, revoked_at FROM api_keys ORDER BY created_at")
  const revoke = db.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL")

  const tenantOrganization = (tenantId: string) => tenantOrg.get(tenantId) as string | undefined

  const ensureTenant = (tenantId: string, organizationId: string) => {
    const now = new Date().toISOString()
    insertOrganization.run(organizationId, organizationId, now)
    insertTenant.run(tenantId, organizationId, tenantId, now)
    const owner = tenantOrganization(tenantId)
    if (owner !== organizationId) throw new Error(`tenant ${tenantId} already belongs to organization ${owner}`)
  }

  // A dummy hash keeps the unknown-key path doing the same compare as the known-key path.
  const dummyHash = Buffer.from(hashKey("slipway-dummy"), "hex")

  return {
    ensureTenant,
    tenantOrganization,
    createKey: ({ tenantId, organizationId, key, description }) =>
      immediate(db)(() => {
        const org = organizationId ?? tenantOrganization(tenantId) ?? randomUUID()
        ensureTenant(tenantId, org)
        const plaintext = key ?? generateKey()
        const hash = hashKey(plaintext)
        const existing = existingKey.get(hash) as { id: string; organization_id: string } | undefined
        if (existing) return { key: plaintext, id: existing.id, organizationId: existing.organization_id }
        const id = randomUUID()
        insertKey.run(id, org, tenantId, hash, plaintext.slice(0, 8), description ?? null, new Date().toISOString())
        return { key: plaintext, id, organizationId: org }
      }),
    hasAnyKey: () => anyKey.get() !== undefined,
    listKeys: () => allKeys.all() as any,
    revokeKey: (id) => revoke.run(new Date().toISOString(), id).changes > 0,
    authenticate: (key, tenantHeader) => {
      if (key === undefined || key === "") return new Unauthorized({ message: "Missing API key" })
      // One-shot hex digest (`crypto.hash` into a Buffer takes a slower path than hex + Buffer.from).
      const hex = hashKey(key)
      const digest = Buffer.from(hex, "hex")
      const row = keyByHash.get(hex) as KeyRow | undefined
      const stored = row ? Buffer.from(row.key_hash, "hex") : dummyHash
      const matches = stored.length === digest.length && timingSafeEqual(stored, digest)
      if (!row || !matches) return new Unauthorized({ message: "Invalid API key" })
      const tenantId = tenantHeader === undefined || tenantHeader === "" ? row.default_tenant_id : tenantHeader.trim().toLowerCase()
      if (tenantId !== row.default_tenant_id && tenantOrganization(tenantId) !== row.organization_id) {
        return new Forbidden({ message: `API key does not grant access to tenant ${tenantId}` })
      }
      return { keyId: row.id, organizationId: row.organization_id, tenantId }
    }
  }
}

/** `KeyStore` over the server's SQLite file. */
export const makeSqliteKeyStore = (db: Db): KeyStoreService["Service"] => {
  const keys = makeKeyRepository(db)
  return {
    ensureTenant: (tenantId, organizationId) => op(() => keys.ensureTenant(tenantId, organizationId)),
    createKey: (options) => op(() => keys.createKey(options)),
    hasAnyKey: () => op(() => keys.hasAnyKey()),
    authenticate: (key, tenantHeader) =>
      Effect.flatMap(op(() => keys.authenticate(key, tenantHeader)), (result) => ("_tag" in result ? Effect.fail(result) : Effect.succeed(result))),
    authenticateNow: (key, tenantHeader) => {
      try {
        return keys.authenticate(key, tenantHeader)
      } catch (error) {
        throw toStoreError(error)
      }
    },
    listKeys: () => op(() => keys.listKeys()),
    revokeKey: (id) => op(() => keys.revokeKey(id)),
    tenantOrganization: (tenantId) => op(() => keys.tenantOrganization(tenantId))
  }
}

export const SqliteKeyStore = Layer.effect(
  KeyStoreService,
  Effect.gen(function* () {
    const { db } = yield* SqliteDatabase
    return makeSqliteKeyStore(db)
  })
)
