// @ts-nocheck
import { Effect, Schema } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { endpoint } from "../../../core/api/endpoint.ts"
import { type ClientError, type ClientOptions, makeClient, type Fetch } from "../../../core/client/index.ts"
import { type FakeServer, type Handler, type Reply, startFakeServer } from "./fake-server.ts"

/** A test-only table covering every shape the client must handle. */
const Thing = Schema.Struct({ id: Schema.String, name: Schema.String, count: Schema.NumberFromString })
const testApi = {
  getThing: endpoint({
    name: "getThing",
    method: "GET",
    path: "/v2/things/{thing_id}",
    area: "control",
    tag: "things",
    summary: "get",
    params: Schema.Struct({ thing_id: Schema.String }),
    query: Schema.Struct({ limit: Schema.optionalKey(Schema.String), name_contains: Schema.optionalKey(Schema.String) }),
    success: Thing
  }),
  createThing: endpoint({
    name: "createThing",
    method: "POST",
    path: "/v2/things",
    area: "control",
    tag: "things",
    summary: "create",
    status: 201,
    body: Schema.Struct({ name: Schema.String, tags: Schema.Array(Schema.String) }),
    success: Thing
  }),
  updateThing: endpoint({
    name: "updateThing",
    method: "PATCH",
    path: "/v2/things/{thing_id}",
    area: "control",
    tag: "things",
    summary: "update",
    params: Schema.Struct({ thing_id: Schema.String }),
    body: Schema.Struct({ name: Schema.optionalKey(Schema.String) }),
    success: Thing
  }),
  deleteThing: endpoint({
    name: "deleteThing",
    method: "DELETE",
    path: "/v2/things/{thing_id}",
    area: "sandbox",
    tag: "things",
    summary: "delete",
    status: 204,
    params: Schema.Struct({ thing_id: Schema.String })
  }),
  ping: endpoint({
    name: "ping",
    method: "GET",
    path: "/ping",
    area: "system",
    tag: "system",
    summary: "ping",
    auth: false,
    success: Schema.Struct({ status: Schema.Literal("ok") })
  })
} as const

const thingJson = { id: "t1", name: "alpha", count: "3" }

let server: FakeServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

/** Starts a server answering with `replies` in order (the last one repeats) and a client for it. */
const setup = async (replies: Handler | ReadonlyArray<Reply>, options: Partial<ClientOptions> = {}) => {
  const handler: Handler = typeof replies === "function" ? replies : (_, index) => replies[Math.min(index, replies.length - 1)]!
  server = await startFakeServer(handler)
  const client = makeClient(testApi, {
    baseUrl: `${server.baseUrl}/`,
    apiKey: "key-123",
    retry: { baseDelayMs: 5, maxDelayMs: 20 },
    ...options
  })
  return { server, client }
}

const failureOf = <A>(effect: Effect.Effect<A, ClientError>) => Effect.runPromise(Effect.flip(effect))

describe("makeClient: requests", () => {
  it("decodes the success body with the endpoint's schema", async () => {
    const { client } = await setup([{ json: thingJson }])
    const thing = await Effect.runPromise(client.getThing({ params: { thing_id: "t1" } }))
    expect(thing).toEqual({ id: "t1", name: "alpha", count: 3 })
  })

  it("renders the path, encodes the query without undefined values, and sends auth, tenant and agent headers", async () => {
    const { client, server } = await setup([{ json: thingJson }], { tenantId: "tenant-9", userAgent: "test-agent/1" })
    await Effect.runPromise(client.getThing({ params: { thing_id: "a b/c" }, query: { limit: 5, name_contains: undefined } }))
    const [request] = server.requests
    expect(request!.method).toBe("GET")
    expect(request!.url).toBe("/v2/things/a%20b%2Fc?limit=5")
    expect(request!.headers["x-api-key"]).toBe("key-123")
    expect(request!.headers["x-tenant-id"]).toBe("tenant-9")
    expect(request!.headers["user-agent"]).toBe("test-agent/1")
    expect(request!.headers["accept"]).toBe("application/json")
    expect(request!.body).toBe("")
  })

  it("sends the body as JSON", async () => {
    const { client, server } = await setup([{ status: 201, json: thingJson }])
    await Effect.runPromise(client.createThing({ body: { name: "alpha", tags: ["x", "y"] } }))
    const [request] = server.requests
    expect(request!.method).toBe("POST")
    expect(request!.url).toBe("/v2/things")
    expect(request!.headers["content-type"]).toBe("application/json")
    expect(JSON.parse(request!.body)).toEqual({ name: "alpha", tags: ["x", "y"] })
  })

  it("answers void for 204 and leaves out the key on unauthenticated endpoints", async () => {
    const { client, server } = await setup((request) => (request.method === "DELETE" ? { status: 204 } : { json: { status: "ok" } }))
    expect(await Effect.runPromise(client.deleteThing({ params: { thing_id: "t1" } }))).toBeUndefined()
    expect(await Effect.runPromise(client.ping())).toEqual({ status: "ok" })
    expect(server.requests[0]!.headers["x-api-key"]).toBe("key-123")
    expect(server.requests[1]!.headers["x-api-key"]).toBeUndefined()
  })

  it("is lazy: nothing is sent until the Effect runs, and each run sends again", async () => {
    const { client, server } = await setup([{ json: thingJson }])
    const call = client.getThing({ params: { thing_id: "t1" } })
    expect(server.requests).toHaveLength(0)
    await Effect.runPromise(call)
    await Effect.runPromise(call)
    expect(server.requests).toHaveLength(2)
  })

  it("types the input from the endpoint description", () => {
    const client = makeClient(testApi, { baseUrl: "http://127.0.0.1:1" })
    //  params are required
    void client.getThing()
    //  the body must match the body schema
    void client.createThing({ body: { name: 1, tags: [] } })
    //  the query only takes its declared fields
    void client.getThing({ params: { thing_id: "t1" }, query: { limt: 5 } })
    void client.ping()
    expect(typeof client.getThing).toBe("function")
  })
})

