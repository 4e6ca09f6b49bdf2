/**
 * Real deployments end to end: a Slipway server with the `local` runtime, a real OCI registry
 * (Debian's docker-registry) serving test images built here, real boxes, Slipway's own
 * PostgreSQL and a Redis per deployment. Asserts the states and their messages, the deployment
 * URL (also during a rollout between two healthy revisions), DEPLOY_FAILED for a crash and a
 * health timeout, the CLI's log endpoints, a server restart and delete, from a data directory
 * deeper than a unix socket path may be long.
 */
import { join } from "node:path"
import { existsSync, readdirSync } from "node:fs"
import * as net from "node:net"
import { Effect } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { replicaBoxPrefix } from "../../server/deployments/drivers/local.ts"
import { startServer } from "../../server/index.ts"
import { makeLogger } from "../../server/log.ts"
import { cgroupParentFor } from "../../server/runtime/local/RuntimeRoot.ts"
import { makeTestRunner, type TestRunner } from "../runtime/local/harness.ts"
import { pushTestImages, removeTestImages, type TestImageRefs } from "../support/images.ts"
import { startRegistry, type TestRegistry } from "../support/registry.ts"
import { makeRequester, TEST_KEY, tempDatabasePath } from "../support/server.ts"
import { closeLocalServer } from "./closeLocalServer.ts"
import { slipway } from "../cli/run.ts"
import { openDatabases } from "./openDatabases.ts"
import { pushVersionedImage } from "./versioned.ts"
import { setEnv } from "../support/env.ts"

let registry: TestRegistry
let refs: TestImageRefs
/** busybox serving /tmp/www: `ok`, `version` (the VERSION secret) and `env` (its environment). */
let versioned: string
// Deep on purpose: every unix socket of the runtime (port bridges, egress, PostgreSQL) must work
// whatever the data directory's length (a socket path has at most 107 bytes).
const database = tempDatabasePath("deploylocal", { deep: true })
type Server = Awaited<ReturnType<typeof startServer>>
let server: Server
let request: ReturnType<typeof makeRequester>
let restoreEnv: () => void = () => undefined

/** Starts the server (again on the same port after a restart: the deployment URLs name it). */
const start = async () => {
  server = await startServer({ port: server?.port ?? 0, databasePath: database.path, apiKey: TEST_KEY, runtime: "local", logger: makeLogger("silent"), revisionStepMs: 20 })
  request = makeRequester(server.url, TEST_KEY)
}

beforeAll(async () => {
  registry = await startRegistry()
  refs = await pushTestImages(registry.host, { only: ["busybox", "crash", "never-healthy"] })
  versioned = await pushVersionedImage(registry)
  restoreEnv = setEnv({ SLIPWAY_INSECURE_REGISTRIES: registry.host, SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS: "4000", SLIPWAY_DEPLOY_DRAIN_MS: "2000" })
  await start()
}, 180_000)

afterAll(async () => {
  // A stopped server leaves no cgroup of its own behind (its boxes' nor their empty parent); then
  // whatever a failure left: boxes, the database servers.
  const { running, closed, leftCgroups } = await closeLocalServer(server, database.dir)
  await registry?.stop()
  removeTestImages()
  restoreEnv()
  database.remove()
  if (closed) throw closed
  // Nothing of the server's is left running.
  expect(running).toEqual([])
  expect(leftCgroups).toEqual([])
}, 180_000)

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Seen {
  readonly statuses: Array<string>
  readonly messages: Array<string>
}

/** Polls a revision until it is in a final state; records every status and message it showed. */
const waitRevision = async (deploymentId: string, revisionId: string, timeoutMs = 90_000): Promise<Seen & { readonly last: any }> => {
  const statuses: Array<string> = []
  const messages: Array<string> = []
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const { body } = await request("GET", `/v2/deployments/${deploymentId}/revisions/${revisionId}`)
    if (statuses.at(-1) !== body.status) statuses.push(body.status)
    if (body.status_message && messages.at(-1) !== body.status_message) messages.push(body.status_message)
    if (["DEPLOYED", "DEPLOY_FAILED", "BUILD_FAILED", "CREATE_FAILED", "INTERRUPTED", "SKIPPED"].includes(body.status)) return { statuses, messages, last: body }
    if (Date.now() > deadline) throw new Error(`revision ${revisionId} still ${body.status} (${body.status_message}) after ${timeoutMs} ms`)
    await sleep(25)
  }
}

