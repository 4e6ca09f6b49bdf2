/**
 * Runs the committed bundle (dist/index.js) the way the GitHub runner does, `node dist/index.js`
 * with INPUT_* variables (hyphens kept, upper-cased), GITHUB_OUTPUT and GITHUB_STEP_SUMMARY
 * files, against a real Slipway server started here.
 */
// @ts-nocheck

import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { secretsAnnotation } from "../../action/plan.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

const bundle = join(import.meta.dirname, "../../dist/index.js")
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

interface ActionRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  readonly outputs: Record<string, string>
  readonly summary: string
}

/** Reads the `name<<delimiter` blocks @actions/core appends to GITHUB_OUTPUT. */
const parseOutputFile = (text: string): Record<string, string> => {
  const outputs: Record<string, string> = {}
  const lines = text.split("\n")
  for (let index = 0; index < lines.length; index++) {
    const match = /^([^<]+)<<(.+)$/.exec(lines[index]!)
    if (!match) continue
    const value: Array<string> = []
    while (++index < lines.length && lines[index] !== match[2]) value.push(lines[index]!)
    outputs[match[1]!] = value.join("\n")
  }
  return outputs
}

let server: TestServer
let workDir: string
let runCount = 0

const runAction = (inputs: Record<string, string>, env: Record<string, string> = {}): Promise<ActionRun> => {
  const id = ++runCount
  const outputFile = join(workDir, `output-${id}`)
  const summaryFile = join(workDir, `summary-${id}`)
  writeFileSync(outputFile, "")
  writeFileSync(summaryFile, "")
  const inputEnv = Object.fromEntries(Object.entries(inputs).map(([name, value]) => [`INPUT_${name.toUpperCase()}`, value]))
  const child = spawn(process.execPath, [bundle], {
    cwd: workDir,
    env: {
      PATH: process.env.PATH ?? "",
      GITHUB_ACTIONS: "true",
      GITHUB_OUTPUT: outputFile,
      GITHUB_STEP_SUMMARY: summaryFile,
      GITHUB_REPOSITORY: "acme/Shop_API",
      GITHUB_REF: "refs/heads/main",
      GITHUB_SHA: "0123456789abcdef0123456789abcdef01234567",
      GITHUB_SERVER_URL: "https://github.com",
      GITHUB_RUN_ID: "42",
      GITHUB_EVENT_NAME: "push",
      GITHUB_WORKSPACE: workDir,
      // Debug logging on: even then no request or response body may be printed.
      RUNNER_DEBUG: "1",
      // What the runner sets for every input from action.yml defaults.
      INPUT_WAIT: "true",
      INPUT_TIMEOUT: "15m",
      "INPUT_POLL-INTERVAL": "50ms",
      ...inputEnv,
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (chunk) => (stdout += chunk))
  child.stderr.on("data", (chunk) => (stderr += chunk))
  return new Promise((resolve, reject) => {
    child.on("error", reject)
    child.on("close", (code) =>
      resolve({
        code,
        stdout,
        stderr,
        outputs: parseOutputFile(readFileSync(outputFile, "utf8")),
        summary: readFileSync(summaryFile, "utf8")
      })
    )
  })
}

const secretValues = ["hunter2-db-password", "tok-9f8e7d6c"]
const secretsInput = `DB_PASSWORD=${secretValues[0]}\nAPI_TOKEN=${secretValues[1]}`

/** The key and the secret values appear only in the `::add-mask::` commands, which come before any other line. */
const expectNothingLeaked = (run: ActionRun, extra: ReadonlyArray<string> = []) => {
  const secrets = [server.key, ...secretValues, ...extra]
  const lines = run.stdout.split("\n")
  const firstOther = lines.findIndex((line) => !line.startsWith("::add-mask::"))
  for (const [index, line] of lines.entries()) {
    for (const secret of secrets) {
      if (line.includes(secret)) {
        expect(line, `a secret leaked on line ${index}`).toBe(`::add-mask::${secret}`)
        expect(index).toBeLessThan(firstOther)
      }
    }
  }
  for (const secret of secrets) {
    expect(run.stderr).not.toContain(secret)
    expect(run.summary).not.toContain(secret)
  }
}

const deploymentsNamed = async (name: string) => {
  const list = await server.request("GET", `/v2/deployments?name_contains=${name}`)
  return (list.body.resources as Array<any>).filter((deployment) => deployment.name === name)
}
const revisionsOf = async (deploymentId: string) => (await server.request("GET", `/v2/deployments/${deploymentId}/revisions?limit=100`)).body.resources as Array<any>

beforeAll(async () => {
  server = await startTestServer({ revisionStepMs: 20 })
  workDir = mkdtempSync(join(tmpdir(), "slipway-action-"))
  // The server serves deployments (the action depends on it).
  const probe = await server.request("GET", "/v2/deployments")
  expect(probe.status).toBe(200)
})

afterAll(async () => {
  await server?.close()
  if (workDir) rmSync(workDir, { recursive: true, force: true })
})

describe("the bundled action against a real server", () => {
  const base = () => ({ "api-url": server.url, "api-key": server.key, "image-uri": "registry.example.com/shop:1", secrets: secretsInput })
  const state: { deploymentId?: string; firstRevision?: string; secondRevision?: string } = {}

  it("first run creates the deployment (named after the repository) and waits until DEPLOYED", async () => {
    const run = await runAction(base())
    expect(run.code, run.stdout + run.stderr).toBe(0)
    expect(run.outputs.created).toBe("true")
    expect(run.outputs.status).toBe("DEPLOYED")
    expect(run.outputs["deployment-id"]).toMatch(uuid)
    expect(run.outputs["revision-id"]).toMatch(uuid)

    const [deployment] = await deploymentsNamed("shop-api")
    expect(deployment.id).toBe(run.outputs["deployment-id"])
    expect(deployment.active_revision_id).toBe(run.outputs["revision-id"])
    expect(deployment.secrets.map((secret: any) => secret.name).sort()).toEqual(["API_TOKEN", "DB_PASSWORD"])
    expect(deployment.source_config.resource_spec.annotations[secretsAnnotation]).toMatch(/^hmac-sha256:/)
    expect(run.outputs.url).toBe(deployment.source_config.custom_url ?? "")

    expect(run.summary).toContain("### Slipway deployment shop-api: created")
    expect(run.summary).toContain(`| Deployment | shop-api (\`${deployment.id}\`) |`)
    expect(run.summary).toContain(
      `| Revision | [${run.outputs["revision-id"]}](${server.url}/v2/deployments/${deployment.id}/revisions/${run.outputs["revision-id"]}) |`
    )
    expect(run.summary).toContain("| Status | ✅ DEPLOYED |")
    expect(run.summary).toMatch(/\| Elapsed \| \d+\.\ds \|/)
    expectNothingLeaked(run)
    state.deploymentId = deployment.id
    state.firstRevision = run.outputs["revision-id"]
  })

  it("a run with a new image creates a new revision and deploys it", async () => {
    const run = await runAction({ ...base(), "image-uri": "registry.example.com/shop:2" })
    expect(run.code, run.stdout + run.stderr).toBe(0)
    expect(run.outputs).toMatchObject({ created: "false", status: "DEPLOYED", "deployment-id": state.deploymentId })
    expect(run.outputs["revision-id"]).not.toBe(state.firstRevision)
    expect(run.stdout).toContain("image-uri: registry.example.com/shop:1 → registry.example.com/shop:2")
    expect(run.summary).toContain("### Slipway deployment shop-api: updated")

    const [deployment] = await deploymentsNamed("shop-api")
    expect(deployment.active_revision_id).toBe(run.outputs["revision-id"])
    expect(await revisionsOf(deployment.id)).toHaveLength(2)
    expectNothingLeaked(run)
    state.secondRevision = run.outputs["revision-id"]
  })

  it("a run with identical inputs (secrets included) is a no-op", async () => {
    const run = await runAction({ ...base(), "image-uri": "registry.example.com/shop:2" })
    expect(run.code, run.stdout + run.stderr).toBe(0)
    expect(run.outputs).toMatchObject({ created: "false", status: "DEPLOYED", "revision-id": state.secondRevision })
    expect(run.stdout).toContain("Nothing to do: deployment shop-api already matches the inputs")
    expect(run.summary).toContain("unchanged (no-op)")
    expect(await revisionsOf(state.deploymentId!)).toHaveLength(2)
    expectNothingLeaked(run)
  })

  it("changed secret values create a revision even with the same image", async () => {
    const rotated = "rotated-Q7w8e9r0"
    const run = await runAction({ ...base(), "image-uri": "registry.example.com/shop:2", secrets: `DB_PASSWORD=${secretValues[0]}\nAPI_TOKEN=${rotated}` })
    expect(run.code, run.stdout + run.stderr).toBe(0)
    expect(run.outputs["revision-id"]).not.toBe(state.secondRevision)
    expect(run.stdout).toContain("secrets: 2 secret(s) differ from the last applied set")
    expect(await revisionsOf(state.deploymentId!)).toHaveLength(3)
    expectNothingLeaked(run, [rotated])
    state.secondRevision = run.outputs["revision-id"]
  })

  it("redeploy-revision-id rolls back: the old revision becomes active again", async () => {
    const run = await runAction({ ...base(), "redeploy-revision-id": state.firstRevision! })
    expect(run.code, run.stdout + run.stderr).toBe(0)
    expect(run.outputs).toMatchObject({ created: "false", status: "DEPLOYED", "revision-id": state.firstRevision })
    expect(run.stdout).toContain("these inputs are ignored for this run: image-uri, secrets")
    expect(run.summary).toContain("### Slipway deployment shop-api: redeployed")
    const [deployment] = await deploymentsNamed("shop-api")
    expect(deployment.active_revision_id).toBe(state.firstRevision)
    expect(await revisionsOf(deployment.id)).toHaveLength(3)
    expectNothingLeaked(run)
  })

  it("a failing image fails the step, naming the revision, its status and the time waited", async () => {
    const run = await runAction({ ...base(), "image-uri": "registry.example.com/shop:fail-deploy" })
    expect(run.code).toBe(1)
    const revisionId = run.outputs["revision-id"]
    expect(revisionId).toMatch(uuid)
    expect(revisionId).not.toBe(state.secondRevision)
    expect(run.outputs.status).toBe("DEPLOY_FAILED")
    const message = new RegExp(
      `::error title=Slipway%3A revision failed::Revision ${revisionId} of deployment shop-api ended in DEPLOY_FAILED after waiting \\d+\\.\\ds`
    )
    expect(run.stdout).toMatch(message)
    expect(run.summary).toContain("### Slipway deployment shop-api: failed")
    expect(run.summary).toContain("| Status | ❌ DEPLOY_FAILED |")
    // The deployment still serves the revision it had.
    const [deployment] = await deploymentsNamed("shop-api")
    expect(deployment.active_revision_id).toBe(state.firstRevision)
    expectNothingLeaked(run)
  })

  it("a gitrepo deployment takes repo-ref from the pushed tag and reports its generated url", async () => {
    const inputs = { "api-url": server.url, "api-key": server.key, name: "agent", "repo-url": "https://github.com/acme/agent", "graph-config-path": "langgraph.json" }
    const run = await runAction(inputs, { GITHUB_REF: "refs/tags/v1.0.0" })
    expect(run.code, run.stdout + run.stderr).toBe(0)
    const [deployment] = await deploymentsNamed("agent")
    expect(deployment.source).toBe("gitrepo")
    expect(deployment.source_revision_config.repo_ref).toBe("refs/tags/v1.0.0")
    expect(deployment.source_config.custom_url).toMatch(/^http/)
    expect(run.outputs).toMatchObject({ created: "true", status: "DEPLOYED", url: deployment.source_config.custom_url })
    expect(run.summary).toContain(`| URL | [${deployment.source_config.custom_url}](${deployment.source_config.custom_url}) |`)

    // A push to a branch later moves the deployment to that branch: a new revision.
    const next = await runAction(inputs, { GITHUB_REF: "refs/heads/main" })
    expect(next.code, next.stdout + next.stderr).toBe(0)
    expect(next.stdout).toContain("repo-ref: refs/tags/v1.0.0 → main")
    expect(next.outputs["revision-id"]).not.toBe(run.outputs["revision-id"])
  })

  it("bad inputs fail before any request, naming the input", async () => {
    const run = await runAction({ "api-url": "http://127.0.0.1:9", "api-key": server.key, source: "gitrepo", "image-uri": "x:1", "resource-spec": "cpu: [" })
    expect(run.code).toBe(1)
    expect(run.stdout).toContain("::error title=Slipway%3A input image-uri::image-uri: applies to source external_container only, but source is gitrepo")
    expect(run.stdout).toContain("::error title=Slipway%3A input resource-spec::resource-spec: not valid JSON or YAML")
    expect(run.stdout).toContain("no request was sent")
    expect(run.stdout).not.toContain("Looking up deployment")
    expect(run.outputs).toEqual({ "deployment-id": "", "revision-id": "", status: "", url: "", created: "false" })
    expectNothingLeaked(run)
  })

  it("a 422 from the API becomes an annotation naming the input", async () => {
    const run = await runAction({ ...base(), name: "bad-spec", "resource-spec": '{"cpu": 0}' })
    expect(run.code).toBe(1)
    expect(run.stdout).toMatch(/::error title=Slipway%3A input resource-spec::resource-spec \(at cpu\): Input should be greater than or equal to 1 \[API: body\.source_config\.resource_spec\.cpu/)
    expect(await deploymentsNamed("bad-spec")).toEqual([])
    expectNothingLeaked(run)
  })

  it("a wrong API key is reported against api-key", async () => {
    const run = await runAction({ ...base(), "api-key": "slw_wrong_key_0000000000000000000000000000" })
    expect(run.code).toBe(1)
    expect(run.stdout).toContain("::error title=Slipway%3A input api-key::api-key: Invalid API key")
  })
})

describe("waiting with a slow runtime", () => {
  let slow: TestServer
  beforeAll(async () => {
    slow = await startTestServer({ revisionStepMs: 2_000 })
  })
  afterAll(async () => slow?.close())

  it("times out naming the revision, its last status and how long it waited", async () => {
    const run = await runAction({ "api-url": slow.url, "api-key": slow.key, "image-uri": "registry.example.com/slow:1", timeout: "1s" })
    expect(run.code).toBe(1)
    const revisionId = run.outputs["revision-id"]
    expect(revisionId).toMatch(uuid)
    expect(run.outputs.created).toBe("true")
    expect(run.stdout).toMatch(
      new RegExp(
        `::error title=Slipway%3A timed out::Revision ${revisionId} of deployment shop-api was not DEPLOYED after waiting \\d\\.\\ds \\(timeout 1\\.0s\\); last status: [A-Z_]+`
      )
    )
    expect(run.outputs.status).toMatch(/^(CREATING|QUEUED|AWAITING_DEPLOY|DEPLOYING)$/)
  })

  it("wait: false returns at once with the current status", async () => {
    const run = await runAction({ "api-url": slow.url, "api-key": slow.key, name: "nowait", "image-uri": "registry.example.com/slow:1", wait: "false" })
    expect(run.code, run.stdout).toBe(0)
    expect(run.outputs.created).toBe("true")
    expect(run.outputs.status).not.toBe("DEPLOYED")
    expect(run.stdout).toContain("Not waiting (wait: false)")
  })
})
