import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Api } from "../../core/index.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

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

  it("serves an OpenAPI 3.1 document listing every endpoint of the API description", async () => {
    const response = await t.request("GET", "/openapi.json", { key: null })
    expect(response.status).toBe(200)
    expect(response.body.openapi).toBe("3.1.0")
    const operations = Object.values<Record<string, { operationId: string }>>(response.body.paths).flatMap((methods) =>
      Object.values(methods).map((operation) => operation.operationId)
    )
    expect(operations.sort()).toEqual(Object.keys(Api).sort())
  })

  it("renders the docs page from the document", async () => {
    const response = await t.request("GET", "/docs", { key: null })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/html")
    expect(response.body).toContain("/openapi.json")
    expect(response.body).toContain("<code>/v2/")
    expect(response.body).toContain("<code>/health</code>")
  })
})
