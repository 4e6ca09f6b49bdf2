/**
 * Deployment replicas under gVisor (`SLIPWAY_DEPLOYMENT_ISOLATION=gvisor`): a real server with the
 * `local` runtime deploys a real image; its replicas are gVisor sandboxes whose health is read in
 * their own network stack, whose port the deployment URL reaches through the exec helper, and whose
 * PostgreSQL and Redis answer on their own loopback (the egress, through the helper too).
 */
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { replicaBoxPrefix } from "../../server/deployments/drivers/local.ts"
import { startServer } from "../../server/index.ts"
import { makeLogger } from "../../server/log.ts"
import { cgroupParentFor } from "../../server/runtime/local/RuntimeRoot.ts"
import { makeTestRunner, type TestRunner } from "../runtime/local/harness.ts"
import { requireIsolation } from "../support/isolation.ts"
import { pushTestImages, removeTestImages, type TestImageRefs } from "../support/images.ts"
import { startRegistry, type TestRegistry } from "../support/registry.ts"
import { makeRequester, TEST_KEY, tempDatabasePath } from "../support/server.ts"
import { openDatabases } from "./openDatabases.ts"
import { pushVersionedImage } from "./versioned.ts"

const VARIABLES = ["SLIPWAY_INSECURE_REGISTRIES", "SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS", "SLIPWAY_DEPLOYMENT_ISOLATION"] as const
const saved = Object.fromEntries(VARIABLES.map((key) => [key, process.env[key]]))
const database = tempDatabasePath("deploygvisor")
let registry: TestRegistry
let refs: TestImageRefs
let versioned: string
let server: Awaited<ReturnType<typeof startServer>>
let request: ReturnType<typeof makeRequester>
let runner: TestRunner | undefined

beforeAll(async () => {
  requireIsolation("gvisor")
  registry = await startRegistry()
  refs = await pushTestImages(registry.host, { only: ["busybox", "never-healthy"] })
  versioned = await pushVersionedImage(registry)
  process.env.SLIPWAY_INSECURE_REGISTRIES = registry.host
  process.env.SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS = "4000"
  process.env.SLIPWAY_DEPLOYMENT_ISOLATION = "gvisor"
  server = await startServer({ port: 0, databasePath: database.path, apiKey: TEST_KEY, runtime: "local", logger: makeLogger("silent"), revisionStepMs: 20 })
  request = makeRequester(server.url, TEST_KEY)
}, 180_000)

afterAll(async () => {
  await server?.close()
  await openDatabases({ dataDir: join(database.dir, "runtime", "deployment-data") })
    .then((databases) => databases.close())
    .catch(() => undefined)
  await registry?.stop()
  removeTestImages()
  for (const key of VARIABLES) {
    if (saved[key] === undefined) delete process.env[key]
    else process.env[key] = saved[key]
  }
  database.remove()
}, 180_000)

const deploy = async (name: string, image: string, secrets: Array<{ name: string; value: string }> = []) => {
  const { status, body } = await request("POST", "/v2/deployments", {
    body: { name, source: "external_container", source_config: { resource_spec: {} }, source_revision_config: { image_uri: image }, secrets }
  })
  expect(status, JSON.stringify(body)).toBe(201)
  for (const deadline = Date.now() + 90_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 50))) {
    const revision = (await request("GET", `/v2/deployments/${body.id}/revisions/${body.latest_revision_id}`)).body
    if (["DEPLOYED", "DEPLOY_FAILED"].includes(revision.status)) return { id: body.id as string, revision: body.latest_revision_id as string, status: revision.status as string, message: revision.status_message as string }
  }
  throw new Error(`${name} did not finish deploying`)
}

/** Runs a shell script in the revision's replica box (a runner of our own attached to it). */
const inReplica = async (revisionId: string, script: string) => {
  const boxesRoot = join(database.dir, "runtime", "boxes")
  runner ??= await makeTestRunner({ root: boxesRoot, cgroupParent: cgroupParentFor(join(database.dir, "runtime")) })
  const id = readdirSync(boxesRoot).find((name) => name.startsWith(replicaBoxPrefix(revisionId)) && existsSync(join(boxesRoot, name, "run.json")))
  const box = id === undefined ? undefined : await runner.attach(id)
  if (!box) throw new Error(`no running replica box of ${revisionId}`)
  const p = box.exec(["/bin/sh", "-c", script])
  let out = ""
  p.stdout.on("data", (d: Buffer) => (out += d.toString()))
  p.stderr.on("data", (d: Buffer) => (out += d.toString()))
  await p.exited
  await new Promise((resolve) => setTimeout(resolve, 20))
  return { out, isolation: box.box.isolation }
}

describe("deployment replicas under gVisor", () => {
  it("deploy, pass their health check, serve at {public}/d/{name} and reach their database and Redis on their own loopback", async () => {
    const app = await deploy("gvisor-app", versioned, [{ name: "VERSION", value: "g1" }])
    expect(app, app.message).toMatchObject({ status: "DEPLOYED" })
    const version = await fetch(`${server.url}/d/gvisor-app/version`)
    expect({ status: version.status, text: (await version.text()).trim() }).toEqual({ status: 200, text: "g1" })
    const env = (await (await fetch(`${server.url}/d/gvisor-app/env`)).text()).split("\n")
    const redisUri = env.find((line) => line.startsWith("REDIS_URI="))!.slice("REDIS_URI=".length)
    const password = decodeURIComponent(new URL(redisUri).password)
    const inside = await inReplica(app.revision, `dmesg | head -1; (printf 'AUTH ${password}\\r\\nPING\\r\\n'; sleep 1) | nc 127.0.0.1 6379; printf '' | nc 127.0.0.1 5432 && echo pg-open`)
    expect(inside.isolation).toBe("gvisor")
    expect(inside.out).toContain("Starting gVisor")
    expect(inside.out).toContain("+PONG")
    expect(inside.out).toContain("pg-open")
  }, 180_000)

  it("an image that never listens fails its health check: nothing listens in the sandbox's own network stack", async () => {
    const sleeper = await deploy("gvisor-sleeper", refs.neverHealthy)
    expect(sleeper.status).toBe("DEPLOY_FAILED")
    expect(sleeper.message).toMatch(/not healthy after 4 s: nothing listens on port 8000/)
  }, 120_000)
})
