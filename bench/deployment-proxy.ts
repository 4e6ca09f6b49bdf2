/**
 * Throughput, p99 and CPU per request through a deployment URL against hitting the replica
 * directly, and against the cheapest possible proxy in the same run.
 *
 *   npx node bench/deployment-proxy.ts [seconds=5] [connections=32] [rounds=3]
 *
 * or, from another script, `runDeploymentProxyBench(options)` (what `npm run bench` calls).
 *
 * Processes: a replica (node:http), a real Slipway server (simulated runtime) whose deployment
 * proxy serves `{public}/d/bench` with that replica as its only target, a `floor` proxy (a bare
 * TCP pipe: `net` sockets piped both ways, no HTTP at all; no proxy can do less per request), and
 * autocannon in this process, all on one machine, so every proxy competes with the replica and
 * the load generator for the same cores. Three replicas: `fast` answers at once (the proxy's own
 * cost is all there is to see), `io5ms` waits 5 ms, `cpu1ms` spends 1 ms of CPU per request.
 *
 * Direct, Slipway and floor runs alternate, `rounds` times; each round's ratios compare runs taken
 * seconds apart (the machine is shared, so a ratio across rounds would mostly measure the
 * neighbours). Besides req/s and p99 (float ms, from every response), each run reads the CPU time
 * the load generator, the replica and the proxy used (/proc/<pid>/stat, process.cpuUsage) and
 * divides by the requests answered: CPU per request does not depend on how busy the machine is,
 * throughput does. From those the bench computes the best ratio ANY proxy of that CPU cost could
 * reach on this machine (`bound`; docs/deployments-local.md explains the arithmetic).
 *
 * Verdict per scenario (targets of issue 14, the medians of the same-round ratios): for `io5ms`
 * and `cpu1ms`, throughput ≥ 0.8x direct and p99 ≤ direct p99 / 0.8. For `fast`, where the
 * proxy's own cost is all there is to see, against the cheapest HTTP proxy (`http-floor`) measured
 * in the same rounds: throughput ≥ 0.9x its and p99 ≤ its p99 / 0.9. No proxy reaches 0.8x direct
 * for `fast` on two shared cores (HAProxy 0.42–0.55x, a bare TCP pipe 0.75–0.78x, measured): the
 * load generator and the replica already take most of the CPU a request has (issue 30).
 *
 * Last, the cost the proxy puts on Slipway's own API requests: `handle` on an API path (it
 * answers false) with 10 and with 10 000 deployment routes.
 *
 * Environment: BENCH_CPU_PROF=<dir> runs the Slipway front with --cpu-prof (profiles land there);
 * BENCH_PROXY_SCENARIOS=fast,io5ms limits the scenarios; BENCH_PROXY_FRONTS=slipway,floor,bare
 * chooses the fronts (`bare`: the same proxy module in a plain node:http server, no Slipway app;
 * `haproxy`: HAProxy, when installed).
 *
 * Not part of npm test or CI; figures in docs/deployments-local.md.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import type * as http from "node:http"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import autocannon from "autocannon"
import { Effect, Exit, Scope } from "effect"
import { makeDeploymentProxy } from "../server/deployments/local/proxy.ts"
import { collectLatencies, percentile } from "./load.ts"
import { cpuMicros, freePort, probe } from "./procs.ts"

/** Targets of issue 14: throughput and p99 through the deployment URL against direct (`io5ms`, `cpu1ms`). */
export const PROXY_RATIO = 0.8
/** The target of `fast` (issue 30): throughput and p99 against the cheapest HTTP proxy in the same rounds. */
export const HTTP_FLOOR_RATIO = 0.9

export type ProxyScenarioName = "fast" | "io5ms" | "cpu1ms"
/**
 * `slipway`: a real Slipway server; `floor`: a bare TCP pipe (no HTTP); `http-floor`: the cheapest
 * HTTP proxy in Node (node:http server, undici `Pool.dispatch`, headers passed as they are, no
 * routing, no X-Forwarded-*, no error handling); `bare`: Slipway's proxy module in a plain
 * node:http server (without Slipway's server and app); `haproxy` (optional, Debian's `haproxy`):
 * HAProxy 2.6 in HTTP mode, one thread, keep-alive both ways, the same prefix stripped, what a
 * proxy written in C for this job costs.
 */
export type ProxyFront = "slipway" | "floor" | "http-floor" | "bare" | "haproxy"

