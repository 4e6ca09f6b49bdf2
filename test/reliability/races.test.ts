/**
 * Races, run against two child servers on the same database file so their SQLite transactions
 * really contend (one process alone serializes its synchronous handlers). The races themselves
 * are in races.suite.ts (shared with the Postgres multi-replica test).
 */
import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { type ChildServer, makeRequester, tempDatabasePath } from "../support/server.ts"
import { describeRaces, QUOTA } from "./races.suite.ts"
import { spawnPair, stopChild, withDatabase } from "./support.ts"

const database = tempDatabasePath("slipway-races")
let servers: [ChildServer, ChildServer]

beforeAll(async () => {
  servers = await spawnPair(database.path, { SLIPWAY_STORAGE_QUOTA: QUOTA })
})
afterAll(async () => {
  await Promise.all(servers?.map((server) => stopChild(server)) ?? [])
  database.remove()
})

/**
 * A key for a new tenant in a new organization (its own quota), minted with the key tool.
 * Asynchronously: blocking this process while the servers' keep-alive clocks run would make
 * the HTTP client reuse sockets the servers are closing.
 */
const mintKey = async (): Promise<string> => {
  const { stdout } = await promisify(execFile)(process.execPath, ["server/keys.ts", "create", "--tenant", crypto.randomUUID()], {
    cwd: join(import.meta.dirname, "../.."),
    env: { ...process.env, DATABASE_PATH: database.path },
    encoding: "utf8"
  })
  return stdout.trim()
}

describeRaces({
  requesters: async () => {
    const key = await mintKey()
    return servers.map((server) => makeRequester(server.url, key))
  },
  orphanRevisions: async () =>
    withDatabase(database.path, (db) =>
      Number(db.prepare("SELECT count(*) FROM revisions r WHERE NOT EXISTS (SELECT 1 FROM deployments d WHERE d.id = r.deployment_id)").pluck().get())
    )
})