const create = async (name: string, image: string, secrets: Array<{ name: string; value: string }> = [], resourceSpec: Record<string, unknown> = {}) => {
  const { status, body } = await request("POST", "/v2/deployments", {
    body: { name, source: "external_container", source_config: { resource_spec: resourceSpec }, source_revision_config: { image_uri: image }, secrets }
  })
  expect(status, JSON.stringify(body)).toBe(201)
  return body as { id: string; latest_revision_id: string; status: string; source_config: { custom_url: string | null } }
}

const url = (name: string, path: string) => `${server.url}/d/${name}${path}`
const get = async (name: string, path: string) => {
  const response = await fetch(url(name, path))
  return { status: response.status, text: (await response.text()).trim() }
}

/** The server's boxes, seen through a runner of our own on its state directory. */
const boxesRoot = () => join(database.dir, "runtime", "boxes")
let runner: TestRunner | undefined

/** The running replica boxes of a revision. */
const replicaBoxes = async (revisionId: string) => {
  runner ??= await makeTestRunner({ root: boxesRoot(), cgroupParent: cgroupParentFor(join(database.dir, "runtime")) })
  const prefix = replicaBoxPrefix(revisionId)
  const ids = existsSync(boxesRoot()) ? readdirSync(boxesRoot()).filter((id) => id.startsWith(prefix) && /-\d+-[0-9a-f]{6}$/.test(id)) : []
  const boxes = await Promise.all(ids.map((id) => runner!.attach(id)))
  return boxes.filter((box) => box !== undefined)
}

const inBox = async (revisionId: string, script: string) => {
  const [box] = await replicaBoxes(revisionId)
  const p = box!.exec(["/bin/sh", "-c", script])
  let out = ""
  p.stdout.on("data", (d: Buffer) => (out += d.toString()))
  p.stderr.on("data", (d: Buffer) => (out += d.toString()))
  const exit = await p.exited
  await sleep(20)
  return { code: exit.code, out }
}

let app: { id: string; v1: string; v2?: string }
/** The deployment's database and Redis as the host sees them. */
let hostUris: { databaseUri: string; redisUri: string }