export interface DeploymentProxyBenchOptions {
  /** Seconds per measured run (after 1 s of warm-up). Default 5. */
  readonly seconds?: number
  /** Concurrent connections of the load generator. Default 32. */
  readonly connections?: number
  /** Rounds per scenario (each: direct, then every front). Default 3. */
  readonly rounds?: number
  /** Default all three. */
  readonly scenarios?: ReadonlyArray<ProxyScenarioName>
  /** Default `slipway`, `floor` and `http-floor` (`slipway` is always measured). */
  readonly fronts?: ReadonlyArray<ProxyFront>
  /** Run the Slipway front with --cpu-prof, profiles written to this directory. */
  readonly cpuProfileDir?: string
  /** Skip the route-lookup measurement. */
  readonly skipRouting?: boolean
  /** Where progress lines go. Default stdout. */
  readonly log?: (line: string) => void
}

export interface ProxyRun {
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** µs of CPU per answered request: the load generator (this process), the replica, the proxy (0 direct). */
  readonly cpuUs: { readonly loadgen: number; readonly replica: number; readonly proxy: number }
  /** The proxy's voluntary context switches per request (times it went to sleep and was woken): 0 direct. */
  readonly proxyWakeups: number
}

export interface ProxyRange {
  readonly min: number
  readonly max: number
  readonly median: number
}

export interface ProxyScenarioResult {
  readonly name: ProxyScenarioName
  readonly rounds: ReadonlyArray<{ readonly direct: ProxyRun } & Partial<Record<ProxyFront, ProxyRun>>>
  /** Same-round ratios, proxied req/s over direct req/s, per front. */
  readonly throughput: Partial<Record<ProxyFront, ProxyRange>>
  /** Same-round ratios, direct p99 over proxied p99 (≥ 0.8 passes, like throughput). */
  readonly p99: Partial<Record<ProxyFront, ProxyRange>>
  /** Medians of the CPU per request of each process, per front and direct (µs). */
  readonly cpuUs: Partial<Record<ProxyFront | "direct", ProxyRun["cpuUs"]>>
  /**
   * The best throughput ratio a proxy costing what each front costs could reach on this machine,
   * from the medians of CPU per request (see `boundRatio`).
   */
  readonly bound: Partial<Record<ProxyFront, ProxyRange>>
  /** Median voluntary context switches of each front's process per request. */
  readonly wakeups: Partial<Record<ProxyFront, number>>
  /** What Slipway is measured against, and the ratio it must reach. */
  readonly target: { readonly against: "direct" | "http-floor"; readonly ratio: number }
  /** Slipway's same-round ratios against `target.against` (req/s over its req/s; its p99 over Slipway's p99). */
  readonly versus: { readonly throughput: ProxyRange; readonly p99: ProxyRange }
  readonly verdict: { readonly pass: boolean; readonly throughput: boolean; readonly p99: boolean }
}

export interface DeploymentProxyBenchResult {
  readonly settings: { readonly seconds: number; readonly connections: number; readonly rounds: number; readonly cores: number }
  /** 1-minute load average before and after. */
  readonly loadAverage: { readonly before: number; readonly after: number }
  readonly scenarios: ReadonlyArray<ProxyScenarioResult>
  /** ns per API request spent in the proxy's route lookup, by number of deployment routes. */
  readonly routingNs: Readonly<Record<string, number>>
  /** In the shape of bench/run.ts's verdicts. */
  readonly verdicts: ReadonlyArray<{ readonly target: string; readonly pass: boolean; readonly detail: string }>
  /** Machine-parsable summary lines (`key=value` fields), one per scenario, then the verdicts. */
  readonly lines: ReadonlyArray<string>
}

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
const slipwaySource = (port: number, target: number) => `
import { startServer } from "${root}server/index.ts"
import { makeLogger } from "${root}server/log.ts"
import { DeploymentProxy } from "${root}server/deployments/local/proxy.ts"
import { tempDatabasePath, TEST_KEY } from "${root}test/support/server.ts"
import { Effect } from "effect"
const database = tempDatabasePath("proxy-bench")
const server = await startServer({ port: ${port}, host: "127.0.0.1", databasePath: database.path, apiKey: TEST_KEY, runtime: "simulated", logger: makeLogger("error") })
await server.run(Effect.flatMap(DeploymentProxy, (proxy) => Effect.andThen(proxy.setRoute("bench", { name: "bench", url: server.url + "/d/bench" }), proxy.setTargets("bench", [{ host: "127.0.0.1", port: ${target} }]))))
process.on("SIGTERM", async () => { await server.close({ graceMs: 100 }); database.remove(); process.exit(0) })
`

