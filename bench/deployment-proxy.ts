/**
 * Throughput and p99 through the deployment proxy against hitting the replica directly.
 *
 *   npx node bench/deployment-proxy.ts [seconds=5] [connections=32]
 *
 * Three processes: a replica (node:http), a front server running `makeDeploymentProxy` at
 * `/d/bench`, and autocannon here, all on one machine (so the proxy competes with the replica
 * and the load generator for the same cores). Three replicas: `fast` answers at once (the
 * proxy's own cost is all there is to see), `io5ms` waits 5 ms, `cpu1ms` spends 1 ms of CPU per
 * request. Not part of npm test or CI; figures in docs/deployments-local.md.
 */
import { type ChildProcess, spawn } from "node:child_process"
import autocannon from "autocannon"
import { freePort, probe } from "./procs.ts"

const seconds = Number(process.argv[2] ?? 5)
const connections = Number(process.argv[3] ?? 32)

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

const frontSource = (port: number, target: number) => `
import * as http from "node:http"
import { makeDeploymentProxy } from "${new URL("../server/deployments/local/proxy.ts", import.meta.url).pathname}"
const proxy = makeDeploymentProxy({ publicUrl: "http://127.0.0.1:${port}" })
proxy.setRoute("bench", { name: "bench", url: "http://127.0.0.1:${port}/d/bench" })
proxy.setTargets("bench", [{ host: "127.0.0.1", port: ${target} }])
http.createServer((req, res) => { if (!proxy.handle(req, res)) { res.writeHead(404); res.end() } }).listen(${port}, "127.0.0.1")
`

const start = async (args: string[], url: string): Promise<ChildProcess> => {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "inherit", "inherit"] })
  for (let i = 0; i < 200; i++) {
    if ((await probe(url)) !== undefined) return child
    await new Promise((r) => setTimeout(r, 50))
  }
  child.kill()
  throw new Error(`${url} did not answer`)
}

const run = async (url: string) => {
  // A short warm-up, then the measured run.
  await autocannon({ url, connections, duration: 1 })
  const r = await autocannon({ url, connections, duration: seconds })
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`)
  return { rps: r.requests.average as number, p99: r.latency.p99 as number }
}

const results: string[] = []
// fast: answers at once; io5ms: waits 5 ms (no CPU); cpu1ms: 1 ms of CPU per request, as a
// replica doing real work (an agent server in Python spends more than that per request).
for (const [name, waitMs, cpuMs] of [
  ["fast", 0, 0],
  ["io5ms", 5, 0],
  ["cpu1ms", 0, 1]
] as const) {
  const replicaPort = await freePort()
  const frontPort = await freePort()
  const replica = await start(["-e", replicaSource(replicaPort, waitMs, cpuMs)], `http://127.0.0.1:${replicaPort}/`)
  const front = await start(["--input-type=module", "-e", frontSource(frontPort, replicaPort)], `http://127.0.0.1:${frontPort}/d/bench/`)
  try {
    // Interleaved, best of two each: the machine is shared, so a single run mostly measures the neighbours.
    const d1 = await run(`http://127.0.0.1:${replicaPort}/threads`)
    const p1 = await run(`http://127.0.0.1:${frontPort}/d/bench/threads`)
    const d2 = await run(`http://127.0.0.1:${replicaPort}/threads`)
    const p2 = await run(`http://127.0.0.1:${frontPort}/d/bench/threads`)
    const best = (a: { rps: number; p99: number }, b: { rps: number; p99: number }) => ({ rps: Math.max(a.rps, b.rps), p99: Math.min(a.p99, b.p99) })
    const direct = best(d1, d2)
    const proxied = best(p1, p2)
    const line = `${name.padEnd(7)} direct ${direct.rps.toFixed(0)} req/s p99 ${direct.p99} ms | proxied ${proxied.rps.toFixed(0)} req/s p99 ${proxied.p99} ms | throughput ${(proxied.rps / direct.rps).toFixed(2)}x, p99 ${(direct.p99 / Math.max(proxied.p99, 1)).toFixed(2)}x (direct/proxied)`
    console.log(line)
    results.push(line)
  } finally {
    replica.kill()
    front.kill()
  }
}