describe("a revision runs, serves and logs", () => {
  it("walks CREATING → … → DEPLOYED with messages, and DEPLOYED means it answers at {public}/d/{name}", async () => {
    const deployment = await create("agent", versioned, [{ name: "VERSION", value: "v1" }], { min_scale: 2, redis_memory_mb: 32 })
    expect(deployment.status).toBe("AWAITING_DATABASE")
    // Its URL, as the API (and the action's `url` output) shows it.
    expect(deployment.source_config.custom_url).toBe(`${server.url}/d/agent`)
    const seen = await waitRevision(deployment.id, deployment.latest_revision_id)
    expect(seen.last.status, JSON.stringify(seen)).toBe("DEPLOYED")
    expect(seen.statuses).toContain("DEPLOYING")
    // The pull shows in the status: its first message, or the image store's progress that follows at once.
    expect(seen.messages.some((m) => m.startsWith("pulling image") || m.startsWith("resolving ")), JSON.stringify(seen.messages)).toBe(true)
    expect(seen.messages).toContain("Deployed: 2 replicas healthy")
    app = { id: deployment.id, v1: deployment.latest_revision_id }
    // Served at once: the switch happens before DEPLOYED is reported.
    expect(await get("agent", "/version")).toEqual({ status: 200, text: "v1" })
    expect((await request("GET", `/v2/deployments/${deployment.id}`)).body.status).toBe("READY")
    expect(await replicaBoxes(deployment.latest_revision_id)).toHaveLength(2)
  }, 120_000)

  it("gives replicas PORT, the secrets, DATABASE_URI and REDIS_URI reachable on their own loopback", async () => {
    const env = Object.fromEntries((await get("agent", "/env")).text.split("\n").map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]))
    expect(env.PORT).toBe("8000")
    expect(env.VERSION).toBe("v1")
    expect(env.LANGSMITH_HOST_PROJECT_ID).toBe(app.id)
    expect(env.DATABASE_URI).toMatch(/^postgres:\/\/slipway_[^:]+:[^@]+@127\.0\.0\.1:5432\//)
    expect(env.REDIS_URI).toMatch(/^redis:\/\/:[^@]+@127\.0\.0\.1:6379\/0$/)
    const password = decodeURIComponent(new URL(env.REDIS_URI!).password)
    const redis = await inBox(app.v1, `(printf 'AUTH ${password}\\r\\nPING\\r\\n'; sleep 1) | nc 127.0.0.1 6379`)
    expect(redis.out).toContain("+PONG")
    expect((await inBox(app.v1, "printf '' | nc 127.0.0.1 5432 && echo open")).out).toContain("open")
  }, 60_000)

  it("its database and Redis are real and its own: reachable from outside, closed to another deployment", async () => {
    const other = await create("other", versioned, [{ name: "VERSION", value: "o" }])
    expect((await waitRevision(other.id, other.latest_revision_id)).last.status).toBe("DEPLOYED")
    // Outside view of the same provisioning (provision is idempotent: same roles and passwords).
    const outside = await openDatabases({ dataDir: join(database.dir, "runtime", "deployment-data") })
    const mine = await outside.provision(app.id)
    hostUris = mine
    const theirs = await outside.provision(other.id)
    const client = new pg.Client({ connectionString: mine.databaseUri })
    await client.connect()
    await client.query("CREATE TABLE IF NOT EXISTS t (x int)")
    await client.end()
    const intruder = new URL(theirs.databaseUri)
    intruder.pathname = new URL(mine.databaseUri).pathname
    const denied = new pg.Client({ connectionString: intruder.toString() })
    await expect(denied.connect()).rejects.toThrow(/permission denied|not permitted/)
    await denied.end().catch(() => undefined)
    expect(mine.redisUri).not.toBe(theirs.redisUri)
    expect((await request("DELETE", `/v2/deployments/${other.id}`)).status).toBe(204)
  }, 120_000)

  it("fails a crashing image with DEPLOY_FAILED, the reason and its last lines; the URL says no revision", async () => {
    const d = await create("crasher", refs.crash)
    const seen = await waitRevision(d.id, d.latest_revision_id)
    expect(seen.last.status).toBe("DEPLOY_FAILED")
    expect(seen.last.status_message).toMatch(/exited \(exit code 1\) before it was healthy: crash: exiting at once/)
    const answer = await get("crasher", "/ok")
    expect(answer.status).toBe(503)
    // Its database was provisioned, but nothing deployed: the deployment is not READY (design.md §5).
    expect((await request("GET", `/v2/deployments/${d.id}`)).body).toMatchObject({ status: "AWAITING_DATABASE", active_revision_id: null })
    expect(await replicaBoxes(d.latest_revision_id)).toHaveLength(0)
  }, 120_000)

  it("fails an image that never becomes healthy after the health timeout", async () => {
    const d = await create("sleeper", refs.neverHealthy)
    const seen = await waitRevision(d.id, d.latest_revision_id)
    expect(seen.last.status).toBe("DEPLOY_FAILED")
    expect(seen.last.status_message).toMatch(/not healthy after 4 s: nothing listens on port 8000/)
    expect(await replicaBoxes(d.latest_revision_id)).toHaveLength(0)
  }, 120_000)

  it("fails a pull error with DEPLOY_FAILED and the registry's reason in the build log", async () => {
    const d = await create("missing", `${registry.host}/slipway-test/nope:1`)
    const seen = await waitRevision(d.id, d.latest_revision_id)
    expect(seen.last.status).toBe("DEPLOY_FAILED")
    expect(seen.last.status_message).toMatch(/manifest unknown|not found/i)
    const build = await request("POST", `/v1/projects/${d.id}/revisions/${d.latest_revision_id}/build_logs`, { body: { order: "asc", limit: 50 } })
    expect(build.status).toBe(200)
    expect(build.body.logs.some((l: any) => l.level === "ERROR" && /pull failed/.test(l.message))).toBe(true)
  }, 120_000)
})

