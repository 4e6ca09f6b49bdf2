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

describe("the reference is complete", () => {
  const properties = (node: unknown, path: string, out: Array<[string, Record<string, any>]> = []) => {
    if (Array.isArray(node)) node.forEach((child, index) => properties(child, `${path}/${index}`, out))
    else if (node !== null && typeof node === "object") {
      const object = node as Record<string, any>
      if (object.properties && typeof object.properties === "object") {
        for (const [name, property] of Object.entries<Record<string, any>>(object.properties)) out.push([`${path}.${name}`, property])
      }
      for (const [key, value] of Object.entries(object)) properties(value, `${path}/${key}`, out)
    }
    return out
  }

  it("gives every operation a summary and a description", async () => {
    const document = (await t.request("GET", "/openapi.json", { key: null })).body
    for (const [path, methods] of Object.entries<Record<string, any>>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(methods)) {
        expect(operation.summary, `${method} ${path}`).toMatch(/\w/)
        expect(operation.description, `${method} ${path}`).toMatch(/\w{3}/)
        for (const parameter of operation.parameters ?? []) expect(parameter.description, `${method} ${path} ${parameter.name}`).toMatch(/\w{3}/)
      }
    }
  })

  it("gives every field an example, and every field of a request a description", async () => {
    const document = (await t.request("GET", "/openapi.json", { key: null })).body
    const all = properties(document, "")
    expect(all.length).toBeGreaterThan(300)
    // A reference's component carries its own examples.
    const missing = all.filter(([, property]) => property.$ref === undefined && !(Array.isArray(property.examples) && property.examples.length > 0))
    expect(missing.map(([path]) => path)).toEqual([])
    const requestComponents = new Set(["CreateDeployment", "PatchDeployment", "CreateRevision", "CreateListener", "PatchListener", "SourceConfig", "SourceRevisionConfig", "ResourceSpec", "CreateTemplate", "CreateVolume", "PatchVolume", "CreatePool", "PatchPool", "CreateBox", "PatchBox", "TemplateResourcesInput", "VolumeMountInput", "ProxyRuleInput", "Secret", "SecretReference", "EnvVar", "PodVolumeMount"])
    const primitive = (property: Record<string, any>) => {
      const member = Array.isArray(property.anyOf) ? property.anyOf.find((m: any) => m.type !== "null") : property
      return member && ["string", "integer", "number", "boolean"].includes(member.type)
    }
    const undescribed = properties(document.components.schemas, "")
      .filter(([path, property]) => requestComponents.has(path.split(/[/.]/)[1]!) && primitive(property) && typeof property.description !== "string")
      .map(([path]) => path)
    expect(undescribed).toEqual([])
  })

  it("states the constraints of the core's schemas: DNS labels, the quantity grammar, ranges, enums", async () => {
    const document = (await t.request("GET", "/openapi.json", { key: null })).body
    const schemas = document.components.schemas
    const nonNull = (property: Record<string, any>) => (Array.isArray(property.anyOf) ? property.anyOf.find((m: any) => m.type !== "null") : property)
    // Sandbox-area names are DNS-1123 labels, and the pattern is the one the server applies.
    for (const component of ["CreateBox", "CreateVolume", "CreatePool", "CreateTemplate"]) {
      const name = schemas[component].properties.name
      expect(name, component).toMatchObject({ type: "string", minLength: 1, maxLength: 63, pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" })
    }
    const label = new RegExp(schemas.CreateBox.properties.name.pattern)
    expect(["a", "my-box-1"].every((name) => label.test(name))).toBe(true)
    expect(["-a", "A", "a_b", "a-"].some((name) => label.test(name))).toBe(false)
    // Quantities: the grammar as a pattern, which accepts what the parser accepts.
    const size = schemas.CreateVolume.properties.size
    const quantity = new RegExp(size.pattern)
    expect(["10Gi", "500m", "1.5", "1e3", ".5"].every((q) => quantity.test(q))).toBe(true)
    expect(["10GB", "Gi", "1.2.3", ""].some((q) => quantity.test(q))).toBe(false)
    expect(size.examples).toEqual(["10Gi"])
    expect(nonNull(schemas.TemplateResourcesInput.properties.cpu).pattern).toBe(size.pattern)
    // Ranges and enums.
    expect(schemas.CreateBox.properties.timeout).toMatchObject({ type: "integer", minimum: 1, maximum: 3600 })
    expect(nonNull(schemas.ResourceSpec.properties.cpu)).toMatchObject({ minimum: 0.1, maximum: 8 })
    expect(nonNull(schemas.ResourceSpec.properties.max_scale)).toMatchObject({ type: "integer", minimum: 0, maximum: 1000 })
    expect(schemas.CreateDeployment.properties.name).toMatchObject({ minLength: 1, maxLength: 63, pattern: "^[a-z0-9_-]+$" })
    const limit = document.paths["/v2/deployments"].get.parameters.find((p: any) => p.name === "limit")
    expect(limit.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 100 })
    // X-Tenant-Id travels with the key.
    expect(document.paths["/v2/deployments"].get.security).toContainEqual({ ApiKey: [], TenantId: [] })
  })
})
