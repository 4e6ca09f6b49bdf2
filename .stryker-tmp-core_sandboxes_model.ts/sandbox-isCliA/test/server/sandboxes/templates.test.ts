// @ts-nocheck
import Database from "better-sqlite3"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { listSql } from "../../../server/sandboxes/repository.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { isoMillis, sandboxApi, seedTemplates, unique, uuidV4 } from "./helpers.ts"

let t: TestServer
let api: ReturnType<typeof sandboxApi>
beforeAll(async () => {
  t = await startTestServer()
  api = sandboxApi(t.request)
})
afterAll(() => t.close())

describe("templates", () => {
  it("creates a template with exact, canonical quantities and answers it on GET", async () => {
    const name = unique("tpl")
    const created = await api.createTemplate(name, { resources: { cpu: "0.25", memory: "1024Mi", storage: "2048Mi" } })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({
      name,
      image: "python:3.12-slim",
      resources: { cpu: "250m", memory: "1Gi", storage: "2Gi" },
      volume_mounts: [],
      proxy_config: { rules: [], no_proxy: [] }
    })
    expect(created.body.id).toMatch(uuidV4)
    expect(created.body.created_at).toMatch(isoMillis)
    expect(created.body.updated_at).toBe(created.body.created_at)
    const fetched = await api.call("GET", `/templates/${name}`)
    expect(fetched.status).toBe(200)
    expect(fetched.body).toEqual(created.body)
  })

  it("defaults cpu to 500m and memory to 512Mi and omits storage when not sent", async () => {
    const name = unique("tpl")
    const created = await api.call("POST", "/templates", { name, image: "alpine" })
    expect(created.status).toBe(201)
    expect(created.body.resources).toEqual({ cpu: "500m", memory: "512Mi" })
  })

  it("prints whole cores without a suffix", async () => {
    const created = await api.createTemplate(unique("tpl"), { resources: { cpu: "2000m", memory: "1G" } })
    expect(created.status).toBe(201)
    expect(created.body.resources).toEqual({ cpu: "2", memory: "1G" })
  })

  it("stores and answers a validated proxy config with defaults filled", async () => {
    const name = unique("tpl")
    const created = await api.createTemplate(name, {
      proxy_config: { rules: [{ name: "openai", match_hosts: ["api.openai.com"], inject_headers: { Authorization: "Bearer ${OPENAI_KEY}" } }], no_proxy: ["localhost"] }
    })
    expect(created.status).toBe(201)
    expect(created.body.proxy_config).toEqual({
      rules: [{ name: "openai", match_hosts: ["api.openai.com"], inject_headers: { Authorization: "Bearer ${OPENAI_KEY}" }, match_paths: [], enabled: true }],
      no_proxy: ["localhost"]
    })
    expect((await api.call("GET", `/templates/${name}`)).body.proxy_config).toEqual(created.body.proxy_config)
  })

  it("answers 422 with loc for a bad name, a bad quantity and a bad proxy rule", async () => {
    const response = await api.call("POST", "/templates", {
      name: "Bad_Name",
      image: "alpine",
      resources: { cpu: "lots", memory: "-1Gi" },
      proxy_config: { rules: [{ name: "r", match_hosts: ["x.com"], inject_headers: { A: "${1BAD}" } }] }
    })
    expect(response.status).toBe(422)
    const locs = response.body.detail.map((issue: { loc: Array<unknown> }) => issue.loc.join("."))
    expect(locs).toEqual(
      expect.arrayContaining(["body.name", "body.resources.cpu", "body.resources.memory", "body.proxy_config.rules.0.inject_headers.A"])
    )
    for (const issue of response.body.detail) {
      expect(typeof issue.msg).toBe("string")
      expect(typeof issue.type).toBe("string")
    }
    const cpu = response.body.detail.find((issue: { loc: Array<unknown> }) => issue.loc.join(".") === "body.resources.cpu")
    expect(cpu.msg).toContain("lots")
  })

  it("answers 422 for a name longer than 63 characters and for a missing image", async () => {
    const response = await api.call("POST", "/templates", { name: "a".repeat(64) })
    expect(response.status).toBe(422)
    expect(response.body.detail).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ loc: ["body", "name"], type: "string_too_long" }),
        expect.objectContaining({ loc: ["body", "image"], type: "missing" })
      ])
    )
  })

  it("refuses a duplicate name with 409 Conflict", async () => {
    const name = unique("tpl")
    expect((await api.createTemplate(name)).status).toBe(201)
    const again = await api.createTemplate(name)
    expect(again.status).toBe(409)
    expect(again.body.detail.error).toBe("Conflict")
    expect(again.body.detail.message).toContain(name)
  })

  it("mounts existing volumes and refuses unknown ones", async () => {
    const volume = unique("vol")
    expect((await api.createVolume(volume, "1Gi")).status).toBe(201)
    const name = unique("tpl")
    const created = await api.createTemplate(name, { volume_mounts: [{ volume_name: volume, mount_path: "/data" }] })
    expect(created.status).toBe(201)
    expect(created.body.volume_mounts).toEqual([{ volume_name: volume, mount_path: "/data" }])

    const absent = unique("nope")
    const missingName = unique("tpl")
    const missing = await api.createTemplate(missingName, { volume_mounts: [{ volume_name: absent, mount_path: "/data" }] })
    expect(missing.status).toBe(400)
    expect(missing.body).toEqual({ detail: { error: "ValidationError", message: expect.stringContaining(absent) } })
    expect((await api.call("GET", `/templates/${missingName}`)).status).toBe(404)

    // Another tenant's volume of the same name does not count.
    const other = sandboxApi(t.request, { key: t.keyFor(randomUUID()) })
    const foreign = await other.createTemplate(unique("tpl"), { volume_mounts: [{ volume_name: volume, mount_path: "/data" }] })
    expect(foreign.status).toBe(400)
    expect(foreign.body.detail.error).toBe("ValidationError")
  })

  it("follows a renamed volume in its mounts", async () => {
    const volume = unique("vol")
    await api.createVolume(volume, "1Gi")
    const name = unique("tpl")
    await api.createTemplate(name, { volume_mounts: [{ volume_name: volume, mount_path: "/data" }] })
    const renamed = unique("vol")
    expect((await api.call("PATCH", `/volumes/${volume}`, { name: renamed })).status).toBe(200)
    expect((await api.call("GET", `/templates/${name}`)).body.volume_mounts).toEqual([{ volume_name: renamed, mount_path: "/data" }])
  })

  it("renames a template; the old name is gone and a taken name is a 409 Conflict", async () => {
    const name = unique("tpl")
    const other = unique("tpl")
    const created = (await api.createTemplate(name)).body
    await api.createTemplate(other)
    const next = unique("tpl")
    const renamed = await api.call("PATCH", `/templates/${name}`, { name: next })
    expect(renamed.status).toBe(200)
    expect(renamed.body).toMatchObject({ id: created.id, name: next, resources: created.resources })
    expect(renamed.body.updated_at >= created.updated_at).toBe(true)
    const gone = await api.call("GET", `/templates/${name}`)
    expect(gone.status).toBe(404)
    expect(gone.body).toEqual({ detail: { error: "NotFound", message: expect.stringContaining(name) } })
    const taken = await api.call("PATCH", `/templates/${next}`, { name: other })
    expect(taken.status).toBe(409)
    expect(taken.body.detail.error).toBe("Conflict")
    const unknown = await api.call("PATCH", `/templates/${unique("nope")}`, { name: unique("x") })
    expect(unknown.status).toBe(404)
    expect(unknown.body.detail.error).toBe("NotFound")
  })

  it("refuses to delete a template used by a sandbox or a pool (409 ResourceInUse), then deletes it once unused", async () => {
    const name = unique("tpl")
    await api.createTemplate(name)
    const box = await api.createBox(name)
    expect(box.status).toBe(201)
    const pool = unique("pool")
    expect((await api.createPool(pool, name, 1)).status).toBe(201)

    const refused = await api.call("DELETE", `/templates/${name}`)
    expect(refused.status).toBe(409)
    expect(refused.body.detail.error).toBe("ResourceInUse")
    expect(refused.body.detail.message).toContain(name)
    expect(refused.body.detail.message).toMatch(/pool/)
    expect((await api.call("GET", `/templates/${name}`)).status).toBe(200)

    expect((await api.call("DELETE", `/boxes/${box.body.name}`)).status).toBe(204)
    expect((await api.call("DELETE", `/templates/${name}`)).status).toBe(409)
    expect((await api.call("DELETE", `/pools/${pool}`)).status).toBe(204)
    const deleted = await api.call("DELETE", `/templates/${name}`)
    expect(deleted.status).toBe(204)
    expect(deleted.body).toBeUndefined()
    expect((await api.call("GET", `/templates/${name}`)).status).toBe(404)
    expect((await api.call("DELETE", `/templates/${name}`)).status).toBe(404)
  })

  it("answers 422 for limit and offset out of range or not integers", async () => {
    for (const query of ["limit=0", "limit=501", "offset=-1", "limit=abc", "limit=1.5"]) {
      const response = await api.call("GET", `/templates?${query}`)
      expect(response.status, query).toBe(422)
      const field = query.split("=")[0]
      expect(response.body.detail[0].loc, query).toEqual(["query", field])
    }
    expect((await api.call("GET", "/templates?limit=500&offset=0")).status).toBe(200)
    expect((await api.call("GET", "/templates?limit=1")).status).toBe(200)
  })

  it("keeps another tenant's templates invisible (404) and lets it reuse the name", async () => {
    const name = unique("tpl")
    await api.createTemplate(name)
    const otherKey = t.keyFor(randomUUID())
    const other = sandboxApi(t.request, { key: otherKey })
    expect((await other.call("GET", `/templates/${name}`)).status).toBe(404)
    expect((await other.call("PATCH", `/templates/${name}`, { name: unique("x") })).status).toBe(404)
    expect((await other.call("DELETE", `/templates/${name}`)).status).toBe(404)
    expect((await other.listAll("templates")).map((template) => template.name)).not.toContain(name)
    expect((await other.createBox(name)).body.detail.error).toBe("TemplateNotFound")
    expect((await other.createTemplate(name)).status).toBe(201)
    expect((await api.call("GET", `/templates/${name}`)).status).toBe(200)
  })
})

