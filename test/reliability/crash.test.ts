/**
 * Crash durability: a child server under concurrent writes is killed with SIGKILL (no chance to
 * drain or checkpoint). After each kill: the file passes `PRAGMA integrity_check` and
 * `foreign_key_check`, no write is left half-done (every deployment has its first revision, its
 * latest revision and its tracing project; every revision belongs to an existing deployment),
 * and after a restart every write the server acknowledged is there. A write in flight at the
 * kill may or may not have happened, but nothing in between. The revision runtime resumes from
 * the database: acknowledged deletes complete and every deployment ends up READY on its latest
 * revision.
 */
import { afterAll, describe, expect, it } from "vitest"
import { type ChildServer, eventually, spawnServer, tempDatabasePath } from "../support/server.ts"
import { integrityCheck, sleep, stopChild, withDatabase } from "./support.ts"

const database = tempDatabasePath("slipway-crash")
let child: ChildServer | undefined
afterAll(async () => {
  await stopChild(child)
  database.remove()
})

/** What a resource may look like after the crash: its acknowledged state, or the one in flight. */
interface Expectation {
  readonly label: string
  readonly check: (server: ChildServer) => Promise<string | undefined>
}

type Requester = ChildServer["request"]

/** Sends a request; `undefined` when the server died before answering (not acknowledged). */
const attempt = async (request: Requester, method: string, path: string, body?: unknown) => {
  try {
    return await request(method, path, body === undefined ? {} : { body })
  } catch {
    return undefined
  }
}

/**
 * One writer: creates a volume, grows it, renames it; creates a deployment, patches it (a new
 * revision), adds a revision. Records after each acknowledged step what must survive.
 */
const writer = async (request: Requester, id: string, alive: () => boolean, expectations: Array<Expectation>, acknowledged: { count: number }) => {
  let step = 0
  while (alive()) {
    const n = `${id}-${step++}`
    // Volumes: create → grow → rename. Possible final states follow the acknowledged prefix.
    const created = await attempt(request, "POST", "/v2/sandboxes/volumes", { name: `v-${n}`, size: "1Mi" })
    if (!created) {
      expectations.push(volumeState(`v-${n}`, [undefined, { name: `v-${n}`, size: "1Mi" }]))
      return
    }
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    acknowledged.count++
    const grown = await attempt(request, "PATCH", `/v2/sandboxes/volumes/v-${n}`, { size: "2Mi" })
    if (!grown) {
      expectations.push(volumeState(`v-${n}`, [{ name: `v-${n}`, size: "1Mi" }, { name: `v-${n}`, size: "2Mi" }]))
      return
    }
    expect(grown.status).toBe(200)
    acknowledged.count++
    const renamed = await attempt(request, "PATCH", `/v2/sandboxes/volumes/v-${n}`, { name: `r-${n}` })
    if (!renamed) {
      expectations.push(volumeState(`v-${n}`, [{ name: `v-${n}`, size: "2Mi" }, { name: `r-${n}`, size: "2Mi" }]))
      return
    }
    expect(renamed.status).toBe(200)
    acknowledged.count++
    expectations.push(volumeState(`v-${n}`, [{ name: `r-${n}`, size: "2Mi" }]))

    // A template and a sandbox on it.
    const template = await attempt(request, "POST", "/v2/sandboxes/templates", { name: `t-${n}`, image: "python:3.12" })
    if (!template) return
    expect(template.status).toBe(201)
    acknowledged.count++
    expectations.push(present(`/v2/sandboxes/templates/t-${n}`))
    const box = await attempt(request, "POST", "/v2/sandboxes/boxes", { name: `b-${n}`, template_name: `t-${n}` })
    if (!box) return
    expect(box.status).toBe(201)
    acknowledged.count++
    expectations.push(present(`/v2/sandboxes/boxes/b-${n}`))

    // A deployment, a PATCH that creates a revision, and an explicit new revision.
    const deployment = await attempt(request, "POST", "/v2/deployments", {
      name: `d-${n}`,
      source: "external_container",
      source_revision_config: { image_uri: `registry.example.com/app:${n}-1` },
      secrets: [{ name: "TOKEN", value: "t" }]
    })
    if (!deployment) return
    expect(deployment.status, JSON.stringify(deployment.body)).toBe(201)
    acknowledged.count++
    const deploymentId: string = deployment.body.id
    const revisions: Array<{ id: string; image: string }> = [{ id: deployment.body.latest_revision_id, image: `registry.example.com/app:${n}-1` }]
    const live = deploymentState(deploymentId, `d-${n}`, revisions)
    expectations.push(live)
    const patched = await attempt(request, "PATCH", `/v2/deployments/${deploymentId}`, { source_revision_config: { image_uri: `registry.example.com/app:${n}-2` } })
    if (!patched) return
    expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    acknowledged.count++
    revisions.push({ id: patched.body.latest_revision_id, image: `registry.example.com/app:${n}-2` })
    const revision = await attempt(request, "POST", `/v2/deployments/${deploymentId}/revisions`, { source_revision_config: { image_uri: `registry.example.com/app:${n}-3` } })
    if (!revision) return
    expect(revision.status, JSON.stringify(revision.body)).toBe(201)
    acknowledged.count++
    revisions.push({ id: revision.body.id, image: `registry.example.com/app:${n}-3` })

    // Every third deployment is deleted: once acknowledged, it must be gone after the restart.
    if (step % 3 === 0) {
      // Writers share the list: remove this deployment's own expectation.
      expectations.splice(expectations.indexOf(live), 1)
      const deleted = await attempt(request, "DELETE", `/v2/deployments/${deploymentId}`)
      if (!deleted) return
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(204)
      acknowledged.count++
      expectations.push(deletedDeployment(deploymentId))
    }
  }
}

