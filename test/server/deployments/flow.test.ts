import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, startTestServer, type TestServer } from "../../support/server.ts"
import { containerBody, gitrepoBody, terminal, uniqueName, waitForRevision } from "./helpers.ts"

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const isoMs = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

let t: TestServer
beforeAll(async () => {
  t = await startTestServer({ revisionStepMs: 15, publicUrl: "https://slipway.example.com" })
})
afterAll(() => t.close())

describe("the spec's typical flow", () => {
  it("create → get → poll until DEPLOYED → PATCH image → new revision active → redeploy the first", async () => {
    const created = await t.request("POST", "/v2/deployments", { body: containerBody() })
    expect(created.status).toBe(201)
    const deployment = created.body
    expect(deployment.id).toMatch(uuid)
    expect(deployment.latest_revision_id).toMatch(uuid)
    expect(deployment.active_revision_id).toBeNull()
    expect(deployment.status).toBe("AWAITING_DATABASE")
    expect(deployment.created_at).toMatch(isoMs)
    expect(deployment.secrets).toEqual([{ name: "OPENAI_API_KEY", value: "********" }])
    expect(deployment.source_revision_config.image_uri).toBe("registry.example.com/agent:1.0.0")

    const fetched = await t.request("GET", `/v2/deployments/${deployment.id}`)
    expect(fetched.status).toBe(200)
    expect(fetched.body.id).toBe(deployment.id)
    expect(fetched.body.name).toBe(deployment.name)

    const first = await waitForRevision(t.request, deployment.id, deployment.latest_revision_id, (status) => status === "DEPLOYED")
    expect(first).toMatchObject({ id: deployment.latest_revision_id, deployment_id: deployment.id, source: "external_container", status: "DEPLOYED" })
    const ready = await eventually(async () => {
      const response = await t.request("GET", `/v2/deployments/${deployment.id}`)
      return response.body.status === "READY" ? response.body : undefined
    })
    expect(ready.active_revision_id).toBe(deployment.latest_revision_id)

    const patched = await t.request("PATCH", `/v2/deployments/${deployment.id}`, {
      body: { source_revision_config: { image_uri: "registry.example.com/agent:2.0.0" } }
    })
    expect(patched.status).toBe(200)
    const secondId = patched.body.latest_revision_id
    expect(secondId).toMatch(uuid)
    expect(secondId).not.toBe(deployment.latest_revision_id)
    expect(patched.body.source_revision_config.image_uri).toBe("registry.example.com/agent:2.0.0")
    expect(patched.body.active_revision_id).toBe(deployment.latest_revision_id)

    const second = await waitForRevision(t.request, deployment.id, secondId, (status) => status === "DEPLOYED")
    expect(second.source_revision_config.image_uri).toBe("registry.example.com/agent:2.0.0")
    await eventually(async () => {
      const response = await t.request("GET", `/v2/deployments/${deployment.id}`)
      return response.body.active_revision_id === secondId ? true : undefined
    })

    const redeployed = await t.request("POST", `/v2/deployments/${deployment.id}/revisions/${deployment.latest_revision_id}/redeploy`)
    expect(redeployed.status).toBe(200)
    expect(redeployed.body.active_revision_id).toBe(deployment.latest_revision_id)
    expect(redeployed.body.latest_revision_id).toBe(secondId)
    expect(redeployed.body.status).toBe("READY")
    const after = await t.request("GET", `/v2/deployments/${deployment.id}`)
    expect(after.body.active_revision_id).toBe(deployment.latest_revision_id)

    // The replaced revision keeps DEPLOYED in its history.
    const history = await t.request("GET", `/v2/deployments/${deployment.id}/revisions`)
    expect(history.body.resources.map((revision: any) => [revision.id, revision.status])).toEqual([
      [secondId, "DEPLOYED"],
      [deployment.latest_revision_id, "DEPLOYED"]
    ])
  })

  it("walks a gitrepo revision through the build states and generates its custom_url", async () => {
    const name = uniqueName("git")
    const created = await t.request("POST", "/v2/deployments", { body: gitrepoBody(name) })
    expect(created.status).toBe(201)
    expect(created.body.source_config.custom_url).toBe(`https://slipway.example.com/d/${name}`)
    const seen = new Set<string>()
    await eventually(async () => {
      const response = await t.request("GET", `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}`)
      seen.add(response.body.status)
      return response.body.status === "DEPLOYED" ? true : undefined
    }, 10_000, 2)
    // Polling may miss a state, but a gitrepo revision must be seen building, unlike a container.
    expect([...seen].some((status) => status === "AWAITING_BUILD" || status === "BUILDING")).toBe(true)
  })

  it("never shows build states for an external_container revision", async () => {
    const created = await t.request("POST", "/v2/deployments", { body: containerBody() })
    const seen = new Set<string>()
    await eventually(async () => {
      const response = await t.request("GET", `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}`)
      seen.add(response.body.status)
      return response.body.status === "DEPLOYED" ? true : undefined
    }, 10_000, 2)
    expect(seen.has("BUILDING")).toBe(false)
    expect(seen.has("AWAITING_BUILD")).toBe(false)
  })

  it("creates the tracing project with the deployment, listed by GET /v1/sessions?name=", async () => {
    const name = uniqueName("traced")
    await t.request("POST", "/v2/deployments", { body: containerBody(name) })
    const sessions = await t.request("GET", `/v1/sessions?name=${name}`)
    expect(sessions.status).toBe(200)
    expect(sessions.body).toHaveLength(1)
    expect(sessions.body[0]).toMatchObject({ name })
    expect(sessions.body[0].id).toMatch(uuid)
  })
})