describe("makeClient: error answers", () => {
  const cases: ReadonlyArray<{ name: string; reply: Reply; tag: string; fields: Record<string, unknown> }> = [
    {
      name: "422 validation list",
      reply: { status: 422, json: { detail: [{ loc: ["body", "name"], msg: "Field required", type: "missing" }] } },
      tag: "ValidationError",
      fields: { issues: [expect.objectContaining({ loc: ["body", "name"], msg: "Field required", type: "missing" })] }
    },
    {
      name: "404 string detail",
      reply: { status: 404, json: { detail: "Deployment d1 not found" } },
      tag: "NotFound",
      fields: { message: "Deployment d1 not found" }
    },
    {
      name: "400 string detail",
      reply: { status: 400, json: { detail: "revision never deployed" } },
      tag: "BadRequest",
      fields: { message: "revision never deployed" }
    },
    {
      name: "sandbox 404 {error, message}",
      reply: { status: 404, json: { detail: { error: "NotFound", message: "box b1 not found" } } },
      tag: "SandboxNotFound",
      fields: { message: "box b1 not found" }
    },
    {
      name: "sandbox 409 {error: Conflict}",
      reply: { status: 409, json: { detail: { error: "Conflict", message: "name taken" } } },
      tag: "SandboxConflict",
      fields: { message: "name taken" }
    },
    {
      name: "429 storage quota string",
      reply: { status: 429, json: { detail: "Storage quota exceeded: limit 100Gi, current usage 95Gi, requested increase 10Gi" } },
      tag: "QuotaExceeded",
      fields: { limit: "100Gi", usage: "95Gi", requested: "10Gi" }
    },
    {
      name: "non-JSON 4xx from a proxy",
      reply: { status: 401, raw: "Unauthorized by gateway" },
      tag: "Unauthorized",
      fields: { message: "Unauthorized by gateway" }
    }
  ]

  it.each(cases)("$name → $tag, not retried", async ({ reply, tag, fields }) => {
    const { client, server } = await setup([reply, { json: thingJson }])
    const error = await failureOf(client.getThing({ params: { thing_id: "t1" } }))
    expect(error._tag).toBe(tag)
    expect(error).toMatchObject(fields)
    expect(server.requests).toHaveLength(1)
  })

  it("turns a 2xx body that does not match the success schema into a DecodeError, without retrying", async () => {
    const { client, server } = await setup([{ json: { id: "t1" } }, { json: thingJson }])
    const error = await failureOf(client.getThing({ params: { thing_id: "t1" } }))
    expect(error._tag).toBe("DecodeError")
    expect(error).toMatchObject({ status: 200, method: "GET" })
    expect(server.requests).toHaveLength(1)
  })

  it("turns a 2xx body that is not JSON into a DecodeError", async () => {
    const { client } = await setup([{ raw: "<html>" }])
    expect((await failureOf(client.getThing({ params: { thing_id: "t1" } })))._tag).toBe("DecodeError")
  })
})

