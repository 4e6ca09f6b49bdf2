/**
 * The revision runtime shared by several replicas on one real PostgreSQL database: each step is
 * applied exactly once, a replica that dies mid-claim loses its claim to another, and leased
 * claims are fenced (a lost lease writes nothing).
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeLogger } from "../../server/log.ts"
import { makeClient, makePool, type PgClientShape } from "../../server/store/postgres/client.ts"
import { migrate } from "../../server/store/postgres/migrations.ts"
import { claimDueSql, claimLeased, completeLeased, makePostgresRuntime, renewLease } from "../../server/store/postgres/runtime.ts"
import { eventually } from "../support/server.ts"
import { type PostgresServer, startPostgres } from "../support/postgres.ts"

const TENANT = "00000000-0000-4000-8000-000000000001"
let server: PostgresServer
const clients: Array<PgClientShape> = []
const open = (url: string) => {
  const client = makeClient(makePool(url, { max: 3 }))
  clients.push(client)
  return client
}
const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

beforeAll(async () => {
  server = await startPostgres()
}, 60_000)
afterAll(async () => {
  await Promise.all(clients.map((client) => client.pool.end()))
  await server?.stop()
})

/** A migrated database with `count` deployments, each with one CREATING revision already due, and an audit of every status change. */
const seeded = async (count: number) => {
  const url = await server.createDatabase()
  const admin = open(url)
  await run(migrate(admin))
  await run(
    admin.execute(`
      CREATE TABLE audit (revision_id text NOT NULL, from_status text NOT NULL, to_status text NOT NULL, by_backend int NOT NULL DEFAULT pg_backend_pid());
      CREATE FUNCTION audit_status() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.status IS DISTINCT FROM OLD.status THEN INSERT INTO audit (revision_id, from_status, to_status) VALUES (NEW.id, OLD.status, NEW.status); END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER audit_status AFTER UPDATE ON revisions FOR EACH ROW EXECUTE FUNCTION audit_status();
      INSERT INTO organizations VALUES ('org', 'org', NULL, now());
      INSERT INTO tenants VALUES ('${TENANT}', 'org', 'tenant', now());
    `)
  )
  const past = new Date(Date.now() - 60_000).toISOString()
  const revisions: Array<string> = []
  for (let i = 0; i < count; i++) {
    const deployment = randomUUID()
    const revision = randomUUID()
    revisions.push(revision)
    const config = JSON.stringify({ image_uri: `ghcr.io/acme/app:${i}` })
    await run(
      admin.execute(
        `INSERT INTO deployments (id, tenant_id, name, source, source_config, source_revision_config, secrets, status, latest_revision_id, revision_seq, created_at, updated_at)
         VALUES ($1, $2, $3, 'external_container', '{"deployment_type":"dev"}', $4, '[]', 'AWAITING_DATABASE', $5, 1, $6, $6)`,
        [deployment, TENANT, `app-${i}`, config, revision, past]
      )
    )
    await run(
      admin.execute(
        `INSERT INTO revisions (id, tenant_id, deployment_id, seq, source, status, source_revision_config, secrets, created_at, updated_at)
         VALUES ($1, $2, $3, 1, 'external_container', 'CREATING', $4, '[]', $5, $5)`,
        [revision, TENANT, deployment, config, past]
      )
    )
  }
  return { url, admin, revisions }
}

const EXTERNAL_STEPS = ["CREATING>QUEUED", "QUEUED>AWAITING_DEPLOY", "AWAITING_DEPLOY>DEPLOYING", "DEPLOYING>DEPLOYED"]

const allDeployed = (admin: PgClientShape) => async () => {
  const row = await run(admin.one<{ n: number }>("SELECT count(*)::int AS n FROM revisions WHERE status <> 'DEPLOYED'"))
  return row!.n === 0 ? true : undefined
}

