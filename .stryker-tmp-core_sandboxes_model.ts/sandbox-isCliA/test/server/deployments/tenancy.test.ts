// @ts-nocheck
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DEFAULT_ORGANIZATION_ID } from "../../../server/index.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { containerBody, gitrepoBody, uniqueName, waitForRevision } from "./helpers.ts"

let t: TestServer
beforeAll(async () => {
  t = await startTestServer({ revisionStepMs: 5 })
})
afterAll(() => t.close())

describe("authentication", () => {
  it("answers 401 without a key and with a wrong key, with the exact bodies", async () => {
    for (const [method, path] of [
      ["GET", "/v2/deployments"],
      ["POST", "/v2/deployments"],
      ["GET", `/v2/deployments/${randomUUID()}`],
      ["GET", "/v2/listeners"],
      ["GET", "/v1/integrations/gitrepo/install"]
    ] as const) {
      const missing = await t.request(method, path, { key: null })
      expect(missing.status, path).toBe(401)
      expect(missing.body).toEqual({ detail: "Missing API key" })
      const wrong = await t.request(method, path, { key: "slw_not_a_real_key" })
      expect(wrong.status, path).toBe(401)
      expect(wrong.body).toEqual({ detail: "Invalid API key" })
    }
  })

  it("accepts Authorization: Bearer", async () => {
    const response = await t.request("GET", "/v2/deployments", { key: null, headers: { authorization: `Bearer ${t.key}` } })
    expect(response.status).toBe(200)
  })

  it("answers 403 for an X-Tenant-Id the key does not grant", async () => {
    const foreignTenant = randomUUID()
    t.keyFor(foreignTenant)
    const response = await t.request("GET", "/v2/deployments", { tenant: foreignTenant })
    expect(response.status).toBe(403)
    expect(typeof response.body.detail).toBe("string")
  })

  it("scopes data to the X-Tenant-Id of a granted tenant", async () => {
    const sibling = randomUUID()
    t.server.keys.ensureTenant(sibling, DEFAULT_ORGANIZATION_ID)
    const created = await t.request("POST", "/v2/deployments", { tenant: sibling, body: containerBody() })
    expect(created.status).toBe(201)
    expect((await t.request("GET", `/v2/deployments/${created.body.id}`, { tenant: sibling })).status).toBe(200)
    expect((await t.request("GET", `/v2/deployments/${created.body.id}`)).status).toBe(404)
  })
})

describe("tenant isolation", () => {
  it("answers another tenant's deployment, revision, listener exactly as if absent", async () => {
    const otherKey = t.keyFor(randomUUID())
    const mine = (await t.request("POST", "/v2/deployments", { body: containerBody() })).body
    await waitForRevision(t.request, mine.id, mine.latest_revision_id, (status) => status === "DEPLOYED")
    const listener = (await t.request("POST", "/v2/listeners", { body: { compute_config: { k8s_namespaces: ["x"] } } })).body
    const absent = randomUUID()

    const pairs: Array<[string, string, string, unknown?]> = [
      ["GET", `/v2/deployments/${mine.id}`, `/v2/deployments/${absent}`],
      ["PATCH", `/v2/deployments/${mine.id}`, `/v2/deployments/${absent}`, { image_version: "x" }],
      ["DELETE", `/v2/deployments/${mine.id}`, `/v2/deployments/${absent}`],
      ["GET", `/v2/deployments/${mine.id}/revisions`, `/v2/deployments/${absent}/revisions`],
      ["POST", `/v2/deployments/${mine.id}/revisions`, `/v2/deployments/${absent}/revisions`, {}],
      ["GET", `/v2/deployments/${mine.id}/revisions/${mine.latest_revision_id}`, `/v2/deployments/${absent}/revisions/${mine.latest_revision_id}`],
      ["POST", `/v2/deployments/${mine.id}/revisions/${mine.latest_revision_id}/redeploy`, `/v2/deployments/${absent}/revisions/${mine.latest_revision_id}/redeploy`],
      ["GET", `/v2/listeners/${listener.id}`, `/v2/listeners/${absent}`],
      ["PATCH", `/v2/listeners/${listener.id}`, `/v2/listeners/${absent}`, { compute_config: { k8s_namespaces: ["y"] } }],
      ["DELETE", `/v2/listeners/${listener.id}`, `/v2/listeners/${absent}`]
    ]
    for (const [method, foreignPath, absentPath, body] of pairs) {
      const options = body === undefined ? { key: otherKey } : { key: otherKey, body }
      const foreign = await t.request(method, foreignPath, options)
      const missing = await t.request(method, absentPath, options)
      expect(foreign.status, `${method} ${foreignPath}`).toBe(404)
      expect(missing.status, `${method} ${absentPath}`).toBe(404)
      // Same answer, modulo the id in the message.
      expect(JSON.stringify(foreign.body).replaceAll(mine.id, "ID").replaceAll(listener.id, "ID"), method).toBe(
        JSON.stringify(missing.body).replaceAll(absent, "ID")
      )
    }
    // And nothing of mine changed.
    const after = await t.request("GET", `/v2/deployments/${mine.id}`)
    expect(after.status).toBe(200)
    expect(after.body.status).toBe("READY")
    expect(after.body.image_version ?? null).toBeNull()
    expect((await t.request("GET", `/v2/listeners/${listener.id}`)).body.compute_config.k8s_namespaces).toEqual(["x"])
  })

  it("lists only the caller's deployments and tracing projects", async () => {
    const otherKey = t.keyFor(randomUUID())
    const name = uniqueName("iso")
    await t.request("POST", "/v2/deployments", { body: containerBody(name) })
    const theirs = await t.request("GET", `/v2/deployments?name_contains=${name}`, { key: otherKey })
    expect(theirs.body).toEqual({ resources: [], offset: 0 })
    expect((await t.request("GET", `/v1/sessions?name=${name}`, { key: otherKey })).body).toEqual([])
    expect((await t.request("GET", "/v2/listeners", { key: otherKey })).body).toEqual({ resources: [], offset: 0 })
  })
})

