/**
 * Re-running the action (issue 16): a later push of a gitrepo deployment ships its commit, a
 * build-on-push run waits for the webhook's revision of its commit, and a run after a rollback
 * serves what the inputs ask for again. The committed bundle against a real server.
 */
import { execFileSync } from "node:child_process"
import { createHmac } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { deploymentEndpoints } from "../../core/api/deployments.ts"
import { makeClient } from "../../core/client/client.ts"
import { parseInputs } from "../../core/deploy/inputs.ts"
import { run } from "../../core/deploy/run.ts"
import { DEFAULT_TENANT_ID } from "../../server/index.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import { runBundle, uuid } from "./runner.ts"

let server: TestServer
let workDir: string

beforeAll(async () => {
  server = await startTestServer({ revisionStepMs: 20 })
  workDir = mkdtempSync(join(tmpdir(), "slipway-rerun-"))
})
afterAll(async () => {
  await server?.close()
  if (workDir) rmSync(workDir, { recursive: true, force: true })
})

const sha = (char: string) => char.repeat(40)
const deployment = async (name: string) =>
  ((await server.request("GET", `/v2/deployments?name_contains=${name}`)).body.resources as Array<any>).find((item) => item.name === name)
const revisions = async (id: string) => (await server.request("GET", `/v2/deployments/${id}/revisions?limit=100`)).body.resources as Array<any>
const revision = async (deploymentId: string, id: string) => (await server.request("GET", `/v2/deployments/${deploymentId}/revisions/${id}`)).body

const addIntegration = (owner: string) =>
  JSON.parse(
    execFileSync(process.execPath, ["server/keys.ts", "integration", "add", "--tenant", DEFAULT_TENANT_ID, "--owner", owner], {
      cwd: join(import.meta.dirname, "../.."),
      env: { ...process.env, DATABASE_PATH: server.databasePath, LOG_LEVEL: "silent" },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"]
    })
  ) as { integration_id: string; webhook_secret: string }

/** GitHub delivering a push of `after` to main of owner/agent. */
const deliverPush = async (owner: string, secret: string, after: string) => {
  const payload = JSON.stringify({
    ref: "refs/heads/main",
    before: sha("0"),
    after,
    repository: { full_name: `${owner}/agent`, html_url: `https://github.com/${owner}/agent`, clone_url: `https://github.com/${owner}/agent.git`, owner: { login: owner, name: owner } },
    pusher: { name: "someone" },
    commits: []
  })
  const delivered = await server.request("POST", "/v1/integrations/gitrepo/webhook", {
    key: null,
    raw: payload,
    headers: {
      "content-type": "application/json",
      "x-github-event": "push",
      "x-github-delivery": `delivery-${owner}-${after}`,
      "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(payload).digest("hex")}`
    }
  })
  expect(delivered.status).toBe(202)
  return delivered.body.revision_ids as Array<string>
}

describe("gitrepo: each run for a new commit ships that commit", () => {
  const inputs = () => ({ "api-url": server.url, "api-key": server.key, name: "agent-push", "repo-url": "https://github.com/acme/agent-push", "graph-config-path": "langgraph.json" })

  it("creates, then a push of a new commit to the same branch creates a revision pinned to it; the same commit again is a no-op", async () => {
    const first = await runBundle(workDir, inputs(), { GITHUB_SHA: sha("a") })
    expect(first.code, first.stdout).toBe(0)
    expect(first.outputs.created).toBe("true")

    const second = await runBundle(workDir, inputs(), { GITHUB_SHA: sha("b") })
    expect(second.code, second.stdout).toBe(0)
    expect(second.stdout).not.toContain("Nothing to do")
    expect(second.stdout).toContain(`commit: (none) → ${sha("b")}`)
    expect(second.outputs["revision-id"]).toMatch(uuid)
    expect(second.outputs["revision-id"]).not.toBe(first.outputs["revision-id"])
    expect(second.outputs.status).toBe("DEPLOYED")
    const current = await deployment("agent-push")
    expect(current.active_revision_id).toBe(second.outputs["revision-id"])
    expect((await revision(current.id, second.outputs["revision-id"]!)).source_revision_config).toMatchObject({ repo_ref: "main", repo_commit_sha: sha("b") })

    const again = await runBundle(workDir, inputs(), { GITHUB_SHA: sha("b") })
    expect(again.code, again.stdout).toBe(0)
    expect(again.stdout).toContain("Nothing to do")
    expect(again.outputs["revision-id"]).toBe(second.outputs["revision-id"])
    expect(await revisions(current.id)).toHaveLength(2)

    const third = await runBundle(workDir, inputs(), { GITHUB_SHA: sha("c") })
    expect(third.code, third.stdout).toBe(0)
    expect(third.stdout).toContain(`commit: ${sha("b")} → ${sha("c")}`)
    expect((await revision(current.id, third.outputs["revision-id"]!)).source_revision_config.repo_commit_sha).toBe(sha("c"))
    expect(await revisions(current.id)).toHaveLength(3)
  })

  it("a run for another branch than the pushed one does not pin the pushed commit", async () => {
    const run = await runBundle(workDir, { ...inputs(), name: "agent-release", "repo-ref": "release" }, { GITHUB_SHA: sha("d") })
    expect(run.code, run.stdout).toBe(0)
    const current = await deployment("agent-release")
    const next = await runBundle(workDir, { ...inputs(), name: "agent-release", "repo-ref": "release" }, { GITHUB_SHA: sha("e") })
    expect(next.stdout).toContain("Nothing to do")
    expect(await revisions(current.id)).toHaveLength(1)
  })

  it("with build-on-push the run waits for the revision the push webhook created, and creates none", async () => {
    const owner = "acme-bop"
    const added = addIntegration(owner)
    const bop = { ...inputs(), name: "agent-bop", "repo-url": `https://github.com/${owner}/agent`, "integration-id": added.integration_id, "build-on-push": "true" }
    const created = await runBundle(workDir, bop, { GITHUB_SHA: sha("1") })
    expect(created.code, created.stdout).toBe(0)
    const current = await deployment("agent-bop")

    // GitHub delivers the push of commit 2 to Slipway, then starts the workflow for it.
    const [webhookRevision] = await deliverPush(owner, added.webhook_secret, sha("2"))

    const run = await runBundle(workDir, bop, { GITHUB_SHA: sha("2") })
    expect(run.code, run.stdout).toBe(0)
    expect(run.outputs["revision-id"]).toBe(webhookRevision)
    expect(run.outputs.status).toBe("DEPLOYED")
    expect(run.stdout).toContain(`its latest revision ${webhookRevision} is of commit ${sha("2")}; no revision created`)
    expect(await revisions(current.id)).toHaveLength(2)
  })
})

