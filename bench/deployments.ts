/**
 * `npm run bench:deployments`, and the deployment section of `npm run bench` (bench/sections.ts):
 * issue 14's two benchmarks of the local runtime, one after the other, with their verdicts.
 *
 *   deploy-time   POST /v2/deployments → DEPLOYED against the image's own start, image cached
 *                 (bench/deploy-time.ts: a real registry, the local runtime; root and the packages
 *                 of scripts/setup-host.sh)
 *   proxy         throughput and p99 through the deployment URL against hitting the replica
 *                 directly, next to the cheapest proxies in the same rounds (bench/deployment-proxy.ts)
 *
 * Environment: BENCH_ONLY (deploy-time, proxy), BENCH_DEPLOYMENTS_COUNT (deployments timed, default
 * 5), BENCH_PROXY_SECONDS (5), BENCH_PROXY_ROUNDS (3), BENCH_PROXY_CONNECTIONS (32),
 * BENCH_PROXY_SCENARIOS, BENCH_PROXY_FRONTS. Results: bench/results/deployments.json.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { type ProxyFront, type ProxyScenarioName, runDeploymentProxyBench } from "./deployment-proxy.ts"
import { runDeployTimeBench } from "./deploy-time.ts"
import { num, root } from "./procs.ts"

const env = process.env
const only = env.BENCH_ONLY ? new Set(env.BENCH_ONLY.split(",").map((name) => name.trim())) : undefined
const list = <T extends string>(value: string | undefined) => value?.split(",").map((item) => item.trim() as T)
const log = (line: string) => process.stderr.write(`bench:deployments: ${line}\n`)

try {
  const deployTime = !only || only.has("deploy-time") ? await runDeployTimeBench({ deployments: num("BENCH_DEPLOYMENTS_COUNT", 5), log }) : undefined
  const scenarios = list<ProxyScenarioName>(env.BENCH_PROXY_SCENARIOS)
  const fronts = list<ProxyFront>(env.BENCH_PROXY_FRONTS)
  const proxy =
    !only || only.has("proxy")
      ? await runDeploymentProxyBench({
          seconds: num("BENCH_PROXY_SECONDS", 5),
          rounds: num("BENCH_PROXY_ROUNDS", 3),
          connections: num("BENCH_PROXY_CONNECTIONS", 32),
          ...(scenarios ? { scenarios } : {}),
          ...(fronts ? { fronts } : {}),
          ...(env.BENCH_CPU_PROF ? { cpuProfileDir: env.BENCH_CPU_PROF } : {}),
          log
        })
      : undefined
  const out = join(root, "bench", "results")
  mkdirSync(out, { recursive: true })
  const { lines: _deployLines, ...deployJson } = deployTime ?? { lines: [] }
  const { lines: _proxyLines, ...proxyJson } = proxy ?? { lines: [] }
  const verdicts = [...(deployTime?.verdicts ?? []), ...(proxy?.verdicts ?? [])]
  writeFileSync(
    join(out, "deployments.json"),
    `${JSON.stringify({ generated_at: new Date().toISOString(), deploy_time: deployTime && deployJson, proxy: proxy && proxyJson, verdicts }, null, 2)}\n`
  )
  log("results in bench/results/deployments.json")
} catch (error) {
  log(`failed: ${(error as Error)?.stack ?? error}`)
  process.exit(1)
}
