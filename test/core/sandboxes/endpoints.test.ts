import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { Api, decodeWithIssues, sandboxEndpoints as spec, snapshotEndpoints } from "../../../core/api/index.ts"

const sandboxEndpoints = { ...spec, ...snapshotEndpoints }
const endpoints = Object.values(sandboxEndpoints)

describe("sandbox endpoint table", () => {
  it("describes every operation of design.md section 7 once, under /v2/sandboxes", () => {
    const routes = endpoints.map((endpoint) => `${endpoint.method} ${endpoint.path}`).sort()
    expect(routes).toStrictEqual(
      [
        "POST /v2/sandboxes/templates",
        "GET /v2/sandboxes/templates",
        "GET /v2/sandboxes/templates/{name}",
        "PATCH /v2/sandboxes/templates/{name}",
        "DELETE /v2/sandboxes/templates/{name}",
        "POST /v2/sandboxes/volumes",
        "GET /v2/sandboxes/volumes",
        "GET /v2/sandboxes/volumes/{name}",
        "PATCH /v2/sandboxes/volumes/{name}",
        "DELETE /v2/sandboxes/volumes/{name}",
        "POST /v2/sandboxes/pools",
        "GET /v2/sandboxes/pools",
        "GET /v2/sandboxes/pools/{name}",
        "PATCH /v2/sandboxes/pools/{name}",
        "DELETE /v2/sandboxes/pools/{name}",
        "POST /v2/sandboxes/boxes",
        "GET /v2/sandboxes/boxes",
        "GET /v2/sandboxes/boxes/{name}",
        "PATCH /v2/sandboxes/boxes/{name}",
        "DELETE /v2/sandboxes/boxes/{name}",
        "GET /v2/sandboxes/boxes/{name}/status",
        "POST /v2/sandboxes/boxes/{name}/start",
        "POST /v2/sandboxes/boxes/{name}/stop",
        // The current sandbox model (core/api/snapshots.ts).
        "POST /v2/sandboxes/snapshots",
        "GET /v2/sandboxes/snapshots",
        "GET /v2/sandboxes/snapshots/{snapshot_id}",
        "DELETE /v2/sandboxes/snapshots/{snapshot_id}",
        "POST /v2/sandboxes/boxes/{name}/snapshot"
      ].sort()
    )
  })

  it("keys each endpoint by its name, in the sandbox area, with auth", () => {
    for (const [key, endpoint] of Object.entries(sandboxEndpoints)) {
      expect(endpoint.name).toBe(key)
      expect(endpoint.area).toBe("sandbox")
      expect(endpoint.tag).toBe("sandboxes")
      expect(endpoint.auth).toBe(true)
      expect(Api[key as keyof typeof Api]).toBe(endpoint)
    }
  })

  it("answers 201 on create, 204 without a body on delete, 200 otherwise (start and stop are actions: 200)", () => {
    for (const endpoint of endpoints) {
      const action = /\/(start|stop)$/.test(endpoint.path)
      const expected = endpoint.method === "POST" && !action ? 201 : endpoint.method === "DELETE" ? 204 : 200
      expect(endpoint.status, endpoint.name).toBe(expected)
      if (endpoint.method === "DELETE") expect(endpoint.success, endpoint.name).toBeUndefined()
      else expect(endpoint.success, endpoint.name).toBeDefined()
    }
  })

  it("documents 404 on every item endpoint and 409 where names or usage can clash", () => {
    for (const endpoint of endpoints.filter((e) => e.path.includes("{name}"))) expect(endpoint.errors, endpoint.name).toContain(404)
    for (const name of ["createTemplate", "updateTemplate", "deleteTemplate", "createVolume", "updateVolume", "deleteVolume", "createPool", "updatePool", "createBox", "updateBox"] as const) {
      expect(sandboxEndpoints[name].errors, name).toContain(409)
    }
    expect(sandboxEndpoints.createVolume.errors).toContain(429)
    expect(sandboxEndpoints.updateVolume.errors).toStrictEqual([400, 404, 409, 429])
    expect(sandboxEndpoints.createPool.errors).toContain(400)
    expect(sandboxEndpoints.createBox.errors).toContain(400)
  })

  it("list queries take limit 1–500 and offset ≥ 0", () => {
    const decode = decodeWithIssues(sandboxEndpoints.listTemplates.query, ["query"], { excess: "ignore" })
    expect(Result.getOrThrow(decode({ limit: "500", offset: "0" }))).toStrictEqual({ limit: 500, offset: 0 })
    expect(Result.isFailure(decode({ limit: "501" }))).toBe(true)
    expect(Result.isFailure(decode({ offset: "-1" }))).toBe(true)
  })

  it("lists answer their items under the documented key with the next offset", () => {
    const keys = { listTemplates: "templates", listVolumes: "volumes", listPools: "pools", listBoxes: "sandboxes" } as const
    for (const [name, key] of Object.entries(keys)) {
      const decode = decodeWithIssues(sandboxEndpoints[name as keyof typeof keys].success)
      expect(Result.getOrThrow(decode({ [key]: [], offset: 0 }))).toStrictEqual({ [key]: [], offset: 0 })
    }
  })
})