describe("init containers, sidecars, emptyDir", () => {
  it("runs init containers to completion first and sidecars alongside, sharing emptyDir volumes", async () => {
    const spec = {
      volumes: [{ name: "scratch", emptyDir: {} }],
      volume_mounts: [{ name: "scratch", mountPath: "/data" }],
      init_containers: [
        { name: "prepare", image: versioned, command: ["/bin/sh", "-c", "echo prepared-by-init > /data/marker && echo init done"], volumeMounts: [{ name: "scratch", mountPath: "/data" }] }
      ],
      sidecars: [{ name: "helper", image: versioned, command: ["/bin/sh", "-c", "echo sidecar up; cat /data/marker; exec sleep 100000"], volumeMounts: [{ name: "scratch", mountPath: "/data" }] }]
    }
    const d = await create("pod", versioned, [{ name: "VERSION", value: "p" }], spec)
    const seen = await waitRevision(d.id, d.latest_revision_id)
    expect(seen.last.status, JSON.stringify(seen)).toBe("DEPLOYED")
    expect((await inBox(d.latest_revision_id, "cat /data/marker")).out.trim()).toBe("prepared-by-init")
    const logs = (await request("POST", `/v1/projects/${d.id}/deploy_logs`, { body: { order: "asc", limit: 500 } })).body.logs as Array<any>
    const messages = logs.map((l) => `${l.replica ?? ""} ${l.message}`)
    expect(messages.some((m) => m.endsWith("/prepare init done"))).toBe(true)
    expect(messages.some((m) => m.includes("/helper sidecar up"))).toBe(true)
    expect(messages.some((m) => m.includes("/helper prepared-by-init"))).toBe(true)
    // The init container finished before the replica started.
    const initDone = logs.findIndex((l) => l.message === "init done")
    const started = logs.findIndex((l) => /^replica .*: started/.test(l.message))
    expect(initDone).toBeGreaterThanOrEqual(0)
    expect(started).toBeGreaterThan(initDone)
    expect((await request("DELETE", `/v2/deployments/${d.id}`)).status).toBe(204)
  }, 120_000)

  it("fails the revision when an init container fails", async () => {
    const d = await create("badinit", versioned, [], { init_containers: [{ name: "migrate", image: versioned, command: ["/bin/sh", "-c", "echo migration failed >&2; exit 3"] }] })
    const seen = await waitRevision(d.id, d.latest_revision_id)
    expect(seen.last.status).toBe("DEPLOY_FAILED")
    expect(seen.last.status_message).toMatch(/init container migrate of replica .* failed \(exit code 3\): migration failed/)
    expect((await request("DELETE", `/v2/deployments/${d.id}`)).status).toBe(204)
  }, 120_000)
})

