/**
 * The Postgres section of `npm run bench` (also alone: `npm run bench:postgres`). The control
 * plane's read scenarios against ONE Slipway replica on PostgreSQL, next to a floor of raw `pg`
 * queries running the server's own statements (bench/postgres-floor.ts) and one Slipway on a
 * SQLite file holding the same rows. PostgreSQL is a throwaway server this section starts itself
 * (Debian `postgresql`, test/support/postgres.ts: a temp cluster, loopback, `fsync=off`) and
 * stops, whatever happens.
 *
 * Data: BENCH_PG_API_DEPLOYMENTS deployments created through the API on each target (default
 * 100, each with its revision), then cloned in SQL up to BENCH_PG_DEPLOYMENTS (default 10,000)
 * in one tenant, for the deep list page.
 *
 * Scenarios: get-deployment, get-revision, list-deployments (offset 0), list-deployments-deep
 * (offset 90% of the list: the floor runs a plain OFFSET, the server starts from a checkpoint).
 * Each target alternates for BENCH_PG_ROUNDS (default 3) runs of BENCH_DURATION s after BENCH_PG_WARMUP s of
 * warm-up; the best run counts, CPU per request (from /proc) is the median.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import Database from "better-sqlite3"
import pg from "pg"
import { startPostgres } from "../test/support/postgres.ts"
import { type BenchRequest, type LoadResult, runLoad } from "./load.ts"
import { cpuMicros, freePort, num, spawnTarget, type Target } from "./procs.ts"

const DURATION = num("BENCH_DURATION", 3)
const ROUNDS = Math.max(1, num("BENCH_PG_ROUNDS", 3))
const WARMUP = num("BENCH_PG_WARMUP", 3)
const CONNECTIONS = num("BENCH_PG_CONNECTIONS", 32)
const API_DEPLOYMENTS = num("BENCH_PG_API_DEPLOYMENTS", 100)
const DEPLOYMENTS = Math.max(API_DEPLOYMENTS, num("BENCH_PG_DEPLOYMENTS", 10_000))
const KEY = "slw_bench_pg_key_0123456789abcdefghijklmnopqrstu"
const headers = { "x-api-key": KEY }
/** Goals of the issue. */
export const PG_READ_RATIO = 0.7
const DEEP_RATIO = 5

const log = (line: string) => process.stderr.write(`bench:postgres: ${line}\n`)
const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits

interface Measured extends LoadResult {
  readonly cpuUsPerRequest: number
}

