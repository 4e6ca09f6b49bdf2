/**
 * Security without credentials: every endpoint of `Api` except /health, /openapi.json, /docs
 * and the signed webhook refuses a request without a key (401 "Missing API key") and with a
 * wrong one (401 "Invalid API key"), before it looks at the body. API keys are stored hashed:
 * the database file and its WAL never hold a key's plaintext.
 */
// @ts-nocheck

import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import { join } from "node:path"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DEFAULT_TENANT_ID } from "../../server/index.ts"
import { type ChildServer, spawnServer, startTestServer, tempDatabasePath, TEST_KEY, type TestServer } from "../support/server.ts"
import { databaseBytes, databaseFiles, endpoints, rawHttp, samplePath, stopChild } from "./support.ts"

const unauthenticated = new Set(["/health", "/openapi.json", "/docs"])
const guarded = endpoints.filter((endpoint) => endpoint.auth)

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t?.close())

describe("every endpoint refuses requests without a valid key", () => {
  it("exempts only /health, /openapi.json, /docs and the signed webhook", () => {
    const open = endpoints.filter((endpoint) => !endpoint.auth).map((endpoint) => endpoint.path)
    expect(open.filter((path) => !unauthenticated.has(path) && path !== "/v1/integrations/gitrepo/webhook")).toEqual([])
    expect(guarded.length).toBeGreaterThan(0)
  })

  it("answers the open system endpoints without a key", async () => {
    for (const path of unauthenticated) {
      const response = await t.request("GET", path, { key: null })
      expect(response.status, path).toBe(200)
    }
  })

  for (const endpoint of guarded) {
    const label = `${endpoint.method} ${endpoint.path}`
    // A body that would fail validation: authentication must be decided first.
    const body = endpoint.body ? { definitely: "not valid" } : undefined
    const send = (headers: Record<string, string>) =>
      t.request(endpoint.method, samplePath(endpoint), { key: null, headers, ...(body ? { body } : {}) })

    it(`${label}: 401 Missing API key without a credential`, async () => {
      const missing: Array<Record<string, string>> = [{}, { "x-api-key": "" }, { authorization: "" }, { authorization: "Bearer " }, { authorization: `Basic ${btoa("a:b")}` }]
      for (const headers of missing) {
        const response = await send(headers)
        expect({ status: response.status, body: response.body }, JSON.stringify(headers)).toEqual({ status: 401, body: { detail: "Missing API key" } })
      }
    })

    it(`${label}: 401 Invalid API key with a wrong, altered or revoked key`, async () => {
      const revoked = t.server.keys.createKey({ tenantId: crypto.randomUUID() })
      expect(t.server.keys.revokeKey(revoked.id)).toBe(true)
      const wrong: Array<Record<string, string>> = [
        { "x-api-key": "slw_wrong" },
        { "x-api-key": TEST_KEY.slice(0, -1) },
        { "x-api-key": `${TEST_KEY}x` },
        { "x-api-key": TEST_KEY.toUpperCase() },
        { authorization: "Bearer slw_wrong" },
        { authorization: `bearer ${TEST_KEY}0` },
        { "x-api-key": revoked.key },
        // The tenant header never stands in for a key.
        { "x-api-key": "slw_wrong", "x-tenant-id": "00000000-0000-4000-8000-000000000001" }
      ]
      for (const headers of wrong) {
        const response = await send(headers)
        expect({ status: response.status, body: response.body }, JSON.stringify(headers)).toEqual({ status: 401, body: { detail: "Invalid API key" } })
      }
    })

    it(`${label}: a valid key passes authentication (X-Api-Key and Bearer)`, async () => {
      const valid: Array<Record<string, string>> = [{ "x-api-key": TEST_KEY }, { authorization: `Bearer ${TEST_KEY}` }]
      for (const headers of valid) {
        const response = await send(headers)
        expect(response.status, JSON.stringify(response.body)).not.toBe(401)
        expect(response.status).toBeLessThan(500)
      }
    })
  }

  it("refuses the push webhook without a valid signature (no key stands in for one)", async () => {
    const body = JSON.stringify({ ref: "refs/heads/main", after: "0".repeat(40), repository: { clone_url: "https://github.com/o/r.git", html_url: "https://github.com/o/r", full_name: "o/r" } })
    const attempts: Array<Record<string, string>> = [
      {},
      { "x-hub-signature-256": "" },
      { "x-hub-signature-256": `sha256=${"0".repeat(64)}` },
      { "x-hub-signature-256": `sha256=${createHash("sha256").update(body).digest("hex")}` },
      { "x-hub-signature-256": "sha1=abc" },
      { "x-api-key": TEST_KEY },
      { "x-api-key": TEST_KEY, "x-hub-signature-256": `sha256=${"f".repeat(64)}`, "x-github-event": "push" }
    ]
    for (const headers of attempts) {
      const response = await t.request("POST", "/v1/integrations/gitrepo/webhook", { key: null, raw: body, headers: { "content-type": "application/json", "x-github-event": "push", ...headers } })
      expect([401, 403], `${JSON.stringify(headers)}: ${response.status} ${JSON.stringify(response.body)}`).toContain(response.status)
      expect(typeof response.body.detail).toBe("string")
    }
  })

  it("refuses a key for a tenant it does not grant (403), without leaking whether the tenant exists", async () => {
    const other = t.keyFor(crypto.randomUUID())
    for (const endpoint of guarded.slice(0, 5)) {
      const response = await t.request(endpoint.method, samplePath(endpoint), { key: other, tenant: "00000000-0000-4000-8000-000000000001", ...(endpoint.body ? { body: {} } : {}) })
      expect(response.status, endpoint.name).toBe(403)
      expect(typeof response.body.detail).toBe("string")
    }
  })
})

