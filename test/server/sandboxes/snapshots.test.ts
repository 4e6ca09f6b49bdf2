/**
 * Snapshots and boxes of the current sandbox model over HTTP, on the simulated runtime: the
 * `/api/v2/sandboxes` prefix, snapshot CRUD and its validation (422 naming the rule, 404, 409
 * while in use), boxes from a snapshot or the default image, retention settings honoured by the
 * controller (ttl, idle, delete after stop), and the refusal of capture.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, startTestServer, type TestServer } from "../../support/server.ts"
import { isoMillis, unique, uuidV4 } from "./helpers.ts"

let t: TestServer
const GiB = 1024 ** 3
const saved = process.env.SLIPWAY_SANDBOX_SWEEP_MS

beforeAll(async () => {
  process.env.SLIPWAY_SANDBOX_SWEEP_MS = "100"
  t = await startTestServer()
})
afterAll(async () => {
  await t?.close()
  if (saved === undefined) delete process.env.SLIPWAY_SANDBOX_SWEEP_MS
  else process.env.SLIPWAY_SANDBOX_SWEEP_MS = saved
})

const api = (method: string, path: string, body?: unknown) => t.request(method, `/api/v2/sandboxes${path}`, body === undefined ? {} : { body })

const readySnapshot = async (name: string, image = "python:3.12-slim", fs = GiB) => {
  const created = await api("POST", "/snapshots", { name, docker_image: image, fs_capacity_bytes: fs })
  expect(created.status).toBe(201)
  return eventually(async () => {
    const got = await api("GET", `/snapshots/${created.body.id}`)
    return got.body.status === "ready" ? got.body : undefined
  })
}

describe("the /api/v2/sandboxes prefix", () => {
  it("serves the sandbox area with the same handlers, and nothing else", async () => {
    const name = unique("tpl")
    expect((await t.request("POST", "/v2/sandboxes/templates", { body: { name, image: "python:3.12-slim" } })).status).toBe(201)
    const viaApi = await api("GET", `/templates/${name}`)
    expect(viaApi.status).toBe(200)
    expect(viaApi.body).toEqual((await t.request("GET", `/v2/sandboxes/templates/${name}`)).body)
    expect((await t.request("GET", "/api/v2/deployments")).status).toBe(404)
    expect((await t.request("GET", "/api/health")).status).toBe(404)
    expect((await t.request("PUT", "/api/v2/sandboxes/snapshots")).status).toBe(405)
  })

  it("/openapi.json describes the snapshot endpoints and the new box fields", async () => {
    const document = (await t.request("GET", "/openapi.json")).body
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(["/v2/sandboxes/snapshots", "/v2/sandboxes/snapshots/{snapshot_id}", "/v2/sandboxes/boxes/{name}/snapshot"]))
    expect(Object.keys(document.paths["/v2/sandboxes/snapshots"])).toEqual(expect.arrayContaining(["get", "post"]))
    const schemas = JSON.stringify(document.components?.schemas ?? document)
    for (const field of ["snapshot_id", "fs_capacity_bytes", "idle_ttl_seconds", "delete_after_stop_seconds", "ttl_seconds", "docker_image"]) expect(schemas).toContain(field)
  })
})

describe("snapshots", () => {
  it("creates a snapshot (building, then ready), gets it by id and by name, lists with name_contains, deletes it", async () => {
    const name = unique("snap")
    const created = await api("POST", "/snapshots", { name, docker_image: "python:3.12-slim", fs_capacity_bytes: 2 * GiB })
    expect(created.status).toBe(201)
    expect(created.body).toEqual({
      id: expect.stringMatching(uuidV4),
      name,
      docker_image: "python:3.12-slim",
      image_digest: null,
      fs_capacity_bytes: 2 * GiB,
      status: expect.stringMatching(/^(building|ready)$/),
      status_message: null,
      created_at: expect.stringMatching(isoMillis),
      updated_at: expect.stringMatching(isoMillis)
    })
    const ready = await eventually(async () => {
      const got = await api("GET", `/snapshots/${created.body.id}`)
      return got.body.status === "ready" ? got.body : undefined
    })
    expect((await api("GET", `/snapshots/${name}`)).body).toEqual(ready)
    expect((await api("GET", `/snapshots/${created.body.id.toUpperCase()}`)).body.id).toBe(created.body.id)

    const other = unique("other")
    await readySnapshot(other)
    const filtered = await api("GET", `/snapshots?name_contains=${name.toUpperCase()}`)
    expect(filtered.status).toBe(200)
    expect(filtered.body.snapshots.map((s: { name: string }) => s.name)).toEqual([name])
    const page = await api("GET", "/snapshots?limit=1&offset=0")
    expect(page.body.snapshots).toHaveLength(1)
    expect(page.body.offset).toBe(1)
    expect((await api("GET", "/snapshots?limit=501")).status).toBe(422)
    expect((await api("GET", "/snapshots?status=sideways")).status).toBe(422)
    const readyOnes = (await api("GET", `/snapshots?status=ready&name_contains=${other}`)).body.snapshots
    expect(readyOnes.map((s: { name: string }) => s.name)).toEqual([other])
    expect((await api("GET", `/snapshots?status=failed&name_contains=${other}`)).body.snapshots).toEqual([])

    expect((await api("POST", "/snapshots", { name, docker_image: "alpine", fs_capacity_bytes: GiB })).status).toBe(409)
    expect((await api("DELETE", `/snapshots/${created.body.id}`)).status).toBe(204)
    expect((await api("GET", `/snapshots/${created.body.id}`)).status).toBe(404)
  })

  it("a bare name finds name:latest", async () => {
    const base = unique("tagged")
    const snapshot = await readySnapshot(`team/${base}:latest`)
    expect((await api("GET", `/snapshots/${encodeURIComponent(`team/${base}`)}`)).body.id).toBe(snapshot.id)
  })

  it("refuses a bad image reference, a bad name and a capacity out of bounds with 422 naming the rule", async () => {
    const bad = await api("POST", "/snapshots", { name: "Bad Name", docker_image: "python:3.12 slim", fs_capacity_bytes: 1 })
    expect(bad.status).toBe(422)
    const byField = Object.fromEntries(bad.body.detail.map((issue: { loc: Array<string>; msg: string }) => [issue.loc.join("."), issue.msg]))
    expect(Object.keys(byField).sort()).toEqual(["body.docker_image", "body.fs_capacity_bytes", "body.name"])
    expect(byField["body.docker_image"]).toMatch(/image/i)
    expect(byField["body.name"]).toMatch(/lowercase registry-style components/)
    expect(byField["body.fs_capacity_bytes"]).toMatch(/greater than or equal to 16777216/)
    const system = await api("POST", "/snapshots", { name: "system/default", docker_image: "alpine", fs_capacity_bytes: GiB })
    expect(system.status).toBe(422)
    expect(system.body.detail[0].msg).toMatch(/system\/ namespace is read-only/)
  })

  it("records a failed build with its reason", async () => {
    const name = unique("broken")
    const created = await api("POST", "/snapshots", { name, docker_image: "example.com/fail-pull:1", fs_capacity_bytes: GiB })
    const failed = await eventually(async () => {
      const got = await api("GET", `/snapshots/${created.body.id}`)
      return got.body.status === "failed" ? got.body : undefined
    })
    expect(failed.status_message).toMatch(/could not be pulled/)
    const box = await api("POST", "/boxes", { snapshot_id: created.body.id })
    expect(box.status).toBe(400)
    expect(box.body.detail).toEqual({ error: "ValidationError", message: expect.stringMatching(/failed to build/) })
  })

  it("answers 404 for an unknown snapshot, and 409 when deleting a snapshot a sandbox uses", async () => {
    const missing = crypto.randomUUID()
    expect((await api("GET", `/snapshots/${missing}`)).body).toEqual({ detail: { error: "NotFound", message: `snapshot ${missing} not found` } })
    expect((await api("DELETE", `/snapshots/${missing}`)).status).toBe(404)
    const box = await api("POST", "/boxes", { snapshot_id: missing })
    expect(box.status).toBe(404)
    expect((await api("POST", "/boxes", { snapshot_name: unique("nope") })).status).toBe(404)

    const snapshot = await readySnapshot(unique("used"))
    const made = await api("POST", "/boxes", { snapshot_id: snapshot.id, name: unique("user") })
    expect(made.status).toBe(201)
    const refused = await api("DELETE", `/snapshots/${snapshot.id}`)
    expect(refused.status).toBe(409)
    expect(refused.body.detail).toEqual({ error: "ResourceInUse", message: expect.stringContaining(snapshot.name) })
    expect((await api("DELETE", `/boxes/${made.body.name}`)).status).toBe(204)
    expect((await api("DELETE", `/snapshots/${snapshot.id}`)).status).toBe(204)
  })

  it("captures a ready box as a snapshot (source_sandbox_id, the box's image and capacity); refuses docker_image, a box not ready, a taken name", async () => {
    const snapshot = await readySnapshot(unique("cap"), "python:3.12-slim", 2 * GiB)
    const box = (await api("POST", "/boxes", { snapshot_id: snapshot.id, wait_for_ready: true })).body
    const name = unique("captured")
    const capture = await api("POST", `/boxes/${box.name}/snapshot`, { name })
    expect(capture.status).toBe(201)
    expect(capture.body).toMatchObject({ name, source_sandbox_id: box.id, docker_image: "python:3.12-slim", fs_capacity_bytes: 2 * GiB })
    const ready = await eventually(async () => {
      const got = await api("GET", `/snapshots/${capture.body.id}`)
      return got.body.status === "ready" ? got.body : undefined
    })
    const fromCapture = await api("POST", "/boxes", { snapshot_id: ready.id, wait_for_ready: true })
    expect(fromCapture.body).toMatchObject({ status: "ready", snapshot_id: ready.id })
    expect((await api("POST", `/boxes/${box.name}/snapshot`, { name })).status).toBe(409)
    const docker = await api("POST", `/boxes/${box.name}/snapshot`, { name: unique("docker"), docker_image: "built:1" })
    expect(docker.status).toBe(400)
    expect(docker.body.detail).toEqual({ error: "Unsupported", message: expect.stringMatching(/docker_image .* not supported by Slipway/) })
    await api("POST", `/boxes/${box.name}/stop`, {})
    const stopped = await api("POST", `/boxes/${box.name}/snapshot`, { name: unique("late") })
    expect(stopped.status).toBe(400)
    expect(stopped.body.detail.message).toMatch(/is stopped; only a ready/)
    expect((await api("POST", `/boxes/${box.name}/snapshot`, { name: "Bad Name" })).status).toBe(422)
    expect((await api("POST", `/boxes/${unique("ghost")}/snapshot`, { name: "x" })).status).toBe(404)
  })
})

describe("boxes of the current model", () => {
  it("makes a box from a snapshot with its capacity and resources; from the default image when nothing is named", async () => {
    const snapshot = await readySnapshot(unique("base"), "python:3.12-slim", 2 * GiB)
    const box = await api("POST", "/boxes", { snapshot_id: snapshot.id, vcpus: 2, mem_bytes: GiB, wait_for_ready: true, timeout: 10, idle_ttl_seconds: 600 })
    expect(box.status).toBe(201)
    expect(box.body).toMatchObject({
      template_name: null,
      snapshot_id: snapshot.id,
      image: "python:3.12-slim",
      vcpus: 2,
      mem_bytes: GiB,
      fs_capacity_bytes: 2 * GiB,
      idle_ttl_seconds: 600,
      status: "ready"
    })
    expect(box.body.name).toMatch(/^sandbox-[a-z0-9]{6}$/)
    const byName = await api("POST", "/boxes", { snapshot_name: snapshot.name })
    expect(byName.body.snapshot_id).toBe(snapshot.id)
    const plain = await api("POST", "/boxes", {})
    expect(plain.status).toBe(201)
    expect(plain.body).toMatchObject({ template_name: null, image: "python:3.12-slim", vcpus: 1, mem_bytes: 512 * 1024 * 1024, fs_capacity_bytes: GiB })
    expect(plain.body.snapshot_id).toBeUndefined()

    expect((await api("POST", "/boxes", { snapshot_id: snapshot.id, fs_capacity_bytes: GiB })).status).toBe(400)
    expect((await api("POST", "/boxes", { snapshot_id: snapshot.id, snapshot_name: snapshot.name })).status).toBe(400)
    const badTtl = await api("POST", "/boxes", { ttl_seconds: -1, vcpus: 0 })
    expect(badTtl.status).toBe(422)
    expect(badTtl.body.detail.map((issue: { loc: Array<string> }) => issue.loc.join(".")).sort()).toEqual(["body.ttl_seconds", "body.vcpus"])
  })

  it("PATCH changes the name and the retention settings; an empty PATCH answers the box unchanged", async () => {
    const box = (await api("POST", "/boxes", {})).body
    const renamed = unique("renamed")
    const patched = await api("PATCH", `/boxes/${box.name}`, { name: renamed, idle_ttl_seconds: 3600, delete_after_stop_seconds: 0 })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ id: box.id, name: renamed, idle_ttl_seconds: 3600, delete_after_stop_seconds: 0 })
    expect((await api("PATCH", `/boxes/${renamed}`, {})).body).toEqual(patched.body)
  })

  it("lists boxes filtered by name_contains and status, as the real API's list does", async () => {
    const tag = unique("flt")
    const [one, two] = [(await api("POST", "/boxes", { name: `${tag}-one`, wait_for_ready: true })).body, (await api("POST", "/boxes", { name: `${tag}-two`, wait_for_ready: true })).body]
    await api("POST", `/boxes/${two.name}/stop`, {})
    const names = async (query: string) => (await api("GET", `/boxes?${query}`)).body.sandboxes.map((box: { name: string }) => box.name)
    expect(await names(`name_contains=${tag.toUpperCase()}`)).toEqual([one.name, two.name])
    expect(await names(`name_contains=${tag}&status=stopped`)).toEqual([two.name])
    expect(await names(`name_contains=${tag}&status=ready`)).toEqual([one.name])
    const page = await api("GET", `/boxes?name_contains=${tag}&limit=1&offset=1`)
    expect(page.body).toMatchObject({ offset: 2 })
    expect(page.body.sandboxes.map((box: { name: string }) => box.name)).toEqual([two.name])
    const bad = await api("GET", "/boxes?status=asleep")
    expect(bad.status).toBe(422)
    expect(bad.body.detail[0].loc).toEqual(["query", "status"])
  })

  it("stop and start answer the box; a stopped box shows stopped_at", async () => {
    const box = (await api("POST", "/boxes", { wait_for_ready: true })).body
    const stopped = await api("POST", `/boxes/${box.name}/stop`, {})
    expect(stopped.status).toBe(200)
    expect(stopped.body.status).toBe("stopped")
    expect(stopped.body.stopped_at).toMatch(isoMillis)
    const started = await api("POST", `/boxes/${box.name}/start`, {})
    expect(started.status).toBe(200)
    expect(started.body.stopped_at).toBeUndefined()
  })

  it("a box past ttl_seconds is deleted", async () => {
    const box = (await api("POST", "/boxes", { ttl_seconds: 1 })).body
    expect(box.ttl_seconds).toBe(1)
    await eventually(async () => ((await api("GET", `/boxes/${box.name}`)).status === 404 ? true : undefined), 5000, 100)
  })

  it("a ready box idle past idle_ttl_seconds is stopped, then deleted delete_after_stop_seconds later", async () => {
    const box = (await api("POST", "/boxes", { idle_ttl_seconds: 1, delete_after_stop_seconds: 1, wait_for_ready: true })).body
    expect(box.status).toBe("ready")
    const stopped = await eventually(async () => {
      const got = await api("GET", `/boxes/${box.name}`)
      return got.body.status === "stopped" ? got.body : undefined
    }, 5000, 50)
    expect(stopped.stopped_at).toMatch(isoMillis)
    await eventually(async () => ((await api("GET", `/boxes/${box.name}`)).status === 404 ? true : undefined), 5000, 100)
  })

  it("a box without retention settings stays", async () => {
    const box = (await api("POST", "/boxes", { wait_for_ready: true, ttl_seconds: null })).body
    await new Promise((resolve) => setTimeout(resolve, 1500))
    expect((await api("GET", `/boxes/${box.name}`)).body.status).toBe("ready")
  })
})