describe("after a rollback", () => {
  it("a run with the latest image redeploys it instead of reporting DEPLOYED while the old one serves", async () => {
    const base = { "api-url": server.url, "api-key": server.key, name: "rollback-shop" }
    const one = await runBundle(workDir, { ...base, "image-uri": "registry.example.com/shop:1" })
    const two = await runBundle(workDir, { ...base, "image-uri": "registry.example.com/shop:2" })
    expect([one.code, two.code]).toEqual([0, 0])
    const back = await runBundle(workDir, { ...base, "redeploy-revision-id": one.outputs["revision-id"]! })
    expect(back.code, back.stdout).toBe(0)
    expect((await deployment("rollback-shop")).active_revision_id).toBe(one.outputs["revision-id"])

    const again = await runBundle(workDir, { ...base, "image-uri": "registry.example.com/shop:2" })
    expect(again.code, again.stdout).toBe(0)
    expect(again.stdout).not.toContain("Nothing to do")
    expect(again.stdout).toContain(`the latest revision ${two.outputs["revision-id"]} matches the inputs but ${one.outputs["revision-id"]} is active`)
    expect(again.outputs).toMatchObject({ "revision-id": two.outputs["revision-id"], status: "DEPLOYED" })
    expect(again.summary).toContain("redeployed")
    const current = await deployment("rollback-shop")
    expect(current.active_revision_id).toBe(two.outputs["revision-id"])
    expect(await revisions(current.id)).toHaveLength(2)

    // And now it is a no-op again.
    const noop = await runBundle(workDir, { ...base, "image-uri": "registry.example.com/shop:2" })
    expect(noop.stdout).toContain("Nothing to do")
  })
})

describe("build-on-push: the webhook's revision arrives after the run started", () => {
  const deploy = (owner: string, integrationId: string, commit: string, webhookGraceMs: number, log: Array<string>) => {
    const parsed = parseInputs(
      (name) =>
        ({
          "api-url": server.url,
          "api-key": server.key,
          name: `late-${owner}`,
          "repo-url": `https://github.com/${owner}/agent`,
          "graph-config-path": "langgraph.json",
          "integration-id": integrationId,
          "build-on-push": "true",
          "poll-interval": "50ms"
        })[name] ?? "",
      { repository: "acme/agent", ref: "refs/heads/main", headRef: undefined, sha: commit }
    )
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors))
    const client = makeClient(deploymentEndpoints, { baseUrl: server.url, apiKey: server.key })
    const push = (message: string) => void log.push(message)
    return Effect.runPromise(run(parsed.inputs, { client, now: Date.now, webhookGraceMs, log: { info: push, notice: push, warning: push, debug: () => {} } }))
  }

  it("waits for it within the grace period, and creates the revision itself when none comes", async () => {
    const owner = "acme-late"
    const added = addIntegration(owner)
    await deploy(owner, added.integration_id, sha("3"), 5_000, [])
    const current = await deployment(`late-${owner}`)

    const log: Array<string> = []
    const running = deploy(owner, added.integration_id, sha("4"), 10_000, log)
    await new Promise((resolve) => setTimeout(resolve, 300))
    const [webhookRevision] = await deliverPush(owner, added.webhook_secret, sha("4"))
    const result = await running
    expect(result.revisionId).toBe(webhookRevision)
    expect(result.status).toBe("DEPLOYED")
    expect(log.join("\n")).toContain(`The push webhook created revision ${webhookRevision} for commit ${sha("4")}`)
    expect(await revisions(current.id)).toHaveLength(2)

    // No webhook this time (not configured, or lost): after the grace period the run builds its commit itself.
    const quiet: Array<string> = []
    const fallback = await deploy(owner, added.integration_id, sha("5"), 200, quiet)
    expect(quiet.join("\n")).toContain(`No revision of commit ${sha("5")} appeared`)
    expect(fallback.status).toBe("DEPLOYED")
    expect((await revision(current.id, fallback.revisionId!)).source_revision_config.repo_commit_sha).toBe(sha("5"))
    expect(await revisions(current.id)).toHaveLength(3)

    // Re-running the workflow of commit 4 serves commit 4's revision again, without building it anew.
    const rerun = await deploy(owner, added.integration_id, sha("4"), 200, [])
    expect(rerun).toMatchObject({ revisionId: webhookRevision, status: "DEPLOYED" })
    expect((await deployment(`late-${owner}`)).active_revision_id).toBe(webhookRevision)
    expect(await revisions(current.id)).toHaveLength(3)
  })
})
