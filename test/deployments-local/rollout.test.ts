/**
 * The four modules together, as the local driver will use them: a deployment gets its
 * database and Redis, replica processes (plain node processes here; the driver runs them in
 * boxes) use DATABASE_URI and REDIS_URI before answering /ok, their output lands in the deploy
 * log, and a rollout from v1 to v2 through the deployment URL fails no request.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Exit, Layer, Schedule, Scope } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { DeploymentDatabases, makeDeploymentDatabases } from "../../server/deployments/local/databases.ts"
import { waitHealthy } from "../../server/deployments/local/health.ts"
import { type LogStore, makeFileLogStore } from "../../server/deployments/logs/index.ts"
import { type DeploymentProxy, deploymentUrl, makeDeploymentProxy, type ProxyTarget } from "../../server/deployments/local/proxy.ts"
import { PortAllocatorLive } from "../../server/runtime/PortAllocator.ts"
import { ProcessRunnerLive } from "../../server/runtime/ProcessRunner.ts"

const DEP = "7e57a11e-0000-4000-8000-00000000d001"
const V1 = "7e57a11e-0000-4000-8000-0000000000a1"
const V2 = "7e57a11e-0000-4000-8000-0000000000a2"
const publicUrl = "http://slipway.test"

/** A replica: answers /ok only once its database and Redis answer; / says its version. */
const replicaScript = `
const http = require("node:http"), net = require("node:net"), pg = require("pg")
let ready = false
const redisPing = (uri) => new Promise((resolve, reject) => {
  const u = new URL(uri), s = net.connect(Number(u.port), u.hostname)
  const pw = decodeURIComponent(u.password)
  s.on("connect", () => s.write("*2\\r\\n$4\\r\\nAUTH\\r\\n$" + pw.length + "\\r\\n" + pw + "\\r\\n*1\\r\\n$4\\r\\nPING\\r\\n"))
  let t = ""; s.on("data", (d) => { t += d; if (t.includes("PONG")) { s.destroy(); resolve() } else if (t.startsWith("-")) { s.destroy(); reject(new Error(t)) } })
  s.on("error", reject)
})
;(async () => {
  const c = new pg.Client({ connectionString: process.env.DATABASE_URI })
  await c.connect()
  await c.query("CREATE TABLE IF NOT EXISTS boots (version text, at timestamptz default now())")
  await c.query("INSERT INTO boots (version) VALUES ($1)", [process.env.VERSION])
  await c.end()
  await redisPing(process.env.REDIS_URI)
  console.error("WARNING: warmed up " + process.env.VERSION)
  ready = true
})().catch((e) => { console.error("ERROR: " + e.message); process.exit(1) })
http.createServer((req, res) => {
  if (req.url === "/ok") { res.writeHead(ready ? 200 : 503); return res.end() }
  res.writeHead(200, { "content-type": "text/plain" }); res.end(process.env.VERSION)
}).listen(Number(process.env.PORT), "127.0.0.1", () => console.log("listening on " + process.env.PORT))
`

let dir: string
/** The modules' scope: closing it stops the database servers, the log files and the proxy's connections. */
const scope = Scope.makeUnsafe()
const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)
let dbs: DeploymentDatabases["Service"]
let logs: LogStore["Service"]
let proxy: DeploymentProxy["Service"]
let front: http.Server
let base: string
const children: ChildProcess[] = []

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const s = net.createServer()
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })

