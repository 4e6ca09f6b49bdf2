/**
 * The real LangSmith API's names, fields and endpoints, against a real server (docs/real-api.md):
 * accepted beside the spec's, answered in the spec's names; a revision that would switch sources
 * is a 400 that names it. The internal sources of `langgraph deploy`: test/server/deployments/internal-sources.test.ts.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { coreMigrations } from "../../../server/store/sqlite/migrations.ts"
import { openDatabase } from "../../../server/store/sqlite/database.ts"
import { deploymentMigrations } from "../../../server/store/sqlite/deploymentMigrations.ts"
import { makeDeploymentRepository } from "../../../server/store/sqlite/deploymentRepository.ts"
import { startTestServer, tempDatabasePath, type TestServer, TEST_KEY } from "../../support/server.ts"
import { containerBody, gitrepoBody, uniqueName, waitForRevision } from "./helpers.ts"

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(async () => {
  await t?.close()
})

const create = async (body: unknown) => {
  const response = await t.request("POST", "/v2/deployments", { body })
  expect(response.status, JSON.stringify(response.body)).toBe(201)
  return response.body
}

describe("the real API's names on input", () => {
  it("github / langgraph_config_path create a gitrepo deployment, answered in the spec's names", async () => {
    const body = gitrepoBody(uniqueName(), { source: "github", source_revision_config: { repo_ref: "main", langgraph_config_path: "agent/langgraph.json" } })
    const deployment = await create(body)
    expect(deployment).toMatchObject({ source: "gitrepo", source_revision_config: { graph_config_path: "agent/langgraph.json" }, tenant_id: "00000000-0000-4000-8000-000000000001" })
    expect(deployment.source_revision_config).not.toHaveProperty("langgraph_config_path")
    const revision = (await t.request("GET", `/v2/deployments/${deployment.id}/revisions/${deployment.latest_revision_id}`)).body
    expect(revision).toMatchObject({ source: "gitrepo", source_revision_config: { graph_config_path: "agent/langgraph.json" } })
  })

  it("external_docker creates an external_container deployment; internal_docker and internal_source are sources of their own, answered as sent", async () => {
    expect((await create(containerBody(uniqueName(), { source: "external_docker" }))).source).toBe("external_container")
    for (const source of ["internal_docker", "internal_source"]) {
      const deployment = await create({ name: uniqueName(), source, source_config: { deployment_type: "dev" }, source_revision_config: {} })
      expect(deployment).toMatchObject({ source, latest_revision_id: null, active_revision_id: null, source_config: { deployment_type: "dev" } })
      expect((await t.request("GET", `/v2/deployments/${deployment.id}`)).body.source).toBe(source)
    }
  })

  it("refuses two different values for graph_config_path and langgraph_config_path at the alias", async () => {
    const response = await t.request("POST", "/v2/deployments", {
      body: gitrepoBody(uniqueName(), { source_revision_config: { repo_ref: "main", graph_config_path: "a.json", langgraph_config_path: "b.json" } })
    })
    expect(response.status).toBe(422)
    expect(response.body.detail.map((issue: { loc: unknown }) => issue.loc)).toEqual([["body", "source_revision_config", "langgraph_config_path"]])
  })

  it("ignores unknown fields and takes explicit nulls where the real schema allows them", async () => {
    const deployment = await create({
      ...containerBody(uniqueName()),
      tracked_packages: ["langgraph"],
      ttl_seconds: 60,
      secret_references: null,
      source_config: { resource_spec: null, listener_id: null, listener_config: null, custom_url: null, unknown: 1 },
      source_revision_config: { image_uri: "registry.example.com/agent:1", langgraph_config_path: null, source_tarball_path: null, repo_ref: null }
    })
    expect(deployment).not.toHaveProperty("tracked_packages")
    const patched = await t.request("PATCH", `/v2/deployments/${deployment.id}`, {
      body: { revision_source: null, source_config: null, source_revision_config: null, secrets: null, secret_references: [{ name: "DB", secret_name: "db", secret_key: "url" }] }
    })
    expect(patched.status).toBe(200)
    expect(patched.body.latest_revision_id).toBe(deployment.latest_revision_id)
  })

  it("takes fractional CPU and the redis fields", async () => {
    const spec = { min_scale: 1, max_scale: 2, cpu: 0.5, cpu_limit: 1.5, memory_mb: 512, redis_cpu: 0.25, redis_cpu_limit: 0.5, redis_memory_mb: 256, redis_memory_limit_mb: 512 }
    const deployment = await create(containerBody(uniqueName(), { source_config: { resource_spec: spec } }))
    expect(deployment.source_config.resource_spec).toEqual(spec)
    const bad = await t.request("POST", "/v2/deployments", { body: containerBody(uniqueName(), { source_config: { resource_spec: { redis_cpu: 1, redis_cpu_limit: 0.5 } } }) })
    expect(bad.status).toBe(422)
    expect(bad.body.detail[0].loc).toEqual(["body", "source_config", "resource_spec", "redis_cpu_limit"])
  })
})

describe("revision_source: a 400 naming it", () => {
  it("a revision_source other than the deployment's own", async () => {
    const deployment = await create(gitrepoBody(uniqueName()))
    const other = await t.request("PATCH", `/v2/deployments/${deployment.id}`, { body: { revision_source: "internal_docker", source_revision_config: { repo_ref: "dev" } } })
    expect(other.status).toBe(400)
    expect(other.body.detail).toContain("revision_source 'internal_docker' differs from the deployment's source 'github' (gitrepo)")
    const source = await t.request("PATCH", `/v2/deployments/${deployment.id}`, { body: { revision_source: "internal_source" } })
    expect(source.status).toBe(400)
    expect(source.body.detail).toContain("revision_source 'internal_source' differs")
    const same = await t.request("PATCH", `/v2/deployments/${deployment.id}`, { body: { revision_source: "github", source_revision_config: { repo_ref: "dev" } } })
    expect(same.status).toBe(200)
    expect(same.body.latest_revision_id).not.toBe(deployment.latest_revision_id)
  })
})

describe("listeners: compute_id and version, nullable namespaces", () => {
  it("stores compute_id and version, 409 on a tenant's duplicate compute_id, defaults compute_id to the id", async () => {
    const computeId = `cluster-${randomUUID()}`
    const created = await t.request("POST", "/v2/listeners", { body: { compute_type: "k8s", compute_id: computeId, version: "0.9.0", compute_config: { k8s_namespaces: null } } })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ compute_id: computeId, version: "0.9.0", compute_config: { k8s_namespaces: null } })
    const duplicate = await t.request("POST", "/v2/listeners", { body: { compute_id: computeId, compute_config: { k8s_namespaces: ["a"] } } })
    expect(duplicate.status).toBe(409)
    expect(duplicate.body.detail).toContain(computeId)
    // Another tenant may use the same compute id.
    const otherKey = t.keyFor(randomUUID())
    expect((await t.request("POST", "/v2/listeners", { key: otherKey, body: { compute_id: computeId, compute_config: {} } })).status).toBe(201)
    const unnamed = await t.request("POST", "/v2/listeners", { body: { compute_config: { k8s_namespaces: ["b"] } } })
    expect(unnamed.body.compute_id).toBe(unnamed.body.id)
    const patched = await t.request("PATCH", `/v2/listeners/${created.body.id}`, { body: { version: "1.0.0", compute_config: { k8s_namespaces: ["agents"] } } })
    expect(patched.body).toMatchObject({ compute_id: computeId, version: "1.0.0", compute_config: { k8s_namespaces: ["agents"] } })
    expect((await t.request("GET", `/v2/listeners/${created.body.id}`)).body.version).toBe("1.0.0")
  })

  it("migration 102 gives listeners that existed before it their own id as compute_id", async () => {
    const database = tempDatabasePath("migration")
    try {
      const before = openDatabase(database.path, [...coreMigrations, ...deploymentMigrations.filter((migration) => migration.id < "102")])
      const at = new Date().toISOString()
      before.prepare("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'o', ?)").run(at)
      before.prepare("INSERT INTO tenants (id, organization_id, name, created_at) VALUES ('t', 'o', 't', ?)").run(at)
      for (const id of ["l1", "l2"]) {
        before.prepare("INSERT INTO listeners (id, tenant_id, compute_type, compute_config, created_at, updated_at) VALUES (?, 't', 'k8s', '{}', ?, ?)").run(id, at, at)
      }
      before.close()
      const after = openDatabase(database.path, [...coreMigrations, ...deploymentMigrations])
      const repository = makeDeploymentRepository(after)
      expect([repository.listener("t", "l1")?.compute_id, repository.listener("t", "l2")?.compute_id]).toEqual(["l1", "l2"])
      expect(() => after.prepare("UPDATE listeners SET compute_id = 'l1' WHERE id = 'l2'").run()).toThrow(/UNIQUE/)
      after.close()
    } finally {
      database.remove()
    }
  })
})

describe("the real API's endpoints", () => {
  it("DELETE /v2/deployments deletes up to 100 at once (repeated or comma-separated ids), all or none", async () => {
    const a = await create(containerBody(uniqueName()))
    const b = await create(containerBody(uniqueName()))
    const c = await create(containerBody(uniqueName()))
    const missing = randomUUID()
    const none = await t.request("DELETE", `/v2/deployments?deployment_ids=${a.id}&deployment_ids=${missing}`)
    expect(none.status).toBe(404)
    expect(none.body.detail).toBe(`Deployment ID ${missing} not found.`)
    expect((await t.request("GET", `/v2/deployments/${a.id}`)).body.status).not.toBe("AWAITING_DELETE")
    const both = await t.request("DELETE", `/v2/deployments?deployment_ids=${a.id}&deployment_ids=${b.id},${c.id}`)
    expect(both.status).toBe(200)
    expect(both.body).toEqual({ deleted: [a.id, b.id, c.id] })
    for (const id of [a.id, b.id, c.id]) {
      const after = await t.request("GET", `/v2/deployments/${id}`)
      expect(after.status === 404 || after.body.status === "AWAITING_DELETE").toBe(true)
    }
    const tooMany = Array.from({ length: 101 }, () => `deployment_ids=${randomUUID()}`).join("&")
    expect((await t.request("DELETE", `/v2/deployments?${tooMany}`)).status).toBe(422)
    expect((await t.request("DELETE", "/v2/deployments")).status).toBe(422)
  })

  it("delete_tracing_project=true deletes the deployment's tracing project; by default it stays", async () => {
    const kept = await create(containerBody(uniqueName()))
    const dropped = await create(containerBody(uniqueName()))
    expect((await t.request("DELETE", `/v2/deployments/${kept.id}`)).status).toBe(204)
    expect((await t.request("DELETE", `/v2/deployments/${dropped.id}?delete_tracing_project=true`)).status).toBe(204)
    expect((await t.request("GET", `/v1/sessions?name=${kept.name}`)).body).toHaveLength(1)
    expect((await t.request("GET", `/v1/sessions?name=${dropped.name}`)).body).toEqual([])
    expect((await t.request("DELETE", `/v2/deployments/${kept.id}?delete_tracing_project=maybe`)).status).toBe(422)
  })

  it("GET /v1/integrations/github/install and .../{integration_id}/repos", async () => {
    const tenant = randomUUID()
    const key = t.keyFor(tenant)
    const id = randomUUID()
    makeDeploymentRepository(t.server.db).insertIntegration({
      id,
      tenant_id: tenant,
      provider: "github",
      owner: "Acme",
      owner_key: "acme",
      webhook_secret: randomBytes(8).toString("hex"),
      installed_at: new Date().toISOString()
    })
    const install = await t.request("GET", "/v1/integrations/github/install", { key })
    expect(install.body).toEqual([{ id, installation_id: expect.any(Number), name: "Acme" }])
    expect((await t.request("GET", "/v1/integrations/github/install", { key })).body[0].installation_id).toBe(install.body[0].installation_id)
    expect((await t.request("GET", `/v1/integrations/github/${id}/repos`, { key })).body).toEqual([])
    for (const [repo, ref] of [["https://github.com/acme/agent.git", "dev"], ["https://github.com/acme/agent", "main"], ["https://github.com/acme/tools", "refs/tags/v1"]]) {
      const body = gitrepoBody(uniqueName(), { source_config: { integration_id: id, repo_url: repo }, source_revision_config: { repo_ref: ref, graph_config_path: "g.json" } })
      expect((await t.request("POST", "/v2/deployments", { key, body })).status).toBe(201)
    }
    const repos = (await t.request("GET", `/v1/integrations/github/${id}/repos`, { key })).body
    expect(repos).toEqual([
      { host_integration_id: id, id: expect.any(Number), name: "agent", owner: "acme", url: "https://github.com/acme/agent", default_branch: "dev" },
      { host_integration_id: id, id: expect.any(Number), name: "tools", owner: "acme", url: "https://github.com/acme/tools", default_branch: "main" }
    ])
    // Another tenant's integration answers 404, exactly as if absent.
    expect((await t.request("GET", `/v1/integrations/github/${id}/repos`)).status).toBe(404)
    expect((await t.request("GET", "/v1/integrations/github/not-a-uuid/repos", { key })).status).toBe(422)
  })

  it("serves the control plane under /api-host too (self-hosted LangSmith's prefix), not the sandbox area", async () => {
    const deployment = await create(containerBody(uniqueName()))
    expect((await t.request("GET", `/api-host/v2/deployments/${deployment.id}`)).body.id).toBe(deployment.id)
    expect((await t.request("GET", "/api-host/v2/listeners")).status).toBe(200)
    expect((await t.request("GET", "/api-host/openapi.json")).status).toBe(200)
    expect((await t.request("GET", "/api-host/v2/sandboxes/boxes")).status).toBe(404)
    expect((await t.request("GET", "/api-host")).status).toBe(404)
    expect((await t.request("GET", "/api-host/api-host/v2/deployments")).status).toBe(404)
  })

  it("the typed client toward Slipway sends the real names and deploys", async () => {
    const { makeClient, Api } = await import("../../../core/index.ts")
    const { Effect } = await import("effect")
    // Under /api-host, as a LangSmith user would configure it: the client keeps the base URL's path.
    const client = makeClient(Api, { baseUrl: `${t.url}/api-host`, apiKey: TEST_KEY })
    const deployment = await Effect.runPromise(
      client.createDeployment({ body: { name: uniqueName(), source: "gitrepo", source_config: { repo_url: "https://github.com/a/b" }, source_revision_config: { repo_ref: "main", graph_config_path: "g.json" } } })
    )
    expect(deployment.source).toBe("gitrepo")
    expect(deployment.source_revision_config.graph_config_path).toBe("g.json")
    expect((await waitForRevision(t.request, deployment.id, deployment.latest_revision_id!, (status) => status === "DEPLOYED")).status).toBe("DEPLOYED")
  })
})