describe("makeClient: retries", () => {
  it("retries a 503 and returns the later success", async () => {
    const { client, server } = await setup([{ status: 503, json: { detail: "warming up" } }, { status: 503 }, { json: thingJson }])
    const thing = await Effect.runPromise(client.getThing({ params: { thing_id: "t1" } }))
    expect(thing.name).toBe("alpha")
    expect(server.requests).toHaveLength(3)
  })

  it("stops after maxAttempts and surfaces the last error", async () => {
    const { client, server } = await setup([{ status: 502, json: { detail: "bad gateway" } }], { retry: { maxAttempts: 3, baseDelayMs: 1 } })
    const error = await failureOf(client.getThing({ params: { thing_id: "t1" } }))
    expect(error).toMatchObject({ _tag: "ServerError", status: 502, message: "bad gateway" })
    expect(server.requests).toHaveLength(3)
  })

  it("waits for Retry-After on a 429 before retrying", async () => {
    const { client, server } = await setup([{ status: 429, json: { detail: "slow down" }, headers: { "retry-after": "1" } }, { json: thingJson }])
    const started = Date.now()
    await Effect.runPromise(client.getThing({ params: { thing_id: "t1" } }))
    expect(Date.now() - started).toBeGreaterThanOrEqual(950)
    expect(server.requests).toHaveLength(2)
  })

  it("does not wait for a Retry-After longer than maxRetryAfterMs", async () => {
    const { client, server } = await setup([{ status: 429, json: { detail: "slow down" }, headers: { "retry-after": "120" } }, { json: thingJson }])
    const error = await failureOf(client.getThing({ params: { thing_id: "t1" } }))
    expect(error).toMatchObject({ _tag: "ServerError", status: 429 })
    expect(server.requests).toHaveLength(1)
  })

  it("retries a POST on 429 and 503, which say the request was not processed", async () => {
    const { client, server } = await setup([{ status: 429, json: { detail: "slow down" } }, { status: 503 }, { status: 201, json: thingJson }])
    await Effect.runPromise(client.createThing({ body: { name: "alpha", tags: [] } }))
    expect(server.requests).toHaveLength(3)
  })

  it("does not retry a POST or PATCH on another 5xx, which may have been processed", async () => {
    const { client, server } = await setup([{ status: 500, json: { detail: "boom" } }])
    expect(await failureOf(client.createThing({ body: { name: "alpha", tags: [] } }))).toMatchObject({ _tag: "ServerError", status: 500 })
    expect(await failureOf(client.updateThing({ params: { thing_id: "t1" }, body: {} }))).toMatchObject({ _tag: "ServerError", status: 500 })
    expect(server.requests).toHaveLength(2)
  })

  it("retries a GET and a DELETE on 500", async () => {
    const { client, server } = await setup((request, index) =>
      index % 2 === 0 ? { status: 500, json: { detail: "boom" } } : request.method === "DELETE" ? { status: 204 } : { json: thingJson }
    )
    await Effect.runPromise(client.getThing({ params: { thing_id: "t1" } }))
    await Effect.runPromise(client.deleteThing({ params: { thing_id: "t1" } }))
    expect(server.requests.map((request) => request.method)).toEqual(["GET", "GET", "DELETE", "DELETE"])
  })
})

describe("makeClient: transport failures", () => {
  /** Wraps the real fetch to count attempts even when no server sees them. */
  const countingFetch = () => {
    const calls: Array<string> = []
    const fetch: Fetch = (input, init) => {
      calls.push(input)
      return globalThis.fetch(input, init)
    }
    return { calls, fetch }
  }

  it("retries a refused connection, then surfaces a TransportError", async () => {
    const closed = await startFakeServer(() => ({ json: thingJson }))
    await closed.close()
    const { calls, fetch } = countingFetch()
    const client = makeClient(testApi, { baseUrl: closed.baseUrl, fetch, retry: { maxAttempts: 3, baseDelayMs: 1 } })
    const error = await failureOf(client.getThing({ params: { thing_id: "t1" } }))
    expect(error).toMatchObject({ _tag: "TransportError", reason: "network", method: "GET", url: `${closed.baseUrl}/v2/things/t1` })
    expect(error.message).toContain("ECONNREFUSED")
    expect(calls).toHaveLength(3)
  })

  it("retries a GET whose connection the server dropped", async () => {
    const { client, server } = await setup([{ destroy: true }, { json: thingJson }])
    await Effect.runPromise(client.getThing({ params: { thing_id: "t1" } }))
    expect(server.requests).toHaveLength(2)
  })

  it("does not retry a POST whose connection was dropped: it may have been processed", async () => {
    const { client, server } = await setup([{ destroy: true }, { status: 201, json: thingJson }])
    expect(await failureOf(client.createThing({ body: { name: "alpha", tags: [] } }))).toMatchObject({ _tag: "TransportError", reason: "network" })
    expect(server.requests).toHaveLength(1)
  })

  it("gives up on an attempt after the per-request timeout", async () => {
    const { client } = await setup([{ delayMs: 2_000, json: thingJson }], { timeoutMs: 100, retry: { maxAttempts: 1 } })
    const started = Date.now()
    const error = await failureOf(client.getThing({ params: { thing_id: "t1" } }))
    expect(error).toMatchObject({ _tag: "TransportError", reason: "timeout" })
    expect(Date.now() - started).toBeLessThan(1_000)
  })

  it("retries a timed-out GET and returns the later success", async () => {
    const { client, server } = await setup([{ delayMs: 2_000, json: thingJson }, { json: thingJson }], { timeoutMs: 100 })
    await Effect.runPromise(client.getThing({ params: { thing_id: "t1" } }))
    expect(server.requests).toHaveLength(2)
  })
})
