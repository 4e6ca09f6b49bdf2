/**
 * Tenant isolation: a key of tenant B (another organization) or C (another tenant of A's own
 * organization, using its default tenant) never reads, lists, changes or deletes anything of
 * tenant A. Every endpoint that addresses an item is tried with A's ids and names: the answer is
 * 404 in the area's shape, exactly as for an item that does not exist; lists never show A's
 * items; and afterwards A's items are unchanged. References across tenants (a pool on A's
 * template, a template mounting A's volume, a deployment on A's listener) are refused too.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DEFAULT_ORGANIZATION_ID, DEFAULT_TENANT_ID } from "../../server/index.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import { endpoints, errorShapeProblem, pathParamNames, samplePath } from "./support.ts"

let t: TestServer
let keyB: string
let keyC: string
/** A's resources: path parameter values by endpoint path prefix, and every id and name to look for in B's answers. */
const a = { deploymentId: "", revisionId: "", listenerId: "", snapshotId: "", names: { templates: "a-template", volumes: "a-volume", pools: "a-pool", boxes: "a-box", registries: "a-registry" } as Record<string, string> }
const markers: Array<string> = []
let snapshot: Record<string, unknown> = {}

/** Bodies that pass validation, so the handler (and its tenant filter) is reached. */
const bodies: Record<string, unknown> = {
  updateTemplate: { name: "b-renamed" },
  updateVolume: { size: "5Gi" },
  updatePool: { replicas: 3 },
  updateBox: { name: "b-renamed" },
  captureSnapshot: { name: "b-captured" },
  updateRegistry: { username: "evil", password: "stolen" },
  createServiceUrl: { port: 8000 },
  createDownloadUrl: { path: "/home/user/secret.txt" },
  updateDeployment: { source_revision_config: { image_uri: "evil/image:1" }, secrets: [{ name: "STOLEN", value: "x" }] },
  createRevision: { source_revision_config: { image_uri: "evil/image:2" } },
  updateListener: { compute_config: { k8s_namespaces: ["evil"] } },
  getBuildLogs: { order: "asc", limit: 10 },
  getDeployLogs: { order: "asc", limit: 10 },
  getRevisionDeployLogs: { order: "asc", limit: 10 }
}

const paramsForA = (path: string): Record<string, string> => {
  const kind = /\/v2\/sandboxes\/(\w+)\//.exec(path)?.[1]
  return { deployment_id: a.deploymentId, revision_id: a.revisionId, listener_id: a.listenerId, snapshot_id: a.snapshotId, ...(kind ? { name: a.names[kind]! } : {}) }
}

/** Everything of A that a read could reveal, in a form that must not change. */
const readA = async () => {
  const get = async (path: string) => {
    const response = await t.request("GET", path)
    expect(response.status, path).toBe(200)
    return response.body
  }
  const deployment = await get(`/v2/deployments/${a.deploymentId}`)
  const revisions = await get(`/v2/deployments/${a.deploymentId}/revisions?limit=100`)
  return {
    templates: await get("/v2/sandboxes/templates/a-template"),
    volumes: await get("/v2/sandboxes/volumes/a-volume"),
    pools: await get("/v2/sandboxes/pools/a-pool"),
    boxes: await get("/v2/sandboxes/boxes/a-box"),
    snapshots: await get("/v2/sandboxes/snapshots/a-snapshot"),
    registries: await get("/v2/sandboxes/registries/a-registry"),
    listener: await get(`/v2/listeners/${a.listenerId}`),
    deployment: { name: deployment.name, latest_revision_id: deployment.latest_revision_id, secrets: deployment.secrets, source_revision_config: deployment.source_revision_config },
    revisions: revisions.resources.map((revision: { id: string }) => revision.id)
  }
}

