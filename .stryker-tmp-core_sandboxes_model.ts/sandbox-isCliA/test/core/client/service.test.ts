// @ts-nocheck
import { Effect } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { SlipwayClient } from "../../../core/client/index.ts"
import { type FakeServer, startFakeServer } from "./fake-server.ts"

let server: FakeServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

describe("SlipwayClient service", () => {
  it("provides a client for the whole Api through its layer", async () => {
    server = await startFakeServer((request) => (request.url === "/health" ? { json: { status: "ok" } } : { status: 404, json: { detail: "Not Found" } }))
    const program = Effect.gen(function* () {
      const client = yield* SlipwayClient
      return yield* client.health()
    })
    const answer = await Effect.runPromise(program.pipe(Effect.provide(SlipwayClient.layer({ baseUrl: server.baseUrl, apiKey: "k", tenantId: "t" }))))
    expect(answer).toEqual({ status: "ok" })
    expect(server.requests[0]!.headers["x-tenant-id"]).toBe("t")
  })
})
