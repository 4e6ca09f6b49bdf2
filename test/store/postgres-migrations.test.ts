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
  it("upgrades a database that has everything up to 301 but not 103 and 220: generated columns filled from existing rows, clashing volume names renamed", async () => {
    const url = await server.createDatabase()
    const added = ["103_webhook_replay_and_integration_binding", "220_volume_names_per_organization"]
    await withClient(url, (client) => Effect.runPromise(migrate(client, postgresMigrations.filter((migration) => !added.includes(migration.id)))))
    const db = new pg.Client({ connectionString: url })
    await db.connect()
    try {
      const at = new Date().toISOString()
      await db.query(`
        INSERT INTO organizations (id, name, created_at) VALUES ('org-a', 'a', '${at}'), ('org-b', 'b', '${at}');
        INSERT INTO tenants (id, organization_id, name, created_at) VALUES ('t1', 'org-a', 't1', '${at}'), ('t2', 'org-a', 't2', '${at}'), ('t3', 'org-b', 't3', '${at}');
        INSERT INTO integrations (id, tenant_id, provider, owner, owner_key, webhook_secret, installed_at) VALUES ('int-1', 't1', 'github', 'Acme', 'acme', 'sealed', '${at}');
        INSERT INTO deployments (id, tenant_id, name, source, source_config, source_revision_config, secrets, status, created_at, updated_at)
          VALUES ('dep', 't1', 'dep', 'gitrepo', '{"integration_id":"INT-1","build_on_push":true}', '{"repo_ref":"main","repo_commit_sha":"abc"}', '[]', 'READY', '${at}', '${at}');
        INSERT INTO revisions (id, tenant_id, deployment_id, seq, source, status, source_revision_config, secrets, created_at, updated_at)
          VALUES ('rev', 't1', 'dep', 1, 'gitrepo', 'DEPLOYED', '{"repo_ref":"main","repo_commit_sha":"abc"}', '[]', '${at}', '${at}');
      `)
      const insert = "INSERT INTO sandbox_volumes (id, tenant_id, organization_id, name, size_bytes, size, storage_class, created_at, updated_at) VALUES ($1, $2, $3, 'data', 1, '1', 'standard', $4, $4)"
      await db.query(insert, ["aaaaaaaa-0000-4000-8000-000000000001", "t1", "org-a", at])
      await db.query(insert, ["bbbbbbbb-0000-4000-8000-000000000002", "t2", "org-a", at])
      await db.query(insert, ["cccccccc-0000-4000-8000-000000000003", "t3", "org-b", at])
      await db.query(`
        INSERT INTO sandbox_templates (id, tenant_id, name, image, cpu_millicores, cpu, memory_bytes, memory, created_at, updated_at)
          VALUES ('tpl', 't2', 'tpl', 'python:3.12', 500, '500m', 1, '1', '${at}', '${at}');
        INSERT INTO sandbox_template_mounts (template_id, position, volume_id, mount_path) VALUES ('tpl', 0, 'bbbbbbbb-0000-4000-8000-000000000002', '/data');
      `)

      expect(await withClient(url, (client) => Effect.runPromise(migrate(client)))).toEqual(added)

      expect((await db.query("SELECT tenant_id, name FROM sandbox_volumes ORDER BY seq")).rows).toEqual([
        { tenant_id: "t1", name: "data" },
        { tenant_id: "t2", name: "data-bbbbbbbb" },
        { tenant_id: "t3", name: "data" }
      ])
      expect((await db.query("SELECT volume_id FROM sandbox_template_mounts WHERE template_id = 'tpl'")).rows).toEqual([{ volume_id: "bbbbbbbb-0000-4000-8000-000000000002" }])
      await expect(db.query(insert, ["dddddddd-0000-4000-8000-000000000004", "t2", "org-a", at])).rejects.toMatchObject({ code: "23505" })
      // Another organization has its own names: only its own 'data' clashes.
      await expect(db.query(insert, ["eeeeeeee-0000-4000-8000-000000000005", "t3", "org-b", at])).rejects.toMatchObject({ code: "23505" })
      await db.query("UPDATE sandbox_volumes SET name = 'other' WHERE tenant_id = 't3'")
      await db.query(insert, ["eeeeeeee-0000-4000-8000-000000000005", "t3", "org-b", at])

      expect((await db.query("SELECT integration_id FROM deployments WHERE id = 'dep'")).rows).toEqual([{ integration_id: "INT-1" }])
      expect((await db.query("SELECT repo_ref, repo_commit_sha FROM revisions WHERE id = 'rev'")).rows).toEqual([{ repo_ref: "main", repo_commit_sha: "abc" }])
      // Deliveries go with their integration.
      await db.query(`INSERT INTO webhook_deliveries (integration_id, delivery_id, received_at, expires_at) VALUES ('int-1', 'd1', '${at}', '${at}')`)
      await db.query("DELETE FROM integrations WHERE id = 'int-1'")
      expect((await db.query("SELECT count(*)::int AS n FROM webhook_deliveries")).rows).toEqual([{ n: 0 }])
    } finally {
      await db.end()
    }
  }, 30_000)
})