describe("list filters and pagination", () => {
  it("pages with offset = offset + items returned until a short page", async () => {
    const key = t.keyFor(randomUUID())
    const prefix = uniqueName("page")
    const ids: Array<string> = []
    for (let index = 0; index < 5; index++) {
      ids.push((await t.request("POST", "/v2/deployments", { key, body: containerBody(`${prefix}-${index}`) })).body.id)
    }
    await t.request("POST", "/v2/deployments", { key, body: containerBody(uniqueName("unrelated")) })
    const seen: Array<string> = []
    let offset = 0
    const offsets: Array<number> = []
    for (;;) {
      const page = await t.request("GET", `/v2/deployments?name_contains=${prefix}&limit=2&offset=${offset}`, { key })
      expect(page.status).toBe(200)
      seen.push(...page.body.resources.map((deployment: any) => deployment.id))
      expect(page.body.offset).toBe(offset + page.body.resources.length)
      offsets.push(page.body.offset)
      offset = page.body.offset
      if (page.body.resources.length < 2) break
    }
    expect(offsets).toEqual([2, 4, 5])
    expect((await t.request("GET", `/v2/deployments?name_contains=${prefix.toUpperCase()}`, { key })).body.resources).toHaveLength(5)
    // Newest first, each exactly once.
    expect(seen).toEqual([...ids].reverse())
    // Default limit 20 and offset 0.
    const all = await t.request("GET", "/v2/deployments", { key })
    expect(all.body.resources).toHaveLength(6)
    expect(all.body.offset).toBe(6)
    // Past the end: empty page, offset unchanged.
    expect((await t.request("GET", `/v2/deployments?offset=50`, { key })).body).toEqual({ resources: [], offset: 50 })
  })

  it("filters by status, image_version, deployment_type and deployment_ids", async () => {
    const key = t.keyFor(randomUUID())
    const ready = (await t.request("POST", "/v2/deployments", { key, body: containerBody(uniqueName(), { image_version: "v7" }) })).body
    const failing = (
      await t.request("POST", "/v2/deployments", { key, body: containerBody(uniqueName(), { source_revision_config: { image_uri: "img:fail-deploy" } }) })
    ).body
    const git = (
      await t.request("POST", "/v2/deployments", {
        key,
        body: gitrepoBody(uniqueName(), { source_config: { repo_url: "https://github.com/a/b", deployment_type: "prod" } })
      })
    ).body
    await waitForRevision((m, p, o) => t.request(m, p, { key, ...o }), ready.id, ready.latest_revision_id, (status) => status === "DEPLOYED")
    await waitForRevision((m, p, o) => t.request(m, p, { key, ...o }), failing.id, failing.latest_revision_id, (status) => status === "DEPLOY_FAILED")
    const ids = (path: string) => t.request("GET", path, { key }).then((response) => response.body.resources.map((d: any) => d.id).sort())

    // The gitrepo one may or may not be READY yet; the other two are settled.
    const readyIds = await ids("/v2/deployments?status=READY")
    expect(readyIds).toContain(ready.id)
    expect(readyIds).not.toContain(failing.id)
    expect(await ids("/v2/deployments?status=UNUSED")).toEqual([])
    expect(await ids("/v2/deployments?image_version=v7")).toEqual([ready.id])
    expect(await ids("/v2/deployments?deployment_type=prod")).toEqual([git.id])
    expect(await ids(`/v2/deployments?deployment_ids=${ready.id},${git.id}`)).toEqual([ready.id, git.id].sort())
    expect(await ids(`/v2/deployments?deployment_ids=${ready.id.toUpperCase()}`)).toEqual([ready.id])
    expect(await ids(`/v2/deployments?status=AWAITING_DATABASE&deployment_ids=${failing.id},${ready.id}`)).toEqual([failing.id])
  })

  it("lists revisions newest first, filtered by a comma-separated status list, paginated", async () => {
    const created = (await t.request("POST", "/v2/deployments", { body: containerBody() })).body
    await waitForRevision(t.request, created.id, created.latest_revision_id, (status) => status === "DEPLOYED")
    const second = (await t.request("PATCH", `/v2/deployments/${created.id}`, { body: { source_revision_config: { image_uri: "img:fail-deploy" } } })).body
    await waitForRevision(t.request, created.id, second.latest_revision_id, (status) => status === "DEPLOY_FAILED")
    const third = (await t.request("POST", `/v2/deployments/${created.id}/revisions`, { body: { source_revision_config: { image_uri: "img:3" } } })).body
    await waitForRevision(t.request, created.id, third.id, (status) => status === "DEPLOYED")

    const all = await t.request("GET", `/v2/deployments/${created.id}/revisions`)
    expect(all.body.resources.map((revision: any) => revision.id)).toEqual([third.id, second.latest_revision_id, created.latest_revision_id])
    const deployed = await t.request("GET", `/v2/deployments/${created.id}/revisions?status=DEPLOYED`)
    expect(deployed.body.resources.map((revision: any) => revision.id)).toEqual([third.id, created.latest_revision_id])
    const some = await t.request("GET", `/v2/deployments/${created.id}/revisions?status=DEPLOY_FAILED,BUILD_FAILED`)
    expect(some.body.resources.map((revision: any) => revision.id)).toEqual([second.latest_revision_id])
    const page = await t.request("GET", `/v2/deployments/${created.id}/revisions?limit=1&offset=1`)
    expect(page.body).toMatchObject({ offset: 2 })
    expect(page.body.resources.map((revision: any) => revision.id)).toEqual([second.latest_revision_id])
    expect((await t.request("GET", `/v2/deployments/${created.id}/revisions?status=NOPE`)).status).toBe(422)
  })
})

