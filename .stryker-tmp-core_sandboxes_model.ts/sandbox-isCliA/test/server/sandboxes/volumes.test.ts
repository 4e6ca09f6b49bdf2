// @ts-nocheck
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DEFAULT_ORGANIZATION_ID } from "../../../server/index.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { isoMillis, runKeys, sandboxApi, unique, uuidV4 } from "./helpers.ts"

let t: TestServer
let api: ReturnType<typeof sandboxApi>
beforeAll(async () => {
  t = await startTestServer()
  api = sandboxApi(t.request)
})
afterAll(() => t.close())

/** A tenant in an organization of its own, so quota tests do not share usage. */
const freshOrganization = () => {
  const organizationId = randomUUID()
  const tenantId = randomUUID()
  return { organizationId, tenantId, api: sandboxApi(t.request, { key: t.keyFor(tenantId, organizationId) }) }
}

describe("volumes", () => {
  it("creates a volume with the default storage class and canonical size, and answers it on GET and in the list", async () => {
    const name = unique("vol")
    const created = await api.createVolume(name, "2048Mi")
    expect(created.status).toBe(201)
    expect(created.body).toEqual({
      id: expect.stringMatching(uuidV4),
      name,
      size: "2Gi",
      storage_class: "standard",
      created_at: expect.stringMatching(isoMillis),
      updated_at: created.body.created_at
    })
    expect((await api.call("GET", `/volumes/${name}`)).body).toEqual(created.body)
    expect(await api.listAll("volumes")).toContainEqual(created.body)
  })

  it("accepts wait_for_ready and timeout, and a configured storage class; other classes are 422", async () => {
    const fast = await api.createVolume(unique("vol"), "1Gi", { storage_class: "fast", wait_for_ready: true, timeout: 30 })
    expect(fast.status).toBe(201)
    expect(fast.body.storage_class).toBe("fast")
    const gold = await api.createVolume(unique("vol"), "1Gi", { storage_class: "gold" })
    expect(gold.status).toBe(422)
    expect(gold.body.detail).toEqual([expect.objectContaining({ loc: ["body", "storage_class"], type: "enum" })])
    expect(gold.body.detail[0].msg).toContain("'standard'")
  })

  it("answers 422 for bad names and bad sizes", async () => {
    const response = await api.call("POST", "/volumes", { name: "-bad-", size: "10 gigabytes" })
    expect(response.status).toBe(422)
    expect(response.body.detail.map((issue: { loc: Array<unknown> }) => issue.loc)).toEqual(
      expect.arrayContaining([
        ["body", "name"],
        ["body", "size"]
      ])
    )
    for (const size of ["0", "-1Gi", "0.5", "1Zi"]) {
      const bad = await api.createVolume(unique("vol"), size)
      expect(bad.status, size).toBe(422)
      expect(bad.body.detail[0].loc, size).toEqual(["body", "size"])
    }
    const missing = await api.call("POST", "/volumes", { name: unique("vol") })
    expect(missing.status).toBe(422)
    expect(missing.body.detail).toEqual([{ loc: ["body", "size"], msg: "Field required", type: "missing" }])
  })

  it("refuses a duplicate name with 409 Conflict", async () => {
    const name = unique("vol")
    await api.createVolume(name, "1Gi")
    const again = await api.createVolume(name, "1Gi")
    expect(again.status).toBe(409)
    expect(again.body).toEqual({ detail: { error: "Conflict", message: expect.stringContaining(name) } })
  })

  it("grows a volume, keeps an equal size, and refuses a shrink with 400 ResizeError naming both sizes", async () => {
    const name = unique("vol")
    const created = (await api.createVolume(name, "10Gi")).body
    const grown = await api.call("PATCH", `/volumes/${name}`, { size: "20Gi" })
    expect(grown.status).toBe(200)
    expect(grown.body).toMatchObject({ id: created.id, name, size: "20Gi", created_at: created.created_at })
    expect(grown.body.updated_at >= created.updated_at).toBe(true)
    const same = await api.call("PATCH", `/volumes/${name}`, { size: "20480Mi" })
    expect(same.status).toBe(200)
    expect(same.body.size).toBe("20Gi")

    const shrink = await api.call("PATCH", `/volumes/${name}`, { size: "10Gi" })
    expect(shrink.status).toBe(400)
    expect(shrink.body).toEqual({ detail: { error: "ResizeError", message: `cannot shrink volume ${name} from 20Gi to 10Gi` } })
    expect((await api.call("GET", `/volumes/${name}`)).body.size).toBe("20Gi")
  })

  it("renames a volume; a taken name is 409 Conflict and another tenant cannot see it", async () => {
    const name = unique("vol")
    const other = unique("vol")
    await api.createVolume(name, "1Gi")
    await api.createVolume(other, "1Gi")
    const next = unique("vol")
    const renamed = await api.call("PATCH", `/volumes/${name}`, { name: next })
    expect(renamed.status).toBe(200)
    expect(renamed.body.name).toBe(next)
    expect((await api.call("GET", `/volumes/${name}`)).status).toBe(404)
    const conflict = await api.call("PATCH", `/volumes/${next}`, { name: other })
    expect(conflict.status).toBe(409)
    expect(conflict.body.detail.error).toBe("Conflict")
    expect((await api.call("GET", `/volumes/${next}`)).status).toBe(200)

    const stranger = sandboxApi(t.request, { key: t.keyFor(randomUUID()) })
    const hidden = await stranger.call("GET", `/volumes/${next}`)
    expect(hidden.status).toBe(404)
    expect(hidden.body).toEqual({ detail: { error: "NotFound", message: expect.any(String) } })
    expect((await stranger.call("PATCH", `/volumes/${next}`, { size: "2Gi" })).status).toBe(404)
    expect((await stranger.call("DELETE", `/volumes/${next}`)).status).toBe(404)
  })

  it("renames and grows in one PATCH; a rename alone keeps the size and a resize alone keeps the name", async () => {
    const name = unique("vol")
    await api.createVolume(name, "1Gi")
    const both = unique("vol")
    const changed = await api.call("PATCH", `/volumes/${name}`, { name: both, size: "3Gi" })
    expect(changed.status).toBe(200)
    expect(changed.body).toMatchObject({ name: both, size: "3Gi" })
    expect((await api.call("GET", `/volumes/${both}`)).body).toEqual(changed.body)

    const renamedOnly = unique("vol")
    expect((await api.call("PATCH", `/volumes/${both}`, { name: renamedOnly })).body).toMatchObject({ name: renamedOnly, size: "3Gi" })
    expect((await api.call("PATCH", `/volumes/${renamedOnly}`, { size: "4Gi" })).body).toMatchObject({ name: renamedOnly, size: "4Gi" })
    expect((await api.call("GET", `/volumes/${renamedOnly}`)).body).toMatchObject({ name: renamedOnly, size: "4Gi" })
    expect((await api.call("GET", `/volumes/${both}`)).status).toBe(404)
  })

  it("refuses to delete a volume a template mounts (409 ResourceInUse), then deletes it", async () => {
    const volume = unique("vol")
    await api.createVolume(volume, "1Gi")
    const template = unique("tpl")
    await api.createTemplate(template, { volume_mounts: [{ volume_name: volume, mount_path: "/data" }] })
    const refused = await api.call("DELETE", `/volumes/${volume}`)
    expect(refused.status).toBe(409)
    expect(refused.body.detail.error).toBe("ResourceInUse")
    expect(refused.body.detail.message).toContain(template)
    expect((await api.call("DELETE", `/templates/${template}`)).status).toBe(204)
    expect((await api.call("DELETE", `/volumes/${volume}`)).status).toBe(204)
    expect((await api.call("GET", `/volumes/${volume}`)).status).toBe(404)
  })
})

