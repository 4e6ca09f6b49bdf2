import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { isoMillis, sandboxApi, unique, uuidV4 } from "./helpers.ts"

let t: TestServer
let api: ReturnType<typeof sandboxApi>
beforeAll(async () => {
  t = await startTestServer({ publicUrl: "https://slipway.example.com" })
  api = sandboxApi(t.request)
})
afterAll(() => t.close())

const boxesOf = async (client: ReturnType<typeof sandboxApi>, pool: string) =>
  (await client.listAll<{ name: string; pool_name: string | null }>("boxes")).filter((box) => box.pool_name === pool)

describe("sandboxes (boxes)", () => {
  it("creates a sandbox from a template with a generated name; without a runtime that executes, dataplane_url is null", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const created = await api.createBox(template)
    expect(created.status).toBe(201)
    expect(created.body).toEqual({
      id: expect.stringMatching(uuidV4),
      name: expect.stringMatching(new RegExp(`^${template}-[a-z0-9]{6}$`)),
      template_name: template,
      pool_name: null,
      dataplane_url: null,
      status: "ready",
      status_message: null,
      created_at: expect.stringMatching(isoMillis),
      updated_at: expect.stringMatching(isoMillis)
    })
    expect(created.body.updated_at >= created.body.created_at).toBe(true)
    expect((await api.call("GET", `/boxes/${created.body.name}`)).body).toEqual(created.body)
    const status = await api.call("GET", `/boxes/${created.body.name}/status`)
    expect(status.status).toBe(200)
    expect(status.body).toEqual({ status: "ready", status_message: null })
  })

  it("creates a named sandbox, accepting wait_for_ready and timeout; a taken name is 409 Conflict", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const name = unique("box")
    const created = await api.call("POST", "/boxes", { template_name: template, name, wait_for_ready: true, timeout: 10 })
    expect(created.status).toBe(201)
    expect(created.body.name).toBe(name)
    const again = await api.createBox(template, name)
    expect(again.status).toBe(409)
    expect(again.body).toEqual({ detail: { error: "Conflict", message: expect.stringContaining(name) } })
  })

  it("with wait_for_ready, a box that fails is a 422 naming why (as the clients expect), and a retry with the same name replaces it", async () => {
    const broken = unique("tpl")
    await api.createTemplate(broken, { image: "registry.invalid/fail-start:1" })
    const name = unique("box")
    const failed = await api.call("POST", "/boxes", { template_name: broken, name, wait_for_ready: true, timeout: 10 })
    expect(failed.status).toBe(422)
    expect(failed.body).toEqual({
      detail: { error: "ImagePull", message: `sandbox ${name} failed: image pull failed: pull registry.invalid/fail-start:1: manifest unknown (fail-start marker)` }
    })
    // The box stays, failed, with its cause: the list, the status and the console show it.
    const kept = await api.call("GET", `/boxes/${name}/status`)
    expect(kept.body).toEqual({ status: "failed", status_message: "image pull failed: pull registry.invalid/fail-start:1: manifest unknown (fail-start marker)" })
    const failedId = (await api.call("GET", `/boxes/${name}`)).body.id
    const fixed = unique("tpl")
    await api.createTemplate(fixed)
    const retried = await api.call("POST", "/boxes", { template_name: fixed, name, wait_for_ready: true, timeout: 10 })
    expect(retried.status).toBe(201)
    expect(retried.body).toMatchObject({ name, status: "ready", template_name: fixed })
    expect(retried.body.id).not.toBe(failedId)
    expect((await api.listAll<{ name: string }>("boxes")).filter((box) => box.name === name)).toHaveLength(1)
    // A name held by a box that did not fail is still a 409.
    expect((await api.call("POST", "/boxes", { template_name: fixed, name })).status).toBe(409)
    // Without wait_for_ready the answer is the box as it is (failed), a 201; a box of the default image takes the name over too.
    const plain = unique("box")
    const unwaited = await api.call("POST", "/boxes", { template_name: broken, name: plain })
    expect(unwaited.status).toBe(201)
    expect(unwaited.body.status).toBe("failed")
    const replaced = await api.call("POST", "/boxes", { name: plain, wait_for_ready: true, timeout: 10 })
    expect(replaced.status).toBe(201)
    expect(replaced.body).toMatchObject({ name: plain, status: "ready", template_name: null })
  })

  it("with wait_for_ready, a box not ready within its timeout is a 408 (it goes on starting)", async () => {
    const slow = unique("tpl")
    await api.createTemplate(slow, { image: "registry.invalid/never-ready:1" })
    const name = unique("box")
    const started = Date.now()
    const late = await api.call("POST", "/boxes", { template_name: slow, name, wait_for_ready: true, timeout: 1 })
    expect(late.status).toBe(408)
    expect(Date.now() - started).toBeGreaterThanOrEqual(900)
    expect(late.body).toEqual({ detail: { error: "Timeout", message: expect.stringContaining(`sandbox ${name} is not ready after 1 s`) } })
    expect((await api.call("GET", `/boxes/${name}/status`)).body.status).toBe("provisioning")
  })

  it("answers 400 TemplateNotFound for an unknown template and 422 for bad input", async () => {
    const missing = unique("nope")
    const response = await api.createBox(missing)
    expect(response.status).toBe(400)
    expect(response.body).toEqual({ detail: { error: "TemplateNotFound", message: expect.stringContaining(missing) } })
    const bad = await api.call("POST", "/boxes", { template_name: "UPPER", name: "x".repeat(64), timeout: 0 })
    expect(bad.status).toBe(422)
    expect(bad.body.detail.map((issue: { loc: Array<unknown> }) => issue.loc)).toEqual(
      expect.arrayContaining([
        ["body", "template_name"],
        ["body", "name"],
        ["body", "timeout"]
      ])
    )
  })

  it("renames a sandbox (only the display name changes) and answers 404/409 as it should", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const box = (await api.createBox(template, unique("box"))).body
    const other = (await api.createBox(template, unique("box"))).body
    const next = unique("box")
    const renamed = await api.call("PATCH", `/boxes/${box.name}`, { name: next })
    expect(renamed.status).toBe(200)
    expect(renamed.body).toEqual({ ...box, name: next, updated_at: expect.stringMatching(isoMillis) })
    expect((await api.call("GET", `/boxes/${box.name}`)).status).toBe(404)
    expect((await api.call("GET", `/boxes/${next}`)).body.id).toBe(box.id)
    const conflict = await api.call("PATCH", `/boxes/${next}`, { name: other.name })
    expect(conflict.status).toBe(409)
    expect(conflict.body.detail.error).toBe("Conflict")
    // Unknown body fields are ignored (FastAPI's default, docs/real-api.md): only the name changes.
    const extra = await api.call("PATCH", `/boxes/${next}`, { name: next, template_name: unique("tpl") })
    expect(extra.status).toBe(200)
    expect(extra.body.template_name).toBe(box.template_name)
    const bad = await api.call("PATCH", `/boxes/${next}`, { name: "Not_A_Label" })
    expect(bad.status).toBe(422)
    expect(bad.body.detail[0].loc).toEqual(["body", "name"])
  })

  it("follows a renamed template", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const box = (await api.createBox(template)).body
    const renamed = unique("tpl")
    await api.call("PATCH", `/templates/${template}`, { name: renamed })
    expect((await api.call("GET", `/boxes/${box.name}`)).body.template_name).toBe(renamed)
  })

  it("deletes a sandbox; afterwards it is 404 everywhere", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const box = (await api.createBox(template)).body
    const deleted = await api.call("DELETE", `/boxes/${box.name}`)
    expect(deleted.status).toBe(204)
    for (const [method, path] of [
      ["GET", `/boxes/${box.name}`],
      ["GET", `/boxes/${box.name}/status`],
      ["DELETE", `/boxes/${box.name}`]
    ] as const) {
      const response = await api.call(method, path)
      expect(response.status, `${method} ${path}`).toBe(404)
      expect(response.body.detail.error).toBe("NotFound")
    }
    expect((await api.call("PATCH", `/boxes/${box.name}`, { name: unique("box") })).status).toBe(404)
  })

  it("isolates tenants: another tenant sees none of them and may reuse the names", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const box = (await api.createBox(template)).body
    const other = sandboxApi(t.request, { key: t.keyFor(randomUUID()) })
    expect((await other.call("GET", `/boxes/${box.name}`)).status).toBe(404)
    expect((await other.call("GET", `/boxes/${box.name}/status`)).status).toBe(404)
    expect((await other.call("DELETE", `/boxes/${box.name}`)).status).toBe(404)
    expect(await other.listAll("boxes")).toEqual([])
    await other.createTemplate(template)
    expect((await other.createBox(template, box.name)).status).toBe(201)
    expect((await api.call("GET", `/boxes/${box.name}`)).body.id).toBe(box.id)
  })

  it("lists sandboxes with limit and offset", async () => {
    const client = sandboxApi(t.request, { key: t.keyFor(randomUUID()) })
    await client.createTemplate("tpl")
    const names = Array.from({ length: 7 }, (_, index) => `box-${index}`)
    for (const name of names) await client.createBox("tpl", name)
    const first = await client.call("GET", "/boxes?limit=3")
    expect(first.body.sandboxes.map((box: { name: string }) => box.name)).toEqual(names.slice(0, 3))
    expect(first.body.offset).toBe(3)
    const last = await client.call("GET", "/boxes?limit=3&offset=6")
    expect(last.body).toEqual({ sandboxes: [expect.objectContaining({ name: "box-6" })], offset: 7 })
    expect((await client.call("GET", "/boxes?limit=501")).status).toBe(422)
    expect((await client.call("GET", "/pools?offset=-1")).status).toBe(422)
    expect((await client.call("GET", "/volumes?limit=0")).status).toBe(422)
  })
})

