/**
 * API keys and tenancy: all SQL for organizations, tenants and keys. Keys are random 32-byte
 * tokens shown once; only their SHA-256 hash is stored.
 */
// @ts-nocheck

import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto"
import { Forbidden, Unauthorized } from "../../core/index.ts"
import { type Db, immediate } from "../db/database.ts"

export interface AuthContext {
  readonly keyId: string
  readonly organizationId: string
  readonly tenantId: string
}

export const hashKey = (key: string): string => createHash("sha256").update(key, "utf8").digest("hex")

export const generateKey = (): string => `slw_${randomBytes(32).toString("base64url")}`

interface KeyRow {
  readonly id: string
  readonly organization_id: string
  readonly default_tenant_id: string
  readonly key_hash: string
}

export interface KeyStore {
  readonly ensureTenant: (tenantId: string, organizationId: string) => void
  /** Registers `key` (or a newly generated one) and returns the plaintext once. */
  readonly createKey: (options: { tenantId: string; organizationId?: string; key?: string; description?: string }) => {
    key: string
    id: string
    organizationId: string
  }
  readonly hasAnyKey: () => boolean
  readonly authenticate: (key: string | undefined, tenantHeader: string | undefined) => AuthContext | Unauthorized | Forbidden
  readonly listKeys: () => ReadonlyArray<{ id: string; organization_id: string; default_tenant_id: string; key_prefix: string; created_at: string; revoked_at: string | null }>
  readonly revokeKey: (id: string) => boolean
  readonly tenantOrganization: (tenantId: string) => string | undefined
}

export const makeKeyStore = (db: Db): KeyStore => {
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
      const hash = hashKey(key)
      const row = keyByHash.get(hash) as KeyRow | undefined
      const stored = row ? Buffer.from(row.key_hash, "hex") : dummyHash
      const matches = stored.length === dummyHash.length && timingSafeEqual(stored, Buffer.from(hash, "hex"))
      if (!row || !matches) return new Unauthorized({ message: "Invalid API key" })
      const tenantId = tenantHeader === undefined || tenantHeader === "" ? row.default_tenant_id : tenantHeader.trim().toLowerCase()
      if (tenantId !== row.default_tenant_id && tenantOrganization(tenantId) !== row.organization_id) {
        return new Forbidden({ message: `API key does not grant access to tenant ${tenantId}` })
      }
      return { keyId: row.id, organizationId: row.organization_id, tenantId }
    }
  }
}
