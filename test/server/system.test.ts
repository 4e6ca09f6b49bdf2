import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Api } from "../../core/index.ts"
import { startTestServer, TEST_KEY, type TestServer } from "../support/server.ts"

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t.close())

describe("system endpoints", () => {
  it("answers /health without a key", async () => {
    const response = await t.request("GET", "/health", { key: null })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ status: "ok" })
  })

  it("answers unknown routes with the FastAPI 404 body and a request id", async () => {
    const response = await t.request("GET", "/v2/nothing-here")
    expect(response.status).toBe(404)
    expect(response.body).toEqual({ detail: "Not Found" })
    expect(response.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
  })

  it("answers a wrong method with 405 and an Allow header", async () => {
    const response = await t.request("DELETE", "/health")
    expect(response.status).toBe(405)
    expect(response.body).toEqual({ detail: "Method Not Allowed" })
    expect(response.headers.get("allow")).toBe("GET")
  })

  it("sends every answer with its exact Content-Length, not chunked", async () => {
    for (const path of ["/health", "/openapi.json", "/docs", "/v2/nothing-here"]) {
      const response = await fetch(`${t.url}${path}`)
      const bytes = Buffer.from(await response.arrayBuffer())
      expect(response.headers.get("transfer-encoding"), path).toBeNull()
      expect(Number(response.headers.get("content-length")), path).toBe(bytes.length)
      expect(bytes.length, path).toBeGreaterThan(0)
    }
    // Multi-byte characters: the length counts bytes, not characters.
    const version = "über-été"
    const created = await fetch(`${t.url}/v2/deployments`, {
      method: "POST",
      headers: { "x-api-key": TEST_KEY, "content-type": "application/json" },
      body: JSON.stringify({ name: "bytes-not-characters", source: "external_container", image_version: version, source_revision_config: { image_uri: "ghcr.io/acme/agent:1" } })
    })
    const text = await created.text()
    expect(created.status).toBe(201)
    // A length short of the bytes would cut the body: it must still parse whole.
    expect(JSON.parse(text).image_version).toBe(version)
    expect(Number(created.headers.get("content-length"))).toBe(Buffer.byteLength(text))
    expect(Buffer.byteLength(text)).toBeGreaterThan(text.length)
  })

  it("serves an OpenAPI 3.1 document listing every endpoint of the API description", async () => {
    const response = await t.request("GET", "/openapi.json", { key: null })
    expect(response.status).toBe(200)
    expect(response.body.openapi).toBe("3.1.0")
    const operations = Object.values<Record<string, { operationId: string }>>(response.body.paths).flatMap((methods) =>
      Object.values(methods).map((operation) => operation.operationId)
    )
    expect(operations.sort()).toEqual(Object.keys(Api).sort())
  })

  it("serves the docs page: Swagger UI from this server over /openapi.json (test/docs/ drives it in a browser)", async () => {
    const response = await t.request("GET", "/docs", { key: null })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/html")
    expect(response.body).toContain("/openapi.json")
    expect(response.body).toContain('<script src="/docs/swagger-ui-bundle.js"></script>')
    expect(response.body).not.toMatch(/https?:\/\//)
  })
})
