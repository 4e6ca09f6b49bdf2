/**
 * Deep pages of deployments and revisions on Postgres do not walk from the start of the list: the
 * statements the store sends for a page at offset 18,000 carry no OFFSET of that size, and the
 * page statement's plan (EXPLAIN ANALYZE) has no node producing STRIDE + limit rows or more (index entries walked, rows sorted). Also:
 * the rows are those a plain OFFSET gives, on one replica and after another one's writes.
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import type pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { DeploymentFilter } from "../../server/store/DeploymentStore.ts"
import { makeClient, makePool, type PgClientShape } from "../../server/store/postgres/client.ts"
import { deepListSql, makePostgresDeploymentStore, makePostgresRevisionStore } from "../../server/store/postgres/deploymentStores.ts"
import { migrate } from "../../server/store/postgres/migrations.ts"
import { STRIDE } from "../../server/store/postgres/pages.ts"
import { makeKit } from "../../server/store/postgres/PostgresDatabase.ts"
import { type PostgresServer, startPostgres } from "../support/postgres.ts"

const TENANT = "t-deep"
const ROWS = 20_000
const REVISIONS = 12_000
const DEPLOYMENT = "00000000-0000-4000-a000-000000000001"
const all: DeploymentFilter = { nameContains: null, statuses: null, imageVersion: null, deploymentType: null, ids: null }
let server: PostgresServer
let poolA: pg.Pool
let clientA: PgClientShape
let clientB: PgClientShape
/** Statements sent on replica A's connections (text and values), when recording. */
let recorded: Array<{ text: string; values: ReadonlyArray<unknown> }> | undefined
const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

/** Records what goes over a connection of the pool: the test reads the statements the store sent. */
const record = (client: { query: (...args: Array<any>) => any }) => {
  const original = client.query.bind(client)
  client.query = (config: any, ...rest: Array<any>) => {
    if (recorded && typeof config === "object" && config !== null) recorded.push({ text: config.text, values: config.values ?? [] })
    else if (recorded && typeof config === "string") recorded.push({ text: config, values: Array.isArray(rest[0]) ? rest[0] : [] })
    return original(config, ...rest)
  }
}

beforeAll(async () => {
  server = await startPostgres()
  const url = await server.createDatabase()
  poolA = makePool(url, { max: 2 })
  const recordedClients = new WeakSet<object>()
  poolA.on("acquire", (client) => {
    if (recordedClients.has(client)) return
    recordedClients.add(client)
    record(client)
  })
  clientA = makeClient(poolA)
  clientB = makeClient(makePool(url, { max: 2 }))
  await run(migrate(clientA))
  await run(
    clientA.execute(`
      INSERT INTO organizations VALUES ('org', 'org', NULL, now());
      INSERT INTO tenants VALUES ('${TENANT}', 'org', 't', now()), ('t-other', 'org', 't', now());
      INSERT INTO deployments (id, tenant_id, name, source, source_config, source_revision_config, secrets, image_version, status, latest_revision_id, active_revision_id, revision_seq, created_at, updated_at)
        SELECT CASE WHEN i = 1 THEN '${DEPLOYMENT}' ELSE gen_random_uuid()::text END, CASE WHEN i % 4 = 0 THEN 't-other' ELSE '${TENANT}' END, 'd-' || i,
          'external_container', '{}', '{"image_uri":"x"}', '[]', NULL, 'READY', NULL, NULL, 0,
          -- Microseconds (keys travel as text, exactly); every 10th shares its creation time with the one before: the id breaks the tie.
          timestamptz '2026-01-01' + make_interval(secs => (i - (i % 10 = 0)::int) + 0.000001 * ((i - (i % 10 = 0)::int) % 7)), now()
        FROM generate_series(1, ${ROWS}) AS i;
      INSERT INTO revisions (id, tenant_id, deployment_id, seq, source, status, status_message, source_revision_config, secrets, deployed_at, created_at, updated_at)
        SELECT gen_random_uuid()::text, '${TENANT}', '${DEPLOYMENT}', i, 'external_container', 'DEPLOYED', NULL, '{}', '[]', NULL, now(), now()
        FROM generate_series(1, ${REVISIONS}) AS i;
    `)
  )
  await run(clientA.execute("VACUUM ANALYZE deployments"))
  await run(clientA.execute("VACUUM ANALYZE revisions"))
}, 180_000)
afterAll(async () => {
  await clientA?.pool.end()
  await clientB?.pool.end()
  await server?.stop()
})

const naiveDeployments = (offset: number, limit: number) =>
  run(
    clientB.query<{ id: string }>("SELECT id FROM deployments WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3", [TENANT, limit, offset])
  ).then((rows) => rows.map((row) => row.id))
const naiveRevisions = (offset: number, limit: number) =>
  run(clientB.query<{ seq: number }>("SELECT seq FROM revisions WHERE deployment_id = $1 ORDER BY seq DESC LIMIT $2 OFFSET $3", [DEPLOYMENT, limit, offset])).then((rows) =>
    rows.map((row) => row.seq)
  )

/** The most rows one node of the plan of `text` with `values` produced (its LIMIT aside): index entries walked, rows sorted... */
const rowsWalked = async (text: string, values: ReadonlyArray<unknown>): Promise<number> => {
  const plan = await run(clientB.transaction((sql) => sql.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values)))
  const walked: Array<number> = []
  const visit = (node: any) => {
    if (node["Node Type"] !== "Limit") walked.push(node["Actual Rows"] * (node["Actual Loops"] ?? 1))
    for (const child of node.Plans ?? []) visit(child)
  }
  visit(JSON.parse(plan[0]!["QUERY PLAN"] as unknown as string)[0].Plan)
  return Math.max(...walked)
}