describe("PATCH", () => {
  it("updates non-revision fields in place without creating a revision", async () => {
    const created = (await t.request("POST", "/v2/deployments", { body: containerBody() })).body
    const patched = await t.request("PATCH", `/v2/deployments/${created.id}`, {
      body: { image_version: "1.2.3", source_config: { custom_url: "https://agent.example.com" } }
    })
    expect(patched.status).toBe(200)
    expect(patched.body.latest_revision_id).toBe(created.latest_revision_id)
    expect(patched.body.image_version).toBe("1.2.3")
    expect(patched.body.source_config.custom_url).toBe("https://agent.example.com")
    // Untouched fields keep their values.
    expect(patched.body.source_config.resource_spec).toEqual(created.source_config.resource_spec)
    const revisions = await t.request("GET", `/v2/deployments/${created.id}/revisions`)
    expect(revisions.body.resources).toHaveLength(1)
  })

  it("creates exactly one revision for several revision-creating fields", async () => {
    const created = (await t.request("POST", "/v2/deployments", { body: containerBody() })).body
    const patched = await t.request("PATCH", `/v2/deployments/${created.id}`, {
      body: {
        source_revision_config: { image_uri: "registry.example.com/agent:3" },
        secrets: [{ name: "OPENAI_API_KEY", value: "********" }, { name: "NEW", value: "v" }],
        source_config: { resource_spec: { min_scale: 1, max_scale: 3 } }
      }
    })
    expect(patched.status).toBe(200)
    expect(patched.body.latest_revision_id).not.toBe(created.latest_revision_id)
    expect(patched.body.secrets).toEqual([
      { name: "OPENAI_API_KEY", value: "********" },
      { name: "NEW", value: "********" }
    ])
    expect(patched.body.source_config.resource_spec).toEqual({ min_scale: 1, max_scale: 3 })
    const revisions = await t.request("GET", `/v2/deployments/${created.id}/revisions`)
    expect(revisions.body.resources).toHaveLength(2)
  })

  it("creates a revision when only secrets change", async () => {
    const created = (await t.request("POST", "/v2/deployments", { body: containerBody() })).body
    const patched = await t.request("PATCH", `/v2/deployments/${created.id}`, { body: { secrets: [{ name: "A", value: "b" }] } })
    expect(patched.status).toBe(200)
    expect(patched.body.latest_revision_id).not.toBe(created.latest_revision_id)
  })

  it("supersedes an unfinished revision: SKIPPED before it started, INTERRUPTED while under way", async () => {
    const slow = await startTestServer({ revisionStepMs: 400 })
    try {
      const created = (await slow.request("POST", "/v2/deployments", { body: containerBody() })).body
      // First revision is CREATING: a newer one skips it.
      const second = (await slow.request("PATCH", `/v2/deployments/${created.id}`, { body: { source_revision_config: { image_uri: "img:2" } } })).body
      const first = await slow.request("GET", `/v2/deployments/${created.id}/revisions/${created.latest_revision_id}`)
      expect(first.body.status).toBe("SKIPPED")
      // Let the second one get under way (past QUEUED), then replace it.
      await waitForRevision(slow.request, created.id, second.latest_revision_id, (status) => status === "AWAITING_DEPLOY" || status === "DEPLOYING")
      const third = (await slow.request("PATCH", `/v2/deployments/${created.id}`, { body: { source_revision_config: { image_uri: "img:3" } } })).body
      const interrupted = await slow.request("GET", `/v2/deployments/${created.id}/revisions/${second.latest_revision_id}`)
      expect(interrupted.body.status).toBe("INTERRUPTED")
      await waitForRevision(slow.request, created.id, third.latest_revision_id, (status) => status === "DEPLOYED")
      // The superseded ones stay where they were.
      const list = await slow.request("GET", `/v2/deployments/${created.id}/revisions`)
      expect(list.body.resources.map((revision: any) => revision.status)).toEqual(["DEPLOYED", "INTERRUPTED", "SKIPPED"])
    } finally {
      await slow.close()
    }
  })
})

