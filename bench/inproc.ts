/**
 * In-process cost of the server's own code per request, next to the floor's (bench/floor.ts),
 * without HTTP or a load generator: both request listeners are called with the same stand-in
 * request and response objects, one request at a time, and the CPU time per request is
 * reported. Node's HTTP parsing and socket writes (the same for both) are left out, so this
 * shows what the server adds above the floor, with less noise than the HTTP bench on a shared
 * machine (floor and server alternate in blocks of 20 requests; the median block counts). The
 * CPU time is the process's, so V8's background threads are in it.
 *
 *   node bench/inproc.ts <seeded slipway.db (e.g. BENCH_KEEP=1 npm run bench)> [scenario,...] [seconds]
 *   INPROC_ONLY=server node --cpu-prof bench/inproc.ts <db> patch-deployment 10   # one side alone, for a profile
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs"
import { EventEmitter } from "node:events"
import http from "node:http"
import { syncBuiltinESMExports } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startServer } from "../server/index.ts"
import { makeFloorOps, openFloorDatabase, serveFloor } from "./floor.ts"
import { benchKey } from "./seed.ts"

const [source, only, secondsArg] = process.argv.slice(2)
if (!source) throw new Error("usage: node bench/inproc.ts <seeded slipway.db> [scenario,...] [seconds]")
const seconds = Number(secondsArg ?? 2)
const dir = mkdtempSync(join(tmpdir(), "slipway-inproc-"))
const path = join(dir, "slipway.db")
copyFileSync(source, path)
for (const suffix of ["-wal", "-shm", ".secrets-key"]) if (existsSync(source + suffix)) copyFileSync(source + suffix, path + suffix)

class FakeRequest extends EventEmitter {
  readonly headers: Record<string, string>
  /** As Node gives them: name, value, name, value… (the replicas' hook scans these). */
  readonly rawHeaders: ReadonlyArray<string>
  readonly url: string
  readonly method: string
  readonly body: string | undefined
  readonly socket = { remoteAddress: "127.0.0.1" }
  constructor(method: string, url: string, headers: Record<string, string>, body?: string) {
    super()
    this.method = method
    this.url = url
    this.body = body
    this.headers = body === undefined ? headers : { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }
    this.rawHeaders = Object.entries(this.headers).flat()
  }
  resume() {
    return this
  }
  pipe() {}
}

class FakeResponse {
  headersSent = false
  statusCode = 0
  text = ""
  readonly done: Promise<void>
  private finish!: () => void
  constructor() {
    this.done = new Promise((resolve) => (this.finish = resolve))
  }
  writeHead(status: number) {
    this.statusCode = status
    return this
  }
  setHeader() {}
  once() {}
  on() {}
  end(text?: string) {
    this.headersSent = true
    this.text = text ?? ""
    this.finish()
  }
}

type Listener = (request: any, response: any) => void

