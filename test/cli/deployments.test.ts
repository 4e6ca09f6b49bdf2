/** `slipway deploy | status | revisions | rollback | logs`: the real binary against a real server. */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestServer, type TestServer } from "../support/server.ts"
import { slipway } from "./run.ts"

let server: TestServer
let env: Record<string, string>
beforeAll(async () => {
  // 60 ms per state: slow enough that progress shows each state, fast enough for a test.
  server = await startTestServer({ revisionStepMs: 60 })
  env = { SLIPWAY_URL: server.url, SLIPWAY_API_KEY: server.key }
})
afterAll(() => server?.close())

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

describe("deploy", () => {
  it("creates a deployment and prints a progress line per state until DEPLOYED", async () => {
    const run = await slipway(["deploy", "--name", "web", "--image-uri", "registry.example.com/web:1", "--secret", "DB_PASSWORD=hunter2-cli", "--poll-interval", "20ms"], env)
    expect(run.code, run.stderr).toBe(0)
    const states = [...run.stderr.matchAll(/^Revision [0-9a-f-]{36}: ([A-Z_]+) \(/gm)].map((match) => match[1])
    expect(states.length).toBeGreaterThanOrEqual(2)
    expect(new Set(states).size).toBe(states.length)
    expect(states.at(-1)).toBe("DEPLOYED")
    expect(run.stdout).toMatch(/^web: created, revision [0-9a-f-]{36} DEPLOYED \(\d+\.\ds\)\ndeployment [0-9a-f-]{36}\n$/)
    expect(run.stdout + run.stderr).not.toContain("hunter2-cli")
    const list = await server.request("GET", "/v2/deployments?name_contains=web")
    expect(list.body.resources[0].secrets).toEqual([{ name: "DB_PASSWORD", value: "********" }])
  })

  it("--json prints the result as one JSON document; an identical run is a no-op", async () => {
    const run = await slipway(["deploy", "--json", "--name", "web", "--image-uri", "registry.example.com/web:2", "--secret", "DB_PASSWORD=hunter2-cli"], env)
    expect(run.code, run.stderr).toBe(0)
    const result = run.json()
    expect(result).toMatchObject({ outcome: "updated", created: false, status: "DEPLOYED", changes: ["image-uri: registry.example.com/web:1 → registry.example.com/web:2"] })
    expect(result.revision_id).toMatch(uuid)
    const again = await slipway(["deploy", "--json", "--name", "web", "--image-uri", "registry.example.com/web:2", "--secret", "DB_PASSWORD=hunter2-cli"], env)
    expect(again.json()).toMatchObject({ outcome: "unchanged", revision_id: result.revision_id })
    expect(again.stderr).toContain("Nothing to do")
  })

  it("a failing revision exits 1 naming its status; --json carries the error and the partial result", async () => {
    const run = await slipway(["deploy", "--json", "--name", "web", "--image-uri", "registry.example.com/web:fail-deploy"], env)
    expect(run.code).toBe(1)
    const document = run.json()
    expect(document.error).toMatchObject({ kind: "RevisionFailed", exit_code: 1 })
    expect(document.error.message).toMatch(/ended in DEPLOY_FAILED/)
    expect(document.result).toMatchObject({ status: "DEPLOY_FAILED" })
    expect(run.stderr).toMatch(/^slipway: Revision [0-9a-f-]{36} of deployment web ended in DEPLOY_FAILED/m)
  })

  it("--no-wait returns once the revision exists", async () => {
    const run = await slipway(["deploy", "--json", "--no-wait", "--name", "nowait", "--image-uri", "registry.example.com/x:1"], env)
    expect(run.code, run.stderr).toBe(0)
    expect(run.json()).toMatchObject({ created: true })
    expect(run.json().status).not.toBe("DEPLOYED")
  })
})

describe("status and revisions", () => {
  it("status shows the active and latest revisions, as text and as JSON", async () => {
    const text = await slipway(["status", "web"], env)
    expect(text.code, text.stderr).toBe(0)
    expect(text.stdout).toMatch(/^name {6}web$/m)
    expect(text.stdout).toMatch(/^active {4}[0-9a-f-]{36} DEPLOYED registry\.example\.com\/web:2$/m)
    expect(text.stdout).toMatch(/^latest {4}[0-9a-f-]{36} DEPLOY_FAILED: /m)
    const json = await slipway(["--json", "status", "web"], env)
    const document = json.json()
    expect(document.deployment.name).toBe("web")
    expect(document.active_revision.status).toBe("DEPLOYED")
    expect(document.latest_revision.status).toBe("DEPLOY_FAILED")
    // By id too.
    const byId = await slipway(["status", document.deployment.id, "--json"], env)
    expect(byId.json().deployment.id).toBe(document.deployment.id)
  })

  it("revisions lists newest first with the active one marked, as a table and as JSON", async () => {
    const text = await slipway(["revisions", "web"], env)
    expect(text.code, text.stderr).toBe(0)
    const lines = text.stdout.trimEnd().split("\n")
    expect(lines[0]).toMatch(/^\s+REVISION\s+STATUS\s+CREATED\s+SOURCE\s+MESSAGE$/)
    expect(lines).toHaveLength(4)
    expect(lines[1]).toMatch(/^ {3}[0-9a-f-]{36}  DEPLOY_FAILED /)
    expect(lines[2]).toMatch(/^\* {2}[0-9a-f-]{36}  DEPLOYED +\S+ +registry\.example\.com\/web:2/)
    const json = await slipway(["revisions", "web", "--json", "--status", "DEPLOYED"], env)
    const page = json.json()
    expect(page.resources.map((revision: any) => revision.status)).toEqual(["DEPLOYED", "DEPLOYED"])
  })
})

describe("list", () => {
  it("lists deployments with their status and URL, as a table and as JSON; filters by name and status", async () => {
    const text = await slipway(["list"], env)
    expect(text.code, text.stderr).toBe(0)
    const lines = text.stdout.trimEnd().split("\n")
    expect(lines[0]).toMatch(/^NAME +STATUS +URL +SOURCE$/)
    const web = lines.find((line) => line.startsWith("web "))
    expect(web).toMatch(/^web +READY +(http\S+|-) +external_container registry\.example\.com\/web:\S+$/)
    const json = await slipway(["list", "--json", "--name-contains", "web"], env)
    expect(json.code, json.stderr).toBe(0)
    expect(json.json().resources.map((deployment: any) => deployment.name)).toEqual(["web"])
    const none = await slipway(["ls", "--status", "awaiting_delete"], env)
    expect(none.code, none.stderr).toBe(0)
    expect(none.stdout).toBe("no deployments\n")
    const bad = await slipway(["list", "--status", "SLEEPING"], env)
    expect(bad.code).toBe(2)
  })
})

describe("rollback", () => {
  it("redeploys the previous DEPLOYED revision and waits until it serves; --to picks one", async () => {
    const before = (await slipway(["revisions", "web", "--json", "--status", "DEPLOYED"], env)).json().resources
    const [current, previous] = before
    const run = await slipway(["rollback", "web", "--json"], env)
    expect(run.code, run.stderr).toBe(0)
    expect(run.stderr).toContain(`Rolling web back to revision ${previous.id}`)
    expect(run.json()).toMatchObject({ outcome: "redeployed", revision_id: previous.id, status: "DEPLOYED" })
    expect((await slipway(["status", "web", "--json"], env)).json().deployment.active_revision_id).toBe(previous.id)

    const forward = await slipway(["rollback", "web", "--to", current.id], env)
    expect(forward.code, forward.stderr).toBe(0)
    expect((await slipway(["status", "web", "--json"], env)).json().deployment.active_revision_id).toBe(current.id)
  })

  it("a deployment with one revision has nothing to roll back to (exit 1)", async () => {
    await slipway(["deploy", "--name", "single", "--image-uri", "registry.example.com/single:1"], env)
    const run = await slipway(["rollback", "single"], env)
    expect(run.code).toBe(1)
    expect(run.stderr).toContain("has no DEPLOYED revision before the active one")
  })
})

describe("logs", () => {
  it("reads a revision's deploy logs from the server (none on the simulated runtime) and exits 0", async () => {
    const run = await slipway(["logs", "web", "--json"], env)
    expect(run.code, run.stderr).toBe(0)
    expect(run.json()).toMatchObject({ type: "deploy", lines: [] })
  })
})

describe("exit codes", () => {
  it("4 for a refused key, and for no key at all", async () => {
    const bad = await slipway(["status", "web"], { ...env, SLIPWAY_API_KEY: "slw_wrong_key_0000000000000000000000000000" })
    expect(bad.code).toBe(4)
    expect(bad.stderr).toContain("Invalid API key")
    const none = await slipway(["status", "web"], { SLIPWAY_URL: server.url })
    expect(none.code).toBe(4)
    expect(none.stderr).toContain("no API key")
  })

  it("3 for an unknown deployment, by name or id", async () => {
    const byName = await slipway(["status", "nope"], env)
    expect(byName.code).toBe(3)
    expect(byName.stderr).toContain("no deployment named nope")
    const byId = await slipway(["revisions", "00000000-0000-4000-8000-00000000dead", "--json"], env)
    expect(byId.code).toBe(3)
    expect(byId.json().error).toMatchObject({ kind: "NotFound", exit_code: 3 })
  })

  it("2 for bad input, found locally or by the server (with the server's message)", async () => {
    const local = await slipway(["deploy", "--name", "Bad_Name", "--image-uri", "x:1"], env)
    expect(local.code).toBe(2)
    expect(local.stderr).toContain("--name: must be 1-63 lowercase letters")
    const server422 = await slipway(["deploy", "--name", "spec", "--image-uri", "x:1", "--resource-spec", '{"cpu": 0}'], env)
    expect(server422.code).toBe(2)
    expect(server422.stderr).toContain("resource-spec (at cpu): Input should be greater than or equal to 0.1")
    const flag = await slipway(["status"], env)
    expect(flag.code).toBe(2)
    expect(flag.stderr).toContain("missing required argument 'deployment'")
  })

  it("5 when the server is unreachable", async () => {
    const run = await slipway(["status", "web"], { SLIPWAY_URL: "http://127.0.0.1:1", SLIPWAY_API_KEY: "k" })
    expect(run.code).toBe(5)
    expect(run.stderr).toContain("check --url / SLIPWAY_URL")
  })
})
