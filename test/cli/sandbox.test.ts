/** `slipway sandbox create | ls | rm` through the API: the real binary against a real server. */
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
    expect(listed.stdout.split("\n")[0]).toMatch(/^NAME\s+TEMPLATE\s+POOL\s+CREATED\s+DATAPLANE$/)
    expect(listed.stdout).toMatch(/^box-one\s+tiny\s/m)
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
