import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { Api, decodeWithIssues, deploymentEndpoints, makeOpenApiDocument } from "../../../core/api/index.ts"

const endpoints = Object.values(deploymentEndpoints)
const uuid = "6f1c7a34-8f0e-4b8e-9b5e-2b1f0a3c4d5e"

const decodeQuery = (name: keyof typeof deploymentEndpoints, query: Record<string, string>) =>
  decodeWithIssues(deploymentEndpoints[name].query!, ["query"], { excess: "ignore" })(query)

describe("control-plane endpoint table", () => {
  it("describes every operation of design.md section 7 once", () => {
    expect(endpoints.map((endpoint) => `${endpoint.method} ${endpoint.path} ${endpoint.status}`).sort()).toStrictEqual(
      [
        "POST /v2/deployments 201",
        "GET /v2/deployments 200",
        "GET /v2/deployments/{deployment_id} 200",
        "PATCH /v2/deployments/{deployment_id} 200",
        "DELETE /v2/deployments/{deployment_id} 204",
        "GET /v2/deployments/{deployment_id}/revisions 200",
        "POST /v2/deployments/{deployment_id}/revisions 201",
        "GET /v2/deployments/{deployment_id}/revisions/{revision_id} 200",
        "POST /v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy 200",
        "GET /v2/listeners 200",
        "POST /v2/listeners 201",
        "GET /v2/listeners/{listener_id} 200",
        "PATCH /v2/listeners/{listener_id} 200",
        "DELETE /v2/listeners/{listener_id} 204",
        "GET /v1/integrations/gitrepo/install 200",
        "POST /v1/integrations/gitrepo/webhook 202",
        "GET /v1/sessions 200",
        // The real LangSmith API's, beside the spec's (docs/real-api.md).
        "DELETE /v2/deployments 200",
        "GET /v1/integrations/github/install 200",
        "GET /v1/integrations/github/{integration_id}/repos 200",
        // What `langgraph deploy` asks for (docs/registry.md).
        "POST /v2/deployments/{deployment_id}/push-token 200",
        "POST /v2/deployments/{deployment_id}/upload-url 200"
      ].sort()
    )
  })

  it("keys each endpoint by its name, in the control area, part of the whole Api", () => {
    for (const [key, endpoint] of Object.entries(deploymentEndpoints)) {
      expect(endpoint.name).toBe(key)
      expect(endpoint.area).toBe("control")
      expect(["deployments", "revisions", "listeners", "integrations", "tracing"]).toContain(endpoint.tag)
      expect(Api[key as keyof typeof Api]).toBe(endpoint)
    }
  })

  it("requires an API key everywhere except the signed webhook", () => {
    expect(endpoints.filter((endpoint) => !endpoint.auth).map((endpoint) => endpoint.name)).toStrictEqual(["gitPushWebhook"])
  })

  it("documents 400 and 404 on redeploy, 409 on create, 404 on lookups by id", () => {
    expect(deploymentEndpoints.redeployRevision.errors).toEqual(expect.arrayContaining([400, 404, 422]))
    expect(deploymentEndpoints.createDeployment.errors).toContain(409)
    for (const endpoint of endpoints.filter((endpoint) => endpoint.path.includes("{"))) expect(endpoint.errors).toContain(404)
  })

  it("declares a schema for every path parameter of the template", () => {
    for (const endpoint of endpoints) {
      const placeholders = [...endpoint.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1])
      const declared = endpoint.params ? Object.keys((endpoint.params as any).fields) : []
      expect(declared.sort()).toStrictEqual(placeholders.sort())
    }
  })

  it("rejects a malformed uuid in a path with loc path/<param>", () => {
    const decode = decodeWithIssues(deploymentEndpoints.redeployRevision.params, ["path"])
    expect(Result.isSuccess(decode({ deployment_id: uuid, revision_id: uuid }))).toBe(true)
    const result = decode({ deployment_id: "nope", revision_id: uuid })
    expect(Result.isFailure(result) && result.failure.map(({ loc, type }) => ({ loc, type }))).toStrictEqual([{ loc: ["path", "deployment_id"], type: "uuid_parsing" }])
  })
})

describe("list queries", () => {
  it("parses the deployment filters, comma-separated ids and the control-plane page bounds", () => {
    const result = decodeQuery("listDeployments", {
      name_contains: "agent",
      status: "READY",
      deployment_type: "prod",
      image_version: "0.2",
      deployment_ids: `${uuid}, ${uuid.replace("6f", "7f")}`,
      limit: "100",
      offset: "40"
    })
    expect(Result.isSuccess(result) && result.success).toStrictEqual({
      name_contains: "agent",
      status: "READY",
      deployment_type: "prod",
      image_version: "0.2",
      deployment_ids: [uuid, uuid.replace("6f", "7f")],
      limit: 100,
      offset: 40
    })
  })

  it("reports bad filters at their query parameter", () => {
    const result = decodeQuery("listDeployments", { status: "DONE", deployment_ids: "x", limit: "101" })
    expect(Result.isFailure(result) && result.failure.map(({ loc, type }) => ({ loc, type }))).toStrictEqual([
      { loc: ["query", "status"], type: "enum" },
      { loc: ["query", "deployment_ids", 0], type: "uuid_parsing" },
      { loc: ["query", "limit"], type: "less_than_equal" }
    ])
  })

  it("filters revisions by a comma-separated list of statuses", () => {
    const ok = decodeQuery("listRevisions", { status: "DEPLOYED,BUILD_FAILED" })
    expect(Result.isSuccess(ok) && ok.success).toStrictEqual({ status: ["DEPLOYED", "BUILD_FAILED"] })
    const bad = decodeQuery("listRevisions", { status: "DEPLOYED,DONE" })
    expect(Result.isFailure(bad) && bad.failure.map(({ loc, type }) => ({ loc, type }))).toStrictEqual([{ loc: ["query", "status", 1], type: "enum" }])
  })
})

describe("OpenAPI", () => {
  it("generates a document with the control-plane schemas as named components", () => {
    const document = makeOpenApiDocument(endpoints as any, { title: "Slipway", version: "0.1.0" })
    for (const name of ["Deployment", "Revision", "SourceConfig", "SourceRevisionConfig", "ResourceSpec", "PodVolume", "PodVolumeMount", "Container", "EnvVar", "Listener", "IntegrationInstall", "TracingProject"]) {
      expect(document.components.schemas).toHaveProperty(name)
    }
    expect(document.paths["/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy"].post.responses).toHaveProperty("400")
  })
})