describe("rollout", () => {
  it("switches between two healthy revisions without a failed request, then stops the old replicas", async () => {
    let stop = false
    const answers: Array<string> = []
    const perLoop: Array<Array<string>> = [[], [], []]
    const failures: Array<string> = []
    const hammer = async (mine: Array<string>) => {
      while (!stop) {
        try {
          const a = await get("agent", "/version")
          if (a.status !== 200) failures.push(`${a.status} ${a.text}`)
          else {
            answers.push(a.text)
            mine.push(a.text)
          }
        } catch (error) {
          failures.push(String(error))
        }
      }
    }
    const loops = perLoop.map(hammer)
    await sleep(300)
    const patched = await request("PATCH", `/v2/deployments/${app.id}`, { body: { secrets: [{ name: "VERSION", value: "v2" }] } })
    expect(patched.status).toBe(200)
    const v2 = patched.body.latest_revision_id as string
    expect(v2).not.toBe(app.v1)
    app.v2 = v2
    const seen = await waitRevision(app.id, v2)
    expect(seen.last.status).toBe("DEPLOYED")
    await sleep(500)
    stop = true
    await Promise.all(loops)
    expect(failures).toEqual([])
    expect(answers).toContain("v1")
    expect(answers.at(-1)).toBe("v2")
    // A request sent after another one of the same client got v2 never gets v1 (requests in
    // flight during the switch finish on the old replicas, whichever client sent them).
    for (const mine of perLoop) {
      expect(mine.length).toBeGreaterThan(0)
      expect(mine.slice(mine.indexOf("v2")).every((a) => a === "v2")).toBe(true)
    }
    // The old replicas drain and stop.
    const deadline = Date.now() + 10_000
    while ((await replicaBoxes(app.v1)).length > 0 && Date.now() < deadline) await sleep(100)
    expect(await replicaBoxes(app.v1)).toHaveLength(0)
  }, 180_000)

  it("redeploy of the older revision starts it again and answers once the URL serves it; so does slipway rollback", async () => {
    // The older revision's replicas are gone: the redeploy starts them, and answers only once they serve.
    expect(await replicaBoxes(app.v1)).toHaveLength(0)
    const r = await request("POST", `/v2/deployments/${app.id}/revisions/${app.v1}/redeploy`)
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(r.body.active_revision_id).toBe(app.v1)
    for (let i = 0; i < 5; i++) expect(await get("agent", "/version")).toEqual({ status: 200, text: "v1" })
    // The CLI's rollback (to the newer one here) waits the same way: served when it exits.
    const rollback = await slipway(["rollback", "agent", "--to", app.v2!], { SLIPWAY_URL: server.url, SLIPWAY_API_KEY: TEST_KEY })
    expect(rollback.code, rollback.stderr).toBe(0)
    for (let i = 0; i < 5; i++) expect(await get("agent", "/version")).toEqual({ status: 200, text: "v2" })
    // Redeploying what already serves answers at once.
    const again = await request("POST", `/v2/deployments/${app.id}/revisions/${app.v2}/redeploy`)
    expect(again.status).toBe(200)
    expect(await get("agent", "/version")).toEqual({ status: 200, text: "v2" })
  }, 90_000)
})

describe("crash after DEPLOYED", () => {
  it("restarts a replica's main process that exits, on a growing delay, and the deploy log says so", async () => {
    const boxes = await replicaBoxes(app.v2!)
    expect(boxes.length).toBeGreaterThan(0)
    // Every box of the revision: one of an earlier run of v2 may still be draining (under load),
    // and a draining replica is not restarted.
    await Promise.all(boxes.map((box) => box.exec(["/bin/sh", "-c", "killall httpd"]).exited))
    const deadline = Date.now() + 40_000
    let restarted: any
    while (!restarted && Date.now() < deadline) {
      await sleep(100)
      const logs = (await request("POST", `/v1/projects/${app.id}/revisions/${app.v2}/deploy_logs`, { body: { query: "restarting in", limit: 10 } })).body.logs
      restarted = logs[0]
    }
    expect(restarted?.message).toMatch(/^replica \S+ exited \(.+\); restarting in 500 ms$/)
    expect(restarted?.level).toBe("ERROR")
    // The restarted process answers again (four answers in a row reach both replicas), and the revision stays DEPLOYED.
    let inARow = 0
    while (inARow < 4 && Date.now() < deadline) {
      const answer = await get("agent", "/version")
      inARow = answer.status === 200 && answer.text === "v2" ? inARow + 1 : 0
      if (inARow === 0) await sleep(100)
    }
    expect(inARow).toBe(4)
    expect((await request("GET", `/v2/deployments/${app.id}/revisions/${app.v2}`)).body.status).toBe("DEPLOYED")
  }, 90_000)
})

