/**
 * The race tests of the reliability suite, over any set of servers sharing one database: the
 * requests of each race are sent alternately to every server. `races.test.ts` runs them on two
 * processes sharing one SQLite file; `test/store/postgres-replicas.test.ts` on three replicas
 * sharing one PostgreSQL database.
 * - concurrent volume growth and creation never leave the organization's usage above its quota,
 *   and the acknowledged sizes add up exactly to the final usage;
 * - concurrent renames (and creates) to one name: exactly one succeeds, the rest get Conflict;
 * - concurrent PATCHes of one deployment create exactly one revision each, with no lost update.
 */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { parseQuantity, toBytes } from "../../core/index.ts"
import { eventually, type makeRequester } from "../support/server.ts"
import { endpointNamed, errorShapeProblem } from "./support.ts"

/** The storage quota the servers must be started with (SLIPWAY_STORAGE_QUOTA). */
export const QUOTA = "60Gi"
const Gi = 1024n ** 3n

const bytesOf = (text: string): bigint => {
  const quantity = parseQuantity(text)
  if (Result.isFailure(quantity)) throw new Error(`bad quantity ${text}`)
  const bytes = toBytes(quantity.success)
  if (Result.isFailure(bytes)) throw new Error(`bad quantity ${text}`)
  return bytes.success
}

export interface RaceHarness {
  /** One requester per server, all with the key of a new tenant in a new organization (its own quota). */
  readonly requesters: () => Promise<Array<ReturnType<typeof makeRequester>>>
  /** Revisions left without their deployment, read from the database itself. */
  readonly orphanRevisions: () => Promise<number>
}