const call = async (listener: Listener, method: string, url: string, key: string, body?: string) => {
  const request = new FakeRequest(method, url, { "x-api-key": key, host: "127.0.0.1" }, body)
  const response = new FakeResponse()
  listener(request, response)
  if (body !== undefined) {
    request.emit("data", Buffer.from(body))
    request.emit("end")
  }
  await response.done
  if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.statusCode} ${response.text}`)
}

// The server's listener: captured from the node server startServer creates.
let captured: http.Server | undefined
const createServer = http.createServer
;(http as any).createServer = (...args: Array<any>) => (captured = (createServer as any)(...args))
syncBuiltinESMExports()
const server = await startServer({ databasePath: path, port: 0, host: "127.0.0.1", apiKey: benchKey(0), revisionStepMs: 3_600_000, runtime: "simulated", logLevel: "warn" })
;(http as any).createServer = createServer
syncBuiltinESMExports()
const serverListener: Listener = (request, response) => captured!.emit("request", request, response)
const floorListener: Listener = serveFloor(makeFloorOps(openFloorDatabase(path))) as Listener

const db = server.db
const key = benchKey(0)
const tenant = "00000000-0000-4000-8000-000000000001"
const deployments = db.prepare("SELECT id, latest_revision_id AS rid, source FROM deployments WHERE tenant_id = ?").all(tenant) as Array<{ id: string; rid: string; source: string }>
const containers = deployments.filter((d) => d.source === "external_container")
const volumes = db.prepare("SELECT name FROM sandbox_volumes WHERE tenant_id = ?").pluck().all(tenant) as Array<string>
/** Each resize grows its volume by 1 MiB from its current size: the same work however many run (bench/run.ts does the same). */
const volumeMiB = new Map(
  (db.prepare("SELECT name, size_bytes FROM sandbox_volumes WHERE tenant_id = ?").all(tenant) as Array<{ name: string; size_bytes: number | bigint }>).map(
    (row) => [row.name, Math.ceil(Number(row.size_bytes) / 1024 ** 2)] as const
  )
)
const grownSize = (name: string) => {
  const size = volumeMiB.get(name)! + 1
  volumeMiB.set(name, size)
  return `${size}Mi`
}
let n = 0
const pick = <A>(items: ReadonlyArray<A>) => items[n % items.length]!
const run = Date.now().toString(36)

const scenarios: Record<string, () => [string, string, string?]> = {
  "get-deployment": () => ["GET", `/v2/deployments/${pick(deployments).id}`],
  "get-revision": () => {
    const d = pick(deployments)
    return ["GET", `/v2/deployments/${d.id}/revisions/${d.rid}`]
  },
  "list-templates-offset-0": () => ["GET", "/v2/sandboxes/templates?limit=100&offset=0"],
  "patch-volume-size": () => {
    const name = pick(volumes)
    return ["PATCH", `/v2/sandboxes/volumes/${name}`, JSON.stringify({ size: grownSize(name) })]
  },
  "patch-deployment": () => ["PATCH", `/v2/deployments/${pick(containers).id}`, JSON.stringify({ source_revision_config: { image_uri: `ghcr.io/acme/agent:inproc-${n}` } })],
  "create-deployment": () => [
    "POST",
    "/v2/deployments",
    JSON.stringify({ name: `inproc-${run}-${n}`, source: "external_container", source_revision_config: { image_uri: "ghcr.io/acme/agent:1.0.0" } })
  ]
}

/** CPU time of `count` requests through `listener`, in microseconds. */
const block = async (listener: Listener, next: () => [string, string, string?], count: number) => {
  const cpu = process.cpuUsage()
  for (let i = 0; i < count; i++, n++) {
    const [method, url, body] = next()
    await call(listener, method, url, key, body)
  }
  const used = process.cpuUsage(cpu)
  return used.user + used.system
}

try {
  for (const name of only ? only.split(",") : Object.keys(scenarios)) {
    const next = scenarios[name]!
    // Warm-up, then floor and server in alternating blocks of 20 requests, so that a change of
    // the machine's load weighs on both alike; the median block of each counts.
    if (process.env.INPROC_ONLY === "server" || process.env.INPROC_ONLY === "floor") {
      // For a CPU profile of the server alone.
      const until = performance.now() + seconds * 1000
      let cpu = 0
      let count = 0
      while (performance.now() < until) {
        cpu += await block(process.env.INPROC_ONLY === "floor" ? floorListener : serverListener, next, 100)
        count += 100
      }
      process.stdout.write(`${name} ${process.env.INPROC_ONLY} alone: ${count} requests, ${(cpu / count).toFixed(1)} us CPU each\n`)
      continue
    }
    for (const listener of [floorListener, serverListener]) await block(listener, next, 2000)
    const floor: Array<number> = []
    const served: Array<number> = []
    const until = performance.now() + seconds * 1000
    while (performance.now() < until) {
      floor.push((await block(floorListener, next, 20)) / 20)
      served.push((await block(serverListener, next, 20)) / 20)
    }
    const median = (values: Array<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
    const f = median(floor)
    const s = median(served)
    process.stdout.write(`${name.padEnd(26)} server ${s.toFixed(1).padStart(6)} us  floor ${f.toFixed(1).padStart(6)} us  server - floor ${(s - f).toFixed(1).padStart(6)} us  (${floor.length} blocks)\n`)
  }
} finally {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
}
