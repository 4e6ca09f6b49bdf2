/** Where `slipway` takes its settings from: flags over environment over the config file. The real binary, a real server. */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestServer, type TestServer } from "../support/server.ts"
import { slipway } from "./run.ts"

let server: TestServer
let home: string
beforeAll(async () => {
  server = await startTestServer({ revisionStepMs: 20 })
  home = mkdtempSync(join(tmpdir(), "slipway-cli-config-"))
})
afterAll(async () => {
  await server?.close()
  if (home) rmSync(home, { recursive: true, force: true })
})

const writeConfig = (path: string, config: unknown) => {
  writeFileSync(path, typeof config === "string" ? config : JSON.stringify(config))
  chmodSync(path, 0o600)
}

describe("configuration", () => {
  it("reads ~/.config/slipway/config.json ($XDG_CONFIG_HOME); the environment overrides it; flags override both", async () => {
    mkdirSync(join(home, "slipway"), { recursive: true })
    writeConfig(join(home, "slipway/config.json"), { url: server.url, api_key: server.key })

    const fromFile = await slipway(["revisions", "nothing-here"], { XDG_CONFIG_HOME: home })
    // The key from the file was accepted: the server answered "not found", not "unauthorized".
    expect(fromFile.code, fromFile.stderr).toBe(3)
    const shown = await slipway(["config", "--json"], { XDG_CONFIG_HOME: home })
    expect(shown.json()).toMatchObject({ url: server.url, api_key: "(set)", sources: { url: `file ${join(home, "slipway/config.json")}`, apiKey: `file ${join(home, "slipway/config.json")}` } })
    expect(shown.stdout).not.toContain(server.key)

    const envWins = await slipway(["config", "--json"], { XDG_CONFIG_HOME: home, SLIPWAY_URL: "http://127.0.0.1:1" })
    expect(envWins.json()).toMatchObject({ url: "http://127.0.0.1:1", sources: { url: "env SLIPWAY_URL" } })
    const envKey = await slipway(["status", "x"], { XDG_CONFIG_HOME: home, SLIPWAY_API_KEY: "slw_wrong_key_0000000000000000000000000000" })
    expect(envKey.code).toBe(4)

    const flagWins = await slipway(["config", "--json", "--url", server.url], { XDG_CONFIG_HOME: home, SLIPWAY_URL: "http://127.0.0.1:1" })
    expect(flagWins.json()).toMatchObject({ url: server.url, sources: { url: "flag" } })
    const flagKey = await slipway(["status", "x", "--api-key", server.key], { XDG_CONFIG_HOME: home, SLIPWAY_API_KEY: "slw_wrong_key_0000000000000000000000000000" })
    expect(flagKey.code).toBe(3)
  })

  it("--config names another file; a missing or malformed one is a usage error (exit 2)", async () => {
    const other = join(home, "other.json")
    writeConfig(other, { url: server.url, api_key: server.key, tenant_id: "00000000-0000-4000-8000-000000000001" })
    const ok = await slipway(["--config", other, "config", "--json"])
    expect(ok.json()).toMatchObject({ url: server.url, tenant_id: "00000000-0000-4000-8000-000000000001" })

    const missing = await slipway(["--config", join(home, "absent.json"), "status", "x"])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain("does not exist")
    writeConfig(other, "{ not json")
    const broken = await slipway(["--config", other, "status", "x"])
    expect(broken.code).toBe(2)
    expect(broken.stderr).toContain("is not valid JSON")
    writeConfig(other, { url: server.url, apikey: "x" })
    const unknown = await slipway(["--config", other, "status", "x"])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('unknown key "apikey"')
  })

  it("bad settings are usage errors naming where they came from", async () => {
    const url = await slipway(["status", "x"], { SLIPWAY_URL: "ftp://example.com", SLIPWAY_API_KEY: "k" })
    expect(url.code).toBe(2)
    expect(url.stderr).toContain("(from env SLIPWAY_URL)")
    const tenant = await slipway(["status", "x", "--tenant", "acme"], { SLIPWAY_URL: server.url, SLIPWAY_API_KEY: server.key })
    expect(tenant.code).toBe(2)
    expect(tenant.stderr).toContain("the tenant id must be a uuid")
  })
})
