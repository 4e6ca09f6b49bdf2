/**
 * Several replicas on one PostgreSQL database, as `node server/main.ts` processes with
 * DATABASE_URL: the reliability suite's race tests sent alternately to three replicas, and a
 * replica killed mid-load: nothing it acknowledged is lost and its unfinished revisions complete
 * on another replica once its leases expire.
 */
import { execFile } from "node:child_process"
import { join } from "node:path"
import { promisify } from "node:util"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { describeRaces, QUOTA } from "../reliability/races.suite.ts"
import { stopChild } from "../reliability/support.ts"
import { type ChildServer, eventually, makeRequester, spawnServer, tempDatabasePath } from "../support/server.ts"
import { type PostgresServer, startPostgres } from "../support/postgres.ts"

let postgres: PostgresServer
let url: string
let replicas: Array<ChildServer> = []
const unused = tempDatabasePath("slipway-pg-replicas") // DATABASE_PATH is ignored when DATABASE_URL is set
const LEASE_MS = 1500
/** The replicas of one PostgreSQL database share the key that seals its secrets (required with DATABASE_URL). */
const SECRETS_KEY = "replicas-share-this-secrets-key"

const spawnReplica = (databaseUrl: string, env: Record<string, string> = {}) =>
  spawnServer({
    databasePath: unused.path,
    env: { DATABASE_URL: databaseUrl, SLIPWAY_SECRETS_KEY: SECRETS_KEY, SLIPWAY_STORAGE_QUOTA: QUOTA, SLIPWAY_LEASE_MS: String(LEASE_MS), SLIPWAY_RUNTIME: "simulated", ...env }
  })

const sql = async <R>(text: string, params: Array<unknown> = [], database = url): Promise<Array<R>> => {
  const client = new pg.Client({ connectionString: database })
  await client.connect()
  try {
    return (await client.query(text, params)).rows as Array<R>
  } finally {
    await client.end()
  }
}

beforeAll(async () => {
  postgres = await startPostgres()
  url = await postgres.createDatabase()
  // Started together: they race on the empty database's migrations too.
  replicas = await Promise.all([spawnReplica(url), spawnReplica(url), spawnReplica(url)])
}, 120_000)
afterAll(async () => {
  await Promise.all(replicas.map((replica) => stopChild(replica)))
  await postgres?.stop()
  unused.remove()
})

const mintKey = async (databaseUrl: string): Promise<string> => {
  const { stdout } = await promisify(execFile)(process.execPath, ["server/keys.ts", "create", "--tenant", crypto.randomUUID()], {
    cwd: join(import.meta.dirname, "../.."),
    env: { ...process.env, DATABASE_URL: databaseUrl, SLIPWAY_SECRETS_KEY: SECRETS_KEY },
    encoding: "utf8"
  })
  return stdout.trim()
}

describe("three replicas on one PostgreSQL database: the race tests", () => {
  describeRaces({
    requesters: async () => {
      const key = await mintKey(url)
      return replicas.map((replica) => makeRequester(replica.url, key))
    },
    orphanRevisions: async () =>
      Number((await sql<{ n: number }>("SELECT count(*)::int AS n FROM revisions r WHERE NOT EXISTS (SELECT 1 FROM deployments d WHERE d.id = r.deployment_id)"))[0]!.n)
  })
})

describe("a replica killed mid-load", () => {
  it("loses nothing it acknowledged, and its unfinished revisions complete on the other replica", async () => {
    const databaseUrl = await postgres.createDatabase()
    // Slow steps (4 x 1.5 s per revision) so the victim holds unfinished revisions when it dies.
    const [victim, survivor] = await Promise.all([spawnReplica(databaseUrl, { SLIPWAY_REVISION_STEP_MS: "1500" }), spawnReplica(databaseUrl, { SLIPWAY_REVISION_STEP_MS: "1500" })])
    try {
      const key = await mintKey(databaseUrl)
      const [onVictim, onSurvivor] = [makeRequester(victim!.url, key), makeRequester(survivor!.url, key)]
      const acknowledged: Array<{ id: string; via: "victim" | "survivor" }> = []
      const create = async (i: number) => {
        const via = i % 2 === 0 ? "victim" : "survivor"
        try {
          const answer = await (via === "victim" ? onVictim : onSurvivor)("POST", "/v2/deployments", {
            body: { name: `load-${i}`, source: "external_container", source_revision_config: { image_uri: `registry.example.com/app:${i}` } }
          })
          if (answer.status === 201) acknowledged.push({ id: answer.body.id, via })
          else expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(500)
        } catch {
          // The victim died under this request: not acknowledged, nothing is promised.
        }
      }
      const first = Promise.all(Array.from({ length: 30 }, (_, i) => create(i)))
      await first
      // Kill it while its revisions are in flight.
      const pid = victim!.process.pid!
      const heldByVictim = await sql<{ n: number }>(
        `SELECT count(*)::int AS n FROM revisions WHERE lease_owner LIKE $1 AND status NOT IN ('DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED', 'UNKNOWN')`,
        [`%:${pid}:%`],
        databaseUrl
      )
      const second = Promise.all(Array.from({ length: 30 }, (_, i) => create(30 + i)))
      await stopChild(victim, "SIGKILL")
      await second
      expect(heldByVictim[0]!.n).toBeGreaterThan(0)
      expect(acknowledged.filter((item) => item.via === "victim").length).toBeGreaterThan(0)

      // Every acknowledged deployment is there, and every one reaches READY: the victim's too.
      await eventually(
        async () => {
          const answers = await Promise.all(acknowledged.map((item) => onSurvivor("GET", `/v2/deployments/${item.id}`)))
          for (const answer of answers) expect(answer.status).toBe(200)
          return answers.every((answer) => answer.body.status === "READY") ? true : undefined
        },
        60_000,
        250
      )
      const revisions = await sql<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM revisions GROUP BY status", [], databaseUrl)
      expect(revisions).toEqual([{ status: "DEPLOYED", n: acknowledged.length }])
    } finally {
      await stopChild(victim)
      await stopChild(survivor)
    }
  }, 180_000)
})
