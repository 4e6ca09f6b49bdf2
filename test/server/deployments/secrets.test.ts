import Database from "better-sqlite3"
import { describe, expect, it } from "vitest"
import { makeLogger } from "../../../server/log.ts"
import { readFileSync, statSync } from "node:fs"
import { startServer } from "../../../server/index.ts"
import { makeRequester, startTestServer, tempDatabasePath, TEST_KEY } from "../../support/server.ts"
import { containerBody, uniqueName, waitForRevision } from "./helpers.ts"

const SECRET = "sk-live-do-not-leak-4242"

const allText = (databasePath: string) => {
  const db = new Database(databasePath, { readonly: true })
  try {
    const deployments = db.prepare("SELECT secrets FROM deployments").pluck().all() as Array<string>
    const revisions = db.prepare("SELECT secrets FROM revisions").pluck().all() as Array<string>
    return { deployments, revisions }
  } finally {
    db.close()
  }
}

describe("secrets", () => {
  it("are write-only, sealed with AES-256-GCM when SLIPWAY_SECRETS_KEY is set, kept by a masked PATCH, and never logged", async () => {
    const lines: Array<string> = []
    const t = await startTestServer({ secretsKey: "correct horse battery staple", logger: makeLogger("debug", (line) => void lines.push(line)) })
    try {
      const created = await t.request("POST", "/v2/deployments", { body: containerBody(uniqueName(), { secrets: [{ name: "API_KEY", value: SECRET }] }) })
      expect(created.status).toBe(201)
      expect(JSON.stringify(created.body)).not.toContain(SECRET)
      expect(created.body.secrets).toEqual([{ name: "API_KEY", value: "********" }])
      // Send the fetched (masked) list back plus one more: the stored value is kept.
      const patched = await t.request("PATCH", `/v2/deployments/${created.body.id}`, {
        body: { secrets: [...created.body.secrets, { name: "OTHER", value: "x" }] }
      })
      expect(patched.status).toBe(200)
      await waitForRevision(t.request, created.body.id, patched.body.latest_revision_id, (status) => status === "DEPLOYED")
      // An unknown name with the mask is refused rather than storing the mask.
      const masked = await t.request("PATCH", `/v2/deployments/${created.body.id}`, { body: { secrets: [{ name: "NEW", value: "********" }] } })
      expect(masked.status).toBe(422)
      expect(masked.body.detail[0].loc).toEqual(["body", "secrets", 0, "value"])

      const stored = allText(t.databasePath)
      for (const text of [...stored.deployments, ...stored.revisions]) {
        expect(text).not.toContain(SECRET)
        for (const secret of JSON.parse(text)) expect(secret.value).toMatch(/^enc:v1:/)
      }
      expect(stored.revisions).toHaveLength(2)
      expect(lines.length).toBeGreaterThan(0)
      expect(lines.join("")).not.toContain(SECRET)
    } finally {
      await t.close()
    }
  })

  it("are sealed by default without SLIPWAY_SECRETS_KEY: a key generated beside the database (0600), logged once without the key, kept across restarts", async () => {
    const database = tempDatabasePath("slipway-default-key")
    const lines: Array<string> = []
    const start = () =>
      startServer({ port: 0, databasePath: database.path, apiKey: TEST_KEY, secretsKey: undefined, logger: makeLogger("info", (line) => void lines.push(line)) })
    try {
      let server = await start()
      const keyFile = `${database.path}.secrets-key`
      expect(statSync(keyFile).mode & 0o777).toBe(0o600)
      const key = readFileSync(keyFile, "utf8").trim()
      expect(key).toMatch(/^[0-9a-f]{64}$/)
      const request = makeRequester(server.url, TEST_KEY)
      const created = (await request("POST", "/v2/deployments", { body: containerBody(uniqueName(), { secrets: [{ name: "API_KEY", value: SECRET }] }) })).body
      expect((await request("PATCH", `/v2/deployments/${created.id}`, { body: { secrets: created.secrets } })).status).toBe(200)
      const stored = allText(database.path)
      for (const text of [...stored.deployments, ...stored.revisions]) {
        expect(text).not.toContain(SECRET)
        for (const secret of JSON.parse(text)) expect(secret.value).toMatch(/^enc:v1:/)
      }
      await server.close()

      // The same key is used again: the stored value still opens (a masked PATCH reads it).
      server = await start()
      expect(readFileSync(keyFile, "utf8").trim()).toBe(key)
      const again = await makeRequester(server.url, TEST_KEY)("PATCH", `/v2/deployments/${created.id}`, {
        body: { secrets: [{ name: "API_KEY", value: "********" }, { name: "MORE", value: "m" }] }
      })
      expect(again.status, JSON.stringify(again.body)).toBe(200)
      await server.close()
      const announced = lines.filter((line) => line.includes("encrypts secrets at rest"))
      expect(announced).toHaveLength(1)
      expect(announced[0]).toContain(keyFile)
      expect(lines.join("\n")).not.toContain(key)
    } finally {
      database.remove()
    }
  })
})

describe("runtime shutdown", () => {
  it("stops its timers on close: no step runs against the closed database", async () => {
    const lines: Array<string> = []
    const t = await startTestServer({ revisionStepMs: 30, logger: makeLogger("debug", (line) => void lines.push(line)) })
    for (let index = 0; index < 5; index++) await t.request("POST", "/v2/deployments", { body: containerBody() })
    await new Promise((resolve) => setTimeout(resolve, 40))
    await t.close()
    const advancedAtClose = lines.filter((line) => line.includes("revisions advanced")).length
    expect(advancedAtClose).toBeGreaterThan(0)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(lines.filter((line) => line.includes("revisions advanced")).length).toBe(advancedAtClose)
    expect(lines.filter((line) => line.includes("\"level\":\"error\""))).toEqual([])
  })
})