beforeAll(async () => {
  t = await startTestServer()
  keyB = t.keyFor(crypto.randomUUID())
  keyC = t.keyFor(crypto.randomUUID(), DEFAULT_ORGANIZATION_ID)
  const create = async (path: string, body: unknown) => {
    const response = await t.request("POST", path, { body })
    if (response.status !== 201) throw new Error(`setup ${path}: ${response.status} ${JSON.stringify(response.body)}`)
    return response.body
  }
  const volume = await create("/v2/sandboxes/volumes", { name: "a-volume", size: "1Gi" })
  const template = await create("/v2/sandboxes/templates", { name: "a-template", image: "python:3.12" })
  await create("/v2/sandboxes/templates", { name: "a-mounting", image: "python:3.12", volume_mounts: [{ volume_name: "a-volume", mount_path: "/data" }] })
  const pool = await create("/v2/sandboxes/pools", { name: "a-pool", template_name: "a-template", replicas: 2 })
  const box = await create("/v2/sandboxes/boxes", { name: "a-box", template_name: "a-template" })
  const snap = await create("/v2/sandboxes/snapshots", { name: "a-snapshot", docker_image: "python:3.12", fs_capacity_bytes: 1024 ** 3 })
  a.snapshotId = snap.id
  const registry = await create("/v2/sandboxes/registries", { name: "a-registry", url: "registry.example.com/a", username: "a-robot", password: "a-registry-password" })
  // Built at once on the simulated runtime; wait for it so the before/after reads compare a settled snapshot.
  for (let attempt = 0; attempt < 100 && (await t.request("GET", `/v2/sandboxes/snapshots/${snap.id}`)).body.status !== "ready"; attempt++) await new Promise((resolve) => setTimeout(resolve, 20))
  const listener = await create("/v2/listeners", { compute_type: "k8s", compute_config: { k8s_namespaces: ["a-namespace"] } })
  const deployment = await create("/v2/deployments", {
    name: "a-deployment",
    source: "external_container",
    source_config: { listener_id: listener.id, listener_config: { k8s_namespace: "a-namespace" } },
    source_revision_config: { image_uri: "registry.example.com/a:1" },
    secrets: [{ name: "A_SECRET", value: "a-secret-value" }]
  })
  a.deploymentId = deployment.id
  a.revisionId = deployment.latest_revision_id
  a.listenerId = listener.id
  markers.push(registry.id, "a-registry", "a-robot", "a-registry-password", snap.id, "a-snapshot", volume.id, template.id, pool.id, box.id, listener.id, deployment.id, deployment.latest_revision_id, "a-volume", "a-template", "a-mounting", "a-pool", "a-box", "a-deployment", "a-namespace")
  snapshot = await readA()
})
afterAll(() => t?.close())

const others = () => [
  { who: "B (another organization)", key: keyB },
  { who: "C (another tenant of A's organization)", key: keyC }
]