describe("pools", () => {
  it("creates a pool with its replicas as sandboxes of the pool", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const name = unique("pool")
    const created = await api.call("POST", "/pools", { name, template_name: template, replicas: 3, wait_for_ready: true })
    expect(created.status).toBe(201)
    expect(created.body).toEqual({
      id: expect.stringMatching(uuidV4),
      name,
      template_name: template,
      replicas: 3,
      created_at: expect.stringMatching(isoMillis),
      updated_at: created.body.created_at
    })
    expect((await api.call("GET", `/pools/${name}`)).body).toEqual(created.body)
    expect(await api.listAll("pools")).toContainEqual(created.body)
    const boxes = await boxesOf(api, name)
    expect(boxes).toHaveLength(3)
    for (const box of boxes) {
      expect(box).toMatchObject({ template_name: template, pool_name: name })
      expect((await api.call("GET", `/boxes/${box.name}/status`)).body.status).toBe("ready")
    }
  })

  it("answers 400 TemplateNotFound for an unknown template and 400 ValidationError for a template that mounts volumes", async () => {
    const missing = unique("nope")
    const unknown = await api.createPool(unique("pool"), missing, 1)
    expect(unknown.status).toBe(400)
    expect(unknown.body).toEqual({ detail: { error: "TemplateNotFound", message: expect.stringContaining(missing) } })

    const volume = unique("vol")
    await api.createVolume(volume, "1Gi")
    const template = unique("tpl")
    await api.createTemplate(template, { volume_mounts: [{ volume_name: volume, mount_path: "/data" }] })
    const pool = unique("pool")
    const mounted = await api.createPool(pool, template, 2)
    expect(mounted.status).toBe(400)
    expect(mounted.body.detail.error).toBe("ValidationError")
    expect(mounted.body.detail.message).toContain(volume)
    expect((await api.call("GET", `/pools/${pool}`)).status).toBe(404)
  })

  it("refuses a duplicate pool name (409 Conflict) and bad replicas (422)", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const name = unique("pool")
    await api.createPool(name, template, 1)
    const again = await api.createPool(name, template, 1)
    expect(again.status).toBe(409)
    expect(again.body.detail.error).toBe("Conflict")
    expect((await boxesOf(api, name)).length).toBe(1)
    for (const replicas of [-1, 1.5, "2"]) {
      const bad = await api.call("POST", "/pools", { name: unique("pool"), template_name: template, replicas })
      expect(bad.status, String(replicas)).toBe(422)
      expect(bad.body.detail[0].loc).toEqual(["body", "replicas"])
    }
  })

  it("scales up and down by changing replicas, removing the newest sandboxes first", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const name = unique("pool")
    await api.createPool(name, template, 2)
    const original = (await boxesOf(api, name)).map((box) => box.name)

    const up = await api.call("PATCH", `/pools/${name}`, { replicas: 5 })
    expect(up.status).toBe(200)
    expect(up.body.replicas).toBe(5)
    const five = (await boxesOf(api, name)).map((box) => box.name)
    expect(five).toHaveLength(5)
    expect(five.slice(0, 2)).toEqual(original)

    const down = await api.call("PATCH", `/pools/${name}`, { replicas: 1 })
    expect(down.body.replicas).toBe(1)
    expect((await boxesOf(api, name)).map((box) => box.name)).toEqual([original[0]])
    for (const gone of five.slice(1)) expect((await api.call("GET", `/boxes/${gone}`)).status).toBe(404)

    const zero = await api.call("PATCH", `/pools/${name}`, { replicas: 0 })
    expect(zero.body.replicas).toBe(0)
    expect(await boxesOf(api, name)).toEqual([])
    expect((await api.call("GET", `/pools/${name}`)).body.replicas).toBe(0)
  })

  it("renames a pool (its sandboxes follow) and answers 409 for a taken name", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const name = unique("pool")
    const other = unique("pool")
    await api.createPool(name, template, 2)
    await api.createPool(other, template, 0)
    const next = unique("pool")
    const renamed = await api.call("PATCH", `/pools/${name}`, { name: next })
    expect(renamed.status).toBe(200)
    expect(renamed.body).toMatchObject({ name: next, replicas: 2 })
    expect(await boxesOf(api, next)).toHaveLength(2)
    expect((await api.call("GET", `/pools/${name}`)).status).toBe(404)
    const taken = await api.call("PATCH", `/pools/${next}`, { name: other, replicas: 4 })
    expect(taken.status).toBe(409)
    expect(taken.body.detail.error).toBe("Conflict")
    // Refused as a whole: the replicas did not change either.
    expect((await api.call("GET", `/pools/${next}`)).body.replicas).toBe(2)
    expect(await boxesOf(api, next)).toHaveLength(2)
  })

  it("renames and scales in one PATCH", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const name = unique("pool")
    await api.createPool(name, template, 1)
    const next = unique("pool")
    const changed = await api.call("PATCH", `/pools/${name}`, { name: next, replicas: 3 })
    expect(changed.status).toBe(200)
    expect(changed.body).toMatchObject({ name: next, replicas: 3 })
    expect((await api.call("GET", `/pools/${next}`)).body).toEqual(changed.body)
    expect(await boxesOf(api, next)).toHaveLength(3)
  })

  it("deletes a pool together with its sandboxes; then its template can be deleted", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const name = unique("pool")
    await api.createPool(name, template, 3)
    const boxes = await boxesOf(api, name)
    expect(boxes).toHaveLength(3)
    expect((await api.call("DELETE", `/templates/${template}`)).body.detail).toEqual({
      error: "ResourceInUse",
      message: `template ${template} is used by 3 sandboxes and 1 pool`
    })

    const deleted = await api.call("DELETE", `/pools/${name}`)
    expect(deleted.status).toBe(204)
    expect((await api.call("GET", `/pools/${name}`)).status).toBe(404)
    for (const box of boxes) expect((await api.call("GET", `/boxes/${box.name}`)).status).toBe(404)
    expect((await api.call("DELETE", `/pools/${name}`)).status).toBe(404)
    expect((await api.call("DELETE", `/templates/${template}`)).status).toBe(204)
  })

  it("isolates pools between tenants", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const name = unique("pool")
    await api.createPool(name, template, 1)
    const other = sandboxApi(t.request, { key: t.keyFor(randomUUID()) })
    expect((await other.call("GET", `/pools/${name}`)).status).toBe(404)
    expect((await other.call("PATCH", `/pools/${name}`, { replicas: 3 })).status).toBe(404)
    expect((await other.call("DELETE", `/pools/${name}`)).status).toBe(404)
    expect((await other.createPool(unique("pool"), template, 1)).body.detail.error).toBe("TemplateNotFound")
    expect((await api.call("GET", `/pools/${name}`)).body.replicas).toBe(1)
  })
})

