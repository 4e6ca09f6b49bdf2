/**
 * `npm run keys -- <command>`: manages API keys and organizations in the server's database file.
 * Safe to run while the server is up (SQLite WAL; changes apply to the next request).
 */
import { parseArgs } from "node:util"
import { Effect, Exit, Layer, Scope } from "effect"
import { adminCommands } from "./admin.ts"
import { ConfigError, configFromEnv, type ServerConfig } from "./config.ts"
import { DeploymentStore } from "./store/DeploymentStore.ts"
import { KeyStore } from "./store/KeyStore.ts"
import { SandboxStore } from "./store/SandboxStore.ts"
import { storesFor } from "./store/index.ts"
import { requireUuid } from "./cli.ts"
import { resolveSecretsKeys } from "./secretsKey.ts"

const usage = `Usage: npm run keys -- <command> [options]

Commands:
  create --tenant <uuid> [--org <uuid>] [--description <text>]
                 mint a key for a tenant (the tenant and its organization are created if new;
                 without --org a new tenant gets its own organization). Prints the key once.
  list           list keys (id, organization, default tenant, prefix, created, revoked)
  revoke <id>    revoke a key by id
${adminCommands.map((command) => `  ${command.usage}`).join("\n")}

The database is DATABASE_URL (postgres://...) when set, else DATABASE_PATH (default ./data/slipway.db);
secrets are sealed with SLIPWAY_SECRETS_KEY or, by default, the key file <DATABASE_PATH>.secrets-key.`

const fail = (message: string): never => {
  process.stderr.write(`keys: ${message}\n\n${usage}\n`)
  process.exit(2)
}

const main = async () => {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      tenant: { type: "string" },
      org: { type: "string" },
      description: { type: "string" },
      set: { type: "string" },
      owner: { type: "string" },
      provider: { type: "string" },
      help: { type: "boolean", short: "h" }
    }
  })
  const [command, ...rest] = positionals
  if (values.help || !command) {
    process.stdout.write(`${usage}\n`)
    return
  }
  let config: ServerConfig | undefined
  try {
    config = configFromEnv()
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message)
    throw error
  }
  const secrets = resolveSecretsKeys({ databasePath: config!.databasePath, secretsKey: config!.secretsKey })
  if (secrets.created) process.stderr.write(`keys: generated the key that encrypts secrets at rest in ${secrets.path}; keep it with the database's backups\n`)
  config = { ...config!, secretsKey: secrets.key, previousSecretsKeys: secrets.previous }
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(storesFor(config!), scope))
  const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
    Effect.runPromise(effect).catch((error) => fail(String((error as Error)?.message ?? error)))
  const keys = Effect.runSync(Effect.provideContext(KeyStore, context))
  const deployments = Effect.runSync(Effect.provideContext(DeploymentStore, context))
  const sandboxes = Effect.runSync(Effect.provideContext(SandboxStore, context))
  try {
    switch (command) {
      case "create": {
        const tenantId = requireUuid("tenant", values.tenant, fail, "create ")
        const organizationId = values.org === undefined ? undefined : requireUuid("org", values.org, fail)
        const created = await run(keys.createKey({
          tenantId,
          ...(organizationId ? { organizationId } : {}),
          ...(values.description ? { description: values.description } : {})
        }))
        process.stderr.write(`keys: created key ${created.id} for tenant ${tenantId} (organization ${created.organizationId}); it is shown only now:\n`)
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
        await admin!.run({ keys, deployments, sandboxes, run, config: config!, secrets, values, positionals: rest, fail })
      }
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

await main()