describe("a key of another tenant never sees or touches tenant A's items", () => {
  const addressed = endpoints.filter((endpoint) => endpoint.auth && pathParamNames(endpoint).length > 0)

  it("covers every endpoint that addresses an item", () => {
    expect(addressed.filter((endpoint) => endpoint.body && bodies[endpoint.name] === undefined).map((endpoint) => endpoint.name)).toEqual([])
    expect(addressed.length).toBeGreaterThan(15)
  })

  for (const endpoint of addressed) {
    it(`${endpoint.method} ${endpoint.path}: 404 as if absent, in the area's shape`, async () => {
      for (const { who, key } of others()) {
        const body = bodies[endpoint.name]
        const response = await t.request(endpoint.method, samplePath(endpoint, paramsForA(endpoint.path)), { key, ...(body ? { body } : {}) })
        expect(response.status, `${who}: ${JSON.stringify(response.body)}`).toBe(404)
        expect(errorShapeProblem(endpoint, response.status, response.body)).toBeUndefined()
        // Exactly the answer for an id or name that exists nowhere (no hint that A's exists).
        const absent = await t.request(endpoint.method, samplePath(endpoint, Object.fromEntries(Object.entries(paramsForA(endpoint.path)).map(([k, v]) => [k, k.endsWith("_id") ? crypto.randomUUID() : `${v}-absent`]))), { key, ...(body ? { body } : {}) })
        expect(absent.status).toBe(404)
        const normalize = (detail: unknown) => JSON.stringify(detail).replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<id>").replace(/a-[a-z]+(-absent)?/g, "<name>")
        expect(normalize(response.body.detail)).toBe(normalize(absent.body.detail))
      }
    })
  }

  it("lists never show A's items", async () => {
    const lists = endpoints.filter((endpoint) => endpoint.auth && endpoint.method === "GET" && pathParamNames(endpoint).length === 0)
    expect(lists.length).toBeGreaterThan(5)
    for (const endpoint of lists) {
      for (const query of ["", "?limit=100", "?name=a-deployment", "?name_contains=a-", `?deployment_ids=${a.deploymentId}`]) {
        for (const { who, key } of others()) {
          const response = await t.request("GET", endpoint.path + query, { key })
          expect(response.status, `${who} ${endpoint.path}${query}: ${JSON.stringify(response.body)}`).toBe(200)
          const text = JSON.stringify(response.body)
          for (const marker of markers) expect(text.includes(marker), `${who} ${endpoint.path}${query} shows ${marker}`).toBe(false)
        }
        // A itself sees its items (the check above is looking at real lists).
      }
    }
    const own = await t.request("GET", `/v2/deployments?name_contains=a-`)
    expect(JSON.stringify(own.body)).toContain(a.deploymentId)
  })

  it("cannot reference A's template, volume or listener from its own requests", async () => {
    for (const { who, key } of others()) {
      const pool = await t.request("POST", "/v2/sandboxes/pools", { key, body: { name: "b-pool", template_name: "a-template", replicas: 1 } })
      expect(pool.status, who).toBe(400)
      expect(pool.body.detail.error).toBe("TemplateNotFound")
      const box = await t.request("POST", "/v2/sandboxes/boxes", { key, body: { name: "b-box", template_name: "a-template" } })
      expect(box.status, who).toBe(400)
      expect(box.body.detail.error).toBe("TemplateNotFound")
      const template = await t.request("POST", "/v2/sandboxes/templates", { key, body: { name: "b-mounting", image: "x", volume_mounts: [{ volume_name: "a-volume", mount_path: "/d" }] } })
      expect(template.status, `${who}: ${JSON.stringify(template.body)}`).toBeGreaterThanOrEqual(400)
      expect(template.status).toBeLessThan(500)
      const deployment = await t.request("POST", "/v2/deployments", {
        key,
        body: { name: "b-on-a-listener", source: "external_container", source_config: { listener_id: a.listenerId, listener_config: { k8s_namespace: "a-namespace" } }, source_revision_config: { image_uri: "b/app:1" } }
      })
      expect(deployment.status, `${who}: ${JSON.stringify(deployment.body)}`).toBeGreaterThanOrEqual(400)
      expect(deployment.status).toBeLessThan(500)
    }
  })

  it("may use the same names as A without touching A's items", async () => {
    for (const { who, key } of others()) {
      for (const [path, body] of [
        ["/v2/sandboxes/volumes", { name: "a-volume", size: "1Gi" }],
        ["/v2/sandboxes/templates", { name: "a-template", image: "other:1" }],
        ["/v2/deployments", { name: "a-deployment", source: "external_container", source_revision_config: { image_uri: "b/app:1" } }]
      ] as const) {
        const response = await t.request("POST", path, { key, body })
        // A volume's name is unique within the organization (spec): only another organization may reuse it.
        const sameOrganization = key === keyC && path === "/v2/sandboxes/volumes"
        expect(response.status, `${who} ${path}: ${JSON.stringify(response.body)}`).toBe(sameOrganization ? 409 : 201)
        expect(markers).not.toContain(response.body.id)
      }
      // And deleting by those names removes B's own, never A's.
      expect((await t.request("DELETE", "/v2/sandboxes/volumes/a-volume", { key })).status).toBe(key === keyC ? 404 : 204)
      expect((await t.request("DELETE", "/v2/sandboxes/templates/a-template", { key })).status).toBe(204)
    }
  })

  it("leaves every item of A exactly as it was", async () => {
    expect(await readA()).toEqual(snapshot)
  })

  it("refuses a key that names A's tenant in X-Tenant-Id unless its organization grants it", async () => {
    const response = await t.request("GET", "/v2/sandboxes/volumes", { key: keyB, tenant: DEFAULT_TENANT_ID })
    expect(response.status).toBe(403)
    expect(typeof response.body.detail).toBe("string")
  })
})
