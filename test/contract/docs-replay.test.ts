/**
 * Replays the official docs' sample code for the control plane API ("Control plane API
 * reference for LangSmith Deployment", its Example Code section) against a real Slipway server,
 * request for request: the same paths, headers (X-Api-Key, X-Tenant-Id) and JSON bodies, and the
 * same success checks (201 on create, 200 on reads and PATCH, 204 on delete). Only the waits are
 * shorter (the sample sleeps 60 s between polls). See docs/real-api.md.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeDeploymentRepository } from "../../server/store/sqlite/deploymentRepository.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

const WORKSPACE_ID = "00000000-0000-4000-8000-000000000001"

let t: TestServer
let INTEGRATION_ID: string

/** `requests` as the sample uses it: JSON in, status and JSON out. */
const requests = async (method: string, url: string, headers: Record<string, string>, json?: unknown) => {
  const response = await fetch(url, { method, headers, ...(json === undefined ? {} : { body: JSON.stringify(json) }) })
  const text = await response.text()
  return { status_code: response.status, text, json: () => JSON.parse(text) }
}

const get_headers = (): Record<string, string> => ({ "X-Api-Key": t.key, "X-Tenant-Id": WORKSPACE_ID })

/** The sample's create_deployment body, as published (deployment_type "dev"; see the last test for the newer "serverless"). */
const createBody = (deploymentType: string) => ({
  name: "my_deployment",
  source: "github",
  source_config: {
    integration_id: INTEGRATION_ID,
    repo_url: "https://github.com/langchain-ai/langgraph-example",
    deployment_type: deploymentType,
    build_on_push: false,
    custom_url: null,
    resource_spec: null
  },
  source_revision_config: {
    repo_ref: "main",
    langgraph_config_path: "langgraph.json",
    image_uri: null
  },
  secrets: [
    { name: "OPENAI_API_KEY", value: "test_openai_api_key" },
    { name: "ANTHROPIC_API_KEY", value: "test_anthropic_api_key" },
    { name: "TAVILY_API_KEY", value: "test_tavily_api_key" }
  ]
})

