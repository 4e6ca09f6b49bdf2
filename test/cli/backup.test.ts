/**
 * `slipway backup` and `slipway restore` (the real binary) on a real server's SQLite file: a
 * backup taken while the server serves a stream of writes is one consistent snapshot that holds
 * every write acknowledged before it started; restore refuses while the server has the database
 * open, and once it is stopped puts the backup in place (the old file moved aside), and a server
 * started on it serves exactly the backed-up data.
 */
import Database from "better-sqlite3"
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer } from "../../server/index.ts"
import { makeLogger } from "../../server/log.ts"
import { startTestServer, TEST_KEY, type TestServer, makeRequester } from "../support/server.ts"
import { slipway } from "./run.ts"

let t: TestServer | undefined
let dir: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "slipway-backup-"))
  t = await startTestServer({ revisionStepMs: 10 })
})
afterAll(async () => {
  await t?.close()
  rmSync(dir, { recursive: true, force: true })
})

const create = (request: TestServer["request"], name: string) =>
  request("POST", "/v2/deployments", {
    body: { name, source: "external_container", source_revision_config: { image_uri: "ghcr.io/acme/agent:1.0" }, secrets: [{ name: "TOKEN", value: `secret-${name}` }] }
  })

const namesIn = (path: string): Array<string> => {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  try {
    return (db.prepare("SELECT name FROM deployments ORDER BY name").all() as Array<{ name: string }>).map((row) => row.name)
  } finally {
    db.close()
  }
}

