/**
 * Deep list pages on Postgres: the page at a deep offset is the one a plain OFFSET gives, walks
 * fewer than STRIDE index entries, and stays right after another replica inserts or deletes.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeClient, makePool, type PgClientShape } from "../../server/store/postgres/client.ts"
import { migrate } from "../../server/store/postgres/migrations.ts"
import { makePager, pageWhere, STRIDE } from "../../server/store/postgres/pages.ts"
import { type PostgresServer, startPostgres } from "../support/postgres.ts"

const TENANT = "t-1"
const ROWS = 20_000
let server: PostgresServer
let replicaA: PgClientShape
let replicaB: PgClientShape
const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

beforeAll(async () => {
  server = await startPostgres()
  const url = await server.createDatabase()
  replicaA = makeClient(makePool(url, { max: 2 }))
  replicaB = makeClient(makePool(url, { max: 2 }))
  await run(migrate(replicaA))
  await run(
    replicaA.execute(`
      INSERT INTO organizations VALUES ('org', 'org', NULL, now());
      INSERT INTO tenants VALUES ('${TENANT}', 'org', 't', now()), ('t-2', 'org', 't', now());
      INSERT INTO sandbox_volumes (id, tenant_id, organization_id, name, size_bytes, size, storage_class, created_at, updated_at)
        SELECT 'v' || i, CASE WHEN i % 3 = 0 THEN 't-2' ELSE '${TENANT}' END, 'org', 'vol-' || i, 1024, '1Ki', 'standard', now(), now()
        FROM generate_series(1, ${ROWS}) AS i;
    `)
  )
  await run(replicaA.execute("VACUUM ANALYZE sandbox_volumes"))
}, 120_000)
afterAll(async () => {
  await replicaA?.pool.end()
  await replicaB?.pool.end()
  await server?.stop()
})

const query = `SELECT v.id FROM sandbox_volumes v WHERE ${pageWhere("sandbox_volumes", "v")}`
const naive = (offset: number, limit: number) =>
  run(replicaA.query<{ id: string }>("SELECT id FROM sandbox_volumes WHERE tenant_id = $1 ORDER BY seq LIMIT $2 OFFSET $3", [TENANT, limit, offset]))

describe("postgres deep pages", () => {
  it("answers what a plain OFFSET answers, at every depth and past the end", async () => {
    const pager = makePager("sandbox_volumes")
    for (const offset of [0, 5, STRIDE * 4, STRIDE * 4 + 17, 9_999, 13_300, 13_330, 50_000]) {
      expect(await run(pager.page<{ id: string }>(replicaA, query, TENANT, 25, offset))).toEqual(await naive(offset, 25))
    }
  })

  it("a deep page walks less than a stride of the index, not the offset", async () => {
    const pager = makePager("sandbox_volumes")
    const offset = 13_000
    await run(pager.page(replicaA, query, TENANT, 25, offset)) // finds the checkpoints once
    const start = await run(replicaA.transaction((sql) => pager.locate(sql, TENANT, offset)))
    expect(start.offset).toBeLessThan(STRIDE)
    const plan = await run(
      replicaA.one<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${query.replace("$2", "25")}`.replace(/\$(\d)/g, (_, n) => ({ 1: `'${TENANT}'`, 3: start.from.toString(), 4: String(start.offset) })[n as "1"]!))
    )
    const walked: Array<number> = []
    const visit = (node: any) => {
      if (/Index/.test(node["Node Type"])) walked.push(node["Actual Rows"] * (node["Actual Loops"] ?? 1))
      for (const child of node.Plans ?? []) visit(child)
    }
    visit(JSON.parse(plan!["QUERY PLAN"] as unknown as string)[0].Plan)
    expect(Math.max(...walked)).toBeLessThan(STRIDE + 25)
  })

  it("stays right after another replica inserts and deletes", async () => {
    const pager = makePager("sandbox_volumes")
    const offset = 9_000
    expect(await run(pager.page(replicaA, query, TENANT, 10, offset))).toEqual(await naive(offset, 10))
    // Replica B deletes rows before the page and inserts one: positions shift.
    await run(replicaB.execute("DELETE FROM sandbox_volumes WHERE tenant_id = $1 AND seq IN (SELECT seq FROM sandbox_volumes WHERE tenant_id = $1 ORDER BY seq LIMIT 7)", [TENANT]))
    await run(
      replicaB.execute(
        "INSERT INTO sandbox_volumes (id, tenant_id, organization_id, name, size_bytes, size, storage_class, created_at, updated_at) VALUES ('late', $1, 'org', 'late', 1, '1', 'standard', now(), now())",
        [TENANT]
      )
    )
    expect(await run(pager.page(replicaA, query, TENANT, 10, offset))).toEqual(await naive(offset, 10))
    const total = (await run(replicaA.one<{ n: number }>("SELECT count(*)::int AS n FROM sandbox_volumes WHERE tenant_id = $1", [TENANT])))!.n
    expect(await run(pager.page(replicaA, query, TENANT, 10, total - 3))).toEqual(await naive(total - 3, 10))
  })
})