describe("credential and tenant headers, fuzzed", () => {
  // What an HTTP client can send in a header value: visible ASCII, space, tab and Latin-1.
  const headerText = fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).filter((code) => code !== 0x7f).map((code) => String.fromCharCode(code)), maxLength: 80 })
  const uuidish = fc.oneof(fc.uuid(), fc.uuid().map((id) => id.toUpperCase()), fc.uuid().map((id) => ` ${id} `), fc.constant(DEFAULT_TENANT_ID), fc.constant(`${DEFAULT_TENANT_ID},${DEFAULT_TENANT_ID}`))
  const headers = fc.record(
    {
      "x-api-key": fc.oneof(headerText, fc.constant(TEST_KEY), fc.constant(` ${TEST_KEY}`), headerText.map((text) => TEST_KEY + text)),
      authorization: fc.oneof(headerText, headerText.map((text) => `Bearer ${text}`), fc.constant(`Bearer ${TEST_KEY}`), fc.constant(`Bearer  ${TEST_KEY} `)),
      "x-tenant-id": fc.oneof(headerText, uuidish)
    },
    { requiredKeys: [] }
  )

  it("never answer 5xx, and refusals are 401/403 with a string detail", async () => {
    const targets = guarded.filter((endpoint) => !endpoint.body).slice(0, 6)
    await fc.assert(
      fc.asyncProperty(headers, fc.constantFrom(...targets), async (sent, endpoint) => {
        const answer = await rawHttp(t.url, endpoint.method, samplePath(endpoint), undefined, sent as Record<string, string>)
        expect(answer.status, `${JSON.stringify(sent)} → ${answer.text.slice(0, 200)}`).toBeLessThan(500)
        if (answer.status === 401 || answer.status === 403) expect(typeof answer.body.detail).toBe("string")
        // Only the real key gets through, however it was sent (HTTP drops spaces and tabs around a header value).
        if (answer.status !== 401 && answer.status !== 403) {
          const ows = (value: string | undefined) => (value ?? "").replace(/^[ \t]+|[ \t]+$/g, "")
          const key = ows(sent["x-api-key"]) || /^Bearer\s+(.+)$/i.exec(ows(sent.authorization))?.[1]
          expect(key).toBe(TEST_KEY)
        }
      }),
      { seed: Number(process.env.FUZZ_SEED ?? 20_250_611), numRuns: 300 }
    )
  })
})

describe("API keys are stored hashed", () => {
  let child: ChildServer | undefined
  const database = tempDatabasePath("slipway-keys")
  afterAll(async () => {
    await stopChild(child)
    database.remove()
  })

  it("never writes a key's plaintext into the database file or its WAL", async () => {
    child = await spawnServer({ databasePath: database.path })
    const minted = execFileSync(process.execPath, ["server/keys.ts", "create", "--tenant", crypto.randomUUID()], {
      cwd: join(import.meta.dirname, "../.."),
      env: { ...process.env, DATABASE_PATH: database.path },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"]
    }).trim()
    expect(minted).toMatch(/^slw_[\w-]{20,}$/)
    // Both keys work, so both are in the database in some form.
    for (const key of [TEST_KEY, minted]) {
      const response = await child.request("GET", samplePath(guarded[0]!), { key })
      expect(response.status).not.toBe(401)
    }
    // Killed, not stopped: the WAL still holds whatever the server wrote.
    await stopChild(child, "SIGKILL")
    child = undefined
    expect(databaseFiles(database.path).some((file) => file.endsWith("-wal"))).toBe(true)
    const bytes = databaseBytes(database.path)
    for (const key of [TEST_KEY, minted]) {
      const secretPart = key.slice(8)
      expect(bytes.includes(Buffer.from(secretPart, "utf8")), "plaintext key in the database").toBe(false)
      expect(bytes.includes(Buffer.from(secretPart, "utf16le")), "UTF-16 key in the database").toBe(false)
      expect(bytes.includes(Buffer.from(Buffer.from(key).toString("base64").slice(8, -4), "utf8")), "base64 key in the database").toBe(false)
      // What is there is the SHA-256 hash (the scan is looking at the right bytes).
      expect(bytes.includes(Buffer.from(createHash("sha256").update(key).digest("hex"), "utf8"))).toBe(true)
    }
  })
})

describe("unknown routes and methods", () => {
  it("answers unknown paths under /v1 and /v2 with 404 even without a key, revealing nothing", async () => {
    for (const path of ["/v2/secret-admin", "/v1/integrations/gitrepo", "/v2/deployments/../../etc/passwd", "/v2/sandboxes/%2e%2e/keys"]) {
      const response = await t.request("GET", path, { key: null })
      expect([401, 404], path).toContain(response.status)
      expect(typeof response.body.detail).toBe("string")
    }
  })

  it("does not route around authentication with HEAD, trailing slashes, double slashes or case", async () => {
    for (const endpoint of guarded.filter((candidate) => candidate.method === "GET")) {
      const path = samplePath(endpoint)
      for (const variant of [path, `${path}/`, path.replace("/v", "//v"), path.toUpperCase()]) {
        const response = await t.request("GET", variant, { key: null })
        expect([401, 404, 405], `${variant}: ${JSON.stringify(response.body)}`).toContain(response.status)
        expect(response.status === 200).toBe(false)
      }
      const head = await fetch(t.url + path, { method: "HEAD" })
      expect(head.status, `HEAD ${path}`).toBe(401)
    }
  })
})