/** An acknowledged delete: the runtime finishes it after a restart (the deployment answers 404). */
const deletedDeployment = (id: string): Expectation => ({
  label: `deleted ${id}`,
  check: async (server) => {
    try {
      await eventually(async () => ((await server.request("GET", `/v2/deployments/${id}`)).status === 404 ? true : undefined), 10_000, 50)
      return undefined
    } catch {
      return `deployment ${id} was deleted (204) but is still there after the restart`
    }
  }
})

/** The runtime resumes from the database: every deployment still there ends up READY on its latest revision. */
const settled = async (server: ChildServer): Promise<ReadonlyArray<string>> => {
  let problems: ReadonlyArray<string> = []
  try {
    await eventually(async () => {
      const listed: Array<any> = []
      for (let offset = 0; ; ) {
        const page = await server.request("GET", `/v2/deployments?limit=100&offset=${offset}`)
        listed.push(...page.body.resources)
        if (page.body.resources.length < 100) break
        offset = page.body.offset
      }
      problems = listed
        .filter((deployment) => deployment.status !== "AWAITING_DELETE")
        .filter((deployment) => deployment.status !== "READY" || deployment.active_revision_id !== deployment.latest_revision_id)
        .map((deployment) => `${deployment.name}: ${deployment.status}, active ${deployment.active_revision_id}, latest ${deployment.latest_revision_id}`)
      return problems.length === 0 ? true : undefined
    }, 20_000, 100)
  } catch {
    // reported below
  }
  return problems
}

const present = (path: string): Expectation => ({
  label: path,
  check: async (server) => {
    const response = await server.request("GET", path)
    return response.status === 200 ? undefined : `${path}: ${response.status} ${JSON.stringify(response.body)}`
  }
})

/** The volume first created as `original` is in one of `states` (undefined: absent altogether). */
const volumeState = (original: string, states: ReadonlyArray<{ name: string; size: string } | undefined>): Expectation => ({
  label: `volume ${original}`,
  check: async (server) => {
    const renamedTo = `r-${original.slice(2)}`
    const [before, after] = await Promise.all([server.request("GET", `/v2/sandboxes/volumes/${original}`), server.request("GET", `/v2/sandboxes/volumes/${renamedTo}`)])
    const found = [before, after].filter((response) => response.status === 200).map((response) => ({ name: response.body.name, size: response.body.size }))
    if (found.length > 1) return `volume ${original} exists under both names`
    const actual = found[0]
    const ok = states.some((state) => (state === undefined ? actual === undefined : actual !== undefined && actual.name === state.name && actual.size === state.size))
    return ok ? undefined : `volume ${original}: found ${JSON.stringify(actual)}, expected one of ${JSON.stringify(states)}`
  }
})

/** Every acknowledged revision exists with its own image; the deployment's latest is at least as new as the last acknowledged. */
const deploymentState = (id: string, name: string, revisions: ReadonlyArray<{ id: string; image: string }>): Expectation => ({
  label: `deployment ${name}`,
  check: async (server) => {
    const deployment = await server.request("GET", `/v2/deployments/${id}`)
    if (deployment.status !== 200) return `deployment ${name}: ${deployment.status}`
    if (deployment.body.name !== name) return `deployment ${id} is named ${deployment.body.name}`
    for (const revision of revisions) {
      const found = await server.request("GET", `/v2/deployments/${id}/revisions/${revision.id}`)
      if (found.status !== 200) return `revision ${revision.id} of ${name}: ${found.status}`
      if (found.body.source_revision_config?.image_uri !== revision.image) return `revision ${revision.id} has image ${found.body.source_revision_config?.image_uri}`
    }
    const listed = await server.request("GET", `/v2/deployments/${id}/revisions?limit=100`)
    const ids: Array<string> = listed.body.resources.map((revision: { id: string }) => revision.id)
    // Newest first: the last acknowledged revision is listed, and every newer one came from a write in flight (at most one).
    const lastIndex = ids.indexOf(revisions[revisions.length - 1]!.id)
    if (lastIndex === -1 || lastIndex > 1) return `revisions of ${name}: ${JSON.stringify(ids)}, last acknowledged ${revisions[revisions.length - 1]!.id}`
    if (!ids.includes(deployment.body.latest_revision_id) || ids[0] !== deployment.body.latest_revision_id) return `latest_revision_id of ${name} is not its newest revision`
    return undefined
  }
})

