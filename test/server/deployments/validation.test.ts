import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { layerFileLogStore } from "../../../server/deployments/logs/index.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { containerBody, gitrepoBody, uniqueName } from "./helpers.ts"

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t.close())

const locs = (body: any) => (body.detail as Array<{ loc: Array<string | number> }>).map((issue) => issue.loc)
const issueAt = (body: any, loc: ReadonlyArray<string | number>) =>
  (body.detail as Array<{ loc: Array<string | number>; type: string; msg: string }>).find((issue) => JSON.stringify(issue.loc) === JSON.stringify(loc))

const create422 = async (body: unknown) => {
  const response = await t.request("POST", "/v2/deployments", { body })
  expect(response.status, JSON.stringify(response.body)).toBe(422)
  expect(Array.isArray(response.body.detail)).toBe(true)
  return response.body
}

describe("create: field rules answer 422 with the field's loc", () => {
  it("requires name and source", async () => {
    const body = await create422({})
    expect(issueAt(body, ["body", "name"])?.type).toBe("missing")
    expect(issueAt(body, ["body", "source"])?.type).toBe("missing")
  })

  it("checks the name's pattern and length and the source enum", async () => {
    expect(locs(await create422(containerBody("Bad_Name")))).toContainEqual(["body", "name"])
    expect(locs(await create422(containerBody("x".repeat(64))))).toContainEqual(["body", "name"])
    expect(issueAt(await create422({ ...containerBody(), source: "ftp" }), ["body", "source"])?.type).toBe("enum")
  })

  it("requires repo_url, repo_ref and graph_config_path for gitrepo", async () => {
    const body = await create422({ name: uniqueName(), source: "gitrepo" })
    expect(issueAt(body, ["body", "source_config", "repo_url"])?.type).toBe("missing")
    expect(issueAt(body, ["body", "source_revision_config", "repo_ref"])?.type).toBe("missing")
    expect(issueAt(body, ["body", "source_revision_config", "graph_config_path"])?.type).toBe("missing")
  })

  it("requires image_uri for external_container", async () => {
    const body = await create422({ name: uniqueName(), source: "external_container" })
    expect(issueAt(body, ["body", "source_revision_config", "image_uri"])?.type).toBe("missing")
  })

  it("refuses fields of the other source", async () => {
    const onContainer = await create422(containerBody(uniqueName(), { source_config: { repo_url: "https://github.com/a/b", build_on_push: true } }))
    expect(locs(onContainer)).toContainEqual(["body", "source_config", "repo_url"])
    expect(locs(onContainer)).toContainEqual(["body", "source_config", "build_on_push"])
    const onGit = await create422(gitrepoBody(uniqueName(), { source_revision_config: { repo_ref: "main", graph_config_path: "g.json", image_uri: "img" } }))
    expect(locs(onGit)).toEqual([["body", "source_revision_config", "image_uri"]])
  })

  it("refuses build_on_push with a tag repo_ref", async () => {
    const body = await create422(gitrepoBody(uniqueName(), { source_revision_config: { repo_ref: "refs/tags/v1", graph_config_path: "g.json" } }))
    expect(locs(body)).toEqual([["body", "source_config", "build_on_push"]])
    // With build_on_push false a tag is fine.
    const ok = await t.request("POST", "/v2/deployments", {
      body: gitrepoBody(uniqueName(), {
        source_config: { repo_url: "https://github.com/a/b", build_on_push: false },
        source_revision_config: { repo_ref: "refs/tags/v1", graph_config_path: "g.json" }
      })
    })
    expect(ok.status).toBe(201)
  })

  it("refuses a custom_url on gitrepo (generated, read-only)", async () => {
    const body = await create422(gitrepoBody(uniqueName(), { source_config: { repo_url: "https://github.com/a/b", custom_url: "https://mine.example.com" } }))
    expect(locs(body)).toEqual([["body", "source_config", "custom_url"]])
  })

  it("checks nested resource_spec fields and unknown keys", async () => {
    const body = await create422(
      containerBody(uniqueName(), { source_config: { resource_spec: { cpu: "lots", min_scale: 1.5 } } })
    )
    expect(locs(body)).toContainEqual(["body", "source_config", "resource_spec", "cpu"])
    expect(locs(body)).toContainEqual(["body", "source_config", "resource_spec", "min_scale"])
    // Cross-field checks of a well-typed spec: a mount must name a declared volume.
    const mounts = await create422(containerBody(uniqueName(), { source_config: { resource_spec: { volume_mounts: [{ name: "nope", mountPath: "/x" }] } } }))
    expect(locs(mounts)).toEqual([["body", "source_config", "resource_spec", "volume_mounts", 0, "name"]])
    // Unknown fields are ignored, as FastAPI and the real API do (docs/real-api.md).
    const extra = await t.request("POST", "/v2/deployments", { body: { ...containerBody(uniqueName()), colour: "blue" } })
    expect(extra.status).toBe(201)
    expect(extra.body).not.toHaveProperty("colour")
  })

  it("checks listener_id and listener_config.k8s_namespace against the tenant's listeners", async () => {
    const listener = await t.request("POST", "/v2/listeners", { body: { compute_type: "k8s", compute_config: { k8s_namespaces: ["agents", "staging"] } } })
    expect(listener.status).toBe(201)
    const unknown = await create422(
      containerBody(uniqueName(), { source_config: { listener_id: "5a0f6f44-9d1e-4c41-8f1b-0a4a1d2c3b4e", listener_config: { k8s_namespace: "agents" } } })
    )
    expect(locs(unknown)).toEqual([["body", "source_config", "listener_id"]])
    const unlisted = await create422(containerBody(uniqueName(), { source_config: { listener_id: listener.body.id, listener_config: { k8s_namespace: "prod" } } }))
    expect(locs(unlisted)).toEqual([["body", "source_config", "listener_config", "k8s_namespace"]])
    const ok = await t.request("POST", "/v2/deployments", {
      body: containerBody(uniqueName(), { source_config: { listener_id: listener.body.id, listener_config: { k8s_namespace: "staging" } } })
    })
    expect(ok.status).toBe(201)
    // Another tenant cannot use this listener: it is unknown there.
    const other = t.keyFor("a7d9e0b2-3c4d-4e5f-8a6b-7c8d9e0f1a2b")
    const foreign = await t.request("POST", "/v2/deployments", {
      key: other,
      body: containerBody(uniqueName(), { source_config: { listener_id: listener.body.id } })
    })
    expect(foreign.status).toBe(422)
    expect(locs(foreign.body)).toEqual([["body", "source_config", "listener_id"]])
  })

  it("answers 409 with a string detail for a name taken in the tenant", async () => {
    const name = uniqueName()
    expect((await t.request("POST", "/v2/deployments", { body: containerBody(name) })).status).toBe(201)
    const again = await t.request("POST", "/v2/deployments", { body: containerBody(name) })
    expect(again.status).toBe(409)
    expect(typeof again.body.detail).toBe("string")
    expect(again.body.detail).toContain(name)
    // Names are per tenant.
    const other = t.keyFor("b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d5e")
    expect((await t.request("POST", "/v2/deployments", { key: other, body: containerBody(name) })).status).toBe(201)
  })
})

