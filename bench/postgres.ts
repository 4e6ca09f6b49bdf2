/**
 * `npm run bench:postgres`: only the Postgres section of `npm run bench` (bench/postgres-section.ts):
 * one Slipway replica on a throwaway PostgreSQL server, the raw-driver floor and Slipway on SQLite
 * side by side. Writes bench/results/postgres.json. BENCH_ONLY picks scenarios.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { root } from "./procs.ts"
import { runPostgresSection } from "./postgres-section.ts"

const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(",").map((name) => name.trim())) : undefined
try {
  const section = await runPostgresSection(only)
  const out = join(root, "bench", "results")
  mkdirSync(out, { recursive: true })
  writeFileSync(join(out, "postgres.json"), `${JSON.stringify({ generated_at: new Date().toISOString(), ...(section.json as object) }, null, 2)}\n`)
  process.stdout.write(`${section.lines.join("\n")}\n\nresults written to bench/results/postgres.json\n`)
} catch (error) {
  process.stderr.write(`bench:postgres: failed: ${(error as Error)?.stack ?? error}\n`)
  process.exit(1)
}
