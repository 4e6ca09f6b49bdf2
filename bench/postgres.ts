/**
 * `npm run bench:postgres`: the read path on PostgreSQL, side by side with SQLite. A throwaway
 * PostgreSQL server (Debian `postgresql`, test/support/postgres.ts), one Slipway replica on it
 * (DATABASE_URL), a floor of raw `pg` queries running the same statements (bench/postgres-floor.ts),
 * and for comparison one Slipway on a SQLite file. Each seeded through the API with the same
 * deployments. Scenarios: get-deployment (by id, random), list-deployments (first page).
 * Prints rps, p99 and server/floor ratio (goal >= 0.7x on reads). Not part of `npm test`.
 *
 *   BENCH_DURATION (s, default 3), BENCH_CONNECTIONS (default 32), BENCH_DEPLOYMENTS (default 300)
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startPostgres } from "../test/support/postgres.ts"
import { type LoadResult, runLoad } from "./load.ts"
import { freePort, spawnTarget, type Target } from "./procs.ts"

const num = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback)
const DURATION = num("BENCH_DURATION", 3)
const CONNECTIONS = num("BENCH_CONNECTIONS", 32)
const DEPLOYMENTS = num("BENCH_DEPLOYMENTS", 300)
const KEY = "slw_bench_key_0123456789abcdefghijklmnopqrstuvw"
const headers = { "x-api-key": KEY }
const log = (line: string) => process.stderr.write(`bench:postgres: ${line}\n`)

const slipway = async (name: string, env: Record<string, string>): Promise<Target> => {
  const port = await freePort()
  return spawnTarget({
    name,
    command: process.execPath,
    args: ["server/main.ts"],
    env: { PORT: String(port), HOST: "127.0.0.1", SLIPWAY_API_KEY: KEY, LOG_LEVEL: "error", SLIPWAY_RUNTIME: "simulated", SLIPWAY_REVISION_STEP_MS: "1", ...env },
    port,
    probePath: "/health"
  })
}

const seed = async (target: Target): Promise<Array<string>> => {
  const ids: Array<string> = []
  for (let i = 0; i < DEPLOYMENTS; i++) {
    const response = await fetch(`${target.url}/v2/deployments`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ name: `bench-${i}`, source: "external_container", source_revision_config: { image_uri: `registry.example.com/app:${i}` } })
    })
    if (response.status !== 201) throw new Error(`seed: ${response.status} ${await response.text()}`)
    ids.push(((await response.json()) as { id: string }).id)
  }
  return ids
}

const scenarios = (ids: ReadonlyArray<string>) => {
  let i = 0
  return {
    "get-deployment": () => ({ method: "GET", path: `/v2/deployments/${ids[i++ % ids.length]}`, headers }),
    "list-deployments": () => ({ method: "GET", path: "/v2/deployments", headers })
  }
}

const measure = async (target: Target, next: () => { method: string; path: string; headers: Record<string, string> }): Promise<LoadResult> => {
  await runLoad({ url: target.url, connections: CONNECTIONS, durationSeconds: 1, next })
  const result = await runLoad({ url: target.url, connections: CONNECTIONS, durationSeconds: DURATION, next })
  if (result.non2xx + result.errors > 0) throw new Error(`${target.name}: ${result.non2xx} non-2xx, ${result.errors} errors ${JSON.stringify(result.statusCodes)}`)
  return result
}

const postgres = await startPostgres()
const sqliteDir = mkdtempSync(join(tmpdir(), "slipway-bench-sqlite-"))
const rows: Array<Record<string, string | number>> = []
try {
  const databaseUrl = await postgres.createDatabase("bench")
  const onPostgres = await slipway("slipway-postgres", { DATABASE_URL: databaseUrl })
  const onSqlite = await slipway("slipway-sqlite", { DATABASE_PATH: join(sqliteDir, "slipway.db") })
  log(`seeding ${DEPLOYMENTS} deployments on each`)
  const pgIds = await seed(onPostgres)
  const sqliteIds = await seed(onSqlite)
  const floorPort = await freePort()
  const floor = await spawnTarget({
    name: "pg-floor",
    command: process.execPath,
    args: ["bench/postgres-floor.ts"],
    env: { DATABASE_URL: databaseUrl, PORT: String(floorPort) },
    port: floorPort,
    probePath: "/health"
  })
  try {
    for (const name of ["get-deployment", "list-deployments"] as const) {
      const floorResult = await measure(floor, scenarios(pgIds)[name])
      const pgResult = await measure(onPostgres, scenarios(pgIds)[name])
      const sqliteResult = await measure(onSqlite, scenarios(sqliteIds)[name])
      rows.push({
        scenario: name,
        "pg floor rps": Math.round(floorResult.rps),
        "slipway pg rps": Math.round(pgResult.rps),
        "pg ratio": Math.round((pgResult.rps / floorResult.rps) * 100) / 100,
        "pg p99 ms": pgResult.p99Ms,
        "slipway sqlite rps": Math.round(sqliteResult.rps),
        "sqlite p99 ms": sqliteResult.p99Ms
      })
      log(`${name} done`)
    }
  } finally {
    await floor.stop()
    await onPostgres.stop()
    await onSqlite.stop()
  }
  console.table(rows)
  const worst = Math.min(...rows.map((row) => row["pg ratio"] as number))
  console.log(`Postgres read ratio (worst): ${worst}x the raw-driver floor (goal >= 0.7x)`)
} finally {
  await postgres.stop()
  rmSync(sqliteDir, { recursive: true, force: true })
}
