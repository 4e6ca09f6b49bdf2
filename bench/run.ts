/**
 * `npm run bench`: load benchmarks of the Slipway server against a floor (bench/floor.ts), on a
 * fresh temporary database seeded with 10 tenants (bench/seed.ts). Not part of `npm test`.
 *
 * One target at a time (the machine may have 2 cores): the server under test runs as a child
 * (`node server/main.ts`, as `npm start` does), the floor as another child, and autocannon here.
 * Loopback only. Prints a table and the verdict per target; writes bench/results/latest.json.
 *
 * Environment (all optional):
 *   BENCH_DURATION      seconds per measured run (default 3)
 *   BENCH_ROUNDS        measured runs per scenario and target alone, alternating floor and server; the best counts (default 3)
 *   BENCH_SIDE_ROUNDS   rounds with floor and server loaded at the same time (the verdicts' capacity ratio: median; default 5)
 *   BENCH_WARMUP        seconds of warm-up before a scenario's first run on each target (default 5)
 *   BENCH_CONNECTIONS   concurrent connections (default 64)
 *   BENCH_SCALE         fraction of the full data set (default 1: 10k deployments, 100k templates, 10k volumes)
 *   BENCH_ONLY          comma-separated scenario names to run (default all)
 *   BENCH_DIR           where the temporary database lives (default the OS temp dir)
 *   BENCH_KEEP          keep the database directory afterwards
 *   BENCH_RUNTIME_STEP_MS   SLIPWAY_REVISION_STEP_MS of the patch-deployment-with-runtime run (default 250, the server's default)
 *   BENCH_CPU_PROF      directory: run the server under test and the floor with --cpu-prof, profiles written to
 *                       its `server` and `floor` subdirectories
 *   BENCH_POSTGRES      0 skips the Postgres section (default: it runs after the SQLite one,
 *                       bench/postgres-section.ts; its own settings are described there)
 *   BENCH_SANDBOXES     0 skips the sandbox section (default: it runs after the Postgres one, as
 *                       `npm run bench:sandboxes` does: root and the packages of scripts/setup-host.sh;
 *                       its settings are described in bench/sandboxes.ts)
 *   BENCH_DEPLOYMENTS   0 skips the deployment section (default: it runs after the sandbox one, as
 *                       `npm run bench:deployments` does; settings in bench/deployments.ts)
 *   BENCH_BUILDS        0 skips the builds section (default: it runs last, as `npm run bench:builds`
 *                       does; settings in bench/builds.ts)
 */
import { execFileSync } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { cpus, tmpdir, totalmem } from "node:os"
import { join, resolve } from "node:path"
import { allMigrations } from "../server/index.ts"
import { closeDatabase, openDatabase } from "../server/store/sqlite/database.ts"
import { type FloorOps, makeFloorOps, openFloorDatabase } from "./floor.ts"
import { type BenchRequest, type LoadResult, runLoad } from "./load.ts"
import { postgresScenarioNames, runPostgresSection } from "./postgres-section.ts"
import { cpuMicros, freePort, mainThreadCpuMicros, num, residentBytes, root, spawnTarget, type Target } from "./procs.ts"
import { buildSection, deploymentSection, runSection, sandboxSection, type Section, sectionScenarios, type SectionSpec } from "./sections.ts"
import {
  awaitSamplesDeployed,
  benchKey,
  cloneSamples,
  createTenants,
  loadTargets,
  makeCall,
  seedSamples,
  shares,
  type Tenant
} from "./seed.ts"

const env = process.env
const DURATION = num("BENCH_DURATION", 3)
const ROUNDS = Math.max(1, num("BENCH_ROUNDS", 3))
const SIDE_ROUNDS = Math.max(1, num("BENCH_SIDE_ROUNDS", 5))
/**
 * V8 optimizes on a background thread, which on a 2-core machine competes with the load
 * generator, and the server has several times the floor's JavaScript to optimize (router,
 * schemas, effect, the core's rules). After 1 s the run still measured its compiler
 * (patch-deployment: 0.78x the floor after 1 s of warm-up, 0.89x after 8 s).
 */
const WARMUP = num("BENCH_WARMUP", 5)
const CONNECTIONS = num("BENCH_CONNECTIONS", 64)
const SCALE = num("BENCH_SCALE", 1)
const ONLY = env.BENCH_ONLY ? new Set(env.BENCH_ONLY.split(",").map((name) => name.trim())) : undefined
const STEP_MS = num("BENCH_RUNTIME_STEP_MS", 250)
/**
 * During the main load the local runtime is parked (an hour per revision state), so that a
 * write does on the server what it does on the floor: one transaction. What the runtime adds
 * (a transaction per state change of every new revision) is measured by its own run.
 */
const PARKED_STEP_MS = 3_600_000
const TENANTS = 10
/** Targets of the issue. */
const READ_RATIO = 0.8
const WRITE_RATIO = 0.8
const TAIL_RATIO = 5
const DEEP_RATIO = 5

const log = (line: string) => process.stderr.write(`bench: ${line}\n`)
const mb = (bytes: number | undefined) => (bytes === undefined || Number.isNaN(bytes) ? "n/a" : `${(bytes / 1024 / 1024).toFixed(0)} MB`)
const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits

