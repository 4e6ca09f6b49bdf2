/** The `KeyStore` conformance suite: keys, tenants and what a key grants. */
import { randomUUID } from "node:crypto"
import { expect, layer } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { KeyStore } from "../../server/store/KeyStore.ts"

export const keyStoreSuite = (backend: string, stores: Layer.Layer<KeyStore, unknown>) =>
  layer(stores, { timeout: "60 seconds" })(`KeyStore (${backend})`, (it) => {
    it.effect("mints a key that authenticates for its tenant and its organization's other tenants only", () =>
      Effect.gen(function* () {
        const keys = yield* KeyStore
        const tenantId = randomUUID()
        const created = yield* keys.createKey({ tenantId })
        expect(created.key).toMatch(/^slw_/)
        expect(yield* keys.authenticate(created.key, undefined)).toEqual({ keyId: created.id, organizationId: created.organizationId, tenantId })
        const sibling = randomUUID()
        yield* keys.ensureTenant(sibling, created.organizationId)
        expect((yield* keys.authenticate(created.key, sibling.toUpperCase())).tenantId).toBe(sibling)
        const other = yield* keys.createKey({ tenantId: randomUUID() })
        expect((yield* Effect.flip(keys.authenticate(created.key, (yield* keys.authenticate(other.key, undefined)).tenantId)))._tag).toBe("Forbidden")
        expect(yield* keys.tenantOrganization(sibling)).toBe(created.organizationId)
      })
    )

    it.effect("refuses a missing, unknown or revoked key", () =>
      Effect.gen(function* () {
        const keys = yield* KeyStore
        expect((yield* Effect.flip(keys.authenticate(undefined, undefined))).message).toBe("Missing API key")
        expect((yield* Effect.flip(keys.authenticate("slw_nope", undefined))).message).toBe("Invalid API key")
        const created = yield* keys.createKey({ tenantId: randomUUID() })
        expect(yield* keys.revokeKey(created.id)).toBe(true)
        expect(yield* keys.revokeKey(created.id)).toBe(false)
        expect((yield* Effect.flip(keys.authenticate(created.key, undefined))).message).toBe("Invalid API key")
        expect((yield* keys.listKeys()).find((key) => key.id === created.id)?.revoked_at).not.toBeNull()
      })
    )

    it.effect("registers a given key once (idempotent) and reports that keys exist", () =>
      Effect.gen(function* () {
        const keys = yield* KeyStore
        const tenantId = randomUUID()
        const key = `slw_given_${randomUUID()}`
        const first = yield* keys.createKey({ tenantId, key })
        const again = yield* keys.createKey({ tenantId, key })
        expect(again.id).toBe(first.id)
        expect(yield* keys.hasAnyKey()).toBe(true)
      })
    )
  })
