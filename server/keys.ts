/**
 * `npm run keys -- <command>`: manages API keys and organizations in the server's database file.
 * Safe to run while the server is up (SQLite WAL; changes apply to the next request).
 */
import { randomUUID } from "node:crypto"
import { existsSync } from "node:fs"
import { parseArgs } from "node:util"
import { Effect, Exit, Layer, Scope } from "effect"
import type { AdminCommand } from "./admin.ts"
import { ConfigError, configFromEnv, type ServerConfig } from "./config.ts"
import { KeyStore } from "./store/KeyStore.ts"
import { type Stores, storesFor } from "./store/index.ts"
import { requireUuid } from "./cli.ts"
import { resolveSecretsKeys, secretsKeyProblem } from "./secrets/secretsKey.ts"
import { integrationCommand } from "./deployments/admin.ts"
import { secretsCommand } from "./secrets/admin.ts"
import { quotaCommand } from "./sandboxes/admin.ts"

/** The commands server areas contribute. */
const adminCommands: ReadonlyArray<AdminCommand> = [quotaCommand, integrationCommand, secretsCommand]

const usage = `Usage: npm run keys -- <command> [options]

Commands:
  create --tenant <uuid> | --new-tenant [--org <uuid>] [--description <text>] [--json]
                 mint a key for a tenant (the tenant and its organization are created if new;
                 without --org a new tenant gets its own organization). --new-tenant generates
                 the tenant's uuid. Prints the key once (--json: {id, key, tenant_id, organization_id}).
  tenant-id      print a new random tenant uuid (touches no database)
  list           list keys (id, organization, default tenant, prefix, created, revoked)
  revoke <id>    revoke a key by id
${adminCommands.map((command) => `  ${command.usage}`).join("\n")}

Options of every command:
  --create-database   create the SQLite file when it does not exist (otherwise a missing file is
                      an error: the path is probably wrong)

The database is DATABASE_URL (postgres://...) when set, else DATABASE_PATH (default ./data/slipway.db);
secrets are sealed with SLIPWAY_SECRETS_KEY or, by default, the key file <DATABASE_PATH>.secrets-key.`

/** One line naming the problem (the usage is for --help): exit 2. */
const fail = (message: string): never => {
  process.stderr.write(`keys: ${message}\nkeys: run "npm run keys -- --help" for the commands and their options\n`)
  process.exit(2)
}

const parse = () => {
  try {
    return parseArgs({
    allowPositionals: true,
    options: {
      tenant: { type: "string" },
      org: { type: "string" },
      description: { type: "string" },
      set: { type: "string" },
      owner: { type: "string" },
      provider: { type: "string" },
      "read-token-file": { type: "string" },
      "read-token-stdin": { type: "boolean" },
      clear: { type: "boolean" },
      "new-tenant": { type: "boolean" },
      "create-database": { type: "boolean" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" }
    }
    })
  } catch (error) {
    // An unknown or malformed option: node's message ("Unknown option '--tenat'"), not a stack trace.
    return fail(String((error as Error).message).replace(/\. To specify a positional argument.*$/, ""))
  }
}

const main = async () => {
  const { positionals, values } = parse()
  const [command, ...rest] = positionals
  if (values.help || !command) {
    process.stdout.write(`${usage}\n`)
    return
  }
  if (command === "tenant-id") {
    process.stdout.write(`${randomUUID()}\n`)
    return
  }
  let config: ServerConfig | undefined
  try {
    config = configFromEnv()
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message)
    throw error
  }
  // A path that does not exist is far more often a wrong path than a wish for a new database: the
  // key would be minted into a file no server reads (and a secrets key file created beside it).
  const { databasePath, databaseUrl } = config!
  if (databaseUrl === undefined && databasePath !== ":memory:" && !existsSync(databasePath) && !values["create-database"]) {
    fail(`no database at ${databasePath}: set DATABASE_PATH to the server's file, or pass --create-database to create it`)
  }
  const keyProblem = secretsKeyProblem(config!)
  if (keyProblem !== undefined) fail(keyProblem)
  const secrets = resolveSecretsKeys(config!)
  if (secrets.created) process.stderr.write(`keys: generated the key that encrypts secrets at rest in ${secrets.path}; keep it with the database's backups\n`)
  config = { ...config!, secretsKey: secrets.key, previousSecretsKeys: secrets.previous }
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(storesFor(config!), scope))
  const run = <A, E>(effect: Effect.Effect<A, E, Stores>): Promise<A> =>
    Effect.runPromise(Effect.provideContext(effect, context)).catch((error) => fail(String((error as Error)?.message ?? error)))
  const keys = await run(KeyStore)
  try {
    switch (command) {
      case "create": {
        if (values["new-tenant"] && values.tenant !== undefined) fail("create takes --tenant <uuid> or --new-tenant, not both")
        if (!values["new-tenant"] && values.tenant === undefined) fail("create needs --tenant <uuid>, or --new-tenant to generate the tenant's id")
        const tenantId = values["new-tenant"] ? randomUUID() : requireUuid("tenant", values.tenant, fail, "create ")
        const organizationId = values.org === undefined ? undefined : requireUuid("org", values.org, fail)
        const created = await run(keys.createKey({
          tenantId,
          ...(organizationId ? { organizationId } : {}),
          ...(values.description ? { description: values.description } : {})
        }))
        if (values.json) {
          process.stdout.write(`${JSON.stringify({ id: created.id, key: created.key, tenant_id: tenantId, organization_id: created.organizationId })}\n`)
          return
        }
        process.stderr.write(
          `keys: created key ${created.id} for ${values["new-tenant"] ? "the new tenant" : "tenant"} ${tenantId} (organization ${created.organizationId}); it is shown only now:\n`
        )
        process.stdout.write(`${created.key}\n`)
        return
      }
      case "list":
        for (const key of await run(keys.listKeys())) process.stdout.write(`${JSON.stringify(key)}\n`)
        return
      case "revoke": {
        const id = rest[0] ?? fail("revoke needs a key id")
        if (!(await run(keys.revokeKey(id)))) fail(`no active key with id ${id}`)
        process.stdout.write(`revoked ${id}\n`)
        return
      }
      default: {
        const admin = adminCommands.find((candidate) => candidate.name === command)
        if (!admin) fail(`unknown command "${command}"`)
        await admin!.run({ run, config: config!, secrets, values, positionals: rest, fail })
      }
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

await main()
