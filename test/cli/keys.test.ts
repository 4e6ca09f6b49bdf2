/** `slipway keys`: keys in a local server's database, used against that running server. The real binary. */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestServer, type TestServer } from "../support/server.ts"
import { slipway } from "./run.ts"

let server: TestServer
beforeAll(async () => {
  server = await startTestServer({ revisionStepMs: 20 })
})
afterAll(() => server?.close())

describe("keys", () => {
  it("creates a key the running server accepts, lists it without its value, and revokes it", async () => {
    const tenant = randomUUID()
    const created = await slipway(["keys", "create", "--tenant", tenant, "--description", "ci", "--json"], { DATABASE_PATH: server.databasePath })
    expect(created.code, created.stderr).toBe(0)
    const key = created.json()
    expect(key).toMatchObject({ tenant_id: tenant })
    expect(key.key).toMatch(/^slw_/)

    // The new key works against the server: its tenant has no deployments yet.
    const use = await slipway(["status", "web", "--url", server.url, "--api-key", key.key])
    expect(use.code).toBe(3)

    const listed = await slipway(["keys", "list", "--json", "--database", server.databasePath])
    expect(listed.code, listed.stderr).toBe(0)
    const entry = listed.json().find((item: any) => item.id === key.id)
    expect(entry).toMatchObject({ default_tenant_id: tenant, revoked_at: null })
    expect(listed.stdout).not.toContain(key.key)
    const table = await slipway(["keys", "list", "--database", server.databasePath])
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+PREFIX\s+TENANT\s+ORGANIZATION\s+CREATED\s+REVOKED$/)
    expect(table.stdout).toContain(key.id)

    const revoked = await slipway(["keys", "revoke", key.id, "--database", server.databasePath])
    expect(revoked.code, revoked.stderr).toBe(0)
    expect(revoked.stdout).toBe(`revoked ${key.id}\n`)
    const refused = await slipway(["status", "web", "--url", server.url, "--api-key", key.key])
    expect(refused.code).toBe(4)
    const again = await slipway(["keys", "revoke", key.id, "--database", server.databasePath])
    expect(again.code).toBe(3)
  })

  it("refuses a missing database (exit 3) and a bad tenant (exit 2)", async () => {
    const missing = await slipway(["keys", "list", "--database", "/nonexistent/slipway.db"])
    expect(missing.code).toBe(3)
    expect(missing.stderr).toContain("no database at /nonexistent/slipway.db")
    const bad = await slipway(["keys", "create", "--tenant", "acme"], { DATABASE_PATH: server.databasePath })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("--tenant must be a uuid")
    const none = await slipway(["keys", "create"], { DATABASE_PATH: server.databasePath })
    expect(none.code).toBe(2)
  })
})
