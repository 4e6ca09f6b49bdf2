// @ts-nocheck
import { execFileSync } from "node:child_process"
import { createHmac, randomUUID } from "node:crypto"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DEFAULT_TENANT_ID } from "../../../server/index.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { gitrepoBody, uniqueName, waitForRevision } from "./helpers.ts"

let t: TestServer
beforeAll(async () => {
  t = await startTestServer({ revisionStepMs: 5 })
})
afterAll(() => t.close())

/** Runs the key tool against the test server's database, as an operator would. */
const keysTool = (args: ReadonlyArray<string>) =>
  execFileSync(process.execPath, ["server/keys.ts", ...args], {
    cwd: join(import.meta.dirname, "../../.."),
    env: { ...process.env, DATABASE_PATH: t.databasePath, LOG_LEVEL: "silent" },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"]
  })

const addIntegration = (tenant: string, owner: string) => JSON.parse(keysTool(["integration", "add", "--tenant", tenant, "--owner", owner])) as {
  integration_id: string
  webhook_secret: string
}

const sign = (secret: string, body: string) => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`

const pushPayload = (owner: string, repo: string, ref: string, after = "a".repeat(40)) =>
  JSON.stringify({
    ref,
    before: "0".repeat(40),
    after,
    repository: {
      full_name: `${owner}/${repo}`,
      html_url: `https://github.com/${owner}/${repo}`,
      clone_url: `https://github.com/${owner}/${repo}.git`,
      owner: { login: owner, name: owner }
    },
    pusher: { name: "someone" },
    commits: []
  })

const deliver = (body: string, headers: Record<string, string>) =>
  t.request("POST", "/v1/integrations/gitrepo/webhook", { key: null, raw: body, headers: { "content-type": "application/json", ...headers } })

describe("git-host integrations", () => {
  it("are registered with the key tool and listed by GET /v1/integrations/gitrepo/install", async () => {
    const owner = uniqueName("Org")
    const added = addIntegration(DEFAULT_TENANT_ID, owner)
    expect(added.integration_id).toMatch(/^[0-9a-f-]{36}$/)
    expect(added.webhook_secret).toMatch(/^[0-9a-f]{64}$/)
    const install = await t.request("GET", "/v1/integrations/gitrepo/install")
    expect(install.status).toBe(200)
    expect(typeof install.body.install_url).toBe("string")
    const listed = install.body.integrations.find((integration: any) => integration.id === added.integration_id)
    expect(listed).toMatchObject({ provider: "github", owner })
    expect(JSON.stringify(install.body)).not.toContain(added.webhook_secret)
    // Another tenant does not see it.
    const other = t.keyFor(randomUUID())
    expect((await t.request("GET", "/v1/integrations/gitrepo/install", { key: other })).body.integrations).toEqual([])
    // The same owner twice for one tenant is refused by the tool.
    expect(() => addIntegration(DEFAULT_TENANT_ID, owner.toUpperCase())).toThrow()
  })
})

