import { execFile, execFileSync } from "node:child_process"
import { promisify } from "node:util"
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

/** The key tool without blocking the event loop (the test server runs in this process). */
const keysToolAsync = async (args: ReadonlyArray<string>) =>
  (
    await promisify(execFile)(process.execPath, ["server/keys.ts", ...args], {
      cwd: join(import.meta.dirname, "../../.."),
      env: { ...process.env, DATABASE_PATH: t.databasePath, LOG_LEVEL: "silent" },
      encoding: "utf8"
    })
  ).stdout

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

/** A delivery as GitHub sends it: a fresh X-GitHub-Delivery unless the test gives one. */
const deliver = (body: string, headers: Record<string, string>) =>
  t.request("POST", "/v1/integrations/gitrepo/webhook", {
    key: null,
    raw: body,
    headers: { "content-type": "application/json", "x-github-delivery": randomUUID(), ...headers }
  })

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
    const { webhook_secret: secret, integration_id } = addIntegration(DEFAULT_TENANT_ID, owner)
    const repoUrl = `https://github.com/${owner}/agent`
    const body = (ref: string, buildOnPush: boolean, url = repoUrl) =>
      gitrepoBody(uniqueName(), {
        source_config: { integration_id, repo_url: url, build_on_push: buildOnPush },
        source_revision_config: { repo_ref: ref, graph_config_path: "langgraph.json" }
      })
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
    const { webhook_secret: secret, integration_id } = addIntegration(DEFAULT_TENANT_ID, owner)
    const deployment = (
      await t.request("POST", "/v2/deployments", {
        body: gitrepoBody(uniqueName(), { source_config: { integration_id, repo_url: `https://github.com/${owner}/agent`, build_on_push: true } })
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
    const theirs = addIntegration(otherTenant, owner)
    const body = (integration_id: string) =>
      gitrepoBody(uniqueName(), { source_config: { integration_id, repo_url: `https://github.com/${owner}/agent`, build_on_push: true } })
    const myDeployment = (await t.request("POST", "/v2/deployments", { body: body(mine.integration_id) })).body
    const theirDeployment = (await t.request("POST", "/v2/deployments", { key: otherKey, body: body(theirs.integration_id) })).body
    const payload = pushPayload(owner, "agent", "refs/heads/main")
    const response = await deliver(payload, { "x-github-event": "push", "x-hub-signature-256": sign(mine.webhook_secret, payload) })
    expect(response.status).toBe(202)
    expect(response.body.revision_ids).toHaveLength(1)
    expect((await t.request("GET", `/v2/deployments/${myDeployment.id}`)).body.latest_revision_id).toBe(response.body.revision_ids[0])
    expect((await t.request("GET", `/v2/deployments/${theirDeployment.id}/revisions`, { key: otherKey })).body.resources).toHaveLength(1)
  })

  it("refuses a delivery id already received (409) and never builds a commit a revision already built for the ref", async () => {
    const owner = uniqueName("replay")
    const { webhook_secret: secret, integration_id } = addIntegration(DEFAULT_TENANT_ID, owner)
    const deployment = (
      await t.request("POST", "/v2/deployments", {
        body: gitrepoBody(uniqueName(), { source_config: { integration_id, repo_url: `https://github.com/${owner}/agent`, build_on_push: true } })
      })
    ).body
    const revisionCount = async () => (await t.request("GET", `/v2/deployments/${deployment.id}/revisions`)).body.resources.length
    const commitA = "a1".padEnd(40, "0")
    const commitB = "b2".padEnd(40, "0")
    const pushA = pushPayload(owner, "agent", "refs/heads/main", commitA)
    const pushB = pushPayload(owner, "agent", "refs/heads/main", commitB)
    const headersA = { "x-github-event": "push", "x-hub-signature-256": sign(secret, pushA), "x-github-delivery": randomUUID() }

    const first = await deliver(pushA, headersA)
    expect(first.status).toBe(202)
    expect(first.body.revision_ids).toHaveLength(1)
    expect(await revisionCount()).toBe(2)

    // The very same request again (a captured delivery, or GitHub's "Redeliver"): refused.
    const again = await deliver(pushA, headersA)
    expect(again.status).toBe(409)
    expect(again.body.detail).toContain(headersA["x-github-delivery"])
    // The same signed body under a new delivery id: accepted, but commit A is not built again.
    const renamed = await deliver(pushA, { ...headersA, "x-github-delivery": randomUUID() })
    expect(renamed.status).toBe(202)
    expect(renamed.body.revision_ids).toEqual([])
    expect(await revisionCount()).toBe(2)

    // A new commit builds; replaying the old push afterwards cannot pin the deployment back to A.
    const second = await deliver(pushB, { "x-github-event": "push", "x-hub-signature-256": sign(secret, pushB) })
    expect(second.body.revision_ids).toHaveLength(1)
    const latest = (await t.request("GET", `/v2/deployments/${deployment.id}`)).body.latest_revision_id
    expect(latest).toBe(second.body.revision_ids[0])
    const replayed = await deliver(pushA, { "x-github-event": "push", "x-hub-signature-256": sign(secret, pushA) })
    expect(replayed.status).toBe(202)
    expect(replayed.body.revision_ids).toEqual([])
    expect((await t.request("GET", `/v2/deployments/${deployment.id}`)).body.latest_revision_id).toBe(latest)
    expect(await revisionCount()).toBe(3)

    // A delivery without its id is refused: nothing could recognise it again.
    const anonymous = await t.request("POST", "/v1/integrations/gitrepo/webhook", {
      key: null,
      raw: pushB,
      headers: { "content-type": "application/json", "x-github-event": "push", "x-hub-signature-256": sign(secret, pushB) }
    })
    expect(anonymous.status).toBe(422)
    expect(anonymous.body.detail[0].loc).toEqual(["header", "x-github-delivery"])
  })

  it("touches only deployments bound to the integration that signed the push, whatever repository the payload names", async () => {
    const victim = uniqueName("victim")
    const mallory = uniqueName("mallory")
    const victimIntegration = addIntegration(DEFAULT_TENANT_ID, victim)
    const malloryIntegration = addIntegration(DEFAULT_TENANT_ID, mallory)
    const deployment = (
      await t.request("POST", "/v2/deployments", {
        body: gitrepoBody(uniqueName(), {
          source_config: { integration_id: victimIntegration.integration_id, repo_url: `https://github.com/${victim}/agent`, build_on_push: true }
        })
      })
    ).body
    expect(deployment.id).toBeDefined()
    // Mallory's secret picks Mallory's integration (owner.login), while full_name and clone_url name the victim's repository.
    const forged = JSON.stringify({
      ...JSON.parse(pushPayload(victim, "agent", "refs/heads/main", "f0".padEnd(40, "0"))),
      repository: {
        full_name: `${victim}/agent`,
        html_url: `https://github.com/${victim}/agent`,
        clone_url: `https://github.com/${victim}/agent.git`,
        owner: { login: mallory, name: mallory }
      }
    })
    const response = await deliver(forged, { "x-github-event": "push", "x-hub-signature-256": sign(malloryIntegration.webhook_secret, forged) })
    expect(response.status).toBe(202)
    expect(response.body.revision_ids).toEqual([])
    expect((await t.request("GET", `/v2/deployments/${deployment.id}/revisions`)).body.resources).toHaveLength(1)
  })
})

