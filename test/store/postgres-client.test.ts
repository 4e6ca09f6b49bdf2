/**
 * The Postgres connection layer against a real PostgreSQL server: value mapping (ISO timestamps,
 * JSON text, bigint), error mapping, and the transaction combinator (commit, rollback on failure
 * and interruption, re-run after a serialization failure).
 */
import { Effect, Fiber, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { layer, makeClient, makePool, PgClient, type PgClientShape, StoreBusy, UniqueViolation } from "../../server/store/postgres/client.ts"
import { type PostgresServer, startPostgres } from "../support/postgres.ts"

let server: PostgresServer
let client: PgClientShape
beforeAll(async () => {
  server = await startPostgres()
  client = makeClient(makePool(await server.createDatabase()))
  await Effect.runPromise(
    client.execute(`
      CREATE TABLE items (id text PRIMARY KEY, name text NOT NULL UNIQUE, at timestamptz, doc json, big bigint, n integer);
      CREATE TABLE counters (id text PRIMARY KEY, value integer NOT NULL);
      INSERT INTO counters VALUES ('c', 0);
    `)
  )
}, 60_000)
afterAll(async () => {
  await client?.pool.end()
  await server?.stop()
})

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

describe("values", () => {
  it("reads timestamptz back as ISO 8601 UTC with milliseconds, json as its text, int8 as bigint", async () => {
    const at = "2026-11-23T15:34:39.100Z"
    const doc = '{"z":1,  "a":[2,3]}'
    await run(client.execute("INSERT INTO items VALUES ($1, $2, $3, $4, $5, $6)", ["v1", "values", at, doc, (2n ** 62n).toString(), 7]))
    const row = await run(client.one<{ at: string; doc: string; big: bigint; n: number }>("SELECT at, doc, big, n FROM items WHERE id = $1", ["v1"]))
    expect(row).toEqual({ at, doc, big: 2n ** 62n, n: 7 })
    const epoch = await run(client.one<{ t: string }>("SELECT '1970-01-01 00:00:00+00'::timestamptz AS t"))
    expect(epoch?.t).toBe("1970-01-01T00:00:00.000Z")
  })

  it("maps a unique violation to UniqueViolation naming the constraint", async () => {
    await run(client.execute("INSERT INTO items (id, name) VALUES ('u1', 'taken')"))
    const error = await run(Effect.flip(client.execute("INSERT INTO items (id, name) VALUES ('u2', 'taken')")))
    expect(error).toBeInstanceOf(UniqueViolation)
    expect((error as UniqueViolation).constraint).toBe("items_name_key")
  })
})

describe("transaction", () => {
  it("commits the work", async () => {
    await run(client.transaction((sql) => sql.execute("INSERT INTO items (id, name) VALUES ('t1', 't1')")))
    expect(await run(client.one("SELECT id FROM items WHERE id = 't1'"))).toEqual({ id: "t1" })
  })

  it("rolls back on a failure of the work", async () => {
    const failed = await run(
      Effect.flip(
        client.transaction((sql) =>
          Effect.flatMap(sql.execute("INSERT INTO items (id, name) VALUES ('t2', 't2')"), () => Effect.fail("no" as const))
        )
      )
    )
    expect(failed).toBe("no")
    expect(await run(client.one("SELECT id FROM items WHERE id = 't2'"))).toBeUndefined()
  })

  it("rolls back when interrupted mid-work and returns a clean connection to the pool", async () => {
    const fiber = Effect.runFork(
      client.transaction((sql) => Effect.flatMap(sql.execute("INSERT INTO items (id, name) VALUES ('t3', 't3')"), () => Effect.never))
    )
    await new Promise((resolve) => setTimeout(resolve, 200))
    await Effect.runPromise(Fiber.interrupt(fiber))
    expect(await run(client.one("SELECT id FROM items WHERE id = 't3'"))).toBeUndefined()
    // No connection is left idle in a transaction.
    const open = await run(client.one<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'"))
    expect(open?.n).toBe(0)
  })

  it("re-runs SERIALIZABLE work after a serialization failure: concurrent increments all land", async () => {
    let attempts = 0
    const increment = client.transaction(
      (sql) =>
        Effect.gen(function* () {
          attempts++
          const row = yield* sql.one<{ value: number }>("SELECT value FROM counters WHERE id = 'c'")
          yield* Effect.sleep("5 millis")
          yield* sql.execute("UPDATE counters SET value = $1 WHERE id = 'c'", [row!.value + 1])
        }),
      { isolation: "serializable", retries: 50 }
    )
    await run(Effect.all(Array.from({ length: 8 }, () => increment), { concurrency: "unbounded" }))
    expect((await run(client.one<{ value: number }>("SELECT value FROM counters WHERE id = 'c'")))?.value).toBe(8)
    expect(attempts).toBeGreaterThan(8) // some attempts really failed with 40001 and ran again
  })

  it("fails with StoreBusy once the retries are spent", async () => {
    const contend = client.transaction(
      (sql) =>
        Effect.gen(function* () {
          const row = yield* sql.one<{ value: number }>("SELECT value FROM counters WHERE id = 'c'")
          yield* Effect.sleep("20 millis")
          yield* sql.execute("UPDATE counters SET value = $1 WHERE id = 'c'", [row!.value + 1])
        }),
      { isolation: "serializable", retries: 0 }
    )
    const outcomes = await run(Effect.all(Array.from({ length: 4 }, () => Effect.flip(contend).pipe(Effect.orElseSucceed(() => "ok"))), { concurrency: "unbounded" }))
    expect(outcomes.some((outcome) => outcome instanceof StoreBusy)).toBe(true)
  })
})

describe("layer", () => {
  it("opens a checked pool and closes it with its scope", async () => {
    const url = await server.createDatabase()
    let pool: PgClientShape["pool"] | undefined
    const value = await Effect.runPromise(
      Effect.provide(
        Effect.gen(function* () {
          const pg = yield* PgClient
          pool = pg.pool
          return yield* pg.one<{ one: number }>("SELECT 1 AS one")
        }),
        layer(url)
      )
    )
    expect(value).toEqual({ one: 1 })
    expect(pool!.ended).toBe(true)
  })

  it("fails to build against a server that is not there", async () => {
    const error = await Effect.runPromise(Effect.flip(Effect.scoped(Layer.build(layer("postgres://slipway@127.0.0.1:1/none", { connectionTimeoutMs: 2000 })))))
    expect(error._tag).toBe("StoreUnavailable")
  })
})
