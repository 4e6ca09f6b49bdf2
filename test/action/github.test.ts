/**
 * The action's GitHub extras (issue 17), through the committed bundle against a real Slipway:
 * with `github-token`, a GitHub Deployment for the environment and its statuses, the deployment's
 * URL as the environment URL; the failing revision's logs (or status_message) in the job summary.
 *
 * The real GitHub API is unreachable here: a small local HTTP server stands in for it
 * (GITHUB_API_URL points at it, as on GitHub Enterprise Server) and records what it was sent.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestServer, type TestServer } from "../support/server.ts"
import { runBundle } from "./runner.ts"

interface Recorded {
  readonly method: string
  readonly path: string
  readonly authorization: string | undefined
  readonly body: any
}

const readBody = (request: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let text = ""
    request.on("data", (chunk) => (text += chunk))
    request.on("end", () => resolve(text))
  })

const listen = async (handler: (request: IncomingMessage, response: ServerResponse, body: string) => void | Promise<void>) => {
  const server = createServer(async (request, response) => handler(request, response, await readBody(request)))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}
const close = (server: Server | undefined) => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))

const json = (response: ServerResponse, status: number, body: unknown) => {
  response.writeHead(status, { "content-type": "application/json" })
  response.end(JSON.stringify(body))
}

let slipway: TestServer
let github: { server: Server; url: string }
let logsProxy: { server: Server; url: string }
let workDir: string
let recorded: Array<Recorded> = []
let refuse = false
const token = "ghs_test_token_0123456789"

beforeAll(async () => {
  slipway = await startTestServer({ revisionStepMs: 20 })
  workDir = mkdtempSync(join(tmpdir(), "slipway-github-"))
  let nextId = 100
  github = await listen((request, response, text) => {
    recorded.push({ method: request.method!, path: request.url!, authorization: request.headers.authorization, body: text ? JSON.parse(text) : undefined })
    if (refuse) return json(response, 403, { message: "Resource not accessible by integration" })
    if (request.method === "POST" && /^\/repos\/[^/]+\/[^/]+\/deployments$/.test(request.url!)) return json(response, 201, { id: ++nextId })
    if (request.method === "POST" && /^\/repos\/[^/]+\/[^/]+\/deployments\/\d+\/statuses$/.test(request.url!)) return json(response, 201, { id: 1, state: JSON.parse(text).state })
    json(response, 404, { message: "Not Found" })
  })
  // Slipway with the log endpoints a later engineer adds: everything else is passed to the real server.
  logsProxy = await listen(async (request, response, text) => {
    const match = /^\/v1\/projects\/[^/]+\/revisions\/[^/]+\/(build|deploy)_logs$/.exec(request.url!)
    if (request.method === "POST" && match) {
      return json(response, 200, { logs: [{ timestamp: "2026-11-23T10:00:00Z", level: "info", message: "starting shop" }, { timestamp: "2026-11-23T10:00:01Z", level: "error", message: "port 8000 already in use" }] })
    }
    const headers: Record<string, string> = {}
    for (const [key, value] of Object.entries(request.headers)) if (typeof value === "string" && key !== "host" && key !== "content-length") headers[key] = value
    const answer = await fetch(slipway.url + request.url, { method: request.method!, headers, ...(text ? { body: text } : {}) })
    response.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" })
    response.end(await answer.text())
  })
})
afterAll(async () => {
  await close(github?.server)
  await close(logsProxy?.server)
  await slipway?.close()
  if (workDir) rmSync(workDir, { recursive: true, force: true })
})

const sha = "fedcba9876543210fedcba9876543210fedcba98"
const run = (inputs: Record<string, string>, apiUrl = slipway.url) =>
  runBundle(workDir, { "api-url": apiUrl, "api-key": slipway.key, "github-token": token, environment: "staging", ...inputs }, { GITHUB_API_URL: github.url, GITHUB_SHA: sha })

describe("with github-token", () => {
  it("records a GitHub Deployment of the commit for the environment, in_progress then success with the environment URL", async () => {
    recorded = []
    const result = await run({ name: "gh-shop", "repo-url": "https://github.com/acme/gh-shop", "graph-config-path": "langgraph.json" })
    expect(result.code, result.stdout).toBe(0)
    const deployment = (await slipway.request("GET", "/v2/deployments?name_contains=gh-shop")).body.resources[0]
    expect(deployment.source_config.custom_url).toMatch(/^http/)
    expect(result.outputs.url).toBe(deployment.source_config.custom_url)

    expect(recorded.map((request) => `${request.method} ${request.path}`)).toEqual([
      "POST /repos/acme/Shop_API/deployments",
      "POST /repos/acme/Shop_API/deployments/101/statuses",
      "POST /repos/acme/Shop_API/deployments/101/statuses"
    ])
    expect(recorded.every((request) => request.authorization === `token ${token}`)).toBe(true)
    expect(recorded[0]!.body).toMatchObject({ ref: sha, environment: "staging", auto_merge: false, required_contexts: [] })
    expect(recorded[1]!.body).toMatchObject({ state: "in_progress", log_url: "https://github.com/acme/Shop_API/actions/runs/42" })
    expect(recorded[2]!.body).toMatchObject({ state: "success", environment: "staging", environment_url: deployment.source_config.custom_url })
    // The token appears only in the mask command, before anything else is printed.
    expect(result.stdout.split("\n").filter((line) => line.includes(token))).toEqual([`::add-mask::${token}`])
    expect(result.stdout.indexOf(`::add-mask::${token}`)).toBeLessThan(result.stdout.indexOf("GitHub Deployment"))
  })

  it("a failed revision marks the GitHub Deployment failure; the summary shows the revision's status_message when the server serves no logs", async () => {
    recorded = []
    const result = await run({ name: "gh-fail", "image-uri": "registry.example.com/shop:fail-deploy" })
    expect(result.code).toBe(1)
    expect(recorded.map((request) => request.body?.state).filter(Boolean)).toEqual(["in_progress", "failure"])
    const revision = (
      await slipway.request("GET", `/v2/deployments/${(await slipway.request("GET", "/v2/deployments?name_contains=gh-fail")).body.resources[0].id}/revisions`)
    ).body.resources[0]
    expect(revision.status).toBe("DEPLOY_FAILED")
    expect(revision.status_message).toBeTruthy()
    expect(result.summary).toContain("**Status message**")
    expect(result.summary).toContain(revision.status_message)
    expect(result.summary).not.toContain("log lines")
  })

  it("the summary shows the failing revision's last deploy log lines when the server serves them", async () => {
    const result = await run({ name: "gh-logs", "image-uri": "registry.example.com/shop:fail-deploy" }, logsProxy.url)
    expect(result.code).toBe(1)
    expect(result.summary).toContain("**Last 2 deploy log lines**")
    expect(result.summary).toContain("2026-11-23T10:00:01Z [error] port 8000 already in use")
    expect(result.summary).not.toContain("**Status message**")
  })

  it("GitHub refusing (no deployments permission) warns and the deploy still succeeds", async () => {
    recorded = []
    refuse = true
    try {
      const result = await run({ name: "gh-refused", "image-uri": "registry.example.com/shop:1" })
      expect(result.code, result.stdout).toBe(0)
      expect(result.stdout).toMatch(/::warning::Could not record a GitHub Deployment for environment staging: HTTP 403/)
      expect(result.outputs.status).toBe("DEPLOYED")
    } finally {
      refuse = false
    }
  })

  it("without github-token nothing is sent to GitHub", async () => {
    recorded = []
    const result = await runBundle(workDir, { "api-url": slipway.url, "api-key": slipway.key, name: "gh-none", "image-uri": "registry.example.com/shop:1" }, { GITHUB_API_URL: github.url })
    expect(result.code, result.stdout).toBe(0)
    expect(recorded).toEqual([])
  })
})