describe("POST /v1/integrations/gitrepo/webhook", () => {
  it("creates a revision with repo_commit_sha for each matching build_on_push deployment, and only those", async () => {
    const owner = uniqueName("acme")
    const { webhook_secret: secret } = addIntegration(DEFAULT_TENANT_ID, owner)
    const repoUrl = `https://github.com/${owner}/agent`
    const body = (ref: string, buildOnPush: boolean, url = repoUrl) =>
      gitrepoBody(uniqueName(), { source_config: { repo_url: url, build_on_push: buildOnPush }, source_revision_config: { repo_ref: ref, graph_config_path: "langgraph.json" } })
    const matching = (await t.request("POST", "/v2/deployments", { body: body("main", true) })).body
    const sshForm = (await t.request("POST", "/v2/deployments", { body: body("main", true, `git@github.com:${owner}/agent.git`) })).body
    const notOnPush = (await t.request("POST", "/v2/deployments", { body: body("main", false) })).body
    const otherBranch = (await t.request("POST", "/v2/deployments", { body: body("dev", true) })).body
    const otherRepo = (await t.request("POST", "/v2/deployments", { body: body("main", true, `https://github.com/${owner}/other`) })).body

    const payload = pushPayload(owner, "agent", "refs/heads/main", "c0ffee".padEnd(40, "0"))
    const response = await deliver(payload, { "x-github-event": "push", "x-hub-signature-256": sign(secret, payload) })
    expect(response.status).toBe(202)
    expect(response.body.revision_ids).toHaveLength(2)

    for (const deployment of [matching, sshForm]) {
      const after = (await t.request("GET", `/v2/deployments/${deployment.id}`)).body
      expect(response.body.revision_ids).toContain(after.latest_revision_id)
      expect(after.latest_revision_id).not.toBe(deployment.latest_revision_id)
      const revision = await waitForRevision(t.request, deployment.id, after.latest_revision_id, (status) => status === "DEPLOYED")
      expect(revision.source_revision_config).toMatchObject({ repo_ref: "main", repo_commit_sha: "c0ffee".padEnd(40, "0") })
    }
    for (const deployment of [notOnPush, otherBranch, otherRepo]) {
      const revisions = await t.request("GET", `/v2/deployments/${deployment.id}/revisions`)
      expect(revisions.body.resources, deployment.name).toHaveLength(1)
    }
  })

  it("answers 401 for a missing or bad signature and changes nothing", async () => {
    const owner = uniqueName("sig")
    const { webhook_secret: secret } = addIntegration(DEFAULT_TENANT_ID, owner)
    const deployment = (
      await t.request("POST", "/v2/deployments", {
        body: gitrepoBody(uniqueName(), { source_config: { repo_url: `https://github.com/${owner}/agent`, build_on_push: true } })
      })
    ).body
    const payload = pushPayload(owner, "agent", "refs/heads/main")
    const missing = await deliver(payload, { "x-github-event": "push" })
    expect(missing.status).toBe(401)
    expect(typeof missing.body.detail).toBe("string")
    const wrongSecret = await deliver(payload, { "x-github-event": "push", "x-hub-signature-256": sign("not-the-secret", payload) })
    expect(wrongSecret.status).toBe(401)
    const tampered = await deliver(payload.replace("someone", "mallory"), { "x-github-event": "push", "x-hub-signature-256": sign(secret, payload) })
    expect(tampered.status).toBe(401)
    const garbage = await deliver(payload, { "x-github-event": "push", "x-hub-signature-256": "sha256=zz" })
    expect(garbage.status).toBe(401)
    const unknownOwner = pushPayload(uniqueName("nobody"), "agent", "refs/heads/main")
    expect((await deliver(unknownOwner, { "x-github-event": "push", "x-hub-signature-256": sign(secret, unknownOwner) })).status).toBe(401)
    const revisions = await t.request("GET", `/v2/deployments/${deployment.id}/revisions`)
    expect(revisions.body.resources).toHaveLength(1)
  })

  it("answers a signed ping with 202, refuses other events, and needs no API key", async () => {
    const owner = uniqueName("ping")
    const { webhook_secret: secret } = addIntegration(DEFAULT_TENANT_ID, owner)
    const ping = JSON.stringify({ zen: "Keep it logically awesome.", hook_id: 1, repository: { full_name: `${owner}/agent`, owner: { login: owner } } })
    const pong = await deliver(ping, { "x-github-event": "ping", "x-hub-signature-256": sign(secret, ping) })
    expect(pong.status).toBe(202)
    expect(pong.body).toEqual({ revision_ids: [] })
    const orgPing = JSON.stringify({ zen: "z", hook_id: 2, organization: { login: owner } })
    expect((await deliver(orgPing, { "x-github-event": "ping", "x-hub-signature-256": sign(secret, orgPing) })).status).toBe(202)
    const issues = JSON.stringify({ action: "opened", repository: { full_name: `${owner}/agent`, owner: { login: owner } } })
    const refused = await deliver(issues, { "x-github-event": "issues", "x-hub-signature-256": sign(secret, issues) })
    expect(refused.status).toBe(422)
    expect(refused.body.detail[0].loc).toEqual(["header", "x-github-event"])
    // A signed push that lacks a push's fields is a 422, not a 500.
    const partial = JSON.stringify({ ref: "refs/heads/main", repository: { owner: { login: owner } } })
    const bad = await deliver(partial, { "x-github-event": "push", "x-hub-signature-256": sign(secret, partial) })
    expect(bad.status).toBe(422)
    const notJson = await deliver("{nope", { "x-github-event": "push", "x-hub-signature-256": sign(secret, "{nope") })
    expect(notJson.status).toBe(422)
  })

  it("builds only the deployments of the tenant whose secret signed the push", async () => {
    const owner = uniqueName("shared")
    const otherTenant = randomUUID()
    const otherKey = t.keyFor(otherTenant)
    const mine = addIntegration(DEFAULT_TENANT_ID, owner)
    addIntegration(otherTenant, owner)
    const body = () => gitrepoBody(uniqueName(), { source_config: { repo_url: `https://github.com/${owner}/agent`, build_on_push: true } })
    const myDeployment = (await t.request("POST", "/v2/deployments", { body: body() })).body
    const theirDeployment = (await t.request("POST", "/v2/deployments", { key: otherKey, body: body() })).body
    const payload = pushPayload(owner, "agent", "refs/heads/main")
    const response = await deliver(payload, { "x-github-event": "push", "x-hub-signature-256": sign(mine.webhook_secret, payload) })
    expect(response.status).toBe(202)
    expect(response.body.revision_ids).toHaveLength(1)
    expect((await t.request("GET", `/v2/deployments/${myDeployment.id}`)).body.latest_revision_id).toBe(response.body.revision_ids[0])
    expect((await t.request("GET", `/v2/deployments/${theirDeployment.id}/revisions`, { key: otherKey })).body.resources).toHaveLength(1)
  })
})
