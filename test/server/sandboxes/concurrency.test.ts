/**
 * Races that only a real database lock can settle: two server processes on one SQLite file,
 * each answering half of a burst of requests, so the check-then-write of the storage quota and
 * of name uniqueness really interleave across processes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ApiResponse, type ChildServer, faultyServerEntry, spawnServer, tempDatabasePath } from "../../support/server.ts"
import { runKeys, sandboxApi } from "./helpers.ts"

const database = tempDatabasePath("slipway-race")
let a: ChildServer
let b: ChildServer
let apiA: ReturnType<typeof sandboxApi>
let apiB: ReturnType<typeof sandboxApi>

beforeAll(async () => {
  // The held quota decisions widen the window between the quota check and the write to 25ms,
  // so without the BEGIN IMMEDIATE transaction the two processes would both pass the check and overshoot.
  const env = { SLIPWAY_STORAGE_QUOTA: "40Gi", FAULT_QUOTA_HOLD_MS: "25" }
  // One after the other: the first applies the migrations, the second finds them applied.
  a = await spawnServer({ entry: faultyServerEntry, databasePath: database.path, env })
  b = await spawnServer({ entry: faultyServerEntry, databasePath: database.path, env })
  apiA = sandboxApi(a.request)
  apiB = sandboxApi(b.request)
})

afterAll(async () => {
  for (const child of [a, b]) {
    if (!child) continue
    child.process.kill("SIGTERM")
    await child.exited
  }
  database.remove()
})

const GiB = 1024n ** 3n
/** Sizes the server prints for these tests are whole Gi. */
const bytesOf = (size: string): bigint => {
  const match = /^(\d+)Gi$/.exec(size)
  if (!match) throw new Error(`unexpected size ${size}`)
  return BigInt(match[1]!) * GiB
}

const usage = async () => (await apiA.listAll<{ size: string }>("volumes")).reduce((sum, volume) => sum + bytesOf(volume.size), 0n)

/** Alternates requests between the two servers and fires them all at once. */
const burst = <T>(count: number, request: (api: ReturnType<typeof sandboxApi>, index: number) => Promise<T>) =>
  Promise.all(Array.from({ length: count }, (_, index) => request(index % 2 === 0 ? apiA : apiB, index)))

