/**
 * Private image registries' credentials (the password sealed by the caller), per tenant; a taken
 * name fails with `SandboxConflict`. One Layer per backend; every backend passes
 * `test/store/sandboxStore.suite.ts`.
 */
import { Context } from "effect"
import type { Page, SandboxConflict } from "../../core/index.ts"
import type { StoreOp as Op } from "./StoreError.ts"

/** A private image registry's credentials; `password` is sealed (server/secrets/secrets.ts), never plaintext. */
export interface RegistryRecord {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly url: string
  readonly username: string
  /** The password as sealed with the server's secrets key. */
  readonly password_sealed: string
  readonly created_at: string
  readonly updated_at: string
}

export class RegistryStore extends Context.Service<
  RegistryStore,
  {
    readonly registryByName: (tenantId: string, name: string) => Op<RegistryRecord | undefined>
    /** By id (a snapshot's `registry_id`), within the tenant. */
    readonly registryById: (tenantId: string, id: string) => Op<RegistryRecord | undefined>
    /** A page of the tenant's registries, newest first; `nameContains` filters by substring (case-sensitive). */
    readonly listRegistries: (tenantId: string, page: Page, nameContains?: string) => Op<ReadonlyArray<RegistryRecord>>
    /** Every registry of the tenant (what an image pull chooses its credentials from). */
    readonly tenantRegistries: (tenantId: string) => Op<ReadonlyArray<RegistryRecord>>
    readonly insertRegistry: (registry: RegistryRecord) => Op<void, SandboxConflict>
    /** Writes name, url, username, password_sealed and updated_at of `after`. */
    readonly updateRegistry: (after: RegistryRecord) => Op<void, SandboxConflict>
    readonly deleteRegistry: (id: string) => Op<void>
    /** Every sealed password through `reseal` (secrets key rotation); answers how many. */
    readonly resealRegistryPasswords: (reseal: (sealed: string) => string) => Op<number>
  }
>()("slipway/RegistryStore") {}