/** Invariants read straight from the file: nothing half-created. */
const halfCreated = (path: string): ReadonlyArray<string> =>
  withDatabase(path, (db) => {
    const problems: Array<string> = []
    const rows = (sql: string) => db.prepare(sql).all() as Array<Record<string, unknown>>
    for (const row of rows("PRAGMA foreign_key_check")) problems.push(`foreign key: ${JSON.stringify(row)}`)
    for (const row of rows("SELECT d.id, d.name FROM deployments d WHERE NOT EXISTS (SELECT 1 FROM revisions r WHERE r.deployment_id = d.id AND r.seq = 1)")) {
      problems.push(`deployment without its first revision: ${JSON.stringify(row)}`)
    }
    for (const row of rows("SELECT d.id, d.revision_seq, (SELECT max(seq) FROM revisions r WHERE r.deployment_id = d.id) AS newest FROM deployments d WHERE d.revision_seq IS NOT (SELECT max(seq) FROM revisions r WHERE r.deployment_id = d.id)")) {
      problems.push(`deployment whose revision counter disagrees with its revisions: ${JSON.stringify(row)}`)
    }
    for (const row of rows(
      "SELECT d.id, d.latest_revision_id FROM deployments d WHERE d.latest_revision_id IS NULL OR NOT EXISTS (SELECT 1 FROM revisions r WHERE r.id = d.latest_revision_id AND r.deployment_id = d.id)"
    )) {
      problems.push(`deployment whose latest revision is missing: ${JSON.stringify(row)}`)
    }
    for (const row of rows("SELECT d.id, d.name FROM deployments d WHERE NOT EXISTS (SELECT 1 FROM tracing_projects p WHERE p.tenant_id = d.tenant_id AND p.name = d.name)")) {
      problems.push(`deployment without its tracing project: ${JSON.stringify(row)}`)
    }
    for (const row of rows("SELECT r.id FROM revisions r WHERE NOT EXISTS (SELECT 1 FROM deployments d WHERE d.id = r.deployment_id)")) {
      problems.push(`revision of no deployment: ${JSON.stringify(row)}`)
    }
    for (const row of rows("SELECT s.id FROM sandboxes s WHERE NOT EXISTS (SELECT 1 FROM sandbox_templates t WHERE t.id = s.template_id)")) {
      problems.push(`sandbox of no template: ${JSON.stringify(row)}`)
    }
    return problems
  })

/** `each` over `items`, at most `width` at a time, results in order. */
const inBatches = async <A, B>(items: ReadonlyArray<A>, width: number, each: (item: A) => Promise<B>): Promise<Array<B>> => {
  const results: Array<B> = []
  for (let start = 0; start < items.length; start += width) results.push(...(await Promise.all(items.slice(start, start + width).map(each))))
  return results
}

describe("SIGKILL under concurrent writes", () => {
  it("keeps every acknowledged write, leaves the file whole and nothing half-created, over three kill cycles", async () => {
    const expectations: Array<Expectation> = []
    let total = 0
    for (let cycle = 0; cycle < 3; cycle++) {
      child = await spawnServer({ databasePath: database.path })
      const server = child
      let alive = true
      const acknowledged = { count: 0 }
      const writers = Array.from({ length: 8 }, (_, i) => writer(server.request, `c${cycle}w${i}`, () => alive, expectations, acknowledged))
      // Let writes pile up, then kill at an arbitrary moment with requests in flight.
      await sleep(600 + Math.floor(Math.random() * 600))
      server.process.kill("SIGKILL")
      await server.exited
      alive = false
      try {
        await Promise.all(writers)
      } catch (error) {
        // The server's own account of a failed write (stack of a 500) explains it.
        throw new Error(`${(error as Error).message}\n--- server output ---\n${server.output().slice(-4000)}`)
      }
      child = undefined
      expect(acknowledged.count, `cycle ${cycle}: the writers made progress before the kill`).toBeGreaterThan(20)
      total += acknowledged.count

      expect(integrityCheck(database.path)).toEqual(["ok"])
      expect(halfCreated(database.path)).toEqual([])

      child = await spawnServer({ databasePath: database.path })
      // Checked 32 at a time, as a client with a connection pool would: hundreds at once would pass
      // the server's connection cap (SLIPWAY_MAX_CONNECTIONS), which refuses the surplus by design.
      const problems = (await inBatches(expectations, 32, (expectation) => expectation.check(child!))).filter((problem) => problem !== undefined)
      expect(problems).toEqual([])
      expect(await settled(child)).toEqual([])
      await stopChild(child, "SIGTERM")
      child = undefined
    }
    expect(total).toBeGreaterThan(60)
  })
})