describe("slipway backup / restore", () => {
  it("backs up a serving database under writes, and restores it once the server is stopped", async () => {
    const server = t!
    const backup = join(dir, "slipway-backup.db")

    // A writer that keeps creating deployments (each one a transaction over several tables).
    const acknowledged: Array<string> = []
    let writing = true
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        const response = await create(server.request, `w-${String(i).padStart(5, "0")}`)
        if (response.status !== 201) throw new Error(`write ${i}: ${response.status} ${JSON.stringify(response.body)}`)
        acknowledged.push(response.body.name)
      }
    })()
    while (acknowledged.length < 30) await new Promise((resolve) => setTimeout(resolve, 10))
    const before = [...acknowledged]
    const run = await slipway(["backup", backup, "--database", server.databasePath, "--json"])
    const duringBackup = acknowledged.length - before.length
    // Let the writer go on a little past the backup, then stop it.
    while (acknowledged.length < before.length + duringBackup + 10) await new Promise((resolve) => setTimeout(resolve, 10))
    writing = false
    await writer
    expect(run.code, run.stderr).toBe(0)
    // The server kept answering writes while the backup ran.
    expect(duringBackup).toBeGreaterThan(0)
    const result = run.json()
    expect(result).toMatchObject({ backup, secrets_key: `${backup}.secrets-key` })
    expect(result.bytes).toBe(statSync(backup).size)

    // The backup: intact, one self-contained file, every write acknowledged before it started,
    // only writes the server made, and no half-written deployment.
    const db = new Database(backup, { readonly: true, fileMustExist: true })
    try {
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok")
      expect(db.pragma("journal_mode", { simple: true })).toBe("delete")
      const orphans = db.prepare("SELECT count(*) AS n FROM deployments d WHERE NOT EXISTS (SELECT 1 FROM revisions r WHERE r.deployment_id = d.id)").get() as { n: number }
      expect(orphans.n).toBe(0)
    } finally {
      db.close()
    }
    expect(existsSync(`${backup}-wal`)).toBe(false)
    const backedUp = namesIn(backup)
    for (const name of before) expect(backedUp).toContain(name)
    for (const name of backedUp) expect(acknowledged).toContain(name)
    expect(backedUp.length).toBeLessThan(acknowledged.length)
    // The secrets key travels with the backup, private.
    expect(readFileSync(`${backup}.secrets-key`, "utf8")).toBe(readFileSync(`${server.databasePath}.secrets-key`, "utf8"))
    expect(statSync(`${backup}.secrets-key`).mode & 0o777).toBe(0o600)

    // Restore refuses while the server has the database open, and changes nothing.
    const busy = await slipway(["restore", backup, "--database", server.databasePath])
    expect(busy.code).toBe(1)
    expect(busy.stderr).toContain("is in use")
    expect((await server.request("GET", "/v2/deployments?name_contains=w-&limit=100")).status).toBe(200)

    // A write after the backup, then the server stops.
    expect((await create(server.request, "after-backup")).status).toBe(201)
    const databasePath = server.databasePath
    await server.server.close()

    const restored = await slipway(["restore", backup, "--database", databasePath, "--json"])
    expect(restored.code, restored.stderr).toBe(0)
    const { previous } = restored.json()
    expect(previous).toMatch(/\.pre-restore-/)
    expect(namesIn(previous)).toContain("after-backup")
    expect(namesIn(databasePath)).toEqual(backedUp)

    // A server on the restored file serves exactly the backed-up deployments, with their secrets readable.
    const again = await startServer({ port: 0, databasePath, apiKey: TEST_KEY, runtime: "simulated", revisionStepMs: 10, logger: makeLogger("silent") })
    try {
      const request = makeRequester(again.url, TEST_KEY)
      const names: Array<string> = []
      for (let offset = 0; ; offset += 100) {
        const page = await request("GET", `/v2/deployments?limit=100&offset=${offset}`)
        names.push(...page.body.resources.map((d: { name: string }) => d.name))
        if (page.body.resources.length < 100) break
      }
      expect(names.sort()).toEqual(backedUp)
      // A new revision of a restored deployment opens its sealed secrets with the restored key.
      const first = (await request("GET", `/v2/deployments?name_contains=${backedUp[0]}`)).body.resources[0]
      const patched = await request("PATCH", `/v2/deployments/${first.id}`, { body: { source_revision_config: { image_uri: "ghcr.io/acme/agent:1.1" } } })
      expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    } finally {
      await again.close()
    }
    t = undefined
    rmSync(join(databasePath, ".."), { recursive: true, force: true })
  })

  it("reports what it cannot do with an exit code and one line", async () => {
    const database = join(dir, "none.db")
    const missing = await slipway(["backup", join(dir, "x.db"), "--database", database])
    expect(missing.code).toBe(3)
    expect(missing.stderr).toBe(`slipway: no database at ${database}\n`)

    const source = await startTestServer()
    try {
      const target = join(dir, "exists.db")
      writeFileSync(target, "something")
      const exists = await slipway(["backup", target, "--database", source.databasePath])
      expect(exists.code).toBe(1)
      expect(exists.stderr).toContain("--force")
      expect(readFileSync(target, "utf8")).toBe("something")
      const forced = await slipway(["backup", target, "--database", source.databasePath, "--force"])
      expect(forced.code, forced.stderr).toBe(0)

      const notSqlite = join(dir, "not-sqlite.db")
      writeFileSync(notSqlite, "not a database at all, just text ".repeat(100))
      const invalid = await slipway(["restore", notSqlite, "--database", join(dir, "fresh.db"), "--create-database"])
      expect(invalid.code).toBe(2)
      expect(invalid.stderr).toMatch(/not a (readable )?SQLite database/)

      const noTarget = await slipway(["restore", target, "--database", join(dir, "fresh.db")])
      expect(noTarget.code).toBe(3)
      expect(noTarget.stderr).toContain("--create-database")
      const created = await slipway(["restore", target, "--database", join(dir, "fresh.db"), "--create-database"])
      expect(created.code, created.stderr).toBe(0)
      expect(namesIn(join(dir, "fresh.db"))).toEqual([])

      const postgres = await slipway(["backup", join(dir, "pg.db")], { DATABASE_URL: "postgres://localhost/slipway" })
      expect(postgres.code).toBe(2)
      expect(postgres.stderr).toContain("pg_dump")
    } finally {
      await source.close()
    }
  })
})
