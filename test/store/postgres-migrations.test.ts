/**
 * The Postgres schema: every table, column and named index of the SQLite backend exists, and
 * migrations applied by several replicas starting at once on an empty database all succeed,
 * each migration applied exactly once (pg_advisory_lock).
 */
import Database from "better-sqlite3"
import { Effect } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { migrate as migrateSqlite } from "../../server/store/sqlite/database.ts"
import { allMigrations } from "../../server/index.ts"
import { makeClient, makePool } from "../../server/store/postgres/client.ts"
import { MIGRATION_LOCK_KEY, migrate, postgresMigrations } from "../../server/store/postgres/migrations.ts"
import { type PostgresServer, startPostgres } from "../support/postgres.ts"

let server: PostgresServer
beforeAll(async () => {
  server = await startPostgres()
}, 60_000)
afterAll(async () => {
  await server?.stop()
})

const withClient = async <A>(url: string, use: (client: ReturnType<typeof makeClient>) => Promise<A>): Promise<A> => {
  const client = makeClient(makePool(url, { max: 2 }))
  try {
    return await use(client)
  } finally {
    await client.pool.end()
  }
}

describe("postgres migrations", () => {
  it("6 replicas starting at once on an empty database all come up; each migration is applied once", async () => {
    const url = await server.createDatabase()
    const applied = await Promise.all(
      Array.from({ length: 6 }, () => withClient(url, (client) => Effect.runPromise(migrate(client))))
    )
    // Exactly one start applied everything; the others found it applied.
    const all = applied.flat().sort()
    expect(all).toEqual(postgresMigrations.map((migration) => migration.id).sort())
    await withClient(url, async (client) => {
      const rows = await Effect.runPromise(client.query<{ id: string }>("SELECT id FROM schema_migrations ORDER BY id"))
      expect(rows.map((row) => row.id)).toEqual(postgresMigrations.map((migration) => migration.id).sort())
      // A later start applies nothing.
      expect(await Effect.runPromise(migrate(client))).toEqual([])
    })
  }, 60_000)

  it("a start waits for the migration lock another replica holds, then applies nothing twice", async () => {
    const url = await server.createDatabase()
    const holder = new pg.Client({ connectionString: url })
    await holder.connect()
    try {
      await holder.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY.toString()])
      let finished = false
      const start = withClient(url, (client) => Effect.runPromise(migrate(client))).then((ids) => ((finished = true), ids))
      await new Promise((resolve) => setTimeout(resolve, 400))
      expect(finished).toBe(false)
      const tables = await holder.query("SELECT to_regclass('public.organizations') AS t")
      expect(tables.rows[0].t).toBeNull()
      await holder.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY.toString()])
      expect((await start).length).toBe(postgresMigrations.length)
    } finally {
      await holder.end()
    }
  }, 30_000)

  it("has every table, column and named index of the SQLite schema", async () => {
    const sqlite = new Database(":memory:")
    migrateSqlite(sqlite, allMigrations)
    const tables = sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").pluck().all() as Array<string>
    const indexes = sqlite
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
      .pluck()
      .all() as Array<string>
    const columns = new Map(tables.map((table) => [table, (sqlite.pragma(`table_xinfo(${table})`) as Array<{ name: string }>).map((c) => c.name)]))
    sqlite.close()

    const url = await server.createDatabase()
    await withClient(url, async (client) => {
      await Effect.runPromise(migrate(client))
      const pgColumns = await Effect.runPromise(
        client.query<{ table_name: string; column_name: string }>(
          "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'"
        )
      )
      const pgIndexes = new Set(
        (await Effect.runPromise(client.query<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'"))).map(
          (row) => row.indexname
        )
      )
      expect(tables.length).toBeGreaterThan(10)
      for (const table of tables) {
        const have = pgColumns.filter((row) => row.table_name === table).map((row) => row.column_name)
        expect({ table, missing: columns.get(table)!.filter((column) => !have.includes(column)) }).toEqual({ table, missing: [] })
      }
      expect(indexes.filter((name) => !pgIndexes.has(name))).toEqual([])
    })
  }, 30_000)
})