/** A small deterministic generator, so two runs send the same requests. */
const prng = (seed: number) => () => {
  seed ^= seed << 13
  seed ^= seed >>> 17
  seed ^= seed << 5
  return (seed >>> 0) / 4294967296
}

// ---------------------------------------------------------------------------------------------
// Scenarios

/** Shared by every run (floor, server, raw loops): names stay unique and volume sizes only grow. */
let counter = 0
const runId = Date.now().toString(36)

interface Scenario {
  readonly name: string
  readonly kind: "read" | "write"
  readonly description: string
  readonly next: (connection: number) => BenchRequest
  /** The same operation without HTTP, for the raw SQLite figure of writes. */
  readonly raw?: (ops: FloorOps) => { readonly status: number }
}

const scenarios = (tenants: ReadonlyArray<Tenant>, targets: ReturnType<typeof loadTargets>): Array<Scenario> => {
  const random = prng(0x5eed)
  const pick = <A>(items: ReadonlyArray<A>) => items[Math.floor(random() * items.length)]!
  const headers = (tenant: Tenant) => ({ "x-api-key": tenant.key })
  const withDeployments = tenants.filter((tenant) => targets.deployments[tenant.index]!.length > 0)
  const containers = tenants.map((tenant) => targets.deployments[tenant.index]!.filter((d) => d.source === "external_container"))
  const auth = (tenant: Tenant) => ({ tenantId: tenant.id, organizationId: tenant.organizationId })
  const deepOffset = Math.round(targets.templates[0]! * 0.9)
  const main = tenants[0]!
  /** Every (tenant, volume) pair, dealt to the connections like cards: connection c owns pairs c, c + connections, ... */
  const pairs = tenants.flatMap((tenant) => targets.volumes[tenant.index]!.map((name) => [tenant, name] as const))
  const perConnection = Math.max(1, Math.floor(pairs.length / CONNECTIONS))
  const volumeOf = (connection: number, n: number) => pairs[(connection + CONNECTIONS * (Math.floor(n / CONNECTIONS) % perConnection)) % pairs.length]!
  /**
   * Each resize grows its volume by 1 MiB from the seeded 1 GiB: the same work whatever the
   * number of operations, and an organization's usage grows by 1 MiB per operation, far from its
   * quota on any machine (sizes that grew with the global operation count reached the quota on a
   * faster machine: "raw patch-volume-size (NORMAL): 26132 operations refused").
   */
  const resizes = new Map<string, number>()
  const grownSize = (tenant: Tenant, name: string) => {
    const key = `${tenant.id}/${name}`
    const count = (resizes.get(key) ?? 0) + 1
    resizes.set(key, count)
    return `${1024 + count}Mi`
  }
  const list: Array<Scenario> = [
    {
      name: "list-templates-offset-0",
      kind: "read",
      description: `GET /v2/sandboxes/templates?limit=100&offset=0 (tenant with ${targets.templates[0]} templates)`,
      next: () => ({ method: "GET", path: "/v2/sandboxes/templates?limit=100&offset=0", headers: headers(main) })
    },
    {
      name: "list-templates-deep",
      kind: "read",
      description: `GET /v2/sandboxes/templates?limit=100&offset=${deepOffset} (of ${targets.templates[0]})`,
      next: () => ({ method: "GET", path: `/v2/sandboxes/templates?limit=100&offset=${deepOffset}`, headers: headers(main) })
    },
    {
      name: "patch-volume-size",
      kind: "write",
      description: "PATCH /v2/sandboxes/volumes/{name} {size} (grow; quota check and update in one BEGIN IMMEDIATE)",
      // Each connection resizes only its own volumes, one request at a time, so a volume's size
      // only ever grows (a request overtaken by a later one for the same volume would be a shrink).
      next: (connection) => {
        const n = counter++
        const [tenant, name] = volumeOf(connection, n)
        return { method: "PATCH", path: `/v2/sandboxes/volumes/${name}`, headers: headers(tenant), body: JSON.stringify({ size: grownSize(tenant, name) }) }
      },
      raw: (ops) => {
        const n = counter++
        const [tenant, name] = volumeOf(n % CONNECTIONS, n)
        return ops.resizeVolume(auth(tenant), name, { size: grownSize(tenant, name) })
      }
    }
  ]
  if (withDeployments.length === 0) return list
  return [
    {
      name: "get-deployment",
      kind: "read",
      description: "GET /v2/deployments/{id} (random tenant and deployment)",
      next: () => {
        const tenant = pick(withDeployments)
        return { method: "GET", path: `/v2/deployments/${pick(targets.deployments[tenant.index]!).id}`, headers: headers(tenant) }
      }
    },
    {
      name: "get-revision",
      kind: "read",
      description: "GET /v2/deployments/{id}/revisions/{rid} (the action's polling path)",
      next: () => {
        const tenant = pick(withDeployments)
        const deployment = pick(targets.deployments[tenant.index]!)
        return { method: "GET", path: `/v2/deployments/${deployment.id}/revisions/${deployment.revisionId}`, headers: headers(tenant) }
      }
    },
    ...list,
    {
      name: "patch-deployment",
      kind: "write",
      description: "PATCH /v2/deployments/{id} {source_revision_config.image_uri} (creates a revision)",
      next: () => {
        const tenant = pick(withDeployments)
        const body = JSON.stringify({ source_revision_config: { image_uri: `ghcr.io/acme/agent:bench-${counter++}` } })
        return { method: "PATCH", path: `/v2/deployments/${pick(containers[tenant.index]!).id}`, headers: headers(tenant), body }
      },
      raw: (ops) => {
        const tenant = pick(withDeployments)
        return ops.patchDeployment(auth(tenant), pick(containers[tenant.index]!).id, {
          source_revision_config: { image_uri: `ghcr.io/acme/agent:bench-${counter++}` }
        })
      }
    },
    {
      name: "create-deployment",
      kind: "write",
      description: "POST /v2/deployments (deployment, first revision and tracing project)",
      next: () => {
        const tenant = pick(tenants)
        const body = JSON.stringify({
          name: `bench-${runId}-${counter++}`,
          source: "external_container",
          source_revision_config: { image_uri: "ghcr.io/acme/agent:1.0.0" }
        })
        return { method: "POST", path: "/v2/deployments", headers: headers(tenant), body }
      },
      raw: (ops) => {
        return ops.createDeployment(auth(pick(tenants)), {
          name: `bench-${runId}-${counter++}`,
          source: "external_container",
          source_revision_config: { image_uri: "ghcr.io/acme/agent:1.0.0" }
        })
      }
    }
  ]
}