describe("a volume attaches to a single sandbox", () => {
  it("refuses a second box of a volume-mounting template (or of another template mounting the volume) with the pool's error, until the first is gone", async () => {
    const volume = unique("vol")
    expect((await api.createVolume(volume, "1Gi")).status).toBe(201)
    const template = unique("tpl")
    expect((await api.createTemplate(template, { volume_mounts: [{ volume_name: volume, mount_path: "/data" }] })).status).toBe(201)
    const sibling = unique("tpl")
    expect((await api.createTemplate(sibling, { volume_mounts: [{ volume_name: volume, mount_path: "/mnt" }] })).status).toBe(201)

    const pool = await api.createPool(unique("pool"), template, 1)
    const first = await api.createBox(template)
    expect(first.status).toBe(201)
    const second = await api.createBox(template)
    const viaSibling = await api.createBox(sibling)
    for (const refused of [pool, second, viaSibling]) {
      expect(refused.status).toBe(400)
      expect(refused.body.detail.error).toBe("ValidationError")
      expect(refused.body.detail.message).toContain(volume)
      expect(refused.body.detail.message).toContain("a volume attaches to a single sandbox")
    }
    expect(second.body.detail.message).toContain(first.body.name)
    expect((await api.listAll("boxes")).filter((box: any) => box.template_name === template || box.template_name === sibling)).toHaveLength(1)

    // Once the box is gone the volume is free again.
    expect((await api.call("DELETE", `/boxes/${first.body.name}`)).status).toBe(204)
    expect((await api.createBox(sibling)).status).toBe(201)
  })
})