const startReplica = async (revision: string, version: string, env: Record<string, string>): Promise<{ target: ProxyTarget; child: ChildProcess }> => {
  const port = await freePort()
  const child = spawn(process.execPath, ["-e", replicaScript], { cwd: path.join(import.meta.dirname, "../.."), env: { ...env, PORT: String(port), VERSION: version, PATH: process.env.PATH ?? "" } })
  children.push(child)
  void run(logs.pipe(child.stdout!, DEP, revision, "deploy", { stream: "stdout", replica: `${version}-0` }))
  void run(logs.pipe(child.stderr!, DEP, revision, "deploy", { stream: "stderr", replica: `${version}-0` }))
  const target = { host: "127.0.0.1", port }
  await run(
    waitHealthy(target, {
      timeoutMs: 20_000,
      schedule: Schedule.spaced(50),
      onAttempt: (h) => Effect.ignore(logs.append(DEP, revision, "deploy", { message: `health ${version}-0: ${h.detail}`, level: h.healthy ? "INFO" : "WARNING" }))
    })
  )
  return { target, child }
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "slipway-rollout-"))
  fs.chmodSync(dir, 0o755)
  ;[dbs, logs, proxy] = await run(
    Effect.all([makeDeploymentDatabases({ dataDir: dir }), makeFileLogStore({ root: path.join(dir, "logs") }), makeDeploymentProxy({ publicUrl })]).pipe(
      Scope.provide(scope),
      Effect.provide(Layer.mergeAll(ProcessRunnerLive, PortAllocatorLive))
    )
  )
  front = http.createServer((req, res) => {
    if (!proxy.handle(req, res)) res.writeHead(404).end()
  })
  await new Promise<void>((r) => front.listen(0, "127.0.0.1", r))
  base = `http://127.0.0.1:${(front.address() as net.AddressInfo).port}`
})

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL")
  front?.closeAllConnections()
  await new Promise<void>((r) => (front ? front.close(() => r()) : r()))
  if (dbs) await run(Effect.ignore(dbs.release(DEP)))
  await run(Scope.close(scope, Exit.void))
  fs.rmSync(dir, { recursive: true, force: true })
})

it("provisions, serves v1, rolls out v2 without a failed request, and logs it all", async () => {
  const env = await run(dbs.provision(DEP, { redisMemoryMb: 16 }))
  await run(proxy.setRoute(DEP, { name: "agent", url: deploymentUrl(publicUrl, "agent") }))
  expect((await fetch(`${base}/d/agent/`)).status).toBe(503)

  const v1 = await startReplica(V1, "v1", { DATABASE_URI: env.databaseUri, REDIS_URI: env.redisUri })
  await run(proxy.setTargets(DEP, [v1.target]))
  expect(await (await fetch(`${base}/d/agent/`)).text()).toBe("v1")

  let stop = false
  const answers: string[] = []
  const failures: string[] = []
  const load = (async () => {
    while (!stop) {
      try {
        const r = await fetch(`${base}/d/agent/`)
        const text = await r.text()
        if (r.status === 200) answers.push(text)
        else failures.push(`${r.status} ${text}`)
      } catch (e) {
        failures.push(String(e))
      }
    }
  })()

  const v2 = await startReplica(V2, "v2", { DATABASE_URI: env.databaseUri, REDIS_URI: env.redisUri })
  await run(proxy.setTargets(DEP, [v2.target]))
  expect(await run(proxy.drain([v1.target], 5000))).toBe(true)
  v1.child.kill("SIGTERM")
  await new Promise((r) => setTimeout(r, 300))
  stop = true
  await load

  expect(failures).toEqual([])
  expect(answers).toContain("v1")
  expect(answers[answers.length - 1]).toBe("v2")
  // Once v2 answered, v1 never did again.
  expect(answers.slice(answers.indexOf("v2"))).not.toContain("v1")

  // Both revisions used the deployment's own database.
  const c = await import("pg")
  const client = new c.default.Client({ connectionString: env.databaseUri })
  await client.connect()
  const boots = await client.query("SELECT version FROM boots ORDER BY at")
  await client.end()
  expect(boots.rows.map((r) => r.version)).toEqual(["v1", "v2"])

  const v2Logs = (await run(logs.read(DEP, { kind: "deploy", revisionId: V2, order: "asc", limit: 1000 }))).logs
  expect(v2Logs.map((e) => e.message)).toEqual(expect.arrayContaining([expect.stringMatching(/^listening on \d+$/), "WARNING: warmed up v2", expect.stringMatching(/^health v2-0: GET \/ok answered 200$/)]))
  expect(v2Logs.find((e) => e.message === "WARNING: warmed up v2")).toMatchObject({ level: "WARNING", stream: "stderr", replica: "v2-0" })
  const all = (await run(logs.read(DEP, { kind: "deploy", query: "warmed up", order: "asc" }))).logs
  expect(all.map((e) => e.revision_id)).toEqual([V1, V2])
})