// ---------------------------------------------------------------------------------------------
// Processes

const serverEnv = (port: number, databasePath: string, stepMs: number): Record<string, string> => ({
  PORT: String(port),
  HOST: "127.0.0.1",
  DATABASE_PATH: databasePath,
  SLIPWAY_API_KEY: benchKey(0),
  SLIPWAY_REVISION_STEP_MS: String(stepMs),
  // The control plane's load: revisions walk the simulated states (the local runtime would pull
  // the bench's made-up images: bench/deploy-time.ts measures real deployments).
  SLIPWAY_RUNTIME: "simulated",
  LOG_LEVEL: "warn"
})

const startServerChild = async (databasePath: string, stepMs: number, probePath = "/health", profileDir?: string) => {
  const port = await freePort()
  return spawnTarget({
    name: "server",
    command: process.execPath,
    args: [...(env.BENCH_SERVER_NODE_FLAGS?.split(" ").filter(Boolean) ?? []), ...(profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : []), "server/main.ts"],
    env: serverEnv(port, databasePath, stepMs),
    port,
    probePath,
    probeHeaders: { "x-api-key": benchKey(0) }
  })
}

const startFloorChild = async (databasePath: string, profileDir?: string) => {
  const port = await freePort()
  return spawnTarget({
    name: "floor",
    command: process.execPath,
    args: [...(profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : []), "bench/floor.ts"],
    env: { PORT: String(port), DATABASE_PATH: databasePath },
    port,
    probePath: "/health"
  })
}

/** `npm start` as a user runs it: npm, then node server/main.ts. */
const startWithNpm = async (databasePath: string, probePath: string) => {
  const port = await freePort()
  const npm = env.npm_execpath
  return spawnTarget({
    name: "npm start",
    command: npm ? process.execPath : "npm",
    args: npm ? [npm, "start", "--silent"] : ["start", "--silent"],
    env: serverEnv(port, databasePath, STEP_MS),
    port,
    probePath,
    probeHeaders: { "x-api-key": benchKey(0) }
  })
}

// ---------------------------------------------------------------------------------------------
// Measurements

export interface Measured extends LoadResult {
  /** CPU the target spent per answered request: what it costs, whatever the load generator's speed. */
  readonly cpuUsPerRequest: number
  readonly cpuShare: number
}

const measure = async (target: Target, scenario: Scenario, warmup: boolean): Promise<Measured> => {
  if (warmup && WARMUP > 0) await runLoad({ url: target.url, connections: CONNECTIONS, durationSeconds: WARMUP, next: scenario.next })
  const cpuBefore = cpuMicros(target.process.pid)
  const result = await runLoad({ url: target.url, connections: CONNECTIONS, durationSeconds: DURATION, next: scenario.next })
  const cpu = cpuMicros(target.process.pid) - cpuBefore
  return { ...result, cpuUsPerRequest: cpu / result.requests, cpuShare: cpu / 1e6 / result.durationSeconds }
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) / 2)]!
}

/**
 * ROUNDS runs per target alone, alternating which goes first: each run's req/s and latency are
 * what the target gives with the load generator beside it. The best run (most answers per
 * second) stands for each target, the CPU per request is the median over the runs.
 */
const alone = async (targets: { floor: Target; server: Target }, scenario: Scenario) => {
  const runs: { floor: Array<Measured>; server: Array<Measured> } = { floor: [], server: [] }
  for (let round = 0; round < ROUNDS; round++) {
    for (const which of round % 2 === 0 ? (["floor", "server"] as const) : (["server", "floor"] as const)) {
      runs[which].push(await measure(targets[which], scenario, round < 2))
    }
  }
  const best = (list: Array<Measured>) => {
    const top = list.reduce((a, b) => (b.rps > a.rps ? b : a))
    return { ...top, cpuUsPerRequest: median(list.map((run) => run.cpuUsPerRequest)), rounds: list.map((run) => round(run.rps, 0)) }
  }
  return { floor: best(runs.floor), server: best(runs.server) }
}