const measure = async (target: Target, next: () => BenchRequest, warmup: boolean): Promise<Measured> => {
  if (warmup && WARMUP > 0) await runLoad({ url: target.url, connections: CONNECTIONS, durationSeconds: WARMUP, next })
  const before = cpuMicros(target.process.pid)
  const result = await runLoad({ url: target.url, connections: CONNECTIONS, durationSeconds: DURATION, next })
  if (result.non2xx + result.errors > 0) {
    throw new Error(`${target.name}: ${result.non2xx} non-2xx, ${result.errors} errors ${JSON.stringify(result.statusCodes)}\n${target.output().slice(-2000)}`)
  }
  return { ...result, cpuUsPerRequest: (cpuMicros(target.process.pid) - before) / result.requests }
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!

interface Best extends Measured {
  readonly runs: ReadonlyArray<number>
}

const best = (runs: ReadonlyArray<Measured>): Best => {
  const top = runs.reduce((a, b) => (b.rps > a.rps ? b : a))
  return { ...top, cpuUsPerRequest: median(runs.map((run) => run.cpuUsPerRequest)), runs: runs.map((run) => Math.round(run.rps)) }
}

const slipway = async (name: string, extra: Record<string, string>): Promise<Target> => {
  const port = await freePort()
  const target = await spawnTarget({
    name,
    command: process.execPath,
    args: ["server/main.ts"],
    env: {
      PORT: String(port),
      HOST: "127.0.0.1",
      SLIPWAY_API_KEY: KEY,
      LOG_LEVEL: "warn",
      SLIPWAY_RUNTIME: "simulated",
      SLIPWAY_REVISION_STEP_MS: "5",
      ...extra
    },
    port,
    probePath: "/health"
  })
  // The port answers 503 until the stores are ready (migrations under the advisory lock).
  const deadline = Date.now() + 30_000
  while ((await fetch(`${target.url}/health`)).status !== 200) {
    if (Date.now() > deadline) throw new Error(`${name} did not become ready:\n${target.output()}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return target
}

/** API_DEPLOYMENTS deployments through the API, 8 at a time; answers [deployment id, revision id] pairs. */
const seedThroughApi = async (target: Target): Promise<Array<[string, string]>> => {
  const created: Array<[string, string]> = []
  let next = 0
  const worker = async () => {
    while (next < API_DEPLOYMENTS) {
      const i = next++
      const response = await fetch(`${target.url}/v2/deployments`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ name: `bench-${i}`, source: "external_container", source_revision_config: { image_uri: `registry.example.com/app:${i}` } })
      })
      if (response.status !== 201) throw new Error(`seed ${target.name}: ${response.status} ${await response.text()}`)
      const body = (await response.json()) as { id: string; latest_revision_id: string }
      created.push([body.id, body.latest_revision_id])
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  return created
}

/** Clones of the API's deployments in SQL (new ids and names, older creation times) up to DEPLOYMENTS; answers every id. */
const clonePostgres = async (url: string): Promise<Array<string>> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(
      `INSERT INTO deployments (id, tenant_id, name, source, source_config, source_revision_config, secrets, image_version, status,
         latest_revision_id, active_revision_id, revision_seq, created_at, updated_at)
       SELECT gen_random_uuid()::text, d.tenant_id, d.name || '-c' || g, d.source, d.source_config, d.source_revision_config, d.secrets, d.image_version, d.status,
         NULL, NULL, 0, d.created_at - make_interval(secs => g), d.updated_at
       FROM generate_series(1, $1::int) g
       JOIN LATERAL (SELECT * FROM deployments ORDER BY id OFFSET (g % $2::int) LIMIT 1) d ON true`,
      [DEPLOYMENTS - API_DEPLOYMENTS, API_DEPLOYMENTS]
    )
    await client.query("VACUUM ANALYZE deployments")
    return (await client.query<{ id: string }>("SELECT id FROM deployments")).rows.map((row) => row.id)
  } finally {
    await client.end()
  }
}

const cloneSqlite = (path: string): Array<string> => {
  const db = new Database(path)
  try {
    db.pragma("busy_timeout = 10000")
    const uuid = `lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-a' || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`
    const originals = db.prepare("SELECT * FROM deployments ORDER BY id").all() as Array<Record<string, unknown>>
    const insert = db.prepare(
      `INSERT INTO deployments (id, tenant_id, name, source, source_config, source_revision_config, secrets, image_version, status,
         latest_revision_id, active_revision_id, revision_seq, created_at, updated_at)
       VALUES (${uuid}, @tenant_id, @name, @source, @source_config, @source_revision_config, @secrets, @image_version, @status, NULL, NULL, 0, @created_at, @updated_at)`
    )
    db.transaction(() => {
      for (let g = 1; g <= DEPLOYMENTS - API_DEPLOYMENTS; g++) {
        const d = originals[g % originals.length]!
        const created = new Date(Date.parse(d.created_at as string) - g * 1000).toISOString()
        insert.run({ ...d, name: `${d.name}-c${g}`, created_at: created })
      }
    })()
    return (db.prepare("SELECT id FROM deployments").pluck().all() as Array<string>)
  } finally {
    db.close()
  }
}

/** A small deterministic generator, so every target gets the same requests. */
const prng = (seed: number) => () => {
  seed ^= seed << 13
  seed ^= seed >>> 17
  seed ^= seed << 5
  return (seed >>> 0) / 4294967296
}

type Scenario = { readonly name: string; readonly description: string; readonly next: (data: Data) => () => BenchRequest }
interface Data {
  readonly ids: ReadonlyArray<string>
  readonly revisions: ReadonlyArray<[string, string]>
}

const deepOffset = Math.floor(DEPLOYMENTS * 0.9)
const scenarios: ReadonlyArray<Scenario> = [
  {
    name: "get-deployment",
    description: "GET /v2/deployments/{id} (random deployment)",
    next: (data) => {
      const random = prng(0x5eed)
      return () => ({ method: "GET", path: `/v2/deployments/${data.ids[Math.floor(random() * data.ids.length)]}`, headers })
    }
  },
  {
    name: "get-revision",
    description: "GET /v2/deployments/{id}/revisions/{rid} (the action's polling path)",
    next: (data) => {
      const random = prng(0x5eed)
      return () => {
        const [deployment, revision] = data.revisions[Math.floor(random() * data.revisions.length)]!
        return { method: "GET", path: `/v2/deployments/${deployment}/revisions/${revision}`, headers }
      }
    }
  },
  {
    name: "list-deployments",
    description: "GET /v2/deployments?limit=20&offset=0",
    next: () => () => ({ method: "GET", path: "/v2/deployments?limit=20&offset=0", headers })
  },
  {
    name: "list-deployments-deep",
    description: `GET /v2/deployments?limit=20&offset=${deepOffset} (of ${DEPLOYMENTS}; the floor: plain OFFSET)`,
    next: () => () => ({ method: "GET", path: `/v2/deployments?limit=20&offset=${deepOffset}`, headers })
  }
]

export interface PostgresRow {
  readonly scenario: string
  readonly description: string
  readonly floor: Best
  readonly postgres: Best
  readonly sqlite: Best
}

export interface PostgresSection {
  readonly settings: Record<string, number>
  readonly rows: ReadonlyArray<PostgresRow>
  readonly verdicts: ReadonlyArray<{ target: string; pass: boolean; detail: string }>
  readonly lines: ReadonlyArray<string>
  readonly json: unknown
}

/** Scenario names of this section, for BENCH_ONLY. */
export const postgresScenarioNames = scenarios.map((scenario) => scenario.name)

export const runPostgresSection = async (only?: ReadonlySet<string>): Promise<PostgresSection> => {
  const chosen = scenarios.filter((scenario) => !only || only.has(scenario.name))
  const started = performance.now()
  const postgres = await startPostgres()
  const sqliteDir = mkdtempSync(join(tmpdir(), "slipway-bench-pg-sqlite-"))
  const children: Array<Target> = []
  try {
    const databaseUrl = await postgres.createDatabase("bench")
    const sqlitePath = join(sqliteDir, "slipway.db")
    const onPostgres = await slipway("slipway-postgres", { DATABASE_URL: databaseUrl, SLIPWAY_SECRETS_KEY: "bench-postgres-secrets-key" })
    children.push(onPostgres)
    const onSqlite = await slipway("slipway-sqlite", { DATABASE_PATH: sqlitePath })
    children.push(onSqlite)
    log(`seeding ${API_DEPLOYMENTS} deployments through the API on each, then clones up to ${DEPLOYMENTS}`)
    const pgData: Data = { revisions: await seedThroughApi(onPostgres), ids: [] }
    const sqliteData: Data = { revisions: await seedThroughApi(onSqlite), ids: [] }
    // Let the simulated runtime finish the first revisions (their updates would otherwise share the load).
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    Object.assign(pgData, { ids: await clonePostgres(databaseUrl) })
    Object.assign(sqliteData, { ids: cloneSqlite(sqlitePath) })
    const floorPort = await freePort()
    const floor = await spawnTarget({
      name: "pg-floor",
      command: process.execPath,
      args: ["bench/postgres-floor.ts"],
      env: { DATABASE_URL: databaseUrl, PORT: String(floorPort) },
      port: floorPort,
      probePath: "/health"
    })
    children.push(floor)
    log(`seeded in ${((performance.now() - started) / 1000).toFixed(1)} s; ${ROUNDS} runs of ${DURATION} s per target after ${WARMUP} s warm-up, ${CONNECTIONS} connections`)

    const rows: Array<PostgresRow> = []
    for (const scenario of chosen) {
      const runs: Record<"floor" | "postgres" | "sqlite", Array<Measured>> = { floor: [], postgres: [], sqlite: [] }
      const targets = { floor: [floor, pgData], postgres: [onPostgres, pgData], sqlite: [onSqlite, sqliteData] } as const
      const order = ["floor", "postgres", "sqlite"] as const
      for (let r = 0; r < ROUNDS; r++) {
        for (const which of r % 2 === 0 ? order : [...order].reverse()) {
          const [target, data] = targets[which]
          runs[which].push(await measure(target, scenario.next(data), r < 2))
        }
      }
      const row = { scenario: scenario.name, description: scenario.description, floor: best(runs.floor), postgres: best(runs.postgres), sqlite: best(runs.sqlite) }
      rows.push(row)
      log(
        `${scenario.name}: postgres ${row.postgres.rps.toFixed(0)} req/s (runs ${row.postgres.runs.join(", ")}) | floor ${row.floor.rps.toFixed(0)} (runs ${row.floor.runs.join(", ")}) | sqlite ${row.sqlite.rps.toFixed(0)} (runs ${row.sqlite.runs.join(", ")})`
      )
    }
    return report(rows, performance.now() - started)
  } finally {
    for (const child of children.reverse()) await child.stop().catch(() => undefined)
    await postgres.stop()
    rmSync(sqliteDir, { recursive: true, force: true })
  }
}

const pad = (text: string, width: number, left = false) => (left ? text.padEnd(width) : text.padStart(width))

const report = (rows: ReadonlyArray<PostgresRow>, totalMs: number): PostgresSection => {
  const verdicts: Array<{ target: string; pass: boolean; detail: string }> = []
  for (const row of rows) {
    if (row.scenario === "list-deployments-deep") continue
    const ratio = row.postgres.rps / row.floor.rps
    verdicts.push({
      target: `postgres ${row.scenario}: reads >= ${PG_READ_RATIO}x the raw-driver floor`,
      pass: ratio >= PG_READ_RATIO,
      detail: `${ratio.toFixed(2)}x req/s; CPU/request: server ${row.postgres.cpuUsPerRequest.toFixed(0)} us, floor ${row.floor.cpuUsPerRequest.toFixed(0)} us (${(row.floor.cpuUsPerRequest / row.postgres.cpuUsPerRequest).toFixed(2)}x)`
    })
  }
  const shallow = rows.find((row) => row.scenario === "list-deployments")
  const deep = rows.find((row) => row.scenario === "list-deployments-deep")
  if (shallow && deep) {
    const cost = deep.postgres.rps > 0 ? shallow.postgres.rps / deep.postgres.rps : Infinity
    verdicts.push({
      target: `postgres list-deployments: offset ${deepOffset} within ${DEEP_RATIO}x the cost of offset 0`,
      pass: cost <= DEEP_RATIO,
      detail: `${cost.toFixed(2)}x in req/s (CPU/request ${deep.postgres.cpuUsPerRequest.toFixed(0)} vs ${shallow.postgres.cpuUsPerRequest.toFixed(0)} us); floor with plain OFFSET: ${(shallow.floor.rps / deep.floor.rps).toFixed(2)}x, SQLite (plain OFFSET): ${(shallow.sqlite.rps / deep.sqlite.rps).toFixed(2)}x`
    })
  }
  const lines: Array<string> = []
  const header =
    `${pad("postgres scenario", 24, true)} ${pad("pg floor req/s", 14)} ${pad("slipway pg req/s", 16)} ${pad("p50/p99 ms", 13)} ${pad("ratio", 6)} ${pad("CPU us srv/floor", 16)} ` +
    `${pad("slipway sqlite req/s", 20)} ${pad("p50/p99 ms", 13)} ${pad("pg/sqlite", 9)}`
  lines.push("", header, "-".repeat(header.length))
  for (const row of rows) {
    lines.push(
      `${pad(row.scenario, 24, true)} ${pad(row.floor.rps.toFixed(0), 14)} ${pad(row.postgres.rps.toFixed(0), 16)} ${pad(`${row.postgres.p50Ms.toFixed(1)}/${row.postgres.p99Ms.toFixed(1)}`, 13)} ` +
        `${pad(`${(row.postgres.rps / row.floor.rps).toFixed(2)}x`, 6)} ${pad(`${row.postgres.cpuUsPerRequest.toFixed(0)}/${row.floor.cpuUsPerRequest.toFixed(0)}`, 16)} ` +
        `${pad(row.sqlite.rps.toFixed(0), 20)} ${pad(`${row.sqlite.p50Ms.toFixed(1)}/${row.sqlite.p99Ms.toFixed(1)}`, 13)} ${pad(`${(row.postgres.rps / row.sqlite.rps).toFixed(2)}x`, 9)}`
    )
  }
  lines.push("")
  for (const verdict of verdicts) lines.push(`${verdict.pass ? "PASS" : "FAIL"}  ${verdict.target}: ${verdict.detail}`)
  const summary = (result: Best) => ({
    rps: round(result.rps, 0),
    p50_ms: round(result.p50Ms),
    p99_ms: round(result.p99Ms),
    cpu_us_per_request: round(result.cpuUsPerRequest, 0),
    rps_per_run: result.runs
  })
  const settings = { duration_s: DURATION, rounds: ROUNDS, warmup_s: WARMUP, connections: CONNECTIONS, deployments: DEPLOYMENTS, api_deployments: API_DEPLOYMENTS, deep_offset: deepOffset }
  const json = {
    settings,
    scenarios: rows.map((row) => ({
      name: row.scenario,
      description: row.description,
      postgres: summary(row.postgres),
      floor: summary(row.floor),
      sqlite: summary(row.sqlite),
      postgres_over_floor: round(row.postgres.rps / row.floor.rps),
      postgres_over_sqlite: round(row.postgres.rps / row.sqlite.rps)
    })),
    verdicts,
    total_seconds: round(totalMs / 1000, 0)
  }
  return { settings, rows, verdicts, lines, json }
}
