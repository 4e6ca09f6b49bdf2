/** The PostgreSQL backend of `KeyStore`: organizations, tenants and API keys (only SHA-256 hashes stored). */
import { randomUUID, timingSafeEqual } from "node:crypto"
import { Effect, Layer } from "effect"
import { Forbidden, Unauthorized } from "../../../core/index.ts"
import { type AuthContext, generateKey, hashKey, KeyStore, type KeyListing } from "../KeyStore.ts"
import { StoreError } from "../StoreError.ts"
import { PostgresDatabase, type PgStoreKit } from "./PostgresDatabase.ts"

// A dummy hash keeps the unknown-key path doing the same compare as the known-key path.
const dummyHash = Buffer.from(hashKey("slipway-dummy"), "hex")

/** The statement of every authenticated request (also run by the bench's floor, bench/postgres-floor.ts). */
export const authenticateSql = "SELECT id, organization_id, default_tenant_id, key_hash FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL"

export const makePostgresKeyStore = (kit: PgStoreKit): KeyStore["Service"] => {
  const { query, one, execute, transaction } = kit

  const tenantOrganization = (tenantId: string) =>
    Effect.map(one<{ organization_id: string }>("SELECT organization_id FROM tenants WHERE id = $1", [tenantId]), (row) => row?.organization_id)

  const ensureTenant = Effect.fnUntraced(function* (tenantId: string, organizationId: string) {
    const now = new Date().toISOString()
    // ON CONFLICT DO NOTHING: replicas starting together all ensure the default tenant.
    yield* execute("INSERT INTO organizations (id, name, created_at) VALUES ($1, $1, $2) ON CONFLICT (id) DO NOTHING", [organizationId, now])
    yield* execute("INSERT INTO tenants (id, organization_id, name, created_at) VALUES ($1, $2, $1, $3) ON CONFLICT (id) DO NOTHING", [tenantId, organizationId, now])
    const owner = yield* tenantOrganization(tenantId)
    if (owner !== organizationId) {
      return yield* Effect.die(new Error(`tenant ${tenantId} already belongs to organization ${owner}`))
    }
  })

  return {
    ensureTenant,
    tenantOrganization,
    createKey: ({ tenantId, organizationId, key, description }) =>
      transaction(
        Effect.gen(function* () {
          const org = organizationId ?? (yield* tenantOrganization(tenantId)) ?? randomUUID()
          yield* ensureTenant(tenantId, org)
          const plaintext = key ?? generateKey()
          const hash = hashKey(plaintext)
          const existing = yield* one<{ id: string; organization_id: string }>("SELECT id, organization_id FROM api_keys WHERE key_hash = $1", [hash])
          if (existing) return { key: plaintext, id: existing.id, organizationId: existing.organization_id }
          const id = randomUUID()
          yield* execute(
            "INSERT INTO api_keys (id, organization_id, default_tenant_id, key_hash, key_prefix, description, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            [id, org, tenantId, hash, plaintext.slice(0, 8), description ?? null, new Date().toISOString()]
          )
          return { key: plaintext, id, organizationId: org }
        })
      ),
    hasAnyKey: () => Effect.map(one("SELECT 1 AS any FROM api_keys WHERE revoked_at IS NULL LIMIT 1"), (row) => row !== undefined),
    listKeys: () =>
      query<KeyListing>("SELECT id, organization_id, default_tenant_id, key_prefix, created_at, revoked_at FROM api_keys ORDER BY created_at, id"),
    revokeKey: (id) =>
      Effect.map(execute("UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL", [new Date().toISOString(), id]), (n) => n > 0),
    // The read path of every request: one statement, no generator (Effect.gen costs a generator
    // object and its steps on every request).
    authenticate: (key, tenantHeader): Effect.Effect<AuthContext, StoreError | Unauthorized | Forbidden> => {
      if (key === undefined || key === "") return Effect.fail(new Unauthorized({ message: "Missing API key" }))
      const hash = hashKey(key)
      return Effect.flatMap(
        one<{ id: string; organization_id: string; default_tenant_id: string; key_hash: string }>(
          authenticateSql,
          [hash]
        ),
        (row): Effect.Effect<AuthContext, StoreError | Unauthorized | Forbidden> => {
          const stored = row ? Buffer.from(row.key_hash, "hex") : dummyHash
          const matches = stored.length === dummyHash.length && timingSafeEqual(stored, Buffer.from(hash, "hex"))
          if (!row || !matches) return Effect.fail(new Unauthorized({ message: "Invalid API key" }))
          const tenantId = tenantHeader === undefined || tenantHeader === "" ? row.default_tenant_id : tenantHeader.trim().toLowerCase()
          const auth: AuthContext = { keyId: row.id, organizationId: row.organization_id, tenantId }
          if (tenantId === row.default_tenant_id) return Effect.succeed(auth)
          return Effect.flatMap(tenantOrganization(tenantId), (organization) =>
            organization === row.organization_id ? Effect.succeed(auth) : Effect.fail(new Forbidden({ message: `API key does not grant access to tenant ${tenantId}` }))
          )
        }
      )
    }
  }
}

/** `KeyStore` over the server's PostgreSQL database. */
export const PostgresKeyStore = Layer.effect(
  KeyStore,
  Effect.gen(function* () {
    return makePostgresKeyStore(yield* PostgresDatabase)
  })
)