export interface SideBySide {
  /** Per round: the floor's CPU per request over the server's (1 = the server costs what the floor costs). */
  readonly capacityRatios: ReadonlyArray<number>
  /** Per round: the server's answers per second over the floor's, both loaded at once. */
  readonly rpsRatios: ReadonlyArray<number>
  readonly capacityRatio: number
  readonly rpsRatio: number
  /** Median per round of the CPU per request on each side: all threads, and the main thread alone (the rest is V8's GC and compiler helpers). */
  readonly cpuUs: { readonly floor: number; readonly server: number; readonly floorMain: number; readonly serverMain: number }
}

/**
 * SIDE_ROUNDS rounds with floor and server loaded at the same time, CONNECTIONS / 2 connections
 * each from this process, each target on its own copy of the seeded file. This VM's speed moves
 * by half within seconds (the floor's own CPU per request: 43 us in one 3 s run, 64 us in the
 * next), so two targets measured one after the other compare two machines. Loaded together
 * they share every slow and fast moment, and what one costs per request over the other is the
 * capacity ratio: the req/s each would give on a core of its own. The median round counts.
 */
const sideBySide = async (targets: { floor: Target; server: Target }, scenario: Scenario): Promise<SideBySide> => {
  const connections = Math.max(1, Math.floor(CONNECTIONS / 2))
  const capacityRatios: Array<number> = []
  const rpsRatios: Array<number> = []
  const cpu = { floor: [] as Array<number>, server: [] as Array<number>, floorMain: [] as Array<number>, serverMain: [] as Array<number> }
  const floorPid = targets.floor.process.pid
  const serverPid = targets.server.process.pid
  for (let round = 0; round < SIDE_ROUNDS; round++) {
    const before = { floor: cpuMicros(floorPid), server: cpuMicros(serverPid), floorMain: mainThreadCpuMicros(floorPid), serverMain: mainThreadCpuMicros(serverPid) }
    const [floor, server] = await Promise.all(
      ([targets.floor, targets.server] as const).map((target) => runLoad({ url: target.url, connections, durationSeconds: DURATION, next: scenario.next }))
    )
    const floorCpu = (cpuMicros(floorPid) - before.floor) / floor!.requests
    const serverCpu = (cpuMicros(serverPid) - before.server) / server!.requests
    cpu.floor.push(floorCpu)
    cpu.server.push(serverCpu)
    cpu.floorMain.push((mainThreadCpuMicros(floorPid) - before.floorMain) / floor!.requests)
    cpu.serverMain.push((mainThreadCpuMicros(serverPid) - before.serverMain) / server!.requests)
    capacityRatios.push(floorCpu / serverCpu)
    rpsRatios.push(server!.rps / floor!.rps)
  }
  return {
    capacityRatios,
    rpsRatios,
    capacityRatio: median(capacityRatios),
    rpsRatio: median(rpsRatios),
    cpuUs: { floor: median(cpu.floor), server: median(cpu.server), floorMain: median(cpu.floorMain), serverMain: median(cpu.serverMain) }
  }
}

const compare = async (targets: { floor: Target; server: Target }, scenario: Scenario) => {
  const solo = await alone(targets, scenario)
  return { ...solo, together: await sideBySide(targets, scenario) }
}

/** Runs `op` in a loop for `seconds`; answers operations per second. */
const timeLoop = (seconds: number, op: () => void) => {
  for (let i = 0; i < 200; i++) op()
  let count = 0
  const started = performance.now()
  const until = started + seconds * 1000
  while (performance.now() < until) {
    for (let i = 0; i < 50; i++) op()
    count += 50
  }
  return count / ((performance.now() - started) / 1000)
}

const fsType = (dir: string) => {
  try {
    return execFileSync("stat", ["-f", "-c", "%T", dir], { encoding: "utf8" }).trim()
  } catch {
    return "unknown"
  }
}

type Best = Measured & { readonly rounds: ReadonlyArray<number> }
interface Compared {
  readonly scenario: Scenario
  readonly server: Best
  readonly floor: Best
  readonly together: SideBySide
}

const summary = (result: Best) => ({
  rps: round(result.rps, 0),
  p50_ms: round(result.p50Ms),
  p99_ms: round(result.p99Ms),
  max_ms: round(result.maxMs),
  cpu_us_per_request: round(result.cpuUsPerRequest, 0),
  cpu_share_of_one_core: round(result.cpuShare),
  rps_per_run: result.rounds,
  requests: result.requests,
  non_2xx: result.non2xx,
  errors: result.errors,
  status_codes: result.statusCodes
})

// ---------------------------------------------------------------------------------------------

