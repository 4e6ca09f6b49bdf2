/**
 * GET /metrics scraped as Prometheus does, from a real server: request counts and latency
 * histograms per route template (never a raw path), revision transitions, sandboxes by status,
 * the runtime's queue depth; loopback-only without a token, bearer token when one is set.
 */
import { networkInterfaces } from "node:os"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, startTestServer, type TestServer } from "../support/server.ts"

interface Sample {
  readonly name: string
  readonly labels: Record<string, string>
  readonly value: number
}

/** The text exposition format, line by line (what Prometheus parses). */
const parse = (text: string): Array<Sample> =>
  text
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
      if (!match) throw new Error(`not a sample line: ${line}`)
      const labels: Record<string, string> = {}
      for (const [, key, value] of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!
      return { name: match[1]!, labels, value: Number(match[3]) }
    })

const value = (samples: Array<Sample>, name: string, labels: Record<string, string>) =>
  samples.find((sample) => sample.name === name && Object.entries(labels).every(([key, v]) => sample.labels[key] === v))?.value

const scrape = async (url: string, headers: Record<string, string> = {}) => {
  const response = await fetch(url + "/metrics", { headers })
  return { status: response.status, type: response.headers.get("content-type"), text: await response.text() }
}

describe("/metrics", () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ revisionStepMs: 150 })
  })
  afterAll(() => t?.close())

  it("counts requests and their latency per route template, and the runtime's work", async () => {
    const created = await t.request("POST", "/v2/deployments", {
      body: { name: "metered", source: "external_container", source_revision_config: { image_uri: "ghcr.io/acme/agent:1.0" } }
    })
    expect(created.status).toBe(201)
    const id = created.body.id as string

    // The revision is still on its way: the runtime's queue holds it.
    const early = parse((await scrape(t.url)).text)
    expect(value(early, "slipway_runtime_queue_depth", { queue: "revisions" })).toBe(1)

    for (let i = 0; i < 3; i++) expect((await t.request("GET", `/v2/deployments/${id}`)).status).toBe(200)
    expect((await t.request("GET", "/v2/deployments/00000000-0000-4000-8000-00000000abcd")).status).toBe(404)
    expect((await t.request("GET", "/no/such/path")).status).toBe(404)
    expect((await t.request("GET", "/v2/deployments", { key: "wrong" })).status).toBe(401)
    await eventually(async () => ((await t.request("GET", `/v2/deployments/${id}`)).body.status === "READY" ? true : undefined), 10_000)

    expect((await t.request("POST", "/v2/sandboxes/templates", { body: { name: "py", image: "python:3.12" } })).status).toBe(201)
    expect((await t.request("POST", "/v2/sandboxes/boxes", { body: { template_name: "py", name: "b1" } })).status).toBe(201)

    const response = await scrape(t.url)
    expect(response.status).toBe(200)
    expect(response.type).toContain("text/plain; version=0.0.4")
    // Route templates only: no id appears in any label.
    expect(response.text).not.toContain(id)
    expect(response.text).not.toContain("00000000-0000-4000-8000-00000000abcd")
    const samples = parse(response.text)

    const route = { method: "GET", route: "/v2/deployments/{deployment_id}" }
    const gets = samples.filter((s) => s.name === "slipway_http_requests_total" && s.labels.route === route.route && s.labels.method === "GET")
    // 3 reads, the 404 and the polling reads of `eventually` (at least one).
    expect(value(samples, "slipway_http_requests_total", { ...route, code: "4xx" })).toBe(1)
    const ok = value(samples, "slipway_http_requests_total", { ...route, code: "2xx" })!
    expect(ok).toBeGreaterThanOrEqual(4)
    expect(gets.reduce((sum, s) => sum + s.value, 0)).toBe(ok + 1)
    // The histogram of that route: cumulative buckets ending at +Inf = count, a positive sum.
    const count = value(samples, "slipway_http_request_duration_seconds_count", route)!
    expect(count).toBe(ok + 1)
    expect(value(samples, "slipway_http_request_duration_seconds_bucket", { ...route, le: "+Inf" })).toBe(count)
    const buckets = samples.filter((s) => s.name === "slipway_http_request_duration_seconds_bucket" && s.labels.route === route.route && s.labels.method === "GET")
    expect(buckets.length).toBeGreaterThan(10)
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]!.value).toBeGreaterThanOrEqual(buckets[i - 1]!.value)
    expect(value(samples, "slipway_http_request_duration_seconds_sum", route)).toBeGreaterThan(0)

    expect(value(samples, "slipway_http_requests_total", { method: "POST", route: "/v2/deployments", code: "2xx" })).toBe(1)
    expect(value(samples, "slipway_http_requests_total", { method: "GET", route: "/v2/deployments", code: "4xx" })).toBe(1)
    expect(value(samples, "slipway_http_requests_total", { route: "(unmatched)", code: "4xx" })).toBe(1)

    // The revision's walk, each step once.
    expect(value(samples, "slipway_revision_transitions_total", { to: "DEPLOYED" })).toBe(1)
    const transitions = samples.filter((s) => s.name === "slipway_revision_transitions_total")
    expect(transitions.length).toBeGreaterThanOrEqual(3)
    expect(transitions.every((s) => s.value === 1)).toBe(true)

    expect(value(samples, "slipway_sandboxes", { status: "ready" })).toBe(1)
    expect(value(samples, "slipway_sandboxes", { status: "failed" })).toBe(0)
    expect(value(samples, "slipway_runtime_queue_depth", { queue: "revisions" })).toBe(0)
    expect(value(samples, "slipway_runtime_queue_depth", { queue: "sandboxes" })).toBe(0)
    // prom-client's process metrics.
    expect(value(samples, "process_resident_memory_bytes", {})).toBeGreaterThan(0)
  })

  it("serves loopback peers only when no token is configured", async () => {
    const external = Object.values(networkInterfaces())
      .flat()
      .find((address) => address && address.family === "IPv4" && !address.internal)
    if (!external) throw new Error("this test needs a non-loopback IPv4 address on the machine (none found in os.networkInterfaces())")
    const open = await startTestServer({ host: "0.0.0.0" })
    try {
      expect((await scrape(`http://127.0.0.1:${open.server.port}`)).status).toBe(200)
      const remote = await scrape(`http://${external.address}:${open.server.port}`)
      expect(remote.status).toBe(403)
      expect(remote.text).toContain("SLIPWAY_METRICS_TOKEN")
      // An API key is no substitute.
      expect((await scrape(`http://${external.address}:${open.server.port}`, { "x-api-key": open.key })).status).toBe(403)
    } finally {
      await open.close()
    }
  })

  it("asks for the bearer token when one is configured, from any peer", async () => {
    const token = "m3tr1cs-t0ken-0123456789abcdef"
    const secured = await startTestServer({ metricsToken: token })
    try {
      const missing = await scrape(secured.url)
      expect(missing.status).toBe(401)
      expect(missing.text).toContain("Authorization: Bearer")
      expect((await scrape(secured.url, { authorization: "Bearer not-the-token-0123456789" })).status).toBe(401)
      expect((await scrape(secured.url, { authorization: `Bearer ${secured.key}` })).status).toBe(401)
      const ok = await scrape(secured.url, { authorization: `Bearer ${token}` })
      expect(ok.status).toBe(200)
      expect(ok.text).toContain("slipway_http_requests_total")
    } finally {
      await secured.close()
    }
  })

  it("refuses a token too short to be a secret", async () => {
    await expect(startTestServer({ metricsToken: "short" })).rejects.toThrow(/at least 16 characters/)
  })
})

describe("/metrics and the deployment URLs", () => {
  it("no deployment served under the public URL may take /metrics (or the console)", async () => {
    const { Effect, Exit, Scope } = await import("effect")
    const { makeDeploymentProxy, RESERVED_PATHS } = await import("../../server/deployments/local/proxy.ts")
    const scope = Scope.makeUnsafe()
    const proxy = Effect.runSync(Scope.provide(scope)(makeDeploymentProxy({ publicUrl: "http://127.0.0.1:8080", reservedPaths: RESERVED_PATHS })))
    try {
      for (const path of ["/metrics", "/console"]) {
        expect(() => Effect.runSync(proxy.setRoute("d1", { name: "shadow", url: `http://127.0.0.1:8080${path}` })), path).toThrow(/would take Slipway's own path/)
      }
      expect(() => Effect.runSync(proxy.setRoute("d2", { name: "fine", url: "http://127.0.0.1:8080/apps/fine" }))).not.toThrow()
    } finally {
      Effect.runSync(Scope.close(scope, Exit.void))
    }
  })
})
