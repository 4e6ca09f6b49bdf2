/** The client over the real `Api` table: the generated methods match the server's paths and shapes. */
// @ts-nocheck

import { Effect } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { Api } from "../../../core/api/index.ts"
import { makeClient, waitForRevision } from "../../../core/client/index.ts"
import { type FakeServer, type Handler, startFakeServer } from "./fake-server.ts"

let server: FakeServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const setup = async (handler: Handler) => {
  server = await startFakeServer(handler)
  return { server, client: makeClient(Api, { baseUrl: server.baseUrl, apiKey: "k", retry: { baseDelayMs: 1 } }) }
}

const volume = {
  id: "6f1c1c3e-8d2a-4c55-9a51-2d4b8f0e1a77",
  name: "data",
  size: "20Gi",
  storage_class: "standard",
  created_at: "2025-01-01T00:00:00.000Z",
  updated_at: "2025-01-01T00:00:00.000Z"
}

describe("makeClient(Api): sandbox area", () => {
  it("getVolume: GET /v2/sandboxes/volumes/{name}, decoded as a Volume", async () => {
    const { client, server } = await setup(() => ({ json: volume }))
    const answer = await Effect.runPromise(client.getVolume({ params: { name: "data" } }))
    expect(answer).toMatchObject({ name: "data", size: "20Gi" })
    expect(server.requests[0]).toMatchObject({ method: "GET", url: "/v2/sandboxes/volumes/data" })
  })

  it("listVolumes: numeric limit and offset go into the query", async () => {
    const { client, server } = await setup(() => ({ json: { volumes: [volume], offset: 11 } }))
    const page = await Effect.runPromise(client.listVolumes({ query: { limit: 1, offset: 10 } }))
    expect(page.offset).toBe(11)
    expect(server.requests[0]!.url).toBe("/v2/sandboxes/volumes?limit=1&offset=10")
  })

  it("updateVolume over quota: QuotaExceeded, sent once", async () => {
    const { client, server } = await setup(() => ({
      status: 429,
      json: { detail: "Storage quota exceeded: limit 100Gi, current usage 95Gi, requested increase 10Gi" }
    }))
    const error = await Effect.runPromise(Effect.flip(client.updateVolume({ params: { name: "data" }, body: { size: "30Gi" } })))
    expect(error).toMatchObject({ _tag: "QuotaExceeded", limit: "100Gi" })
    expect(server.requests).toHaveLength(1)
    expect(server.requests[0]).toMatchObject({ method: "PATCH", body: JSON.stringify({ size: "30Gi" }) })
  })

  it("deleteBox: 204 answers void; an unknown box is SandboxNotFound", async () => {
    const { client } = await setup((request) =>
      request.url.endsWith("/gone") ? { status: 404, json: { detail: { error: "NotFound", message: "sandbox gone not found" } } } : { status: 204 }
    )
    expect(await Effect.runPromise(client.deleteBox({ params: { name: "b1" } }))).toBeUndefined()
    expect(await Effect.runPromise(Effect.flip(client.deleteBox({ params: { name: "gone" } })))).toMatchObject({ _tag: "SandboxNotFound" })
  })
})

const deploymentId = "0b7a2f8e-3c1d-4e5f-8a9b-1c2d3e4f5a6b"
const firstRevisionId = "1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d"
const secondRevisionId = "2b3c4d5e-6f7a-4b2c-9d3e-4f5a6b7c8d9e"
const stamp = "2025-01-01T00:00:00.000Z"
const sourceRevisionConfig = { repo_ref: null, graph_config_path: null, image_uri: "registry.example/agent:1", repo_commit_sha: null }

const deployment = (latestRevisionId: string) => ({
  name: "agent",
  source: "external_container",
  source_config: {
    integration_id: null,
    repo_url: null,
    deployment_type: null,
    build_on_push: null,
    custom_url: null,
    resource_spec: null,
    listener_id: null,
    listener_config: null,
    install_command: null,
    build_command: null
  },
  source_revision_config: sourceRevisionConfig,
  secrets: [{ name: "TOKEN", value: "********" }],
  id: deploymentId,
  created_at: stamp,
  updated_at: stamp,
  status: "AWAITING_DATABASE",
  latest_revision_id: latestRevisionId,
  active_revision_id: null,
  image_version: null
})

const revision = (id: string, status: string) => ({
  id,
  created_at: stamp,
  updated_at: stamp,
  status,
  source: "external_container",
  source_revision_config: sourceRevisionConfig,
  deployment_id: deploymentId,
  status_message: null
})

describe("makeClient(Api): deployment control plane", () => {
  it("create, update, then wait for the new revision: the action's flow", async () => {
    const statuses = ["QUEUED", "DEPLOYING", "DEPLOYED"]
    let polls = 0
    const { client, server } = await setup((request) => {
      if (request.method === "POST") return { status: 201, json: deployment(firstRevisionId) }
      if (request.method === "PATCH") return { json: deployment(secondRevisionId) }
      return { json: revision(secondRevisionId, statuses[Math.min(polls++, statuses.length - 1)]!) }
    })
    const flow = Effect.gen(function* () {
      const created = yield* client.createDeployment({
        body: { name: "agent", source: "external_container", source_revision_config: { image_uri: "registry.example/agent:1" } }
      })
      const updated = yield* client.updateDeployment({
        params: { deployment_id: created.id },
        body: { secrets: [{ name: "TOKEN", value: "s3cret" }] }
      })
      return yield* waitForRevision(client, { deploymentId: updated.id, revisionId: updated.latest_revision_id!, interval: 5, timeout: 5_000 })
    })
    const deployed = await Effect.runPromise(flow)
    expect(deployed).toMatchObject({ id: secondRevisionId, status: "DEPLOYED", deployment_id: deploymentId })
    expect(server.requests.map((request) => `${request.method} ${request.url}`)).toEqual([
      "POST /v2/deployments",
      `PATCH /v2/deployments/${deploymentId}`,
      `GET /v2/deployments/${deploymentId}/revisions/${secondRevisionId}`,
      `GET /v2/deployments/${deploymentId}/revisions/${secondRevisionId}`,
      `GET /v2/deployments/${deploymentId}/revisions/${secondRevisionId}`
    ])
    expect(JSON.parse(server.requests[1]!.body)).toEqual({ secrets: [{ name: "TOKEN", value: "s3cret" }] })
  })

  it("getDeployment of an unknown id: NotFound with the server's message", async () => {
    const { client } = await setup(() => ({ status: 404, json: { detail: `Deployment ${deploymentId} not found` } }))
    const error = await Effect.runPromise(Effect.flip(client.getDeployment({ params: { deployment_id: deploymentId } })))
    expect(error).toMatchObject({ _tag: "NotFound", message: `Deployment ${deploymentId} not found` })
  })

  it("redeployRevision refused: BadRequest, not retried", async () => {
    const { client, server } = await setup(() => ({ status: 400, json: { detail: "revision never deployed" } }))
    const error = await Effect.runPromise(
      Effect.flip(client.redeployRevision({ params: { deployment_id: deploymentId, revision_id: firstRevisionId } }))
    )
    expect(error).toMatchObject({ _tag: "BadRequest" })
    expect(server.requests).toHaveLength(1)
    expect(server.requests[0]!.url).toBe(`/v2/deployments/${deploymentId}/revisions/${firstRevisionId}/redeploy`)
  })
})