/** The proxy module alone in a plain node:http server: what Slipway's server and app add, by difference. */
const bareSource = (port: number, target: number) => `
import * as http from "node:http"
import { Effect, Exit, Scope } from "effect"
import { makeDeploymentProxy } from "${root}server/deployments/local/proxy.ts"
const url = "http://127.0.0.1:${port}"
const scope = Scope.makeUnsafe()
const proxy = Effect.runSync(Scope.provide(scope)(makeDeploymentProxy({ publicUrl: url })))
Effect.runSync(proxy.setRoute("bench", { name: "bench", url: url + "/d/bench" }))
Effect.runSync(proxy.setTargets("bench", [{ host: "127.0.0.1", port: ${target} }]))
const server = http.createServer((req, res) => { if (!proxy.handle(req, res)) { res.statusCode = 404; res.end() } })
server.listen(${port}, "127.0.0.1")
process.on("SIGTERM", () => { Effect.runSync(Scope.close(scope, Exit.void)); server.close(); server.closeAllConnections(); process.exit(0) })
`

/** The cheapest HTTP proxy: what any Node HTTP proxy must spend at least (Slipway's minus this is its own code). */
const httpFloorSource = (port: number, target: number) => `
import * as http from "node:http"
import { createRequire } from "node:module"
const { Pool } = createRequire("${root}package.json")("undici")
const pool = new Pool("http://127.0.0.1:${target}", { connections: 512, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 })
http.createServer((req, res) => {
  pool.dispatch({ method: req.method, path: req.url.slice(8) || "/", headers: req.rawHeaders }, {
    onRequestStart() {},
    onResponseStart(c, status, headers) { res.writeHead(status, headers) },
    onResponseData(c, chunk) { res.write(chunk) },
    onResponseEnd() { res.end() },
    onResponseError(c, err) { res.destroy(err) }
  })
}).listen(${port}, "127.0.0.1")
process.on("SIGTERM", () => process.exit(0))
`

/**
 * The floor: a bare TCP pipe, one replica connection per client connection (keep-alive carries
 * over), no HTTP parsing at all. It forwards only /d/bench/... correctly in the sense that bytes
 * arrive unchanged (the replica ignores the path), which is all a floor needs.
 */
const floorSource = (port: number, target: number) => `
const net = require("node:net")
const server = net.createServer((client) => {
  const upstream = net.connect(${target}, "127.0.0.1")
  client.pipe(upstream).pipe(client)
  const end = () => { client.destroy(); upstream.destroy() }
  client.on("error", end); upstream.on("error", end); client.on("close", end); upstream.on("close", end)
})
server.listen(${port}, "127.0.0.1")
process.on("SIGTERM", () => process.exit(0))
`

/**
 * HAProxy as a front: HTTP mode, one thread (the machine's other core is the replica's and the
 * load generator's), keep-alive to the client and the replica (`http-reuse always`), the
 * /d/bench prefix stripped as Slipway strips it.
 */
const haproxyConfig = (port: number, target: number) =>
  [
    "global",
    "  nbthread 1",
    "  maxconn 4096",
    "defaults",
    "  mode http",
    "  timeout connect 5s",
    "  timeout client 60s",
    "  timeout server 60s",
    "  option http-keep-alive",
    "frontend deployments",
    `  bind 127.0.0.1:${port}`,
    "  http-request set-path %[path,regsub(^/d/bench,)]",
    "  default_backend bench",
    "backend bench",
    "  http-reuse always",
    `  server replica 127.0.0.1:${target}`,
    ""
  ].join("\n")

/** `haproxy -db -f <config>` in a temporary directory; fails naming the Debian package when HAProxy is not installed. */
const startHaproxy = async (port: number, target: number, url: string): Promise<ChildProcess> => {
  if (spawnSync("haproxy", ["-v"]).error) throw new Error("the haproxy front needs HAProxy: apt-get install -y haproxy")
  const dir = mkdtempSync(join(tmpdir(), "slipway-haproxy-"))
  const config = join(dir, "haproxy.cfg")
  writeFileSync(config, haproxyConfig(port, target))
  const child = await start(["-db", "-f", config], url, "haproxy")
  child.once("exit", () => rmSync(dir, { recursive: true, force: true }))
  return child
}