describe("listeners", () => {
  it("CRUD, with 409 while a deployment uses the listener or a namespace about to be removed", async () => {
    const created = await t.request("POST", "/v2/listeners", { body: { compute_type: "k8s", compute_config: { k8s_namespaces: ["a", "b"] } } })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ compute_type: "k8s", compute_config: { k8s_namespaces: ["a", "b"] } })
    const id = created.body.id
    expect((await t.request("GET", `/v2/listeners/${id}`)).body).toEqual(created.body)
    expect((await t.request("GET", "/v2/listeners?limit=100")).body.resources.map((l: any) => l.id)).toContain(id)

    const deployment = (
      await t.request("POST", "/v2/deployments", { body: containerBody(uniqueName(), { source_config: { listener_id: id, listener_config: { k8s_namespace: "b" } } }) })
    ).body
    const narrowing = await t.request("PATCH", `/v2/listeners/${id}`, { body: { compute_config: { k8s_namespaces: ["a"] } } })
    expect(narrowing.status).toBe(409)
    expect(typeof narrowing.body.detail).toBe("string")
    const widened = await t.request("PATCH", `/v2/listeners/${id}`, { body: { compute_config: { k8s_namespaces: ["b", "c"] } } })
    expect(widened.status).toBe(200)
    expect(widened.body.compute_config.k8s_namespaces).toEqual(["b", "c"])
    expect((await t.request("DELETE", `/v2/listeners/${id}`)).status).toBe(409)

    expect((await t.request("DELETE", `/v2/deployments/${deployment.id}`)).status).toBe(204)
    await waitForDeploymentGone(deployment.id)
    expect((await t.request("DELETE", `/v2/listeners/${id}`)).status).toBe(204)
    expect((await t.request("GET", `/v2/listeners/${id}`)).status).toBe(404)
    expect((await t.request("POST", "/v2/listeners", { body: { compute_config: { k8s_namespaces: [] } } })).status).toBe(422)
    expect((await t.request("POST", "/v2/listeners", { body: { compute_type: "ecs", compute_config: { k8s_namespaces: ["a"] } } })).status).toBe(422)
  })
})

const waitForDeploymentGone = async (id: string) => {
  for (let attempt = 0; attempt < 400; attempt++) {
    if ((await t.request("GET", `/v2/deployments/${id}`)).status === 404) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`deployment ${id} not deleted`)
}
