/**
 * API keys and tenancy: organizations, tenants and keys. Keys are random 32-byte tokens shown
 * once; only their SHA-256 hash is stored. One Layer per backend; every backend passes
 * `test/store/keyStore.suite.ts`.
 */
import { hash, randomBytes } from "node:crypto"
import { Context, type Effect } from "effect"
import type { Forbidden, Unauthorized } from "../../core/index.ts"
import type { StoreError } from "./StoreError.ts"

export interface AuthContext {
  readonly keyId: string
  readonly organizationId: string
  readonly tenantId: string
}

/** `crypto.hash` is the one-shot digest: about 5x cheaper than a `createHash` object, and it runs on every request. */
export const hashKey = (key: string): string => hash("sha256", key, "hex")

export const generateKey = (): string => `slw_${randomBytes(32).toString("base64url")}`

export interface KeyListing {
  readonly id: string
  readonly organization_id: string
  readonly default_tenant_id: string
  readonly key_prefix: string
  readonly created_at: string
  readonly revoked_at: string | null
}

export interface CreateKey {
  readonly tenantId: string
  readonly organizationId?: string
  /** Registers this key instead of generating one. */
  readonly key?: string
  readonly description?: string
}

type Op<A, E = never> = Effect.Effect<A, StoreError | E>

export class KeyStore extends Context.Service<
  KeyStore,
  {
    /** Creates the organization and tenant when missing; a tenant of another organization is a defect of the caller. */
    readonly ensureTenant: (tenantId: string, organizationId: string) => Op<void>
    /** Registers `key` (or a newly generated one) and answers the plaintext once. */
    readonly createKey: (options: CreateKey) => Op<{ readonly key: string; readonly id: string; readonly organizationId: string }>
    readonly hasAnyKey: () => Op<boolean>
    /** Constant-time: an unknown key costs the same compare as a known one. */
    readonly authenticate: (key: string | undefined, tenantHeader: string | undefined) => Op<AuthContext, Unauthorized | Forbidden>
    /**
     * The same check, answered at once, for a backend whose lookup is synchronous (SQLite): the
     * HTTP layer then authenticates without running an effect. Throws a `StoreError` when the
     * backend fails. Absent on asynchronous backends (PostgreSQL), which use `authenticate`.
     */
    readonly authenticateNow?: (key: string | undefined, tenantHeader: string | undefined) => AuthContext | Unauthorized | Forbidden
    readonly listKeys: () => Op<ReadonlyArray<KeyListing>>
    readonly revokeKey: (id: string) => Op<boolean>
    readonly tenantOrganization: (tenantId: string) => Op<string | undefined>
  }
>()("slipway/KeyStore") {}
