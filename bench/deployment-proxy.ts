/**
 * Throughput, p99 and CPU per request through a deployment URL against hitting the replica directly.
 *
 *   npx node bench/deployment-proxy.ts [seconds=5] [connections=32] [rounds=3]
 *
 * Three processes: a replica (node:http), a real Slipway server (simulated runtime) whose
 * deployment proxy serves `{public}/d/bench` with that replica as its only target, and autocannon
 * here, all on one machine (so the proxy competes with the replica and the load generator for the
 * same cores). Three replicas: `fast` answers at once (the proxy's own cost is all there is to
 * see), `io5ms` waits 5 ms, `cpu1ms` spends 1 ms of CPU per request.
 *
 * Direct and proxied runs alternate, `rounds` times; each round's ratio compares two runs taken
 * seconds apart (the machine is shared, so a ratio across rounds would mostly measure the
 * neighbours). Besides req/s and p99, each run reads the CPU time the replica and the Slipway
 * process used (/proc/<pid>/stat) and divides by the requests answered: CPU per request does not
 * depend on how busy the machine is, throughput does.
 *
 * Last, the cost the proxy puts on Slipway's own API requests: `handle` on an API path (it
 * answers false) with 10 and with 10 000 deployment routes.
 *
 * Not part of npm test or CI; figures in docs/deployments-local.md.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import type * as http from "node:http"
import autocannon from "autocannon"
import { makeDeploymentProxy } from "../server/deployments/local/proxy.ts"
import { freePort, probe } from "./procs.ts"

const seconds = Number(process.argv[2] ?? 5)
const connections = Number(process.argv[3] ?? 32)
const rounds = Number(process.argv[4] ?? 3)

const replicaSource = (port: number, waitMs: number, cpuMs: number) => `
const http = require("node:http")
const body = JSON.stringify({ ok: true, threads: Array.from({ length: 8 }, (_, i) => ({ id: i, status: "idle" })) })
http.createServer((req, res) => {
  const send = () => { res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }); res.end(body) }
  const until = performance.now() + ${cpuMs}
  while (performance.now() < until) {}
  ${waitMs > 0 ? `setTimeout(send, ${waitMs})` : "send()"}
}).listen(${port}, "127.0.0.1")
`

const root = new URL("..", import.meta.url).pathname
/** A Slipway server (simulated runtime, temporary database) whose proxy serves /d/bench. */
const frontSource = (port: number, target: number) => `
import { startServer } from "${root}server/index.ts"
import { makeLogger } from "${root}server/log.ts"
import { DeploymentServing } from "${root}server/deployments/local/services.ts"
import { tempDatabasePath, TEST_KEY } from "${root}test/support/server.ts"
const database = tempDatabasePath("proxy-bench")
const server = await startServer({ port: ${port}, host: "127.0.0.1", databasePath: database.path, apiKey: TEST_KEY, runtime: "simulated", logger: makeLogger("warn") })
const { proxy } = await server.run(DeploymentServing)
proxy.setRoute("bench", { name: "bench", url: server.url + "/d/bench" })
proxy.setTargets("bench", [{ host: "127.0.0.1", port: ${target} }])
process.on("SIGTERM", async () => { await server.close({ graceMs: 100 }); database.remove(); process.exit(0) })
`

const start = async (args: string[], url: string): Promise<ChildProcess> => {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "inherit", "inherit"] })
  for (let i = 0; i < 400; i++) {
    if ((await probe(url)) === 200) return child
    await new Promise((r) => setTimeout(r, 50))
  }
  child.kill()
  throw new Error(`${url} did not answer`)
}

const stop = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

/** CPU time (user + system) a process has used, in ms; NaN where /proc is not there. */
const cpuMs = (pid: number | undefined): number => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  } catch {
    return Number.NaN
  }
}

interface Run {
  readonly rps: number
  readonly p99: number
  /** µs of CPU per request, per process measured. */
  readonly cpu: ReadonlyArray<number>
}

