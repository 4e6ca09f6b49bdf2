// @ts-nocheck
import { Effect, Schema } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { endpoint } from "../../../core/api/endpoint.ts"
import { makeClient, type RevisionPoll, waitForRevision } from "../../../core/client/index.ts"
import { type FakeServer, startFakeServer } from "./fake-server.ts"

const revisionApi = {
  getRevision: endpoint({
    name: "getRevision",
    method: "GET",
    path: "/v2/deployments/{deployment_id}/revisions/{revision_id}",
    area: "control",
    tag: "revisions",
    summary: "get a revision",
    params: Schema.Struct({ deployment_id: Schema.String, revision_id: Schema.String }),
    success: Schema.Struct({ id: Schema.String, status: Schema.String })
  })
} as const

let server: FakeServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

/** A server whose revision goes through `statuses`, one per poll, staying on the last. */
const revisionServer = async (statuses: ReadonlyArray<string>) => {
  server = await startFakeServer((_, index) => ({ json: { id: "r1", status: statuses[Math.min(index, statuses.length - 1)] } }))
  return { server, client: makeClient(revisionApi, { baseUrl: server.baseUrl, apiKey: "k" }) }
}

const fast = { deploymentId: "d1", revisionId: "r1", interval: 10, maxInterval: 40, timeout: "5 seconds" } as const

describe("waitForRevision", () => {
  it("polls until DEPLOYED and returns the revision", async () => {
    const { client, server } = await revisionServer(["CREATING", "QUEUED", "DEPLOYING", "DEPLOYED"])
    const polls: Array<RevisionPoll<{ id: string; status: string }>> = []
    const revision = await Effect.runPromise(waitForRevision(client, { ...fast, onPoll: (poll) => polls.push(poll) }))
    expect(revision).toEqual({ id: "r1", status: "DEPLOYED" })
    expect(server.requests).toHaveLength(4)
    expect(server.requests[0]!.url).toBe("/v2/deployments/d1/revisions/r1")
    expect(polls.map((poll) => [poll.attempt, poll.revision.status])).toEqual([
      [1, "CREATING"],
      [2, "QUEUED"],
      [3, "DEPLOYING"],
      [4, "DEPLOYED"]
    ])
  })

  it("waits longer between later polls, up to maxInterval", async () => {
    const { client } = await revisionServer(["BUILDING", "BUILDING", "BUILDING", "BUILDING", "BUILDING", "DEPLOYED"])
    const times: Array<number> = []
    await Effect.runPromise(waitForRevision(client, { ...fast, interval: 20, maxInterval: 60, onPoll: (poll) => times.push(poll.elapsedMs) }))
    const gaps = times.slice(1).map((time, index) => time - times[index]!)
    // Intervals 20, 30, 45, 60, 60 (plus request time): growing, then capped.
    expect(gaps[0]!).toBeGreaterThanOrEqual(18)
    expect(gaps[2]!).toBeGreaterThanOrEqual(43)
    expect(gaps[4]!).toBeGreaterThanOrEqual(58)
    expect(gaps[4]!).toBeLessThan(200)
  })

  it("fails with RevisionFailed on BUILD_FAILED, carrying the revision and its status", async () => {
    const { client, server } = await revisionServer(["BUILDING", "BUILD_FAILED", "DEPLOYED"])
    const error = await Effect.runPromise(Effect.flip(waitForRevision(client, fast)))
    expect(error).toMatchObject({ _tag: "RevisionFailed", revisionId: "r1", status: "BUILD_FAILED", revision: { id: "r1", status: "BUILD_FAILED" } })
    expect(server.requests).toHaveLength(2)
  })

  it.each(["CREATE_FAILED", "DEPLOY_FAILED", "SKIPPED", "INTERRUPTED", "UNKNOWN"])("stops on %s", async (status) => {
    const { client } = await revisionServer([status, "DEPLOYED"])
    expect(await Effect.runPromise(Effect.flip(waitForRevision(client, fast)))).toMatchObject({ _tag: "RevisionFailed", status })
  })

  it("keeps polling through a status this client does not know yet", async () => {
    const { client, server } = await revisionServer(["WARMING_CACHES", "DEPLOYED"])
    expect(await Effect.runPromise(waitForRevision(client, fast))).toMatchObject({ status: "DEPLOYED" })
    expect(server.requests).toHaveLength(2)
  })

  it("fails with RevisionTimeout, the last status and the elapsed time when the budget runs out", async () => {
    const { client, server } = await revisionServer(["BUILDING"])
    const error = await Effect.runPromise(Effect.flip(waitForRevision(client, { ...fast, timeout: 300 })))
    expect(error).toMatchObject({ _tag: "RevisionTimeout", revisionId: "r1", lastStatus: "BUILDING" })
    if (error._tag !== "RevisionTimeout") throw error
    expect(error.elapsedMs).toBeGreaterThanOrEqual(290)
    expect(error.elapsedMs).toBeLessThan(1_000)
    expect(server.requests.length).toBeGreaterThan(3)
  })

  it("passes the client's own error through", async () => {
    server = await startFakeServer(() => ({ status: 404, json: { detail: "Deployment d1 not found" } }))
    const client = makeClient(revisionApi, { baseUrl: server.baseUrl })
    expect(await Effect.runPromise(Effect.flip(waitForRevision(client, fast)))).toMatchObject({ _tag: "NotFound" })
  })
})