describe("PATCH: immutable fields", () => {
  it("refuses changing name, source, repo_url, deployment_type, integration_id with frozen_field", async () => {
    const created = (await t.request("POST", "/v2/deployments", { body: gitrepoBody() })).body
    const response = await t.request("PATCH", `/v2/deployments/${created.id}`, {
      body: {
        name: "renamed",
        source: "external_container",
        source_config: {
          repo_url: "https://github.com/other/repo",
          deployment_type: "prod",
          integration_id: "2f6c1d5e-8a3b-4c7d-9e0f-1a2b3c4d5e6f"
        }
      }
    })
    expect(response.status).toBe(422)
    for (const loc of [
      ["body", "name"],
      ["body", "source"],
      ["body", "source_config", "repo_url"],
      ["body", "source_config", "deployment_type"],
      ["body", "source_config", "integration_id"]
    ]) {
      expect(issueAt(response.body, loc)?.type, JSON.stringify(loc)).toBe("frozen_field")
    }
    // Nothing changed.
    const after = await t.request("GET", `/v2/deployments/${created.id}`)
    expect(after.body.name).toBe(created.name)
    expect(after.body.source_config.repo_url).toBe(created.source_config.repo_url)
  })

  it("accepts immutable fields sent with their current values (idempotent apply)", async () => {
    const created = (await t.request("POST", "/v2/deployments", { body: gitrepoBody() })).body
    const response = await t.request("PATCH", `/v2/deployments/${created.id}`, {
      body: { name: created.name, source: "gitrepo", source_config: { repo_url: created.source_config.repo_url, custom_url: created.source_config.custom_url } }
    })
    expect(response.status).toBe(200)
    expect(response.body.latest_revision_id).toBe(created.latest_revision_id)
  })

  it("refuses listener_id and listener_config changes on external_container", async () => {
    const listener = (await t.request("POST", "/v2/listeners", { body: { compute_config: { k8s_namespaces: ["a", "b"] } } })).body
    const created = (
      await t.request("POST", "/v2/deployments", {
        body: containerBody(uniqueName(), { source_config: { listener_id: listener.id, listener_config: { k8s_namespace: "a" } } })
      })
    ).body
    const response = await t.request("PATCH", `/v2/deployments/${created.id}`, { body: { source_config: { listener_config: { k8s_namespace: "b" } } } })
    expect(response.status).toBe(422)
    expect(issueAt(response.body, ["body", "source_config", "listener_config"])?.type).toBe("frozen_field")
  })
})

