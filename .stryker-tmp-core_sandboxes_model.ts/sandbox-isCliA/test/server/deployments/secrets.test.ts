// @ts-nocheck
import Database from "better-sqlite3"
import { describe, expect, it } from "vitest"
import { makeLogger } from "../../../server/log.ts"
import { startTestServer } from "../../support/server.ts"
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

  it("are stored as given without a key (the value round-trips through a masked PATCH)", async () => {
    const t = await startTestServer({ secretsKey: undefined })
    try {
      const created = (await t.request("POST", "/v2/deployments", { body: containerBody(uniqueName(), { secrets: [{ name: "API_KEY", value: SECRET }] }) })).body
      await t.request("PATCH", `/v2/deployments/${created.id}`, { body: { secrets: created.secrets } })
      const stored = allText(t.databasePath)
      expect(stored.deployments.map((text) => JSON.parse(text))).toEqual([[{ name: "API_KEY", value: SECRET }]])
    } finally {
      await t.close()
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