describe("template pagination", () => {
  it("walks 1,234 templates with limit 500 and sees each exactly once, in a stable order", async () => {
    const tenant = randomUUID()
    const walker = sandboxApi(t.request, { key: t.keyFor(tenant) })
    const names = Array.from({ length: 1234 }, (_, index) => `page-${String(index).padStart(4, "0")}`)
    for (let start = 0; start < names.length; start += 50) {
      const batch = await Promise.all(names.slice(start, start + 50).map((name) => walker.createTemplate(name)))
      expect(batch.every((response) => response.status === 201)).toBe(true)
    }
    const pages: Array<number> = []
    const seen: Array<string> = []
    let offset = 0
    for (;;) {
      const page = await walker.call("GET", `/templates?limit=500&offset=${offset}`)
      expect(page.status).toBe(200)
      pages.push(page.body.templates.length)
      seen.push(...page.body.templates.map((template: { name: string }) => template.name))
      expect(page.body.offset).toBe(offset + page.body.templates.length)
      offset = page.body.offset
      if (page.body.templates.length < 500) break
    }
    expect(pages).toEqual([500, 500, 234])
    expect(seen).toHaveLength(1234)
    expect(new Set(seen).size).toBe(1234)
    expect([...seen].sort()).toEqual(names)
    // Past the end: an empty page whose offset stays put.
    const past = await walker.call("GET", "/templates?limit=10&offset=5000")
    expect(past.body).toEqual({ templates: [], offset: 5000 })
    // The default limit is 100.
    expect((await walker.call("GET", "/templates")).body.templates).toHaveLength(100)
  })
})

