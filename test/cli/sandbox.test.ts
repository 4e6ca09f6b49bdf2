/** `slipway sandbox create | ls | rm` through the API: the real binary against a real server. */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestServer, type TestServer } from "../support/server.ts"
import { slipway } from "./run.ts"

let server: TestServer
let env: Record<string, string>
beforeAll(async () => {
  server = await startTestServer({ revisionStepMs: 20 })
  env = { SLIPWAY_URL: server.url, SLIPWAY_API_KEY: server.key }
  const template = await server.request("POST", "/v2/sandboxes/templates", { body: { name: "tiny", image: "alpine:3.20", resources: { cpu: "250m", memory: "128Mi" } } })
  expect(template.status).toBe(201)
})
afterAll(() => server?.close())

describe("sandbox", () => {
  it("creates a box from a template, lists it, and removes it", async () => {
    const created = await slipway(["sandbox", "create", "--template", "tiny", "--name", "box-one"], env)
    expect(created.code, created.stderr).toBe(0)
    expect(created.stdout).toBe("box-one\n")
    const generated = await slipway(["sandbox", "create", "--template", "tiny", "--json"], env)
    expect(generated.code, generated.stderr).toBe(0)
    const box = generated.json()
    expect(box.name).toMatch(/^tiny-/)
    expect(box.template_name).toBe("tiny")

    const listed = await slipway(["sandbox", "ls"], env)
    expect(listed.stdout.split("\n")[0]).toMatch(/^NAME\s+STATUS\s+TEMPLATE\s+POOL\s+CREATED\s+DATAPLANE\s+MESSAGE$/)
    expect(listed.stdout).toMatch(/^box-one\s+ready\s+tiny\s/m)
    const json = await slipway(["sandbox", "ls", "--json"], env)
    expect(json.json().sandboxes.map((item: any) => item.name).sort()).toEqual(["box-one", box.name].sort())

    const removed = await slipway(["sandbox", "rm", "box-one", box.name], env)
    expect(removed.code, removed.stderr).toBe(0)
    expect((await slipway(["sandbox", "ls", "--json"], env)).json().sandboxes).toEqual([])
  })

  it("answers the server's errors with their exit codes: unknown template, unknown box, name taken", async () => {
    const template = await slipway(["sandbox", "create", "--template", "nope"], env)
    expect(template.code).not.toBe(0)
    expect(template.stderr).toMatch(/nope/)
    const box = await slipway(["sandbox", "rm", "ghost"], env)
    expect(box.code).toBe(3)
    await slipway(["sandbox", "create", "--template", "tiny", "--name", "taken"], env)
    const taken = await slipway(["sandbox", "create", "--template", "tiny", "--name", "taken", "--json"], env)
    expect(taken.code).toBe(1)
    expect(taken.json().error.kind).toBe("SandboxConflict")
    const usage = await slipway(["sandbox", "cp", "a.txt", "b.txt"], env)
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain("one of the two must be <box>:<path>")
  })
})

describe("a sandbox that fails", () => {
  it("create --wait exits 1 with why; ls shows it failed with its cause; a retry with the same name works", async () => {
    const template = await server.request("POST", "/v2/sandboxes/templates", { body: { name: "broken", image: "registry.invalid/fail-start:1" } })
    expect(template.status).toBe(201)
    const failed = await slipway(["sandbox", "create", "--template", "broken", "--name", "sad", "--wait", "--timeout", "10"], env)
    expect(failed.code).toBe(1)
    expect(failed.stderr).toContain("sandbox sad failed: image pull failed: pull registry.invalid/fail-start:1: manifest unknown")
    const json = await slipway(["sandbox", "create", "--template", "broken", "--name", "sad", "--wait", "--json"], env)
    expect(json.json().error.kind).toBe("SandboxCreationFailed")
    const listed = await slipway(["sandbox", "ls"], env)
    expect(listed.stdout).toMatch(/^sad\s+failed\s+broken\s.*image pull failed: pull registry\.invalid\/fail-start:1/m)
    const retried = await slipway(["sandbox", "create", "--template", "tiny", "--name", "sad", "--wait"], env)
    expect(retried.code, retried.stderr).toBe(0)
    expect((await slipway(["sandbox", "ls"], env)).stdout).toMatch(/^sad\s+ready\s+tiny\s/m)
    expect((await slipway(["sandbox", "rm", "sad"], env)).code).toBe(0)
  })
})

describe("a server whose runtime cannot execute", () => {
  // The spec's answer of such a server: every sandbox with `dataplane_url: null`. A proxy in front
  // of the real server rewrites that one field (Slipway answers a URL today) and records the paths asked.
  let proxy: Server
  let proxyEnv: Record<string, string>
  const paths: Array<string> = []
  beforeAll(async () => {
    proxy = createServer(async (request, response) => {
      paths.push(request.url!)
      let text = ""
      for await (const chunk of request) text += chunk
      const headers: Record<string, string> = {}
      for (const [key, value] of Object.entries(request.headers)) if (typeof value === "string" && key !== "host" && key !== "content-length") headers[key] = value
      const answer = await fetch(server.url + request.url, { method: request.method!, headers, ...(text ? { body: text } : {}) })
      let body = await answer.text()
      if (request.url!.startsWith("/v2/sandboxes/boxes") && body.startsWith("{")) body = JSON.stringify({ ...JSON.parse(body), dataplane_url: null })
      response.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" })
      response.end(body)
    })
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
    proxyEnv = { SLIPWAY_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, SLIPWAY_API_KEY: server.key }
  })
  afterAll(() => new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve())))

  it("exec and cp say so and exit 7, without sending anything to a dataplane", async () => {
    expect((await slipway(["sandbox", "create", "--template", "tiny", "--name", "no-dataplane"], env)).code).toBe(0)
    const exec = await slipway(["sandbox", "exec", "no-dataplane", "--", "echo", "hi"], proxyEnv)
    expect(exec.code).toBe(7)
    expect(exec.stderr).toBe("slipway: sandbox no-dataplane: this server's runtime cannot execute (dataplane not configured)\n")
    const cp = await slipway(["sandbox", "cp", "no-dataplane:/etc/hostname", "-", "--json"], proxyEnv)
    expect(cp.code).toBe(7)
    expect(cp.json().error).toMatchObject({ kind: "DataplaneNotConfigured", exit_code: 7 })
    expect(paths.every((path) => path.startsWith("/v2/sandboxes/boxes/no-dataplane"))).toBe(true)
  })
})
