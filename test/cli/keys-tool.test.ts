/**
 * The key tool (`npm run keys`, node server/keys.ts) as an operator meets it: errors are one line
 * (no usage dump, no stack trace), a missing database file is refused unless --create-database
 * (nothing is created), a new tenant's uuid can be generated; `slipway keys create --new-tenant`
 * too. Keys minted are used against a real server.
 */
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { isUuid } from "../../core/index.ts"
import { makeRequester, startTestServer, type TestServer } from "../support/server.ts"
import { root, slipway } from "./run.ts"

let server: TestServer
let dir: string
beforeAll(async () => {
  server = await startTestServer()
  dir = mkdtempSync(join(tmpdir(), "slipway-keytool-"))
})
afterAll(async () => {
  await server?.close()
  rmSync(dir, { recursive: true, force: true })
})

const keys = async (args: ReadonlyArray<string>, databasePath: string) => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined && !key.startsWith("SLIPWAY_") && key !== "DATABASE_URL") env[key] = value
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ["server/keys.ts", ...args], { cwd: root, env: { ...env, DATABASE_PATH: databasePath }, encoding: "utf8" })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr }
  }
}

describe("npm run keys", () => {
  it("refuses a database file that does not exist, creating nothing, unless --create-database", async () => {
    const path = join(dir, "typo", "..", "missing.db")
    const refused = await keys(["list"], path)
    expect(refused.code).toBe(2)
    expect(refused.stderr).toBe(
      `keys: no database at ${path}: set DATABASE_PATH to the server's file, or pass --create-database to create it\nkeys: run "npm run keys -- --help" for the commands and their options\n`
    )
    expect(existsSync(path)).toBe(false)
    expect(existsSync(`${path}.secrets-key`)).toBe(false)

    const created = await keys(["create", "--new-tenant", "--create-database", "--json"], path)
    expect(created.code, created.stderr).toBe(0)
    expect(existsSync(path)).toBe(true)
    expect(JSON.parse(created.stdout).key).toMatch(/^slw_/)
  })

  it("generates the tenant's uuid: the key works for that new tenant on the running server", async () => {
    const created = await keys(["create", "--new-tenant", "--description", "ci", "--json"], server.databasePath)
    expect(created.code, created.stderr).toBe(0)
    const minted = JSON.parse(created.stdout)
    expect(isUuid(minted.tenant_id)).toBe(true)
    expect(minted.tenant_id).not.toBe("00000000-0000-4000-8000-000000000001")
    const request = makeRequester(server.url, minted.key)
    expect((await request("GET", "/v2/deployments", { tenant: minted.tenant_id })).status).toBe(200)
    // Another tenant is not the key's.
    expect((await request("GET", "/v2/deployments", { tenant: "00000000-0000-4000-8000-000000000001" })).status).toBe(403)

    // Without --json the key alone is on stdout, the new tenant named on stderr.
    const plain = await keys(["create", "--new-tenant"], server.databasePath)
    expect(plain.stdout).toMatch(/^slw_\S+\n$/)
    expect(plain.stderr).toMatch(/for the new tenant [0-9a-f-]{36} /)

    const fresh = await keys(["tenant-id"], join(dir, "never-created.db"))
    expect(fresh.code).toBe(0)
    expect(isUuid(fresh.stdout.trim())).toBe(true)
    expect(existsSync(join(dir, "never-created.db"))).toBe(false)
  })

  it("prints one line per error, never the whole usage or a stack trace", async () => {
    for (const [args, message] of [
      [["create", "--tenat", "x"], "keys: Unknown option '--tenat'"],
      [["create"], "keys: create needs --tenant <uuid>, or --new-tenant to generate the tenant's id"],
      [["create", "--tenant", "acme"], 'keys: --tenant must be a uuid, got "acme"'],
      [["create", "--tenant", "6f1c2a3e-8b0d-4c5e-9f7a-1b2c3d4e5f60", "--new-tenant"], "keys: create takes --tenant <uuid> or --new-tenant, not both"],
      [["frobnicate"], 'keys: unknown command "frobnicate"'],
      [["revoke"], "keys: revoke needs a key id"]
    ] as const) {
      const run = await keys(args, server.databasePath)
      expect(run.code, args.join(" ")).toBe(2)
      expect(run.stderr, args.join(" ")).toBe(`${message}\nkeys: run "npm run keys -- --help" for the commands and their options\n`)
    }
    const help = await keys(["--help"], server.databasePath)
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("Usage: npm run keys -- <command> [options]")
    expect(help.stdout).toContain("--new-tenant")
    expect(help.stdout).toContain("--create-database")
  })
})

describe("slipway keys create --new-tenant", () => {
  it("generates the tenant's uuid", async () => {
    const created = await slipway(["keys", "create", "--new-tenant", "--json", "--database", server.databasePath])
    expect(created.code, created.stderr).toBe(0)
    const minted = created.json()
    expect(isUuid(minted.tenant_id)).toBe(true)
    expect((await makeRequester(server.url, minted.key)("GET", "/v2/deployments", { tenant: minted.tenant_id })).status).toBe(200)
    const both = await slipway(["keys", "create", "--new-tenant", "--tenant", minted.tenant_id, "--database", server.databasePath])
    expect(both.code).toBe(2)
  })
})
