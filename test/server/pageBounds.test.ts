/**
 * Every list answers any offset the API accepts without a server error: offsets far past the end
 * (up to and beyond 2^63, where SQLite's integers end) are an empty page or a 422, never a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestServer, type TestServer } from "../support/server.ts"

let t: TestServer
let deploymentId = ""
beforeAll(async () => {
  t = await startTestServer()
  const created = await t.request("POST", "/v2/deployments", {
    body: { name: `bounds-${process.pid}`, source: "external_container", source_revision_config: { image_uri: "registry.example.com/a:1" } }
  })
  expect(created.status).toBe(201)
  deploymentId = created.body.id
  expect((await t.request("POST", "/v2/sandboxes/volumes", { body: { name: "bounds-volume", size: "1Gi" } })).status).toBe(201)
})
afterAll(() => t?.close())

const lists = () => [
  "/v2/deployments",
  `/v2/deployments/${deploymentId}/revisions`,
  "/v2/listeners",
  "/v1/sessions",
  "/v2/sandboxes/volumes",
  "/v2/sandboxes/templates",
  "/v2/sandboxes/pools",
  "/v2/sandboxes/boxes"
]

const offsets = ["4096", "5000", "9007199254740991", "9007199254740993", "9200000000000000000", "9223372036854775807", "9223372036854775808", "18446744073709551616", "1" + "0".repeat(300)]

describe("list offsets", () => {
  it("answers an empty page or a 422 for any offset, never a 500", async () => {
    const seen: Array<string> = []
    for (const path of lists()) {
      for (const offset of offsets) {
        const response = await t.request("GET", `${path}?offset=${offset}`)
        seen.push(`${path} ${offset} → ${response.status}`)
        expect([200, 422], `${path}?offset=${offset}: ${response.status} ${JSON.stringify(response.body)}`).toContain(response.status)
        if (response.status === 200) {
          const items = Array.isArray(response.body) ? response.body : Object.values(response.body).find(Array.isArray)
          expect(items, `${path}?offset=${offset}`).toEqual([])
        }
      }
    }
    expect(seen.length).toBe(lists().length * offsets.length)
  })
})