describe("postgres deep pages of deployments and revisions", () => {
  const storeA = () => makePostgresDeploymentStore(makeKit(clientA))

  it("deployments: a deep page sends no large OFFSET and walks less than a stride; rows as a plain OFFSET gives", async () => {
    const store = storeA()
    const offset = 13_500
    const ids = async (o: number, limit: number) => (await run(store.listDeployments(TENANT, all, { limit, offset: o }))).map((row) => row.id)
    expect(await ids(offset, 25)).toEqual(await naiveDeployments(offset, 25)) // finds the checkpoints once
    recorded = []
    expect(await ids(offset + 3, 25)).toEqual(await naiveDeployments(offset + 3, 25))
    const sent = recorded
    recorded = undefined
    // Warm: one statement reads the rows and the list's version (no transaction, no second round trip).
    expect(sent.map((statement) => statement.text)).toEqual([deepListSql.deploymentsVersioned])
    const page = sent[0]
    // Checkpoints known: no OFFSET near the position, in values or in text.
    for (const statement of sent) {
      for (const value of statement.values) if (typeof value === "number") expect(value).toBeLessThan(STRIDE)
      for (const [, n] of statement.text.matchAll(/OFFSET (\d+)/g)) expect(Number(n)).toBeLessThan(STRIDE)
    }
    expect(await rowsWalked(page!.text, page!.values)).toBeLessThan(STRIDE + 25)
    // The same page by a plain OFFSET walks the offset.
    expect(await rowsWalked("SELECT id FROM deployments WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT 25 OFFSET $2", [TENANT, offset + 3])).toBeGreaterThan(offset)
  })

  it("deployments: every depth, past the end, and after another replica's creates and deletes", async () => {
    const store = storeA()
    const total = (ROWS * 3) / 4
    const ids = async (o: number, limit: number) => (await run(store.listDeployments(TENANT, all, { limit, offset: o }))).map((row) => row.id)
    for (const offset of [STRIDE * 4, STRIDE * 4 + 1, 5_000, STRIDE * 7 - 1, STRIDE * 7, 14_990, total - 1, total, 40_000]) {
      expect(await ids(offset, 20)).toEqual(await naiveDeployments(offset, 20))
    }
    // Replica B (its own pool, its own checkpoints) deletes the 5 newest and creates 2: positions shift.
    const storeB = makePostgresDeploymentStore(makeKit(clientB))
    await run(clientB.execute("DELETE FROM deployments WHERE id IN (SELECT id FROM deployments WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT 5)", [TENANT]))
    for (const i of [1, 2]) {
      const id = randomUUID()
      await run(
        storeB.createDeployment(
          {
            id,
            tenant_id: TENANT,
            name: `late-${i}`,
            source: "external_container",
            source_config: {} as any,
            source_revision_config: { image_uri: "x" } as any,
            secrets: [],
            image_version: null,
            status: "READY",
            latest_revision_id: null,
            active_revision_id: null,
            revision_seq: 0,
            created_at: new Date(Date.UTC(2027, 0, i)).toISOString(),
            updated_at: new Date().toISOString()
          },
          { id: randomUUID(), tenant_id: TENANT, deployment_id: id, seq: 1, source: "external_container", status: "CREATING", status_message: null, source_revision_config: { image_uri: "x" } as any, secrets: [], deployed_at: null, created_at: new Date().toISOString(), updated_at: new Date().toISOString() },
          randomUUID()
        )
      )
    }
    for (const offset of [5_000, 14_990 - 3]) expect(await ids(offset, 20)).toEqual(await naiveDeployments(offset, 20))
  })

  it("revisions: a deep page walks less than a stride; rows as a plain OFFSET gives, also after a new revision", async () => {
    const store = makePostgresRevisionStore(makeKit(clientA))
    const seqs = async (o: number, limit: number) => (await run(store.listRevisions(TENANT, DEPLOYMENT, null, { limit, offset: o }))).map((row) => row.seq)
    for (const offset of [0, STRIDE * 4, 9_001, REVISIONS - 1, REVISIONS + 5]) expect(await seqs(offset, 20)).toEqual(await naiveRevisions(offset, 20))
    recorded = []
    expect(await seqs(10_500, 20)).toEqual(await naiveRevisions(10_500, 20))
    const sent = recorded
    recorded = undefined
    expect(sent.map((statement) => statement.text)).toEqual([deepListSql.revisionsVersioned])
    const page = sent[0]
    for (const statement of sent) for (const [, n] of statement.text.matchAll(/OFFSET (\d+)/g)) expect(Number(n)).toBeLessThan(STRIDE)
    expect(page!.values.at(-1)).toBeLessThan(STRIDE)
    expect(await rowsWalked(page!.text, page!.values)).toBeLessThan(STRIDE + 20)
    await run(
      clientB.execute(
        `INSERT INTO revisions (id, tenant_id, deployment_id, seq, source, status, status_message, source_revision_config, secrets, deployed_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, 'external_container', 'CREATING', NULL, '{}', '[]', NULL, now(), now())`,
        [randomUUID(), TENANT, DEPLOYMENT, REVISIONS + 1]
      )
    )
    expect(await seqs(10_500, 20)).toEqual(await naiveRevisions(10_500, 20))
  })
})