describe("POST revisions", () => {
  it("always creates a revision from the latest values", async () => {
    const created = (await t.request("POST", "/v2/deployments", { body: containerBody() })).body
    const revision = await t.request("POST", `/v2/deployments/${created.id}/revisions`, { body: {} })
    expect(revision.status).toBe(201)
    expect(revision.body.deployment_id).toBe(created.id)
    expect(revision.body.source_revision_config.image_uri).toBe("registry.example.com/agent:1.0.0")
    const deployment = await t.request("GET", `/v2/deployments/${created.id}`)
    expect(deployment.body.latest_revision_id).toBe(revision.body.id)
  })
})

describe("failure hooks", () => {
  it("reaches BUILD_FAILED for a fail-build image and DEPLOY_FAILED for fail-deploy; the deployment never becomes READY", async () => {
    const build = (await t.request("POST", "/v2/deployments", { body: containerBody(uniqueName(), { source_revision_config: { image_uri: "img:fail-build" } }) })).body
    const deploy = (await t.request("POST", "/v2/deployments", { body: containerBody(uniqueName(), { source_revision_config: { image_uri: "img:fail-deploy" } }) })).body
    const git = (
      await t.request("POST", "/v2/deployments", {
        body: gitrepoBody(uniqueName(), { source_revision_config: { repo_ref: "main", graph_config_path: "fail-build/langgraph.json" } })
      })
    ).body
    expect((await waitForRevision(t.request, build.id, build.latest_revision_id, terminal)).status).toBe("BUILD_FAILED")
    const failed = await waitForRevision(t.request, deploy.id, deploy.latest_revision_id, terminal)
    expect(failed.status).toBe("DEPLOY_FAILED")
    expect(failed.status_message).toEqual(expect.any(String))
    expect((await waitForRevision(t.request, git.id, git.latest_revision_id, terminal)).status).toBe("BUILD_FAILED")
    const deployment = await t.request("GET", `/v2/deployments/${deploy.id}`)
    expect(deployment.body.status).toBe("AWAITING_DATABASE")
    expect(deployment.body.active_revision_id).toBeNull()
  })
})