describe("logs", () => {
  it("serves build and deploy logs at the CLI's endpoints, 404 for another tenant", async () => {
    const build = await request("POST", `/v1/projects/${app.id}/revisions/${app.v2}/build_logs`, { body: { order: "asc", limit: 100 } })
    expect(build.status).toBe(200)
    expect(build.body.logs.map((l: any) => l.message).join("\n")).toMatch(/pulling image/)
    const deploy = await request("POST", `/v1/projects/${app.id}/deploy_logs`, { body: { order: "desc", limit: 200 } })
    expect(deploy.status).toBe(200)
    const messages = deploy.body.logs.map((l: any) => l.message)
    expect(messages.some((m: string) => m.startsWith("serving v2 on 8000"))).toBe(true)
    expect(messages.some((m: string) => /^health .*: GET \/ok answered 200/.test(m))).toBe(true)
    const one = await request("POST", `/v1/projects/${app.id}/revisions/${app.v1}/deploy_logs`, { body: { query: "serving v1", limit: 10 } })
    expect(one.body.logs.length).toBeGreaterThan(0)
    expect(one.body.logs.every((l: any) => l.revision_id === app.v1)).toBe(true)
    const bad = await request("POST", `/v1/projects/${app.id}/deploy_logs`, { body: { offset: "not-a-cursor" } })
    expect(bad.status).toBe(422)
    const otherTenant = "11111111-2222-4333-8444-555555555555"
    const key = Effect.runSync(server.keys.createKey({ tenantId: otherTenant })).key
    const foreign = await request("POST", `/v1/projects/${app.id}/deploy_logs`, { body: {}, key })
    expect(foreign.status).toBe(404)
    const foreignBuild = await request("POST", `/v1/projects/${app.id}/revisions/${app.v2}/build_logs`, { body: {}, key })
    expect(foreignBuild.status).toBe(404)
  }, 30_000)
})

describe("restart and delete", () => {
  it("after a server restart the active revision serves again, without a new revision", async () => {
    const before = (await request("GET", `/v2/deployments/${app.id}`)).body
    await server.close()
    await start()
    const deadline = Date.now() + 60_000
    let answer = await get("agent", "/version").catch(() => ({ status: 0, text: "" }))
    while (answer.text !== "v2" && Date.now() < deadline) {
      await sleep(200)
      answer = await get("agent", "/version").catch(() => ({ status: 0, text: "" }))
    }
    expect(answer).toEqual({ status: 200, text: "v2" })
    const after = (await request("GET", `/v2/deployments/${app.id}`)).body
    expect(after.latest_revision_id).toBe(before.latest_revision_id)
    expect(after.active_revision_id).toBe(app.v2)
    const revisions = (await request("GET", `/v2/deployments/${app.id}/revisions`)).body.resources
    expect(revisions).toHaveLength(2)
  }, 120_000)

  it("delete stops its replicas, drops its database and Redis, and its URL stops answering", async () => {
    expect((await request("DELETE", `/v2/deployments/${app.id}`)).status).toBe(204)
    const deadline = Date.now() + 30_000
    while ((await request("GET", `/v2/deployments/${app.id}`)).status !== 404 && Date.now() < deadline) await sleep(100)
    expect((await request("GET", `/v2/deployments/${app.id}`)).status).toBe(404)
    expect(await replicaBoxes(app.v2!)).toHaveLength(0)
    expect((await get("agent", "/version")).status).toBe(404)
    expect(readdirSync(boxesRoot()).filter((id) => id.startsWith(replicaBoxPrefix(app.v2!)))).toEqual([])
    // Its Redis no longer answers, its files are gone, its database is dropped.
    expect(existsSync(join(database.dir, "runtime", "deployment-data", "deployments", app.id, "databases.json"))).toBe(false)
    expect(existsSync(join(database.dir, "runtime", "deployment-data", "deployments", app.id, "redis"))).toBe(false)
    const redisPort = Number(new URL(hostUris.redisUri).port)
    const refused = await new Promise<boolean>((resolve) => {
      const s = net.connect(redisPort, "127.0.0.1")
      s.once("connect", () => (s.destroy(), resolve(false)))
      s.once("error", () => resolve(true))
    })
    expect(refused).toBe(true)
    const client = new pg.Client({ connectionString: hostUris.databaseUri })
    await expect(client.connect()).rejects.toThrow()
    await client.end().catch(() => undefined)
  }, 60_000)
})