describe("deep offsets", () => {
  // How fast is the benchmark's business (bench/, list-templates-deep); here: right pages, short skips.
  it("answers page 181 of 100,000 templates (offset 90,000) from an index walk", async () => {
    const tenant = randomUUID()
    const deep = sandboxApi(t.request, { key: t.keyFor(tenant) })
    // Seeded straight into the database for speed; everything is checked through the API.
    seedTemplates(t.server.db, tenant, 100_000, (index) => `deep-${String(index).padStart(6, "0")}`)
    for (let round = 0; round < 3; round++) {
      const page = await deep.call("GET", "/templates?limit=500&offset=90000")
      expect(page.status).toBe(200)
      expect(page.body.templates).toHaveLength(500)
      expect(page.body.templates[0].name).toBe("deep-090000")
      expect(page.body.templates[499].name).toBe("deep-090499")
      expect(page.body.templates[0]).toMatchObject({ resources: { cpu: "500m", memory: "512Mi" }, volume_mounts: [], proxy_config: { rules: [], no_proxy: [] } })
      expect(page.body.offset).toBe(90500)
    }
    const last = await deep.call("GET", "/templates?limit=500&offset=99900")
    expect(last.body.templates).toHaveLength(100)
    expect(last.body.offset).toBe(100_000)

    // Deep pages start from checkpoints; any commit must drop them. A delete through the API
    // (this connection) shifts every later row by one...
    expect((await deep.call("DELETE", "/templates/deep-000010")).status).toBe(204)
    expect((await deep.call("GET", "/templates?limit=2&offset=90000")).body.templates.map((x: { name: string }) => x.name)).toEqual([
      "deep-090001",
      "deep-090002"
    ])
    // ...and so does a delete committed by another process on the same file.
    const other = new Database(t.databasePath)
    other.prepare("DELETE FROM sandbox_templates WHERE tenant_id = ? AND name = ?").run(tenant, "deep-000020")
    other.close()
    expect((await deep.call("GET", "/templates?limit=2&offset=90000")).body.templates.map((x: { name: string }) => x.name)).toEqual([
      "deep-090002",
      "deep-090003"
    ])
    // Pages right at and past a checkpoint boundary agree with a plain OFFSET walk.
    for (const offset of [4096, 5119, 5120, 97_998, 99_997]) {
      const expected = t.server.db
        .prepare("SELECT name FROM sandbox_templates WHERE tenant_id = ? ORDER BY seq LIMIT 3 OFFSET ?")
        .pluck()
        .all(tenant, offset)
      const page = await deep.call("GET", `/templates?limit=3&offset=${offset}`)
      expect(page.body.templates.map((x: { name: string }) => x.name), `offset ${offset}`).toEqual(expected)
    }

    // Every list skips its offset on the narrow (tenant_id, seq) index, then reads the page by key.
    for (const [kind, source] of Object.entries(listSql)) {
      const table = { volumes: "sandbox_volumes", templates: "sandbox_templates", pools: "sandbox_pools", sandboxes: "sandboxes" }[kind]!
      const plan = (t.server.db.prepare(`EXPLAIN QUERY PLAN ${source}`).all({ tenant, limit: 500, offset: 90000, from: 0 }) as Array<{ detail: string }>)
        .map((row) => row.detail)
        .join("\n")
      expect(plan, kind).toContain(`COVERING INDEX ${table}_by_tenant (tenant_id=? AND rowid>?)`)
      expect(plan, kind).toMatch(new RegExp(`SEARCH \\w+ USING INDEX ${table}_by_tenant \\(tenant_id=\\? AND rowid>\\?\\)`))
    }
  })
})