describe("redeploy", () => {
  it("answers 404 for an unknown deployment and 400 for an unknown or never-deployed revision", async () => {
    const missing = "7b0c3a52-5b2e-4d8e-9a53-2a4b6f0e9c11"
    const unknownDeployment = await t.request("POST", `/v2/deployments/${missing}/revisions/${missing}/redeploy`)
    expect(unknownDeployment.status).toBe(404)
    expect(unknownDeployment.body).toEqual({ detail: `Deployment ${missing} not found` })

    const created = (await t.request("POST", "/v2/deployments", { body: containerBody(uniqueName(), { source_revision_config: { image_uri: "img:fail-deploy" } }) })).body
    const unknownRevision = await t.request("POST", `/v2/deployments/${created.id}/revisions/${missing}/redeploy`)
    expect(unknownRevision.status).toBe(400)
    expect(typeof unknownRevision.body.detail).toBe("string")

    await waitForRevision(t.request, created.id, created.latest_revision_id, terminal)
    const never = await t.request("POST", `/v2/deployments/${created.id}/revisions/${created.latest_revision_id}/redeploy`)
    expect(never.status).toBe(400)
    expect(never.body.detail).toContain("never been deployed")
  })

  it("a revision the runtime cannot serve again is a 400 naming why, and the revision that served stays active", async () => {
    const created = (await t.request("POST", "/v2/deployments", { body: containerBody(uniqueName(), { source_revision_config: { image_uri: "img:fail-serve" } }) })).body
    await waitForRevision(t.request, created.id, created.latest_revision_id, (status) => status === "DEPLOYED")
    const patched = (await t.request("PATCH", `/v2/deployments/${created.id}`, { body: { source_revision_config: { image_uri: "img:2" } } })).body
    await waitForRevision(t.request, created.id, patched.latest_revision_id, (status) => status === "DEPLOYED")
    const refused = await t.request("POST", `/v2/deployments/${created.id}/revisions/${created.latest_revision_id}/redeploy`)
    expect(refused.status).toBe(400)
    expect(refused.body.detail).toBe(`Revision ${created.latest_revision_id} could not be served again: replica exited (exit code 1) before it was healthy (fail-serve marker)`)
    expect((await t.request("GET", `/v2/deployments/${created.id}`)).body).toMatchObject({ active_revision_id: patched.latest_revision_id, status: "READY" })
  })

  it("refuses a revision of another deployment with 400", async () => {
    const a = (await t.request("POST", "/v2/deployments", { body: containerBody() })).body
    const b = (await t.request("POST", "/v2/deployments", { body: containerBody() })).body
    await waitForRevision(t.request, a.id, a.latest_revision_id, (status) => status === "DEPLOYED")
    const crossed = await t.request("POST", `/v2/deployments/${b.id}/revisions/${a.latest_revision_id}/redeploy`)
    expect(crossed.status).toBe(400)
    expect(typeof crossed.body.detail).toBe("string")
  })
})

describe("delete", () => {
  it("answers 204, shows AWAITING_DELETE, then the deployment is gone", async () => {
    const slow = await startTestServer({ revisionStepMs: 300 })
    try {
      const created = (await slow.request("POST", "/v2/deployments", { body: containerBody() })).body
      const deleted = await slow.request("DELETE", `/v2/deployments/${created.id}`)
      expect(deleted.status).toBe(204)
      expect(deleted.body).toBeUndefined()
      const during = await slow.request("GET", `/v2/deployments/${created.id}`)
      expect(during.status).toBe(200)
      expect(during.body.status).toBe("AWAITING_DELETE")
      // The unfinished first revision is superseded by the delete.
      const revision = await slow.request("GET", `/v2/deployments/${created.id}/revisions/${created.latest_revision_id}`)
      expect(revision.body.status).toBe("SKIPPED")
      await eventually(async () => ((await slow.request("GET", `/v2/deployments/${created.id}`)).status === 404 ? true : undefined))
      const gone = await slow.request("GET", `/v2/deployments/${created.id}`)
      expect(gone.body).toEqual({ detail: `Deployment ${created.id} not found` })
      expect((await slow.request("DELETE", `/v2/deployments/${created.id}`)).status).toBe(404)
      // The name is free again.
      expect((await slow.request("POST", "/v2/deployments", { body: containerBody(created.name) })).status).toBe(201)
    } finally {
      await slow.close()
    }
  })
})