describe("integration_id on create", () => {
  it("must be one of the tenant's integrations, whose owner owns repo_url (422 naming the field)", async () => {
    const owner = uniqueName("Bound")
    const mine = addIntegration(DEFAULT_TENANT_ID, owner)
    const otherTenant = randomUUID()
    t.keyFor(otherTenant)
    const theirs = addIntegration(otherTenant, uniqueName("theirs"))
    const create = (integration_id: string, repo_url: string) =>
      t.request("POST", "/v2/deployments", { body: gitrepoBody(uniqueName(), { source_config: { integration_id, repo_url, build_on_push: true } }) })

    for (const id of [randomUUID(), theirs.integration_id]) {
      const refused = await create(id, `https://github.com/${owner}/agent`)
      expect(refused.status).toBe(422)
      expect(refused.body.detail.map((issue: any) => issue.loc)).toEqual([["body", "source_config", "integration_id"]])
    }
    const foreignRepo = await create(mine.integration_id, "https://github.com/someone-else/agent")
    expect(foreignRepo.status).toBe(422)
    expect(foreignRepo.body.detail[0].loc).toEqual(["body", "source_config", "repo_url"])
    expect(foreignRepo.body.detail[0].msg).toContain(owner)

    // The owner matches case-insensitively, in any URL form.
    for (const url of [`https://github.com/${owner.toUpperCase()}/agent.git`, `git@github.com:${owner.toLowerCase()}/agent.git`]) {
      const created = await create(mine.integration_id, url)
      expect(created.status, JSON.stringify(created.body)).toBe(201)
    }
  })
})

describe("npm run keys -- integration remove", () => {
  it("removes the integration: pushes signed with its secret are refused afterwards", async () => {
    const owner = uniqueName("removed")
    const { webhook_secret: secret, integration_id } = addIntegration(DEFAULT_TENANT_ID, owner)
    const payload = pushPayload(owner, "agent", "refs/heads/main")
    expect((await deliver(payload, { "x-github-event": "push", "x-hub-signature-256": sign(secret, payload) })).status).toBe(202)
    // Another tenant cannot remove it.
    const otherTenant = randomUUID()
    t.keyFor(otherTenant)
    await expect(keysToolAsync(["integration", "remove", integration_id, "--tenant", otherTenant])).rejects.toThrow(/no integration/)
    expect(await keysToolAsync(["integration", "remove", integration_id, "--tenant", DEFAULT_TENANT_ID])).toContain(integration_id)
    expect((await deliver(payload, { "x-github-event": "push", "x-hub-signature-256": sign(secret, payload) })).status).toBe(401)
    const listed = await keysToolAsync(["integration", "list", "--tenant", DEFAULT_TENANT_ID])
    expect(listed).not.toContain(integration_id)
    await expect(keysToolAsync(["integration", "remove", integration_id, "--tenant", DEFAULT_TENANT_ID])).rejects.toThrow(/no integration/)
  })
})
