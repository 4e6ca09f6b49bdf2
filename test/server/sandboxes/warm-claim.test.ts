/**
 * Warm claims on the simulated runtime, over real HTTP: `POST /v2/sandboxes/boxes` with a template
 * whose pool has a ready box hands that box over (it takes the requested name and leaves the
 * pool) and the pool gets a replacement. The local runtime's version is
 * test/sandboxes-local/warm-claim.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { sandboxApi, unique } from "./helpers.ts"

let t: TestServer
let api: ReturnType<typeof sandboxApi>
beforeAll(async () => {
  t = await startTestServer({})
  api = sandboxApi(t.request)
})
afterAll(() => t.close())

type Box = { id: string; name: string; pool_name: string | null; template_name: string; status: string; created_at: string }
const boxesOf = async (pool: string) => (await api.listAll<Box>("boxes")).filter((box) => box.pool_name === pool)

describe("warm claim (simulated runtime)", () => {
  it("a create of a pooled template takes the pool's oldest ready box under the requested name; the pool gets a replacement", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const pool = unique("pool")
    expect((await api.createPool(pool, template, 2)).status).toBe(201)
    const before = await boxesOf(pool)
    expect(before.map((box) => box.status)).toEqual(["ready", "ready"])

    const name = unique("mine")
    const claimed = await api.createBox(template, name)
    expect(claimed.status).toBe(201)
    expect(claimed.body).toMatchObject({ id: before[0]!.id, name, template_name: template, pool_name: null, status: "ready", created_at: before[0]!.created_at })
    expect((await api.call("GET", `/boxes/${name}`)).body).toEqual(claimed.body)
    expect((await api.call("GET", `/boxes/${before[0]!.name}`)).status).toBe(404)

    const after = await boxesOf(pool)
    expect(after).toHaveLength(2)
    expect(after[0]!.id).toBe(before[1]!.id)
    expect(after[1]!.id).not.toBe(before[0]!.id)
    expect(after[1]!.name).toMatch(new RegExp(`^${pool}-[a-z0-9]{6}$`))
    expect(after[1]!.status).toBe("ready")
  })

  it("without a name the claimed box gets a generated name of the template; deleting it leaves the pool alone", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const pool = unique("pool")
    await api.createPool(pool, template, 1)
    const [warm] = await boxesOf(pool)
    const claimed = await api.call("POST", "/boxes", { template_name: template, wait_for_ready: false })
    expect(claimed.status).toBe(201)
    expect(claimed.body).toMatchObject({ id: warm!.id, pool_name: null, status: "ready" })
    expect(claimed.body.name).toMatch(new RegExp(`^${template}-[a-z0-9]{6}$`))
    expect((await api.call("DELETE", `/boxes/${claimed.body.name}`)).status).toBe(204)
    const [replacement] = await boxesOf(pool)
    expect(replacement!.id).not.toBe(warm!.id)
    expect((await api.call("GET", `/pools/${pool}`)).body.replicas).toBe(1)
  })

  it("claims every warm box in turn, then creates cold boxes once the pool has none ready; a taken name claims nothing", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const pool = unique("pool")
    await api.createPool(pool, template, 1)
    const [warm] = await boxesOf(pool)
    const taken = unique("taken")
    expect((await api.createBox(unique("other-tpl"), taken)).status).toBe(400)
    const other = unique("tpl")
    await api.createTemplate(other)
    await api.createBox(other, taken)
    const refused = await api.createBox(template, taken)
    expect(refused.status).toBe(409)
    expect((await boxesOf(pool)).map((box) => box.id)).toEqual([warm!.id])
    // Scaled to zero: nothing is warm, a create is a new box.
    await api.call("PATCH", `/pools/${pool}`, { replicas: 0 })
    const cold = await api.createBox(template, unique("cold"))
    expect(cold.status).toBe(201)
    expect(cold.body.id).not.toBe(warm!.id)
    expect(await boxesOf(pool)).toEqual([])
  })

  it("another template's pool, and another tenant's pool of a same-named template, are never claimed", async () => {
    const template = unique("tpl")
    const other = unique("tpl")
    await api.createTemplate(template)
    await api.createTemplate(other)
    const pool = unique("pool")
    await api.createPool(pool, other, 1)
    const [warm] = await boxesOf(pool)
    const created = await api.createBox(template, unique("box"))
    expect(created.body.id).not.toBe(warm!.id)

    const stranger = sandboxApi(t.request, { headers: { "x-api-key": t.keyFor(crypto.randomUUID()) } })
    await stranger.createTemplate(other)
    const theirs = await stranger.createBox(other, unique("box"))
    expect(theirs.status).toBe(201)
    expect(theirs.body.id).not.toBe(warm!.id)
    expect((await boxesOf(pool)).map((box) => box.id)).toEqual([warm!.id])
  })

  it("concurrent creates each get a different box", async () => {
    const template = unique("tpl")
    await api.createTemplate(template)
    const pool = unique("pool")
    await api.createPool(pool, template, 3)
    const warm = new Set((await boxesOf(pool)).map((box) => box.id))
    const answers = await Promise.all(Array.from({ length: 5 }, () => api.createBox(template)))
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 201, 201])
    const ids = answers.map((answer) => answer.body.id)
    expect(new Set(ids).size).toBe(5)
    expect(ids.filter((id) => warm.has(id)).length).toBeGreaterThanOrEqual(3)
    expect(await boxesOf(pool)).toHaveLength(3)
  })
})