/** The control plane at the root (as Slipway serves it) and under /api-host (as self-hosted LangSmith does). */
describe.each(["", "/api-host"])("the official docs' control plane example, replayed against Slipway at %j", (prefix) => {
  const CONTROL_PLANE_HOST = () => t.url + prefix

  beforeAll(async () => {
    t = await startTestServer()
    // A self-hosted server has no GitHub App: the operator registers the integration (npm run keys -- integration add).
    makeDeploymentRepository(t.server.db).insertIntegration({
      id: randomUUID(),
      tenant_id: WORKSPACE_ID,
      provider: "github",
      owner: "langchain-ai",
      owner_key: "langchain-ai",
      webhook_secret: randomBytes(16).toString("hex"),
      installed_at: new Date().toISOString()
    })
  })

  afterAll(async () => {
    await t?.close()
  })

  const create_deployment = async (): Promise<string> => {
    const headers = { ...get_headers(), "Content-Type": "application/json" }
    const response = await requests("POST", `${CONTROL_PLANE_HOST()}/v2/deployments`, headers, createBody("dev"))
    if (response.status_code !== 201) throw new Error(`Failed to create deployment: ${response.text}`)
    return response.json().id
  }

  const get_deployment = async (deployment_id: string) => {
    const response = await requests("GET", `${CONTROL_PLANE_HOST()}/v2/deployments/${deployment_id}`, get_headers())
    if (response.status_code !== 200) throw new Error(`Failed to get deployment ID ${deployment_id}: ${response.text}`)
    return response.json()
  }

  const list_revisions = async (deployment_id: string) => {
    const response = await requests("GET", `${CONTROL_PLANE_HOST()}/v2/deployments/${deployment_id}/revisions`, get_headers())
    if (response.status_code !== 200) throw new Error(`Failed to list revisions for deployment ID ${deployment_id}: ${response.text}`)
    return response.json()
  }

  const get_revision = async (deployment_id: string, revision_id: string) => {
    const response = await requests("GET", `${CONTROL_PLANE_HOST()}/v2/deployments/${deployment_id}/revisions/${revision_id}`, get_headers())
    if (response.status_code !== 200) throw new Error(`Failed to get revision ID ${revision_id}: ${response.text}`)
    return response.json()
  }

  const patch_deployment = async (deployment_id: string) => {
    const headers = { ...get_headers(), "Content-Type": "application/json" }
    // This creates a new revision because source_revision_config is included
    const response = await requests("PATCH", `${CONTROL_PLANE_HOST()}/v2/deployments/${deployment_id}`, headers, {
      source_config: { build_on_push: true },
      source_revision_config: { repo_ref: "main", langgraph_config_path: "langgraph.json" }
    })
    if (response.status_code !== 200) throw new Error(`Failed to patch deployment: ${response.text}`)
  }

  const wait_for_deployment = async (deployment_id: string, revision_id: string) => {
    const start = Date.now()
    let revision: any
    let status: string | undefined
    while (Date.now() - start < 20_000) {
      revision = await get_revision(deployment_id, revision_id)
      status = revision.status
      if (status === "DEPLOYED") break
      if (status!.includes("FAILED")) throw new Error(`Revision ID ${revision_id} failed: ${JSON.stringify(revision)}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    if (status !== "DEPLOYED") throw new Error(`Timeout waiting for revision ID ${revision_id} to be DEPLOYED: ${JSON.stringify(revision)}`)
  }

  const delete_deployment = async (deployment_id: string) => {
    const response = await requests("DELETE", `${CONTROL_PLANE_HOST()}/v2/deployments/${deployment_id}`, get_headers())
    if (response.status_code !== 204) throw new Error(`Failed to delete deployment ID ${deployment_id}: ${response.text}`)
  }

  it("retrieves the integration id the way the docs say (GET /v1/integrations/github/install)", async () => {
    const response = await requests("GET", `${CONTROL_PLANE_HOST()}/v1/integrations/github/install`, get_headers())
    expect(response.status_code).toBe(200)
    const integrations = response.json()
    expect(integrations).toEqual([{ id: expect.any(String), installation_id: expect.any(Number), name: "langchain-ai" }])
    INTEGRATION_ID = integrations[0].id
  })

  it("runs the example's __main__ from start to end, every call succeeding", async () => {
    // create deployment and get the latest revision
    const deployment_id = await create_deployment()
    let revisions = await list_revisions(deployment_id)
    let latest_revision_id = revisions.resources[0].id

    // wait for latest revision to be DEPLOYED
    await wait_for_deployment(deployment_id, latest_revision_id)

    // patch the deployment and get the latest revision
    await patch_deployment(deployment_id)
    revisions = await list_revisions(deployment_id)
    expect(revisions.resources).toHaveLength(2)
    latest_revision_id = revisions.resources[0].id

    // wait for latest revision to be DEPLOYED
    await wait_for_deployment(deployment_id, latest_revision_id)

    // What the example printed along the way, in the spec's names (design.md section 11).
    const deployment = await get_deployment(deployment_id)
    expect(deployment).toMatchObject({
      name: "my_deployment",
      source: "gitrepo",
      tenant_id: WORKSPACE_ID,
      active_revision_id: latest_revision_id,
      source_config: { integration_id: INTEGRATION_ID, build_on_push: true },
      source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json" }
    })
    expect(deployment.secrets.map((secret: { name: string }) => secret.name).sort()).toEqual(["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TAVILY_API_KEY"])

    // delete the deployment
    await delete_deployment(deployment_id)
    expect((await requests("GET", `${CONTROL_PLANE_HOST()}/v2/deployments/${deployment_id}`, get_headers())).status_code).toBeOneOf([200, 404])
  })

  it("answers the newer sample's deployment_type 'serverless' as the real API's 2026-08 schema does: 422 naming the allowed values", async () => {
    const headers = { ...get_headers(), "Content-Type": "application/json" }
    const response = await requests("POST", `${CONTROL_PLANE_HOST()}/v2/deployments`, headers, { ...createBody("serverless"), name: "my_deployment_2" })
    expect(response.status_code).toBe(422)
    expect(response.json().detail).toEqual([
      expect.objectContaining({ loc: ["body", "source_config", "deployment_type"], msg: "Input should be 'dev_free', 'dev' or 'prod'" })
    ])
  })
})