const main = async () => {
  const dir = mkdtempSync(join(env.BENCH_DIR ? resolve(env.BENCH_DIR) : tmpdir(), "slipway-bench-"))
  const databasePath = join(dir, "slipway.db")
  const share = shares(SCALE, TENANTS)
  log(`database ${databasePath} (${fsType(dir)}); ${DURATION}s per run after ${WARMUP}s warm-up, ${CONNECTIONS} connections`)
  const started = performance.now()
  const children: Array<Target> = []
  const cleanup = async () => {
    for (const child of children) await child.stop().catch(() => undefined)
    if (!env.BENCH_KEEP) rmSync(dir, { recursive: true, force: true })
  }
  process.on("SIGINT", () => void cleanup().then(() => process.exit(130)))

  try {
    // 1. First start on an empty file (migrations included), then samples through the API.
    const fresh = await startServerChild(databasePath, 5)
    children.push(fresh)
    log(`fresh start answered /health after ${fresh.startupMs.toFixed(0)} ms`)
    const seedStarted = performance.now()
    const bench = openDatabase(databasePath, allMigrations)
    const tenants = createTenants(bench, TENANTS)
    const controlPlane = (await fetch(`${fresh.url}/v2/deployments`, { headers: { "x-api-key": tenants[0]!.key } })).status !== 404
    if (!controlPlane) log("the control-plane routes are not served yet: deployment scenarios are skipped")
    await seedSamples(makeCall(fresh.url), tenants, { deployments: controlPlane })
    await awaitSamplesDeployed(bench, tenants)
    const rssAfterSamples = residentBytes(fresh.process.pid)
    await fresh.stop()
    children.pop()

    // 2. Bulk clones through the repositories, server stopped.
    const cloneStarted = performance.now()
    const rows = cloneSamples(bench, tenants, share)
    bench.pragma("optimize")
    const targets = loadTargets(bench, tenants)
    closeDatabase(bench)
    const seedMs = performance.now() - seedStarted
    log(
      `seeded in ${(seedMs / 1000).toFixed(1)} s (clones ${((performance.now() - cloneStarted) / 1000).toFixed(1)} s): ` +
        `${targets.deployments.reduce((n, d) => n + d.length, 0)} deployments, ${targets.templates.reduce((a, b) => a + b, 0)} templates, ` +
        `${targets.volumes.reduce((n, v) => n + v.length, 0)} volumes in ${TENANTS} tenants`
    )

    // The floor gets its own copy of the seeded file, so that floor and server can be loaded at
    // the same time (side by side) without taking each other's write lock.
    const floorPath = join(dir, "floor.db")
    for (const suffix of ["", "-wal", "-shm", ".secrets-key"]) if (existsSync(databasePath + suffix)) copyFileSync(databasePath + suffix, floorPath + suffix)
    const profiles = env.BENCH_CPU_PROF ? { server: join(resolve(env.BENCH_CPU_PROF), "server"), floor: join(resolve(env.BENCH_CPU_PROF), "floor") } : undefined
    for (const profileDir of Object.values(profiles ?? {})) mkdirSync(profileDir, { recursive: true })
    const floor = await startFloorChild(floorPath, profiles?.floor)
    children.push(floor)
    const results: Array<Compared> = []
    const record = (scenario: Scenario, compared: { floor: Best; server: Best; together: SideBySide }) => {
      results.push({ scenario, ...compared })
      const { server: sv, floor: fl, together } = compared
      log(
        `${scenario.name}: server ${sv.rps.toFixed(0)} req/s (runs ${sv.rounds.join(", ")}) p50 ${sv.p50Ms.toFixed(2)} p99 ${sv.p99Ms.toFixed(2)} ms ${sv.cpuUsPerRequest.toFixed(0)} us CPU/req` +
          ` | floor ${fl.rps.toFixed(0)} req/s (runs ${fl.rounds.join(", ")}) ${fl.cpuUsPerRequest.toFixed(0)} us CPU/req | non-2xx ${sv.non2xx}/${fl.non2xx}` +
          ` | side by side: capacity ${together.capacityRatios.map((r) => r.toFixed(2)).join(", ")}` +
          ` (CPU us/req server ${together.cpuUs.server.toFixed(0)}, main thread ${together.cpuUs.serverMain.toFixed(0)}; floor ${together.cpuUs.floor.toFixed(0)}, main thread ${together.cpuUs.floorMain.toFixed(0)})`
      )
    }
    const all = scenarios(tenants, targets).filter((scenario) => !ONLY || ONLY.has(scenario.name))

    // 3. PATCH with the revision runtime advancing every new revision (SLIPWAY_REVISION_STEP_MS).
    const patch = all.find((scenario) => scenario.name === "patch-deployment")
    if (patch) {
      const live = await startServerChild(databasePath, STEP_MS)
      children.push(live)
      record({ ...patch, name: "patch-deployment+runtime", description: `${patch.description}, runtime advancing revisions every ${STEP_MS} ms` }, await compare({ floor, server: live }, patch))
      await live.stop()
      children.splice(children.indexOf(live), 1)
    }

    // 4. The server under test on the seeded file, timed to its first answered API request.
    const firstDeployment = targets.deployments[0]![0]
    const firstRequest = firstDeployment ? `/v2/deployments/${firstDeployment.id}` : "/v2/sandboxes/volumes/vol-a"
    const server = await startServerChild(databasePath, PARKED_STEP_MS, firstRequest, profiles?.server)
    children.push(server)
    const rssSeeded = residentBytes(server.process.pid)
    log(`seeded start answered GET ${firstRequest} after ${server.startupMs.toFixed(0)} ms; RSS ${mb(rssSeeded?.rss)}`)

    // 5. Load, one target at a time.
    for (const scenario of all) {
      log(`${scenario.name}: ${ROUNDS} runs each of ${DURATION}s`)
      record(scenario, await compare({ floor, server }, scenario))
    }
    results.sort((a, b) => all.findIndex((s) => a.scenario.name.startsWith(s.name)) - all.findIndex((s) => b.scenario.name.startsWith(s.name)))
    const rssAfterRun = residentBytes(server.process.pid)
    await floor.stop()
    await server.stop()
    children.length = 0

    // 6. SQLite alone: the write transactions without HTTP, and synchronous NORMAL vs FULL.
    const raw: Record<string, number> = {}
    const rawSeconds = Math.max(0.5, Math.min(2, DURATION / 2))
    for (const synchronous of ["NORMAL", "FULL"] as const) {
      const db = openFloorDatabase(databasePath, synchronous)
      const ops = makeFloorOps(db)
      for (const scenario of all) {
        if (!scenario.raw) continue
        let failed = 0
        raw[`${scenario.name}:${synchronous}`] = timeLoop(rawSeconds, () => {
          if (scenario.raw!(ops).status >= 300) failed++
        })
        if (failed > 0) throw new Error(`raw ${scenario.name} (${synchronous}): ${failed} operations refused`)
      }
      db.close()
    }

    // 7. `npm start` on the seeded file, as a user would run it.
    const npmStart = await startWithNpm(databasePath, firstRequest)
    children.push(npmStart)
    log(`npm start answered GET ${firstRequest} after ${npmStart.startupMs.toFixed(0)} ms`)
    await npmStart.stop()
    children.length = 0

    // 8. The Postgres section: one replica on a throwaway PostgreSQL server (after the SQLite
    // figures are measured, so the two never share the machine).
    const withPostgres = env.BENCH_POSTGRES !== "0" && (!ONLY || postgresScenarioNames.some((name) => ONLY.has(name)))
    if (withPostgres) log("postgres section: one replica on PostgreSQL, the raw-driver floor and SQLite side by side")
    const postgres = withPostgres ? await runPostgresSection(ONLY) : undefined

    // 9. The local runtime's sections, each its own script (they need root and the Debian packages).
    const sections: Array<[SectionSpec, Section]> = []
    for (const [spec, setting] of [
      [sandboxSection, "BENCH_SANDBOXES"],
      [deploymentSection, "BENCH_DEPLOYMENTS"],
      [buildSection, "BENCH_BUILDS"]
    ] as const) {
      const wanted = sectionScenarios(spec, ONLY)
      if (env[setting] === "0" || wanted.length === 0) continue
      log(`${spec.name} section: node ${spec.script} (${wanted.join(", ")})`)
      sections.push([spec, await runSection(spec, wanted)])
    }

    report({
      postgres,
      sections,
      dir,
      tenants,
      rows,
      targets,
      seedMs,
      startup: { fresh: fresh.startupMs, seeded: server.startupMs, npmStart: npmStart.startupMs, firstRequest },
      memory: { afterSamples: rssAfterSamples, seeded: rssSeeded, afterRun: rssAfterRun },
      results,
      raw,
      controlPlane,
      totalMs: performance.now() - started
    })
  } finally {
    await cleanup()
  }
}