export const describeRaces = (h: RaceHarness) => {
  const listAll = async (request: ReturnType<typeof makeRequester>, kind: string): Promise<Array<any>> => {
    const response = await request("GET", `/v2/sandboxes/${kind}?limit=500`)
    expect(response.status).toBe(200)
    const key = kind === "boxes" ? "sandboxes" : kind
    return response.body[key]
  }

  const expectShape = (name: string, status: number, body: unknown) => {
    expect(errorShapeProblem(endpointNamed(name), status, body), JSON.stringify(body)).toBeUndefined()
  }

  describe("storage quota under concurrent writes from several servers", () => {
    it("50 concurrent size increases whose sum exceeds the quota never pass it, and successes add up to the usage", async () => {
      const rs = await h.requesters()
      const [a, b] = [rs[0], rs[1 % rs.length]]
      const pick = (i: number) => rs[i % rs.length]
      const names = Array.from({ length: 50 }, (_, i) => `grow-${i}`)
      for (const name of names) expect((await a!("POST", "/v2/sandboxes/volumes", { body: { name, size: "1Gi" } })).status).toBe(201)
      // 50Gi used of 60Gi; the increases ask for 1–3Gi each, ~100Gi in all.
      const deltas = names.map((_, i) => BigInt((i % 3) + 1))
      const answers = await Promise.all(
        names.map((name, i) => pick(i)!("PATCH", `/v2/sandboxes/volumes/${name}`, { body: { size: `${1n + deltas[i]!}Gi` } }))
      )
      let granted = 0n
      answers.forEach((answer, i) => {
        expect([200, 429], JSON.stringify(answer.body)).toContain(answer.status)
        if (answer.status === 200) {
          granted += deltas[i]! * Gi
          expect(answer.body.size).toBe(`${1n + deltas[i]!}Gi`)
        } else {
          expectShape("updateVolume", answer.status, answer.body)
          const [, limit, usage, requested] = /limit (\S+), current usage (\S+), requested increase (\S+)$/.exec(answer.body.detail)!
          expect(bytesOf(limit!)).toBe(bytesOf(QUOTA))
          expect(bytesOf(requested!)).toBe(deltas[i]! * Gi)
          // Refused only when it really would not fit.
          expect(bytesOf(usage!) + bytesOf(requested!)).toBeGreaterThan(bytesOf(QUOTA))
        }
      })
      const volumes = await listAll(b!, "volumes")
      expect(volumes).toHaveLength(50)
      const usage = volumes.reduce((sum, volume) => sum + bytesOf(volume.size), 0n)
      expect(usage).toBeLessThanOrEqual(bytesOf(QUOTA))
      expect(usage).toBe(50n * Gi + granted)
      // Each volume has exactly the size its own answer reported.
      for (const [i, name] of names.entries()) {
        const volume = volumes.find((candidate) => candidate.name === name)
        expect(volume.size, name).toBe(answers[i]!.status === 200 ? `${1n + deltas[i]!}Gi` : "1Gi")
      }
      expect(answers.filter((answer) => answer.status === 429).length).toBeGreaterThan(0)
      // Greedy filling: nothing that was refused would still fit at the end... unless a larger one took its place.
      expect(bytesOf(QUOTA) - usage).toBeLessThan(3n * Gi)
    })

    it("50 concurrent creates of 7Gi under a 60Gi quota: exactly 8 succeed", async () => {
      const rs = await h.requesters()
      const a = rs[0]
      const pick = (i: number) => rs[i % rs.length]
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => pick(i)!("POST", "/v2/sandboxes/volumes", { body: { name: `create-${i}`, size: "7Gi" } }))
      )
      const created = answers.filter((answer) => answer.status === 201)
      for (const answer of answers) {
        expect([201, 429], JSON.stringify(answer.body)).toContain(answer.status)
        if (answer.status === 429) expectShape("createVolume", answer.status, answer.body)
      }
      expect(created).toHaveLength(8)
      const volumes = await listAll(a!, "volumes")
      expect(volumes.map((volume) => volume.name).sort()).toEqual(created.map((answer) => answer.body.name).sort())
      expect(volumes.reduce((sum, volume) => sum + bytesOf(volume.size), 0n)).toBe(56n * Gi)
    })

    it("concurrent absolute resizes of one volume: only growth is applied, the largest wins, usage stays exact", async () => {
      const rs = await h.requesters()
      const [a, b] = [rs[0], rs[1 % rs.length]]
      const pick = (i: number) => rs[i % rs.length]
      expect((await a!("POST", "/v2/sandboxes/volumes", { body: { name: "one", size: "1Gi" } })).status).toBe(201)
      const sizes = Array.from({ length: 20 }, (_, i) => i + 2)
      const answers = await Promise.all(sizes.map((size, i) => pick(i)!("PATCH", "/v2/sandboxes/volumes/one", { body: { size: `${size}Gi` } })))
      for (const answer of answers) {
        expect([200, 400], JSON.stringify(answer.body)).toContain(answer.status)
        if (answer.status === 400) {
          expectShape("updateVolume", answer.status, answer.body)
          expect(answer.body.detail.error).toBe("ResizeError")
        }
      }
      expect(answers[answers.length - 1]!.status).toBe(200)
      expect((await b!("GET", "/v2/sandboxes/volumes/one")).body.size).toBe("21Gi")
    })
  })

  describe("concurrent renames and creates to one name", () => {
    const kinds = [
      { kind: "volumes", update: "updateVolume", create: (name: string) => ({ name, size: "1Gi" }) },
      { kind: "templates", update: "updateTemplate", create: (name: string) => ({ name, image: "python:3.12" }) },
      { kind: "pools", update: "updatePool", create: (name: string) => ({ name, template_name: "base", replicas: 0 }) },
      { kind: "boxes", update: "updateBox", create: (name: string) => ({ name, template_name: "base" }) }
    ]

    for (const { kind, update, create } of kinds) {
      it(`${kind}: 20 concurrent renames to one name, exactly one succeeds and 19 get Conflict`, async () => {
        const rs = await h.requesters()
      const [a, b] = [rs[0], rs[1 % rs.length]]
      const pick = (i: number) => rs[i % rs.length]
        if (kind === "pools" || kind === "boxes") {
          expect((await a!("POST", "/v2/sandboxes/templates", { body: { name: "base", image: "python:3.12" } })).status).toBe(201)
        }
        const names = Array.from({ length: 20 }, (_, i) => `${kind}-${i}`)
        for (const name of names) expect((await a!("POST", `/v2/sandboxes/${kind}`, { body: create(name) })).status, name).toBe(201)
        const answers = await Promise.all(names.map((name, i) => pick(i)!("PATCH", `/v2/sandboxes/${kind}/${name}`, { body: { name: "target" } })))
        const winners = answers.filter((answer) => answer.status === 200)
        expect(winners).toHaveLength(1)
        for (const answer of answers.filter((candidate) => candidate.status !== 200)) {
          expect(answer.status).toBe(409)
          expectShape(update, answer.status, answer.body)
          expect(answer.body.detail.error).toBe("Conflict")
        }
        const listed = (await listAll(b!, kind)).filter((item) => item.pool_name == null).map((item) => item.name)
        const winner = names[answers.findIndex((answer) => answer.status === 200)]!
        expect(listed.sort()).toEqual([...names.filter((name) => name !== winner), "target"].sort())
      })

      it(`${kind}: 20 concurrent creates of one name, exactly one succeeds and 19 get Conflict`, async () => {
        const rs = await h.requesters()
      const [a, b] = [rs[0], rs[1 % rs.length]]
      const pick = (i: number) => rs[i % rs.length]
        if (kind === "pools" || kind === "boxes") {
          expect((await a!("POST", "/v2/sandboxes/templates", { body: { name: "base", image: "python:3.12" } })).status).toBe(201)
        }
        const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => pick(i)!("POST", `/v2/sandboxes/${kind}`, { body: create("same") })))
        expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1)
        for (const answer of answers.filter((candidate) => candidate.status !== 201)) {
          expect(answer.status, JSON.stringify(answer.body)).toBe(409)
          expect(answer.body.detail.error).toBe("Conflict")
        }
        expect((await listAll(b!, kind)).filter((item) => item.name === "same")).toHaveLength(1)
      })
    }
  })

  describe("check-then-act across several servers: a use and a delete never both succeed", () => {
    const pairs = [
      {
        label: "template mounting a volume vs deleting the volume",
        setup: async (request: ReturnType<typeof makeRequester>, i: number) => {
          expect((await request("POST", "/v2/sandboxes/volumes", { body: { name: `vol-${i}`, size: "1Mi" } })).status).toBe(201)
        },
        use: (i: number) => ["POST", "/v2/sandboxes/templates", { name: `mounting-${i}`, image: "python:3.12", volume_mounts: [{ volume_name: `vol-${i}`, mount_path: "/data" }] }] as const,
        remove: (i: number) => `/v2/sandboxes/volumes/vol-${i}`
      },
      {
        label: "pool on a template vs deleting the template",
        setup: async (request: ReturnType<typeof makeRequester>, i: number) => {
          expect((await request("POST", "/v2/sandboxes/templates", { body: { name: `tpl-${i}`, image: "python:3.12" } })).status).toBe(201)
        },
        use: (i: number) => ["POST", "/v2/sandboxes/pools", { name: `pool-${i}`, template_name: `tpl-${i}`, replicas: 2 }] as const,
        remove: (i: number) => `/v2/sandboxes/templates/tpl-${i}`
      },
      {
        label: "sandbox on a template vs deleting the template",
        setup: async (request: ReturnType<typeof makeRequester>, i: number) => {
          expect((await request("POST", "/v2/sandboxes/templates", { body: { name: `tpl-${i}`, image: "python:3.12" } })).status).toBe(201)
        },
        use: (i: number) => ["POST", "/v2/sandboxes/boxes", { name: `box-${i}`, template_name: `tpl-${i}` }] as const,
        remove: (i: number) => `/v2/sandboxes/templates/tpl-${i}`
      }
    ]

    for (const pair of pairs) {
      it(pair.label, async () => {
        const rs = await h.requesters()
      const a = rs[0]
      const pick = (i: number) => rs[i % rs.length]
        const rounds = 20
        for (let i = 0; i < rounds; i++) await pair.setup(a!, i)
        const outcomes = await Promise.all(
          Array.from({ length: rounds }, async (_, i) => {
            const [method, path, body] = pair.use(i)
            // Alternate which server uses and which deletes, and which request leaves first.
            const [user, remover] = [pick(i)!, pick(i + 1)!]
            const [used, removed] = await Promise.all([user(method, path, { body }), remover("DELETE", pair.remove(i))])
            return { used, removed }
          })
        )
        for (const { used, removed } of outcomes) {
          expect(used.status, JSON.stringify(used.body)).toBeLessThan(500)
          expect(removed.status, JSON.stringify(removed.body)).toBeLessThan(500)
          const useWon = used.status === 201
          const removeWon = removed.status === 204
          expect(useWon !== removeWon, `use ${used.status} ${JSON.stringify(used.body)} / delete ${removed.status} ${JSON.stringify(removed.body)}`).toBe(true)
          if (!useWon) expect([400, 404]).toContain(used.status)
          if (!removeWon) {
            expect(removed.status).toBe(409)
            expect(removed.body.detail.error).toBe("ResourceInUse")
          }
        }
      })
    }
  })

  describe("concurrent PATCHes of one deployment from several servers", () => {
    it("create exactly one revision each, applied one after another with no lost update", async () => {
      const rs = await h.requesters()
      const [a, b] = [rs[0], rs[1 % rs.length]]
      const pick = (i: number) => rs[i % rs.length]
      const created = await a!("POST", "/v2/deployments", {
        body: { name: "raced", source: "external_container", source_revision_config: { image_uri: "registry.example.com/app:0" } }
      })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      const id: string = created.body.id
      // Even patches change the image (revision config), odd ones the resource spec (deployment config): both create a revision.
      const patches: Array<{ source_revision_config?: { image_uri: string }; source_config?: { resource_spec: { min_scale: number; max_scale: number } } }> = Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0 ? { source_revision_config: { image_uri: `registry.example.com/app:${i + 1}` } } : { source_config: { resource_spec: { min_scale: 1, max_scale: i + 1 } } }
      )
      const answers = await Promise.all(patches.map((body, i) => pick(i)!("PATCH", `/v2/deployments/${id}`, { body })))
      for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      const made = answers.map((answer) => answer.body.latest_revision_id as string)
      expect(new Set(made).size).toBe(20)
      expect(made).not.toContain(created.body.latest_revision_id)

      const listed = await b!("GET", `/v2/deployments/${id}/revisions?limit=100`)
      expect(listed.status).toBe(200)
      const revisions: Array<{ id: string; source_revision_config: { image_uri: string } }> = [...listed.body.resources].reverse()
      expect(revisions).toHaveLength(21)
      expect(revisions[0]!.id).toBe(created.body.latest_revision_id)
      expect(new Set(revisions.slice(1).map((revision) => revision.id))).toEqual(new Set(made))

      // Replay in revision order: each revision holds the previous one's values plus its own PATCH.
      let image = "registry.example.com/app:0"
      let maxScale: number | undefined
      for (const revision of revisions.slice(1)) {
        const index = made.indexOf(revision.id)
        const patch = patches[index]!
        if (patch.source_revision_config) image = patch.source_revision_config.image_uri
        else maxScale = patch.source_config!.resource_spec.max_scale
        expect(revision.source_revision_config.image_uri, `revision ${revision.id} (patch ${index})`).toBe(image)
        // The PATCH's own answer showed the state right after it.
        expect(answers[index]!.body.source_revision_config.image_uri).toBe(image)
      }
      const final = await a!("GET", `/v2/deployments/${id}`)
      expect(final.body.latest_revision_id).toBe(revisions[revisions.length - 1]!.id)
      expect(final.body.source_revision_config.image_uri).toBe(image)
      expect(final.body.source_config.resource_spec.max_scale).toBe(maxScale)
    })
  })

  describe("deleting deployments while they are patched, revised and redeployed from several servers", () => {
    it("never answers 5xx or off-spec, and leaves no revision without its deployment", async () => {
      const rs = await h.requesters()
      const [a, b] = [rs[0], rs[1 % rs.length]]
      const pick = (i: number) => rs[i % rs.length]
      const ids: Array<{ id: string; revision: string }> = []
      for (let i = 0; i < 10; i++) {
        const created = await a!("POST", "/v2/deployments", { body: { name: `doomed-${i}`, source: "external_container", source_revision_config: { image_uri: `registry.example.com/app:${i}` } } })
        expect(created.status).toBe(201)
        ids.push({ id: created.body.id, revision: created.body.latest_revision_id })
      }
      const calls = ids.flatMap(({ id, revision }, i) => {
        const [one, two] = [pick(i)!, pick(i + 1)!]
        return [
          { name: "deleteDeployment", run: () => one("DELETE", `/v2/deployments/${id}`) },
          { name: "updateDeployment", run: () => two("PATCH", `/v2/deployments/${id}`, { body: { source_revision_config: { image_uri: "registry.example.com/app:late" } } }) },
          { name: "createRevision", run: () => one("POST", `/v2/deployments/${id}/revisions`, { body: { source_revision_config: { image_uri: "registry.example.com/app:later" } } }) },
          { name: "redeployRevision", run: () => two("POST", `/v2/deployments/${id}/revisions/${revision}/redeploy`) },
          { name: "deleteDeployment", run: () => two("DELETE", `/v2/deployments/${id}`) }
        ]
      })
      const answers = await Promise.all(calls.map(async (call) => ({ name: call.name, answer: await call.run() })))
      for (const { name, answer } of answers) {
        if (answer.status >= 300) expect(errorShapeProblem(endpointNamed(name), answer.status, answer.body), `${name}: ${answer.status} ${JSON.stringify(answer.body)}`).toBeUndefined()
      }
      // Every deployment was deleted at least once (the first DELETE to land wins; a second may find it gone or going).
      for (const { id } of ids) {
        await eventually(async () => ((await b!("GET", `/v2/deployments/${id}`)).status === 404 ? true : undefined), 10_000)
      }
      expect(await h.orphanRevisions()).toBe(0)
    })
  })

  describe("concurrent pool scaling from several servers", () => {
    it("leaves exactly as many sandboxes in the pool as its final replica count", async () => {
      const rs = await h.requesters()
      const [a, b] = [rs[0], rs[1 % rs.length]]
      const pick = (i: number) => rs[i % rs.length]
      expect((await a!("POST", "/v2/sandboxes/templates", { body: { name: "base", image: "python:3.12" } })).status).toBe(201)
      expect((await a!("POST", "/v2/sandboxes/pools", { body: { name: "scaled", template_name: "base", replicas: 1 } })).status).toBe(201)
      const targets = Array.from({ length: 24 }, (_, i) => (i * 7) % 11)
      const answers = await Promise.all(targets.map((replicas, i) => pick(i)!("PATCH", "/v2/sandboxes/pools/scaled", { body: { replicas } })))
      for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      const pool = await b!("GET", "/v2/sandboxes/pools/scaled")
      expect(targets).toContain(pool.body.replicas)
      const members = (await listAll(a!, "boxes")).filter((box) => box.pool_name === "scaled")
      expect(members).toHaveLength(pool.body.replicas)
      expect(new Set(members.map((box) => box.name)).size).toBe(members.length)
    })

    it("deleting a pool while it is being scaled leaves none of its sandboxes behind", async () => {
      const rs = await h.requesters()
      const [a, b] = [rs[0], rs[1 % rs.length]]
      expect((await a!("POST", "/v2/sandboxes/templates", { body: { name: "base", image: "python:3.12" } })).status).toBe(201)
      for (let round = 0; round < 5; round++) {
        expect((await a!("POST", "/v2/sandboxes/pools", { body: { name: `doomed-${round}`, template_name: "base", replicas: 3 } })).status).toBe(201)
        const answers = await Promise.all([
          a!("PATCH", `/v2/sandboxes/pools/doomed-${round}`, { body: { replicas: 8 } }),
          b!("DELETE", `/v2/sandboxes/pools/doomed-${round}`),
          a!("PATCH", `/v2/sandboxes/pools/doomed-${round}`, { body: { replicas: 5 } }),
          b!("PATCH", `/v2/sandboxes/pools/doomed-${round}`, { body: { replicas: 10 } })
        ])
        for (const answer of answers) {
          expect([200, 204, 404], JSON.stringify(answer.body)).toContain(answer.status)
          if (answer.status === 404) expect(answer.body.detail.error).toBe("NotFound")
        }
        expect(answers[1]!.status).toBe(204)
        expect((await a!("GET", `/v2/sandboxes/pools/doomed-${round}`)).status).toBe(404)
      }
      expect((await listAll(b!, "boxes")).filter((box) => box.pool_name !== null)).toEqual([])
    })
  })
}