const start = async (args: string[], url: string, command = process.execPath): Promise<ChildProcess> => {
  const child = spawn(command, args, { stdio: ["ignore", "inherit", "inherit"] })
  for (let i = 0; i < 400; i++) {
    if (child.exitCode !== null) throw new Error(`${url}: its process exited (${child.exitCode})`)
    if ((await probe(url)) === 200) return child
    await new Promise((r) => setTimeout(r, 50))
  }
  child.kill("SIGKILL")
  throw new Error(`${url} did not answer`)
}

const stop = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
    child.once("exit", () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill("SIGTERM")
  })

/** Voluntary context switches of a process so far (each one a sleep and a wake-up). */
const wakeups = (pid: number | undefined): number => {
  if (pid === undefined) return 0
  try {
    return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? Number.NaN)
  } catch {
    return Number.NaN
  }
}
/** This process's CPU time (the load generator's), in microseconds. */
const selfCpuMicros = (): number => {
  const u = process.cpuUsage()
  return u.user + u.system
}

/** One autocannon run; latencies from every 2xx response (float ms, not the rounded histogram). */
const load = async (url: string, connections: number, seconds: number) => {
  const instance = autocannon({ url, connections, duration: seconds, pipelining: 1, timeout: 30 })
  const sortedLatencies = collectLatencies(instance)
  const r = await instance
  if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`)
  const sorted = sortedLatencies()
  const count = sorted.length
  const durationSeconds = (new Date(r.finish).getTime() - new Date(r.start).getTime()) / 1000
  return { count, rps: count / durationSeconds, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99) }
}

const run = async (url: string, replica: number | undefined, proxy: number | undefined, connections: number, seconds: number): Promise<ProxyRun> => {
  await load(url, connections, 1)
  const before = [selfCpuMicros(), cpuMicros(replica), cpuMicros(proxy), wakeups(proxy)]
  const r = await load(url, connections, seconds)
  const after = [selfCpuMicros(), cpuMicros(replica), cpuMicros(proxy), wakeups(proxy)]
  const per = (i: number) => Math.round((after[i]! - before[i]!) / Math.max(1, r.count))
  return {
    rps: Math.round(r.rps),
    p50Ms: Math.round(r.p50Ms * 100) / 100,
    p99Ms: Math.round(r.p99Ms * 100) / 100,
    cpuUs: { loadgen: per(0), replica: per(1), proxy: proxy === undefined ? 0 : per(2) },
    proxyWakeups: proxy === undefined ? 0 : Math.round(((after[3]! - before[3]!) / Math.max(1, r.count)) * 100) / 100
  }
}

const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  const n = s.length
  return n === 0 ? Number.NaN : n % 2 === 1 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2
}
const rangeOf = (xs: ReadonlyArray<number>): ProxyRange => ({
  min: Math.round(Math.min(...xs) * 100) / 100,
  max: Math.round(Math.max(...xs) * 100) / 100,
  median: Math.round(median(xs) * 100) / 100
})
const show = (r: ProxyRange, digits = 2): string => (r.min.toFixed(digits) === r.max.toFixed(digits) ? r.min.toFixed(digits) : `${r.min.toFixed(digits)}-${r.max.toFixed(digits)}`)
const spread = (xs: ReadonlyArray<number>, digits = 0): string => show(rangeOf(xs), digits)

/**
 * The most requests per second that can pass through a proxy on `cores` cores, from the CPU per
 * request (µs) of the load generator `l`, the replica `r` and the proxy `p`, each a
 * single-threaded process: a process cannot do more than one core's worth (1e6 / its µs per
 * request), and all of them together not more than `cores` cores' worth (cores × 1e6 / the sum).
 */
export const proxiedCeiling = (cores: number, l: number, r: number, p: number): number =>
  Math.min((cores * 1e6) / (l + r + p), 1e6 / l, 1e6 / r, 1e6 / p)

/**
 * The best throughput ratio against direct a proxy costing `p` µs per request could reach: the
 * ceiling above, with the load generator's and the replica's costs as measured direct (the least
 * they cost), over the direct req/s measured in the same round. It assumes the cores are all
 * theirs: on a busy shared machine the direct run is slowed too and the figure loses its meaning
 * (it can pass 1).
 */
export const boundRatio = (cores: number, direct: ProxyRun, p: number): number =>
  Math.round((proxiedCeiling(cores, direct.cpuUs.loadgen, direct.cpuUs.replica, p) / direct.rps) * 100) / 100

const SCENARIOS: ReadonlyArray<readonly [ProxyScenarioName, number, number]> = [
  // fast: answers at once; io5ms: waits 5 ms (no CPU); cpu1ms: 1 ms of CPU per request, as a
  // replica doing real work (an agent server in Python spends more than that per request).
  ["fast", 0, 0],
  ["io5ms", 5, 0],
  ["cpu1ms", 0, 1]
]

/** What each scenario's verdict compares Slipway with (see the header). */
const targetOf = (name: ProxyScenarioName): ProxyScenarioResult["target"] =>
  name === "fast" ? { against: "http-floor", ratio: HTTP_FLOOR_RATIO } : { against: "direct", ratio: PROXY_RATIO }

/** The node arguments of a front written in Node (every front but `haproxy`). */
const nodeFrontArgs = (front: Exclude<ProxyFront, "haproxy">, port: number, target: number, cpuProfileDir: string | undefined): Array<string> =>
  front === "slipway"
    ? [...(cpuProfileDir ? ["--cpu-prof", `--cpu-prof-dir=${cpuProfileDir}`] : []), "--input-type=module", "-e", slipwaySource(port, target)]
    : front === "bare"
      ? ["--input-type=module", "-e", bareSource(port, target)]
      : front === "http-floor"
        ? ["--input-type=module", "-e", httpFloorSource(port, target)]
        : ["-e", floorSource(port, target)]

export const runDeploymentProxyBench = async (options: DeploymentProxyBenchOptions = {}): Promise<DeploymentProxyBenchResult> => {
  const seconds = options.seconds ?? 5
  const connections = options.connections ?? 32
  const rounds = Math.max(1, options.rounds ?? 3)
  const log = options.log ?? ((line: string) => console.log(line))
  const wanted = new Set(options.scenarios ?? SCENARIOS.map(([name]) => name))
  const chosen: ReadonlyArray<ProxyFront> = ["slipway", ...(options.fronts ?? ["floor", "http-floor"]).filter((f) => f !== "slipway")]
  const cores = (await import("node:os")).availableParallelism()
  const loadBefore = loadavg()[0]!
  const results: ProxyScenarioResult[] = []

  for (const [name, waitMs, cpuPerRequest] of SCENARIOS) {
    if (!wanted.has(name)) continue
    const target = targetOf(name)
    // The front the verdict compares with is always measured.
    const fronts: ReadonlyArray<ProxyFront> = target.against === "direct" || chosen.includes(target.against) ? chosen : [...chosen, target.against]
    const replicaPort = await freePort()
    const replica = await start(["-e", replicaSource(replicaPort, waitMs, cpuPerRequest)], `http://127.0.0.1:${replicaPort}/`)
    const started: Array<[ProxyFront, ChildProcess, string]> = []
    try {
      for (const front of fronts) {
        const port = await freePort()
        const url = `http://127.0.0.1:${port}/d/bench/`
        const child = front === "haproxy" ? await startHaproxy(port, replicaPort, url) : await start(nodeFrontArgs(front, port, replicaPort, options.cpuProfileDir), url)
        started.push([front, child, `http://127.0.0.1:${port}/d/bench/threads`])
      }
      const measured: Array<{ direct: ProxyRun } & Partial<Record<ProxyFront, ProxyRun>>> = []
      for (let i = 0; i < rounds; i++) {
        const round: { direct: ProxyRun } & Partial<Record<ProxyFront, ProxyRun>> = {
          direct: await run(`http://127.0.0.1:${replicaPort}/threads`, replica.pid, undefined, connections, seconds)
        }
        for (const [front, child, url] of started) round[front] = await run(url, replica.pid, child.pid, connections, seconds)
        measured.push(round)
        const d = round.direct
        log(
          `deployment-proxy ${name} round ${i + 1}: direct ${d.rps} req/s p99 ${d.p99Ms} ms (CPU µs/req: load ${d.cpuUs.loadgen}, replica ${d.cpuUs.replica})` +
            started
              .map(([front]) => {
                const p = round[front]!
                return ` | ${front} ${p.rps} req/s p99 ${p.p99Ms} ms ${(p.rps / d.rps).toFixed(2)}x (load ${p.cpuUs.loadgen}, replica ${p.cpuUs.replica}, proxy ${p.cpuUs.proxy}; ${p.proxyWakeups} wake-ups/req)`
              })
              .join("")
        )
      }
      const throughput: Partial<Record<ProxyFront, ProxyRange>> = {}
      const p99: Partial<Record<ProxyFront, ProxyRange>> = {}
      const cpuUs: Partial<Record<ProxyFront | "direct", ProxyRun["cpuUs"]>> = {}
      const bound: Partial<Record<ProxyFront, ProxyRange>> = {}
      const wakeupsPer: Partial<Record<ProxyFront, number>> = {}
      const medianCpu = (runs: ReadonlyArray<ProxyRun>): ProxyRun["cpuUs"] => ({
        loadgen: median(runs.map((r) => r.cpuUs.loadgen)),
        replica: median(runs.map((r) => r.cpuUs.replica)),
        proxy: median(runs.map((r) => r.cpuUs.proxy))
      })
      cpuUs.direct = medianCpu(measured.map((r) => r.direct))
      for (const [front] of started) {
        const runs = measured.map((r) => r[front]!)
        throughput[front] = rangeOf(measured.map((r) => r[front]!.rps / r.direct.rps))
        p99[front] = rangeOf(measured.map((r) => r.direct.p99Ms / r[front]!.p99Ms))
        cpuUs[front] = medianCpu(runs)
        bound[front] = rangeOf(measured.map((r) => boundRatio(cores, r.direct, r[front]!.cpuUs.proxy)))
        wakeupsPer[front] = median(runs.map((r) => r.proxyWakeups))
      }
      // Against direct: the same-round ratios above. Against another front: Slipway's req/s over
      // that front's, and that front's p99 over Slipway's, round by round.
      const against = target.against
      const versus =
        against === "direct"
          ? { throughput: throughput.slipway!, p99: p99.slipway! }
          : {
              throughput: rangeOf(measured.map((r) => r.slipway!.rps / r[against]!.rps)),
              p99: rangeOf(measured.map((r) => r[against]!.p99Ms / r.slipway!.p99Ms))
            }
      const throughputPass = versus.throughput.median >= target.ratio
      const p99Pass = versus.p99.median >= target.ratio
      results.push({
        name,
        rounds: measured,
        throughput,
        p99,
        cpuUs,
        bound,
        wakeups: wakeupsPer,
        target,
        versus,
        verdict: { pass: throughputPass && p99Pass, throughput: throughputPass, p99: p99Pass }
      })
    } finally {
      await Promise.all([stop(replica), ...started.map(([, child]) => stop(child))])
    }
  }

  // What the proxy costs Slipway's own API requests: `handle` sees every request first.
  const routingNs: Record<string, number> = {}
  if (!options.skipRouting) {
    for (const count of [10, 10_000]) {
      const scope = Scope.makeUnsafe()
      const proxy = Effect.runSync(Scope.provide(scope)(makeDeploymentProxy({ publicUrl: "http://127.0.0.1:8080" })))
      for (let i = 0; i < count; i++) {
        Effect.runSync(proxy.setRoute(`d${i}`, { name: `agent-${i}`, url: i % 2 === 0 ? `http://127.0.0.1:8080/d/agent-${i}` : `http://agent-${i}.example.test/` }))
      }
      const req = { url: "/v2/deployments/0b8c7f9e/revisions?limit=20", rawHeaders: ["Host", "127.0.0.1:8080", "X-Api-Key", "k"] }
      const n = 200_000
      const t0 = performance.now()
      for (let i = 0; i < n; i++) if (proxy.handle(req as unknown as http.IncomingMessage, undefined as never)) throw new Error("matched")
      routingNs[String(count)] = Math.round(((performance.now() - t0) * 1e6) / n)
      Effect.runSync(Scope.close(scope, Exit.void))
    }
  }

  const loadAfter = loadavg()[0]!
  const lines: string[] = []
  const verdicts: Array<{ target: string; pass: boolean; detail: string }> = []
  for (const s of results) {
    const fields = [`deployment-proxy ${s.name}:`, `verdict=${s.verdict.pass ? "pass" : "fail"}`]
    for (const [front] of Object.entries(s.throughput) as Array<[ProxyFront, ProxyRange]>) {
      const runs = s.rounds.map((r) => r[front]!)
      fields.push(
        `${front}_throughput=${show(s.throughput[front]!)}x`,
        `${front}_throughput_median=${s.throughput[front]!.median.toFixed(2)}x`,
        `${front}_p99_ratio=${show(s.p99[front]!)}x`,
        `${front}_p99_ms=${spread(runs.map((r) => r.p99Ms), 2)}`,
        `${front}_rps=${spread(runs.map((r) => r.rps))}`,
        `${front}_cpu_us=${spread(runs.map((r) => r.cpuUs.proxy))}`,
        `${front}_wakeups_per_req=${spread(runs.map((r) => r.proxyWakeups), 2)}`,
        `${front}_bound=${show(s.bound[front]!)}x`
      )
    }
    const direct = s.rounds.map((r) => r.direct)
    fields.push(
      `direct_rps=${spread(direct.map((r) => r.rps))}`,
      `direct_p99_ms=${spread(direct.map((r) => r.p99Ms), 2)}`,
      `replica_cpu_us=${spread(direct.map((r) => r.cpuUs.replica))}`,
      `loadgen_cpu_us=${spread(direct.map((r) => r.cpuUs.loadgen))}`
    )
    lines.push(fields.join(" "))
    const floor =
      (s.throughput.floor === undefined ? "" : `; bare TCP pipe ${show(s.throughput.floor)}x (its CPU allows at most ${show(s.bound.floor!)}x)`) +
      (s.throughput["http-floor"] === undefined
        ? ""
        : `; cheapest HTTP proxy ${show(s.throughput["http-floor"])}x at ${spread(s.rounds.map((r) => r["http-floor"]!.cpuUs.proxy))} µs CPU/req`) +
      `; Slipway's CPU allows at most ${show(s.bound.slipway!)}x`
    const against = s.target.against === "direct" ? "direct" : "the cheapest HTTP proxy"
    const reference = s.target.against === "direct" ? direct : s.rounds.map((r) => r[s.target.against as ProxyFront]!)
    verdicts.push({
      target: `deployment proxy ${s.name}: throughput >= ${s.target.ratio}x ${against}`,
      pass: s.verdict.throughput,
      detail:
        `median ${s.versus.throughput.median.toFixed(2)}x (rounds ${show(s.versus.throughput)}x)` +
        (s.target.against === "direct" ? "" : `; ${show(s.throughput.slipway!)}x direct`) +
        `; Slipway ${spread(s.rounds.map((r) => r.slipway!.cpuUs.proxy))} µs CPU/req${floor}`
    })
    verdicts.push({
      target: `deployment proxy ${s.name}: p99 <= ${against} p99 / ${s.target.ratio}`,
      pass: s.verdict.p99,
      detail: `${s.target.against}/Slipway p99 median ${s.versus.p99.median.toFixed(2)}x (rounds ${show(s.versus.p99)}x); p99 ${s.target.against} ${spread(reference.map((r) => r.p99Ms), 2)} ms, Slipway ${spread(s.rounds.map((r) => r.slipway!.p99Ms), 2)} ms`
    })
  }
  for (const [count, ns] of Object.entries(routingNs)) lines.push(`deployment-proxy routing: routes=${count} ns_per_api_request=${ns}`)
  lines.push(`deployment-proxy load: before=${loadBefore.toFixed(2)} after=${loadAfter.toFixed(2)} cores=${cores}`)
  for (const v of verdicts) lines.push(`${v.pass ? "PASS" : "FAIL"}  ${v.target}: ${v.detail}`)
  for (const line of lines) log(line)
  return {
    settings: { seconds, connections, rounds, cores },
    loadAverage: { before: loadBefore, after: loadAfter },
    scenarios: results,
    routingNs,
    verdicts,
    lines
  }
}

if (import.meta.main) {
  const scenarios = process.env.BENCH_PROXY_SCENARIOS?.split(",").map((s) => s.trim()) as ProxyScenarioName[] | undefined
  const fronts = process.env.BENCH_PROXY_FRONTS?.split(",").map((s) => s.trim()) as ProxyFront[] | undefined
  await runDeploymentProxyBench({
    seconds: Number(process.argv[2] ?? 5),
    connections: Number(process.argv[3] ?? 32),
    rounds: Number(process.argv[4] ?? 3),
    ...(scenarios ? { scenarios } : {}),
    ...(fronts ? { fronts } : {}),
    ...(process.env.BENCH_CPU_PROF ? { cpuProfileDir: process.env.BENCH_CPU_PROF } : {})
  })
}
