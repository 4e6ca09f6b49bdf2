/**
 * `slipway keys list | create | revoke`: API keys in a local server's database file, through the
 * same `KeyStore` the server and its key tool use (server/store/). Loaded only when used, so the
 * other commands never open SQLite.
 */
import { randomUUID } from "node:crypto"
import { existsSync } from "node:fs"
import { isUuid } from "../core/api/common.ts"
import { CliError, ExitCode } from "./errors.ts"
import { type Output, table } from "./output.ts"

export interface KeysOptions {
  readonly database?: string
  readonly createDatabase?: boolean
}

const openStore = async (options: KeysOptions) => {
  const path = options.database ?? process.env.DATABASE_PATH ?? "./data/slipway.db"
  if (path !== ":memory:" && !existsSync(path) && !options.createDatabase) {
    throw new CliError(ExitCode.notFound, "DatabaseNotFound", `no database at ${path} (point --database or DATABASE_PATH at the server's file, or pass --create-database)`)
  }
  const [{ Effect, Exit, Layer, Scope }, { SqliteStores }, { KeyStore }] = await Promise.all([
    import("effect"),
    import("../server/store/sqlite/index.ts"),
    import("../server/store/KeyStore.ts")
  ])
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(SqliteStores({ path }), scope))
  const store = Effect.runSync(Effect.provideContext(KeyStore, context))
  const run = <A, E>(effect: import("effect").Effect.Effect<A, E>) => Effect.runPromise(effect)
  return { keys: store, run, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

const uuidFlag = (flag: string, value: string | undefined): string | undefined => {
  if (value === undefined) return undefined
  if (!isUuid(value)) throw new CliError(ExitCode.usage, "UsageError", `--${flag} must be a uuid, got ${JSON.stringify(value)}`)
  return value.toLowerCase()
}

export const listKeys = async (output: Output, options: KeysOptions) => {
  const { keys, run, close } = await openStore(options)
  try {
    const list = await run(keys.listKeys())
    output.result(list, () =>
      table(
        ["ID", "PREFIX", "TENANT", "ORGANIZATION", "CREATED", "REVOKED"],
        list.map((key) => [key.id, key.key_prefix, key.default_tenant_id, key.organization_id, key.created_at, key.revoked_at ?? ""])
      )
    )
  } finally {
    await close()
  }
}

export const createKey = async (output: Output, options: KeysOptions & { tenant?: string; newTenant?: boolean; org?: string; description?: string }) => {
  if (options.newTenant && options.tenant !== undefined) throw new CliError(ExitCode.usage, "UsageError", "keys create takes --tenant <uuid> or --new-tenant, not both")
  const tenantId = options.newTenant ? randomUUID() : uuidFlag("tenant", options.tenant)
  if (tenantId === undefined) throw new CliError(ExitCode.usage, "UsageError", "keys create needs --tenant <uuid>, or --new-tenant to generate the tenant's id")
  const organizationId = uuidFlag("org", options.org)
  const { keys, run, close } = await openStore(options)
  try {
    const created = await run(keys.createKey({ tenantId, ...(organizationId ? { organizationId } : {}), ...(options.description ? { description: options.description } : {}) }))
    if (!output.json) output.progress(`created key ${created.id} for tenant ${tenantId} (organization ${created.organizationId}); it is shown only now:`)
    output.result({ id: created.id, key: created.key, tenant_id: tenantId, organization_id: created.organizationId }, () => created.key)
  } finally {
    await close()
  }
}

export const revokeKey = async (output: Output, id: string, options: KeysOptions) => {
  const { keys, run, close } = await openStore(options)
  try {
    if (!(await run(keys.revokeKey(id)))) throw new CliError(ExitCode.notFound, "NotFound", `no active key with id ${id}`)
    output.result({ revoked: id }, () => `revoked ${id}`)
  } finally {
    await close()
  }
}