describe("postgres runtime across replicas", () => {
  it("three replicas polling one database apply every step exactly once", async () => {
    const { url, admin, revisions } = await seeded(120)
    const log = makeLogger("silent")
    const runtimes = [0, 1, 2].map(() => makePostgresRuntime({ client: open(url), stepMs: 15, pollMs: 5, batch: 16, log }))
    runtimes.forEach((runtime) => runtime.start())
    try {
      await eventually(allDeployed(admin), 30_000)
    } finally {
      await Promise.all(runtimes.map((runtime) => runtime.close()))
    }
    const audit = await run(admin.query<{ revision_id: string; from_status: string; to_status: string; by_backend: number }>("SELECT * FROM audit"))
    expect(audit.length).toBe(revisions.length * EXTERNAL_STEPS.length)
    for (const revision of revisions) {
      const steps = audit.filter((row) => row.revision_id === revision).map((row) => `${row.from_status}>${row.to_status}`)
      expect(steps.sort()).toEqual([...EXTERNAL_STEPS].sort())
    }
    // The work really was shared.
    expect(new Set(audit.map((row) => row.by_backend)).size).toBeGreaterThan(1)
    const deployments = await run(admin.query<{ status: string; ok: boolean }>("SELECT status, active_revision_id = latest_revision_id AS ok FROM deployments"))
    expect(deployments.every((row) => row.status === "READY" && row.ok)).toBe(true)
  }, 60_000)

  it("a replica that dies holding a claim loses it: another replica finishes its revisions", async () => {
    const { url, admin } = await seeded(10)
    // The dying replica: claims every due revision in an open transaction, then its process is gone.
    const dying = new pg.Client({ connectionString: url })
    dying.on("error", () => undefined)
    await dying.connect()
    await dying.query("BEGIN")
    const claimed = await dying.query(claimDueSql, [new Date().toISOString(), 100])
    expect(claimed.rowCount).toBe(10)

    const survivor = makePostgresRuntime({ client: open(url), stepMs: 15, pollMs: 5, log: makeLogger("silent") })
    survivor.start()
    try {
      await new Promise((resolve) => setTimeout(resolve, 300))
      // Locked rows are skipped, not waited for and not stepped twice.
      expect((await run(admin.one<{ n: number }>("SELECT count(*)::int AS n FROM audit")))!.n).toBe(0)
      // The replica dies: its connection drops, Postgres rolls its transaction back.
      ;(dying as unknown as { connection: { stream: { destroy: () => void } } }).connection.stream.destroy()
      await eventually(allDeployed(admin), 20_000)
    } finally {
      await survivor.close()
    }
    expect((await run(admin.one<{ n: number }>("SELECT count(*)::int AS n FROM audit")))!.n).toBe(10 * EXTERNAL_STEPS.length)
  }, 60_000)

  it("leased claims: taken over after expiry, and the old owner's late write is refused", async () => {
    const { url, admin, revisions } = await seeded(3)
    const sql = open(url)
    const cutoff = new Date().toISOString()
    const mine = await run(claimLeased(sql, { owner: "replica-a", cutoff, leaseMs: 400, limit: 10 }))
    expect(mine.map((row) => row.id).sort()).toEqual([...revisions].sort())
    // Held: nobody else gets them, and the local runtime's claim skips them too.
    expect(await run(claimLeased(sql, { owner: "replica-b", cutoff, leaseMs: 400, limit: 10 }))).toEqual([])
    expect(await run(sql.query(claimDueSql.replace("FOR UPDATE OF r, d SKIP LOCKED", ""), [cutoff, 10]))).toEqual([])
    expect(await run(renewLease(sql, { owner: "replica-a", revisionId: revisions[0]!, leaseMs: 400 }))).toBe(true)
    await new Promise((resolve) => setTimeout(resolve, 600))
    // replica-a stopped renewing (it died or stalled): replica-b takes over.
    const taken = await run(claimLeased(sql, { owner: "replica-b", cutoff, leaseMs: 5_000, limit: 10 }))
    expect(taken.length).toBe(3)
    const now = new Date().toISOString()
    const step = { revisionId: revisions[0]!, from: "CREATING", to: "QUEUED", message: null, deployedAt: null, now }
    expect(await run(completeLeased(sql, { owner: "replica-a", ...step }))).toBe(false)
    expect(await run(renewLease(sql, { owner: "replica-a", revisionId: revisions[0]!, leaseMs: 400 }))).toBe(false)
    expect(await run(completeLeased(sql, { owner: "replica-b", ...step }))).toBe(true)
    expect(await run(completeLeased(sql, { owner: "replica-b", ...step }))).toBe(false)
    const audit = await run(admin.query("SELECT revision_id, from_status, to_status FROM audit"))
    expect(audit).toEqual([{ revision_id: revisions[0], from_status: "CREATING", to_status: "QUEUED" }])
  }, 30_000)
})