// ---------------------------------------------------------------------------------------------
// Report

interface ReportInput {
  readonly postgres: Awaited<ReturnType<typeof runPostgresSection>> | undefined
  readonly sections: ReadonlyArray<readonly [SectionSpec, Section]>
  readonly dir: string
  readonly tenants: ReadonlyArray<Tenant>
  readonly rows: ReturnType<typeof cloneSamples>
  readonly targets: ReturnType<typeof loadTargets>
  readonly seedMs: number
  readonly startup: { fresh: number; seeded: number; npmStart: number; firstRequest: string }
  readonly memory: Record<string, { rss: number; peak: number } | undefined>
  readonly results: ReadonlyArray<Compared>
  readonly raw: Record<string, number>
  readonly controlPlane: boolean
  readonly totalMs: number
}

const pad = (text: string, width: number, left = false) => (left ? text.padEnd(width) : text.padStart(width))

const report = (input: ReportInput) => {
  const { results, raw } = input
  const verdicts: Array<{ target: string; pass: boolean; detail: string }> = []
  const byName = new Map(results.map((result) => [result.scenario.name, result]))

  const rows = results.map(({ scenario, server, floor, together }) => {
    const ratio = server.rps / floor.rps
    /** Alone: the floor's median CPU per request over the server's. */
    const cpuRatio = floor.cpuUsPerRequest / server.cpuUsPerRequest
    /** The verdicts' figure: the same CPU ratio with both loaded at once (see `sideBySide`). */
    const capacity = together.capacityRatio
    const tail = server.p99Ms / server.p50Ms
    const rawRate = raw[`${scenario.name}:NORMAL`]
    const sqliteUs = rawRate ? 1e6 / rawRate : undefined
    const informational = scenario.name.endsWith("+runtime")
    const measured =
      `${capacity.toFixed(2)}x capacity side by side (rounds ${together.capacityRatios.map((r) => r.toFixed(2)).join(", ")}; req/s ${together.rpsRatio.toFixed(2)}x); ` +
      `alone ${ratio.toFixed(2)}x req/s (best of ${ROUNDS}), CPU/request server ${server.cpuUsPerRequest.toFixed(0)} us, floor ${floor.cpuUsPerRequest.toFixed(0)} us (${cpuRatio.toFixed(2)}x)`
    if (informational) {
      // Not a target: what the local runtime's state changes add to each PATCH.
    } else if (scenario.kind === "read") {
      verdicts.push({ target: `${scenario.name}: reads >= ${READ_RATIO}x floor`, pass: capacity >= READ_RATIO, detail: measured })
    } else {
      const serverSql = sqliteUs === undefined ? undefined : sqliteUs / server.cpuUsPerRequest
      const bound =
        capacity >= WRITE_RATIO
          ? `SQLite and HTTP, like the floor: the transaction alone takes ${sqliteUs?.toFixed(0) ?? "?"} us, ${serverSql === undefined ? "?" : Math.round(serverSql * 100)}% of the server's CPU per request`
          : `the server's own code: the transaction alone takes ${sqliteUs?.toFixed(0) ?? "?"} us of the server's ${server.cpuUsPerRequest.toFixed(0)} us CPU per request`
      verdicts.push({
        target: `${scenario.name}: writes limited by SQLite, not server code (>= ${WRITE_RATIO}x the floor doing the same transaction)`,
        pass: capacity >= WRITE_RATIO,
        detail: `limited by ${bound}; ${measured}`
      })
    }
    if (!informational) verdicts.push({
      target: `${scenario.name}: p99 <= ${TAIL_RATIO}x p50 at ${CONNECTIONS} connections`,
      pass: tail <= TAIL_RATIO,
      detail: `p50 ${server.p50Ms.toFixed(2)} ms, p99 ${server.p99Ms.toFixed(2)} ms (${tail.toFixed(1)}x)`
    })
    if (server.non2xx > 0 || server.errors > 0) {
      verdicts.push({
        target: `${scenario.name}: every answer 2xx`,
        pass: false,
        detail: `${server.non2xx} non-2xx ${JSON.stringify(server.statusCodes)}, ${server.errors} errors`
      })
    }
    return {
      name: scenario.name,
      kind: scenario.kind,
      description: scenario.description,
      server: summary(server),
      floor: summary(floor),
      ratio_to_floor: round(ratio),
      cpu_ratio_to_floor: round(cpuRatio),
      capacity_ratio_side_by_side: round(capacity),
      side_by_side: {
        capacity_ratio_per_round: together.capacityRatios.map((r) => round(r)),
        rps_ratio_per_round: together.rpsRatios.map((r) => round(r)),
        cpu_us_per_request: { server: round(together.cpuUs.server, 0), floor: round(together.cpuUs.floor, 0) },
        main_thread_cpu_us_per_request: { server: round(together.cpuUs.serverMain, 0), floor: round(together.cpuUs.floorMain, 0) },
        rounds: SIDE_ROUNDS,
        connections_each: Math.max(1, Math.floor(CONNECTIONS / 2))
      },
      p99_over_p50: round(tail, 1),
      ...(sqliteUs !== undefined ? { sqlite_transaction_us: round(sqliteUs, 0), sqlite_share_of_server_cpu: round(sqliteUs / server.cpuUsPerRequest) } : {})
    }
  })

  const shallow = byName.get("list-templates-offset-0")
  const deep = byName.get("list-templates-deep")
  let deepCost: number | undefined
  if (shallow && deep) {
    deepCost = deep.server.cpuUsPerRequest / shallow.server.cpuUsPerRequest
    verdicts.push({
      target: `list-templates: offset 90% within ${DEEP_RATIO}x the cost of offset 0`,
      pass: deepCost <= DEEP_RATIO,
      detail:
        `${deepCost.toFixed(2)}x the CPU per request (${deep.server.cpuUsPerRequest.toFixed(0)} vs ${shallow.server.cpuUsPerRequest.toFixed(0)} us), ` +
        `${(shallow.server.rps / deep.server.rps).toFixed(2)}x in req/s; floor with plain LIMIT/OFFSET: ${(deep.floor.cpuUsPerRequest / shallow.floor.cpuUsPerRequest).toFixed(2)}x`
    })
  }

  const sync = Object.fromEntries(
    results
      .filter(({ scenario }) => raw[`${scenario.name}:NORMAL`] !== undefined)
      .map(({ scenario }) => {
        const normal = raw[`${scenario.name}:NORMAL`]!
        const full = raw[`${scenario.name}:FULL`]!
        return [scenario.name, { normal_tx_per_s: round(normal, 0), full_tx_per_s: round(full, 0), full_over_normal: round(full / normal) }]
      })
  )

  const allVerdicts = [...verdicts, ...(input.postgres?.verdicts ?? []), ...input.sections.flatMap(([, section]) => section.verdicts)]
  const json = {
    generated_at: new Date().toISOString(),
    machine: { node: process.version, cpus: cpus().length, cpu_model: cpus()[0]?.model, memory_bytes: totalmem(), platform: process.platform, database_fs: fsType(input.dir) },
    settings: { duration_s: DURATION, rounds: ROUNDS, side_rounds: SIDE_ROUNDS, warmup_s: WARMUP, connections: CONNECTIONS, scale: SCALE, runtime_step_ms: STEP_MS, parked_step_ms: PARKED_STEP_MS },
    data: {
      tenants: input.tenants.length,
      deployments: input.targets.deployments.reduce((n, d) => n + d.length, 0),
      templates: input.targets.templates.reduce((a, b) => a + b, 0),
      templates_in_listed_tenant: input.targets.templates[0],
      volumes: input.targets.volumes.reduce((n, v) => n + v.length, 0),
      cloned_rows: input.rows,
      seed_seconds: round(input.seedMs / 1000, 1),
      control_plane_served: input.controlPlane
    },
    startup_ms: {
      fresh_database: round(input.startup.fresh, 0),
      seeded_database: round(input.startup.seeded, 0),
      npm_start_seeded_database: round(input.startup.npmStart, 0),
      first_request: input.startup.firstRequest
    },
    memory_bytes: {
      after_samples_through_api: input.memory.afterSamples?.rss,
      after_start_on_seeded_database: input.memory.seeded?.rss,
      after_run: input.memory.afterRun?.rss,
      peak_during_run: input.memory.afterRun?.peak
    },
    scenarios: rows,
    list_deep_over_offset_0: deepCost === undefined ? undefined : round(deepCost),
    synchronous_normal_vs_full: sync,
    verdicts: allVerdicts,
    postgres: input.postgres?.json,
    ...Object.fromEntries(input.sections.map(([spec, section]) => [spec.name, section.json])),
    total_seconds: round(input.totalMs / 1000, 0)
  }
  const out = join(root, "bench", "results")
  mkdirSync(out, { recursive: true })
  writeFileSync(join(out, "latest.json"), `${JSON.stringify(json, null, 2)}\n`)

  const lines: Array<string> = []
  const header =
    `${pad("scenario", 26, true)} ${pad("server req/s", 12)} ${pad("p50 ms", 7)} ${pad("p99 ms", 7)} ${pad("CPU us", 7)} ` +
    `${pad("floor req/s", 12)} ${pad("p50 ms", 7)} ${pad("p99 ms", 7)} ${pad("CPU us", 7)} ${pad("ratio", 6)} ${pad("CPU ratio", 9)} ${pad("capacity (side by side)", 23)}`
  lines.push("", header, "-".repeat(header.length))
  for (const row of rows) {
    lines.push(
      `${pad(row.name, 26, true)} ${pad(String(row.server.rps), 12)} ${pad(row.server.p50_ms.toFixed(2), 7)} ${pad(row.server.p99_ms.toFixed(2), 7)} ${pad(String(row.server.cpu_us_per_request), 7)} ` +
        `${pad(String(row.floor.rps), 12)} ${pad(row.floor.p50_ms.toFixed(2), 7)} ${pad(row.floor.p99_ms.toFixed(2), 7)} ${pad(String(row.floor.cpu_us_per_request), 7)} ` +
        `${pad(`${row.ratio_to_floor.toFixed(2)}x`, 6)} ${pad(`${row.cpu_ratio_to_floor.toFixed(2)}x`, 9)} ${pad(`${row.capacity_ratio_side_by_side.toFixed(2)}x`, 23)}`
    )
  }
  lines.push("")
  for (const [name, s] of Object.entries(sync)) {
    lines.push(`synchronous ${name} (SQLite alone): NORMAL ${s.normal_tx_per_s} tx/s, FULL ${s.full_tx_per_s} tx/s (${s.full_over_normal}x)`)
  }
  lines.push(
    `startup to first answer: fresh ${json.startup_ms.fresh_database} ms, seeded ${json.startup_ms.seeded_database} ms, npm start (seeded) ${json.startup_ms.npm_start_seeded_database} ms`,
    `server RSS: after start on seeded db ${mb(json.memory_bytes.after_start_on_seeded_database)}, after run ${mb(json.memory_bytes.after_run)} (peak ${mb(json.memory_bytes.peak_during_run)})`,
    ""
  )
  for (const verdict of verdicts) lines.push(`${verdict.pass ? "PASS" : "FAIL"}  ${verdict.target}: ${verdict.detail}`)
  if (input.postgres) lines.push("", "PostgreSQL (one replica; bench/postgres-section.ts):", ...input.postgres.lines)
  for (const [spec, section] of input.sections) lines.push("", `${spec.name} (${spec.script}):`, ...section.lines)
  const missed = allVerdicts.filter((verdict) => !verdict.pass)
  lines.push("", `targets: ${allVerdicts.length - missed.length} pass, ${missed.length} miss${missed.length ? ` (${missed.map((verdict) => verdict.target).join("; ")})` : ""}`)
  lines.push("", `results written to bench/results/latest.json (${json.total_seconds} s in all)`, "")
  process.stdout.write(lines.join("\n"))
}

main().catch((error) => {
  process.stderr.write(`bench: failed: ${error?.stack ?? error}\n`)
  process.exit(1)
})
