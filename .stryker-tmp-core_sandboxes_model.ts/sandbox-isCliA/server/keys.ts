/**
 * `npm run keys -- <command>`: manages API keys and organizations in the server's database file.
 * Safe to run while the server is up (SQLite WAL; changes apply to the next request).
 */
// @ts-nocheck

import { parseArgs } from "node:util"
import { makeKeyStore } from "./auth/keys.ts"
import { ConfigError, configFromEnv } from "./config.ts"
import { closeDatabase, openDatabase } from "./db/database.ts"
import { allMigrations } from "./index.ts"
import { adminCommands } from "./admin.ts"
import { requireUuid } from "./cli.ts"

const usage = `Usage: npm run keys -- <command> [options]

Commands:
  create --tenant <uuid> [--org <uuid>] [--description <text>]
                 mint a key for a tenant (the tenant and its organization are created if new;
                 without --org a new tenant gets its own organization). Prints the key once.
  list           list keys (id, organization, default tenant, prefix, created, revoked)
  revoke <id>    revoke a key by id
${adminCommands.map((command) => `  ${command.usage}`).join("\n")}

The database is DATABASE_PATH (default ./data/slipway.db).`

const fail = (message: string): never => {
  process.stderr.write(`keys: ${message}\n\n${usage}\n`)
  process.exit(2)
}

const main = () => {
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
  let config
  try {
    config = configFromEnv()
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message)
    throw error
  }
  const db = openDatabase(config!.databasePath, allMigrations())
  const keys = makeKeyStore(db)
  try {
    switch (command) {
      case "create": {
        const tenantId = requireUuid("tenant", values.tenant, fail, "create ")
        const organizationId = values.org === undefined ? undefined : requireUuid("org", values.org, fail)
        const created = keys.createKey({
          tenantId,
          ...(organizationId ? { organizationId } : {}),
          ...(values.description ? { description: values.description } : {})
        })
        process.stderr.write(`keys: created key ${created.id} for tenant ${tenantId} (organization ${created.organizationId}); it is shown only now:\n`)
        process.stdout.write(`${created.key}\n`)
        return
      }
      case "list":
        for (const key of keys.listKeys()) process.stdout.write(`${JSON.stringify(key)}\n`)
        return
      case "revoke": {
        const id = rest[0] ?? fail("revoke needs a key id")
        if (!keys.revokeKey(id)) fail(`no active key with id ${id}`)
        process.stdout.write(`revoked ${id}\n`)
        return
      }
      default: {
        const admin = adminCommands.find((candidate) => candidate.name === command)
        if (!admin) fail(`unknown command "${command}"`)
        admin!.run({ db, config: config!, values, positionals: rest, fail })
      }
    }
  } finally {
    closeDatabase(db)
  }
}

main()
