/**
 * `slipway logs` against log endpoints. Slipway does not serve them yet (another engineer adds
 * `POST /v1/projects/{deployment_id}/revisions/{revision_id}/build_logs` and `deploy_logs`), so a
 * small proxy in front of a real server answers those two paths, with lines that arrive over time,
 * and passes everything else through. Once the server has them, point these tests at it directly.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestServer, type TestServer } from "../support/server.ts"
import { slipway } from "./run.ts"

let server: TestServer
let proxy: Server
let proxyUrl: string
const requests: Array<{ path: string; body: any }> = []
let started: number | undefined

/** Line i's time: epoch milliseconds, as the server's log endpoints answer. */
const FIRST = Date.UTC(2026, 10, 23, 15, 0, 0, 125)
const timeOf = (index: number) => FIRST + index * 1000

/** From the first request on, one more line every 250 ms (8 in all): a follower sees them arrive. */
const visibleLines = () => {
  started ??= Date.now()
  return Array.from({ length: Math.min(8, 1 + Math.floor((Date.now() - started) / 250)) }, (_, index) => ({ timestamp: timeOf(index), level: "info", message: `line ${index}` }))
}

beforeAll(async () => {
  server = await startTestServer({ revisionStepMs: 1_500 })
  proxy = createServer(async (request, response) => {
    let text = ""
    for await (const chunk of request) text += chunk
    const match = /^\/v1\/projects\/[^/]+\/revisions\/[^/]+\/(build|deploy)_logs$/.exec(request.url!)
    if (request.method === "POST" && match) {
      const body = text ? JSON.parse(text) : {}
      requests.push({ path: request.url!, body })
      // The server's cursor protocol: `offset` is the `next_offset` of the previous answer (opaque text).
      const offset = Number(body.offset ?? 0)
      const logs = visibleLines().slice(offset)
      response.writeHead(200, { "content-type": "application/json" })
      return response.end(JSON.stringify({ logs, next_offset: String(offset + logs.length) }))
    }
    const headers: Record<string, string> = {}
    for (const [key, value] of Object.entries(request.headers)) if (typeof value === "string" && key !== "host" && key !== "content-length") headers[key] = value
    const answer = await fetch(server.url + request.url, { method: request.method!, headers, ...(text ? { body: text } : {}) })
    response.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" })
    response.end(await answer.text())
  })
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()))
  await server?.close()
})

describe("logs", () => {
  it("--follow prints each line once, in order, until the revision is DEPLOYED", { timeout: 60_000 }, async () => {
    const env = { SLIPWAY_URL: proxyUrl, SLIPWAY_API_KEY: server.key }
    const created = await slipway(["deploy", "--no-wait", "--json", "--name", "logged", "--image-uri", "registry.example.com/logged:1"], env)
    expect(created.code, created.stderr).toBe(0)
    const run = await slipway(["logs", "logged", "--follow"], env)
    expect(run.code, run.stderr).toBe(0)
    const lines = run.stdout.trim().split("\n")
    expect(lines).toHaveLength(8)
    // Times for people (ISO 8601, UTC), not epoch milliseconds.
    expect(lines[0]).toBe("2026-11-23T15:00:00.125Z [info] line 0")
    expect(lines).toEqual(lines.map((_, index) => `${new Date(timeOf(index)).toISOString()} [info] line ${index}`))
    expect(run.stderr).toContain(`revision ${created.json().revision_id}: DEPLOYED`)
    // It asked for what it had not seen yet, oldest first.
    expect(requests[0]!.body.offset).toBeUndefined()
    const offsets = requests.map((request) => Number(request.body.offset ?? 0))
    // Lines arrived while it followed: some reads started past the first line and before the last.
    expect(offsets.some((offset) => offset > 0 && offset < 8)).toBe(true)
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b))
    expect(requests.every((request) => request.body.order === "asc" && request.path.endsWith("/deploy_logs"))).toBe(true)
  })

  it("--tail and --json show the last lines of the chosen logs", async () => {
    const env = { SLIPWAY_URL: proxyUrl, SLIPWAY_API_KEY: server.key }
    const run = await slipway(["logs", "logged", "--tail", "2", "--type", "build", "--json"], env)
    expect(run.code, run.stderr).toBe(0)
    const document = run.json()
    expect(document.type).toBe("build")
    expect(document.lines).toHaveLength(2)
    // --json keeps the server's epoch milliseconds.
    expect(document.lines[1]).toEqual({ timestamp: timeOf(7), level: "info", message: "line 7" })
    const bad = await slipway(["logs", "logged", "--type", "boot"], env)
    expect(bad.code).toBe(2)
  })
})