describe("request-level errors", () => {
  it("answers a malformed uuid in the path with 422 at loc path.deployment_id", async () => {
    for (const [method, path] of [
      ["GET", "/v2/deployments/not-a-uuid"],
      ["DELETE", "/v2/deployments/not-a-uuid"],
      ["GET", "/v2/deployments/not-a-uuid/revisions"]
    ] as const) {
      const response = await t.request(method, path)
      expect(response.status).toBe(422)
      expect(locs(response.body)).toEqual([["path", "deployment_id"]])
    }
    const revision = await t.request("GET", "/v2/deployments/00000000-0000-4000-8000-000000000000/revisions/nope")
    expect(locs(revision.body)).toEqual([["path", "revision_id"]])
  })

  it("answers malformed JSON with 422 json_invalid", async () => {
    const response = await t.request("POST", "/v2/deployments", { raw: '{"name": "x",', headers: { "content-type": "application/json" } })
    expect(response.status).toBe(422)
    expect(response.body.detail[0].type).toBe("json_invalid")
    expect(response.body.detail[0].loc[0]).toBe("body")
  })

  it("answers a body over 1 MiB with 413", async () => {
    const huge = JSON.stringify({ ...containerBody(), image_version: "x".repeat(1024 * 1024 + 10) })
    const response = await t.request("POST", "/v2/deployments", { raw: huge, headers: { "content-type": "application/json" } })
    expect(response.status).toBe(413)
    expect(response.body).toEqual({ detail: "Request body too large" })
  })

  it("checks list query bounds", async () => {
    for (const query of ["limit=0", "limit=101", "offset=-1", "limit=abc", "status=BOGUS", "deployment_ids=nope"]) {
      const response = await t.request("GET", `/v2/deployments?${query}`)
      expect(response.status, query).toBe(422)
      expect(response.body.detail[0].loc[0], query).toBe("query")
    }
  })

  it("never answers 500 to hostile bodies", async () => {
    for (const body of [null, [], "text", 42, { name: null, source: null }, { source_config: "x" }, { name: "a", source: "gitrepo", secrets: [{}] }]) {
      const response = await t.request("POST", "/v2/deployments", { raw: JSON.stringify(body), headers: { "content-type": "application/json" } })
      expect(response.status, JSON.stringify(body)).toBe(422)
    }
    const created = (await t.request("POST", "/v2/deployments", { body: containerBody() })).body
    for (const body of [null, [], { source_config: null, secrets: null }, { secrets: [{ name: "X", value: "********" }] }]) {
      const response = await t.request("PATCH", `/v2/deployments/${created.id}`, { raw: JSON.stringify(body), headers: { "content-type": "application/json" } })
      expect(response.status, JSON.stringify(body)).toBeLessThan(500)
    }
  })
})

describe("the log endpoints (what the langgraph CLI calls)", () => {
  it("take a missing body as the defaults; a bad body is still 422, and other endpoints still require theirs", async () => {
    const created = await t.request("POST", "/v2/deployments", { body: containerBody() })
    expect(created.status).toBe(201)
    const { id, latest_revision_id: revision } = created.body
    for (const path of [`/v1/projects/${id}/revisions/${revision}/build_logs`, `/v1/projects/${id}/deploy_logs`, `/v1/projects/${id}/revisions/${revision}/deploy_logs`]) {
      // As `curl -X POST <url>` sends it: no body, no content type.
      const bare = await fetch(`${t.url}${path}`, { method: "POST", headers: { "x-api-key": t.key } })
      expect(bare.status, path).toBe(200)
      expect(await bare.json()).toEqual({ logs: expect.any(Array), next_offset: null })
      const bad = await t.request("POST", path, { body: { limit: 0 } })
      expect(bad.status).toBe(422)
    }
    const revisionWithoutBody = await fetch(`${t.url}/v2/deployments`, { method: "POST", headers: { "x-api-key": t.key } })
    expect(revisionWithoutBody.status).toBe(422)
    expect(((await revisionWithoutBody.json()) as any).detail).toEqual([{ loc: ["body"], msg: "Field required", type: "missing" }])
    // The OpenAPI document says the body may be left out.
    const openapi = (await t.request("GET", "/openapi.json")).body
    expect(openapi.paths["/v1/projects/{deployment_id}/deploy_logs"].post.requestBody.required).toBe(false)
    expect(openapi.paths["/v2/deployments"].post.requestBody.required).toBe(true)
  })
})

describe("the log endpoints when the log storage fails", () => {
  it("answer 503 with Retry-After, not a 422 about the offset (a store on a path that is a file: ENOTDIR)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "slipway-logs-broken-"))
    const notADirectory = join(dir, "deployment-logs")
    writeFileSync(notADirectory, "a file where the logs' directory should be")
    const broken = await startTestServer({ substitute: layerFileLogStore({ root: notADirectory }) })
    try {
      const created = await broken.request("POST", "/v2/deployments", { body: containerBody() })
      expect(created.status).toBe(201)
      const answer = await broken.request("POST", `/v1/projects/${created.body.id}/deploy_logs`, { body: { order: "asc" } })
      expect(answer.status, JSON.stringify(answer.body)).toBe(503)
      expect(answer.headers.get("retry-after")).toBe("1")
      // The cause is the server's to log: it names the server's paths.
      expect(answer.body.detail).toBe("Deployment logs are unavailable, retry shortly")
      // Bad input is still bad input.
      expect((await broken.request("POST", `/v1/projects/${created.body.id}/deploy_logs`, { body: { offset: "not-a-cursor" } })).status).toBe(422)
    } finally {
      await broken.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
