import pg from "pg"
import { existsSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type PostgresServer, startPostgres } from "../support/postgres.ts"

let server: PostgresServer
beforeAll(async () => {
  server = await startPostgres()
}, 60_000)
afterAll(async () => {
  await server?.stop()
})

describe("test/support/postgres", () => {
  it("starts a real PostgreSQL server and creates databases on it", async () => {
    const url = await server.createDatabase()
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      const { rows } = await client.query("SELECT current_setting('server_version_num')::int AS version, current_setting('fsync') AS fsync")
      expect(rows[0].version).toBeGreaterThanOrEqual(150000)
      expect(rows[0].fsync).toBe("off")
    } finally {
      await client.end()
    }
  })

  it("stop() stops the server and removes its directory", async () => {
    const other = await startPostgres()
    const client = new pg.Client({ connectionString: other.url })
    await client.connect()
    const { rows } = await client.query("SELECT current_setting('data_directory') AS dir")
    await client.end()
    await other.stop()
    expect(existsSync(rows[0].dir)).toBe(false)
    await expect(new pg.Client({ connectionString: other.url }).connect()).rejects.toThrow()
  }, 60_000)
})