const run = async (url: string, pids: ReadonlyArray<number | undefined>): Promise<Run> => {
  // A short warm-up, then the measured run.
  await autocannon({ url, connections, duration: 1 })
  const before = pids.map(cpuMs)
  const r = await autocannon({ url, connections, duration: seconds })
  const cpu = pids.map((pid, i) => Math.round(((cpuMs(pid) - before[i]!) * 1000) / Math.max(1, r.requests.total as number)))
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`)
  return { rps: Math.round(r.requests.average as number), p99: r.latency.p99 as number, cpu }
}

const range = (xs: ReadonlyArray<number>, digits = 0): string => {
  const lo = Math.min(...xs).toFixed(digits)
  const hi = Math.max(...xs).toFixed(digits)
  return lo === hi ? lo : `${lo}–${hi}`
}

// fast: answers at once; io5ms: waits 5 ms (no CPU); cpu1ms: 1 ms of CPU per request, as a
// replica doing real work (an agent server in Python spends more than that per request).
for (const [name, waitMs, cpuPerRequest] of [
  ["fast", 0, 0],
  ["io5ms", 5, 0],
  ["cpu1ms", 0, 1]
] as const) {
  const replicaPort = await freePort()
  const frontPort = await freePort()
  const replica = await start(["-e", replicaSource(replicaPort, waitMs, cpuPerRequest)], `http://127.0.0.1:${replicaPort}/`)
  const front = await start(["--input-type=module", "-e", frontSource(frontPort, replicaPort)], `http://127.0.0.1:${frontPort}/d/bench/`)
  try {
    const direct: Run[] = []
    const proxied: Run[] = []
    for (let i = 0; i < rounds; i++) {
      direct.push(await run(`http://127.0.0.1:${replicaPort}/threads`, [replica.pid]))
      proxied.push(await run(`http://127.0.0.1:${frontPort}/d/bench/threads`, [replica.pid, front.pid]))
      const d = direct[i]!
      const p = proxied[i]!
      console.log(
        `${name.padEnd(7)} round ${i + 1}: direct ${d.rps} req/s p99 ${d.p99} ms (replica ${d.cpu[0]} µs CPU/req) | ` +
          `proxied ${p.rps} req/s p99 ${p.p99} ms (replica ${p.cpu[0]} + Slipway ${p.cpu[1]} µs CPU/req) | ${(p.rps / d.rps).toFixed(2)}x`
      )
    }
    const ratios = direct.map((d, i) => proxied[i]!.rps / d.rps)
    console.log(
      `${name.padEnd(7)} summary: throughput ${range(ratios, 2)}x direct (same-round ratios); direct ${range(direct.map((r) => r.rps))} req/s, ` +
        `p99 ${range(direct.map((r) => r.p99))} ms; proxied ${range(proxied.map((r) => r.rps))} req/s, p99 ${range(proxied.map((r) => r.p99))} ms; ` +
        `Slipway ${range(proxied.map((r) => r.cpu[1]!))} µs CPU/req, replica ${range(direct.map((r) => r.cpu[0]!))} µs CPU/req`
    )
  } finally {
    await Promise.all([stop(replica), stop(front)])
  }
}

// What the proxy costs Slipway's own API requests: `handle` sees every request first.
for (const count of [10, 10_000]) {
  const proxy = makeDeploymentProxy({ publicUrl: "http://127.0.0.1:8080" })
  for (let i = 0; i < count; i++) {
    proxy.setRoute(`d${i}`, { name: `agent-${i}`, url: i % 2 === 0 ? `http://127.0.0.1:8080/d/agent-${i}` : `http://agent-${i}.example.test/` })
  }
  const req = { url: "/v2/deployments/0b8c7f9e/revisions?limit=20", rawHeaders: ["Host", "127.0.0.1:8080", "X-Api-Key", "k"] }
  const n = 200_000
  const t0 = performance.now()
  for (let i = 0; i < n; i++) if (proxy.handle(req as unknown as http.IncomingMessage, undefined as never)) throw new Error("matched")
  const ns = ((performance.now() - t0) * 1e6) / n
  console.log(`API request routing with ${count} deployment routes: ${ns.toFixed(0)} ns per request`)
  proxy.close()
}