describe("storage quota", () => {
  it("refuses a create over the quota with 429 and a string detail naming limit, usage and increase", async () => {
    const org = freshOrganization()
    expect((await org.api.createVolume(unique("vol"), "95Gi")).status).toBe(201)
    const over = await org.api.createVolume(unique("vol"), "10Gi")
    expect(over.status).toBe(429)
    expect(over.body).toEqual({ detail: "Storage quota exceeded: limit 100Gi, current usage 95Gi, requested increase 10Gi" })
    expect((await org.api.createVolume(unique("vol"), "5Gi")).status).toBe(201)
    expect((await org.api.createVolume(unique("vol"), "1")).status).toBe(429)
  })

  it("refuses a resize over the quota with 429 and leaves the size unchanged", async () => {
    const org = freshOrganization()
    const name = unique("vol")
    await org.api.createVolume(name, "40Gi")
    await org.api.createVolume(unique("vol"), "50Gi")
    const over = await org.api.call("PATCH", `/volumes/${name}`, { size: "51Gi" })
    expect(over.status).toBe(429)
    expect(over.body).toEqual({ detail: "Storage quota exceeded: limit 100Gi, current usage 90Gi, requested increase 11Gi" })
    expect((await org.api.call("GET", `/volumes/${name}`)).body.size).toBe("40Gi")
    const exact = await org.api.call("PATCH", `/volumes/${name}`, { size: "50Gi" })
    expect(exact.status).toBe(200)
    expect(exact.body.size).toBe("50Gi")
  })

  it("shares the quota between the tenants of one organization", async () => {
    const org = freshOrganization()
    const sibling = sandboxApi(t.request, { key: t.keyFor(randomUUID(), org.organizationId) })
    expect((await org.api.createVolume(unique("vol"), "60Gi")).status).toBe(201)
    const over = await sibling.createVolume(unique("vol"), "41Gi")
    expect(over.status).toBe(429)
    expect(over.body.detail).toBe("Storage quota exceeded: limit 100Gi, current usage 60Gi, requested increase 41Gi")
    expect((await sibling.createVolume(unique("vol"), "40Gi")).status).toBe(201)
    // A different organization is not affected.
    expect((await freshOrganization().api.createVolume(unique("vol"), "100Gi")).status).toBe(201)
  })

  it("frees quota when a volume is deleted", async () => {
    const org = freshOrganization()
    const name = unique("vol")
    await org.api.createVolume(name, "80Gi")
    expect((await org.api.createVolume(unique("vol"), "30Gi")).status).toBe(429)
    expect((await org.api.call("DELETE", `/volumes/${name}`)).status).toBe(204)
    expect((await org.api.createVolume(unique("vol"), "30Gi")).status).toBe(201)
  })

  it("applies a quota changed with the key tool to the next request, without a restart", async () => {
    const org = freshOrganization()
    const name = unique("vol")
    await org.api.createVolume(name, "90Gi")
    expect((await org.api.call("PATCH", `/volumes/${name}`, { size: "150Gi" })).status).toBe(429)

    const raised = await runKeys(t.databasePath, ["quota", "--org", org.organizationId, "--set", "200Gi"])
    expect(raised.code, raised.stderr).toBe(0)
    expect(JSON.parse(raised.stdout)).toEqual({ organization_id: org.organizationId, storage_quota: "200Gi", source: "organization", usage: "90Gi" })
    const grown = await org.api.call("PATCH", `/volumes/${name}`, { size: "150Gi" })
    expect(grown.status).toBe(200)
    const over = await org.api.createVolume(unique("vol"), "51Gi")
    expect(over.status).toBe(429)
    expect(over.body.detail).toBe("Storage quota exceeded: limit 200Gi, current usage 150Gi, requested increase 51Gi")

    const lowered = await runKeys(t.databasePath, ["quota", "--org", org.organizationId, "--set", "default"])
    expect(lowered.code, lowered.stderr).toBe(0)
    expect(JSON.parse(lowered.stdout)).toMatchObject({ storage_quota: "100Gi", source: "default", usage: "150Gi" })
    // Over quota now: no growth, but an unchanged size and a rename still work.
    expect((await org.api.call("PATCH", `/volumes/${name}`, { size: "151Gi" })).status).toBe(429)
    expect((await org.api.call("PATCH", `/volumes/${name}`, { size: "150Gi", name: unique("vol") })).status).toBe(200)

    const shown = await runKeys(t.databasePath, ["quota", "--org", org.organizationId])
    expect(JSON.parse(shown.stdout)).toMatchObject({ storage_quota: "100Gi", usage: "150Gi" })
  })

  it("validates the key tool's quota input", async () => {
    const bad = await runKeys(t.databasePath, ["quota", "--org", DEFAULT_ORGANIZATION_ID, "--set", "lots"])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("Invalid quantity 'lots'")
    const negative = await runKeys(t.databasePath, ["quota", "--org", DEFAULT_ORGANIZATION_ID, "--set=-1Gi"])
    expect(negative.code).toBe(2)
    expect(negative.stderr).toContain("must not be negative")
    const unknown = await runKeys(t.databasePath, ["quota", "--org", randomUUID()])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("no organization")
    const noOrg = await runKeys(t.databasePath, ["quota"])
    expect(noOrg.code).toBe(2)
    // Nothing was changed by the failed attempts.
    const shown = await runKeys(t.databasePath, ["quota", "--org", DEFAULT_ORGANIZATION_ID])
    expect(JSON.parse(shown.stdout)).toMatchObject({ storage_quota: "100Gi", source: "default" })
  })

  it("takes the default quota from configuration (SLIPWAY_STORAGE_QUOTA)", async () => {
    const small = await startTestServer({ storageQuota: "5Gi", storageClasses: ["gold"] })
    try {
      const smallApi = sandboxApi(small.request)
      const created = await smallApi.createVolume(unique("vol"), "4Gi")
      expect(created.status).toBe(201)
      // "standard" is not allowed here, so an omitted class takes the first allowed one.
      expect(created.body.storage_class).toBe("gold")
      const over = await smallApi.createVolume(unique("vol"), "2Gi", { storage_class: "gold" })
      expect(over.body.detail).toBe("Storage quota exceeded: limit 5Gi, current usage 4Gi, requested increase 2Gi")
    } finally {
      await small.close()
    }
  })
})