describe("two servers on one database", () => {
  it("never lets parallel volume resizes pass the quota, and the successes add up exactly to the final usage", async () => {
    // 20 volumes of 1Gi: usage 20Gi of a 40Gi quota.
    const names = Array.from({ length: 20 }, (_, index) => `race-vol-${index}`)
    for (const name of names) expect((await apiA.createVolume(name, "1Gi")).status).toBe(201)
    const before = await usage()
    expect(before).toBe(20n * GiB)

    // Each asks for +3Gi (60Gi in all); only 20Gi is free, so exactly 6 can succeed.
    const responses = await burst(names.length, (api, index) => api.call("PATCH", `/volumes/${names[index]}`, { size: "4Gi" }))
    const statuses = responses.map((response) => response.status)
    expect(statuses.every((status) => status === 200 || status === 429), JSON.stringify(statuses)).toBe(true)
    const succeeded = responses.filter((response) => response.status === 200)
    expect(succeeded).toHaveLength(6)
    for (const refused of responses.filter((response) => response.status === 429)) {
      expect(refused.body.detail).toMatch(/^Storage quota exceeded: limit 40Gi, current usage (\d+)Gi, requested increase 3Gi$/)
    }

    const after = await usage()
    expect(after).toBe(before + BigInt(succeeded.length) * 3n * GiB)
    expect(after <= 40n * GiB).toBe(true)
    const shown = await runKeys(database.path, ["quota", "--org", "00000000-0000-4000-8000-000000000000"])
    expect(JSON.parse(shown.stdout).usage).toBe("38Gi")
  })

  it("never lets parallel creates and resizes of mixed sizes pass the quota", async () => {
    // Usage is 38Gi of 40Gi now; raise the quota for this round through the key tool.
    const raised = await runKeys(database.path, ["quota", "--org", "00000000-0000-4000-8000-000000000000", "--set", "60Gi"])
    expect(raised.code, raised.stderr).toBe(0)
    const before = await usage()
    const requests = await burst<{ kind: "resize" | "create"; index: number; response: ApiResponse }>(30, (api, index) =>
      index % 3 === 0
        ? api.call("PATCH", `/volumes/race-vol-${index % 20}`, { size: `${5 + (index % 4)}Gi` }).then((response) => ({ kind: "resize" as const, index, response }))
        : api.createVolume(`race-new-${index}`, `${1 + (index % 5)}Gi`).then((response) => ({ kind: "create" as const, index, response }))
    )
    for (const { response } of requests) expect([200, 201, 429, 400]).toContain(response.status)
    const after = await usage()
    expect(after <= 60n * GiB).toBe(true)
    expect(requests.some(({ response }) => response.status === 429)).toBe(true)
    // Every success is visible in the final state, and nothing else changed it.
    const created = requests.filter(({ kind, response }) => kind === "create" && response.status === 201)
    const createdBytes = created.reduce((sum, { response }) => sum + bytesOf(response.body.size), 0n)
    const volumes = await apiA.listAll<{ name: string; size: string }>("volumes")
    for (const { response } of created) expect(volumes.map((volume) => volume.name)).toContain(response.body.name)
    const resizedBytes = volumes.filter((volume) => volume.name.startsWith("race-vol-")).reduce((sum, volume) => sum + bytesOf(volume.size), 0n)
    expect(after).toBe(resizedBytes + createdBytes)
    expect(resizedBytes >= before).toBe(true)
  })

  it("lets exactly one of many parallel renames to one name win; the rest get 409 Conflict", async () => {
    await apiA.createTemplate("race-tpl")
    const boxes = Array.from({ length: 16 }, (_, index) => `race-box-${index}`)
    for (const name of boxes) expect((await apiA.createBox("race-tpl", name)).status).toBe(201)
    const responses = await burst(boxes.length, (api, index) => api.call("PATCH", `/boxes/${boxes[index]}`, { name: "race-winner" }))
    const statuses = responses.map((response) => response.status).sort()
    expect(statuses).toEqual([200, ...Array(boxes.length - 1).fill(409)])
    for (const loser of responses.filter((response) => response.status === 409)) {
      expect(loser.body).toEqual({ detail: { error: "Conflict", message: expect.stringContaining("race-winner") } })
    }
    const winner = responses.find((response) => response.status === 200)!.body
    expect((await apiB.call("GET", "/boxes/race-winner")).body.id).toBe(winner.id)
    const names = (await apiB.listAll<{ name: string }>("boxes")).map((box) => box.name)
    expect(names.filter((name) => name === "race-winner")).toHaveLength(1)
    expect(names.filter((name) => name.startsWith("race-box-"))).toHaveLength(boxes.length - 1)
  })

  it("lets exactly one of many parallel volume renames and creates of one name win", async () => {
    expect((await runKeys(database.path, ["quota", "--org", "00000000-0000-4000-8000-000000000000", "--set", "1Ti"])).code).toBe(0)
    const volumes = Array.from({ length: 10 }, (_, index) => `race-rename-${index}`)
    for (const name of volumes) expect((await apiB.createVolume(name, "1Gi")).status).toBe(201)
    const renames = await burst(volumes.length, (api, index) => api.call("PATCH", `/volumes/${volumes[index]}`, { name: "race-taken" }))
    expect(renames.map((response) => response.status).sort()).toEqual([200, ...Array(volumes.length - 1).fill(409)])

    const creates = await burst(12, (api) => api.createTemplate("race-same"))
    expect(creates.map((response) => response.status).sort()).toEqual([201, ...Array(11).fill(409)])
    expect((await apiA.listAll<{ name: string }>("templates")).filter((template) => template.name === "race-same")).toHaveLength(1)
  })
})
