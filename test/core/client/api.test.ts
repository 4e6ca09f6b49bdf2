/** The client over the real `Api` table: the generated methods match the server's paths and shapes. */
import { Effect } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { Api } from "../../../core/api/index.ts"
import { makeClient } from "../../../core/client/index.ts"
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
