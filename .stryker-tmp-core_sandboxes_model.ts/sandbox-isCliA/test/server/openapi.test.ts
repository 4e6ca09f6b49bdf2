// @ts-nocheck
import { Validator } from "@seriousme/openapi-schema-validator"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Api } from "../../core/index.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t.close())

const probe = (path: string) => path.replace(/\{[^}]+\}/g, "00000000-0000-4000-8000-00000000abcd")

describe("GET /openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const response = await t.request("GET", "/openapi.json", { key: null })
    expect(response.status).toBe(200)
    const validator = new Validator()
    const result = await validator.validate(response.body)
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(validator.version).toBe("3.1")
  })

  it("documents every route the server serves, and the server serves every documented operation", async () => {
    const document = (await t.request("GET", "/openapi.json", { key: null })).body
    const documented = Object.entries<Record<string, unknown>>(document.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`)
    )
    const described = Object.values(Api).map((endpoint) => `${endpoint.method} ${endpoint.path}`)
    expect(documented.sort()).toEqual(described.sort())
    // Served: a documented route never answers the router's own 404 {"detail":"Not Found"} or a 405.
    for (const route of described) {
      const [method, path] = route.split(" ") as [string, string]
      const response = await t.request(method, probe(path), method === "GET" || method === "DELETE" ? {} : { body: {} })
      expect(response.status, route).not.toBe(405)
      expect(response.body?.detail === "Not Found" && response.status === 404, route).toBe(false)
    }
  })

  it("covers the control-plane routes of the design", async () => {
    const document = (await t.request("GET", "/openapi.json", { key: null })).body
    for (const [path, method] of [
      ["/v2/deployments", "post"],
      ["/v2/deployments", "get"],
      ["/v2/deployments/{deployment_id}", "get"],
      ["/v2/deployments/{deployment_id}", "patch"],
      ["/v2/deployments/{deployment_id}", "delete"],
      ["/v2/deployments/{deployment_id}/revisions", "get"],
      ["/v2/deployments/{deployment_id}/revisions", "post"],
      ["/v2/deployments/{deployment_id}/revisions/{revision_id}", "get"],
      ["/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy", "post"],
      ["/v2/listeners", "get"],
      ["/v2/listeners", "post"],
      ["/v2/listeners/{listener_id}", "get"],
      ["/v2/listeners/{listener_id}", "patch"],
      ["/v2/listeners/{listener_id}", "delete"],
      ["/v1/integrations/gitrepo/install", "get"],
      ["/v1/integrations/gitrepo/webhook", "post"]
    ] as const) {
      expect(document.paths[path]?.[method], `${method} ${path}`).toBeDefined()
    }
  })
})
