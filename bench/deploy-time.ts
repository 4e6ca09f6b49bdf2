/**
 * Time from `POST /v2/deployments` to `DEPLOYED` with the local runtime, against the image's own
 * start time (from its main process's exec to its first healthy answer, read from the deploy log).
 *
 *   npx node bench/deploy-time.ts [deployments=5]
 *
 * Runs a real registry (Debian's docker-registry) with the `http-ok` test image, a Slipway server
 * in this process with SLIPWAY_RUNTIME=local, and creates the deployments one after the other
 * (the first pulls the image and starts Slipway's PostgreSQL; the others find both ready). Each
 * deployment gets its own database and Redis. Not part of npm test or CI; figures in
 * docs/deployments-local.md.
 *
 * From another script: `runDeployTimeBench({ deployments })` (what `npm run bench` calls); the
 * verdict (target of issue 14): the median overhead of the warm deployments (image cached,
 * database server up) under 1 s.
 */
import { loadavg } from "node:os"
import { startServer } from "../server/index.ts"
import { makeLogger } from "../server/log.ts"
import { pushTestImages, removeTestImages } from "../test/support/images.ts"
import { startRegistry } from "../test/support/registry.ts"
import { makeRequester, TEST_KEY, tempDatabasePath } from "../test/support/server.ts"

/** Target of issue 14: POST → DEPLOYED beyond the image's own start, image cached. */
export const DEPLOY_OVERHEAD_TARGET_MS = 1000

export interface DeployTimeBenchOptions {
  /** Deployments created one after the other (the first is cold). Default 5. */
  readonly deployments?: number
  /** Print each phase of every deployment (polls, build and deploy logs). Default BENCH_STEPS=1. */
  readonly steps?: boolean
  readonly log?: (line: string) => void
}

export interface DeployTimeRow {
  readonly name: string
  /** POST → DEPLOYED, ms. */
  readonly total: number
  /** The image's own start: its main process's exec to its first healthy answer, ms. */
  readonly image: number
  /** total − image, ms. */
  readonly overhead: number
}

export interface DeployTimeBenchResult {
  readonly rows: ReadonlyArray<DeployTimeRow>
  /** Overheads of the warm deployments (all but the first), ms; undefined with one deployment. */
  readonly warm?: { readonly median: number; readonly min: number; readonly max: number }
  readonly loadAverage: { readonly before: number; readonly after: number }
  readonly verdicts: ReadonlyArray<{ readonly target: string; readonly pass: boolean; readonly detail: string }>
  /** Machine-parsable summary lines (`key=value` fields), then the verdicts. */
  readonly lines: ReadonlyArray<string>
}

export const runDeployTimeBench = async (options: DeployTimeBenchOptions = {}): Promise<DeployTimeBenchResult> => {
  const count = options.deployments ?? 5
  const showSteps = options.steps ?? process.env.BENCH_STEPS === "1"
  const log = options.log ?? ((line: string) => console.log(line))
  const loadBefore = loadavg()[0]!
  const registry = await startRegistry()
  const database = tempDatabasePath("deploy-bench")
  let server: Awaited<ReturnType<typeof startServer>> | undefined
  const rows: DeployTimeRow[] = []
  try {
    const refs = await pushTestImages(registry.host, { only: ["http-ok"] })
    process.env.SLIPWAY_INSECURE_REGISTRIES = registry.host
    server = await startServer({ port: 0, databasePath: database.path, apiKey: TEST_KEY, runtime: "local", logger: makeLogger("warn") })
    const request = makeRequester(server.url, TEST_KEY)
    for (let i = 0; i < count; i++) {
      const name = `bench-${i}`
      const t0 = performance.now()
      const wall0 = Date.now()
      const created = await request("POST", "/v2/deployments", {
        body: { name, source: "external_container", source_revision_config: { image_uri: refs.httpOk } }
      })
      if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`)
      const { id, latest_revision_id: revision } = created.body
      let status = ""
      // Each change of state or message as the polls saw it, with its time since the POST.
      const steps: string[] = []
      let last = ""
      while (status !== "DEPLOYED") {
        const r = await request("GET", `/v2/deployments/${id}/revisions/${revision}`)
        status = r.body.status
        const seen = `${status}: ${r.body.status_message ?? ""}`
        if (seen !== last) steps.push(`${Math.round(performance.now() - t0)} ms ${(last = seen)}`)
        if (status.endsWith("_FAILED")) throw new Error(`${name}: ${status} ${r.body.status_message}`)
        if (status !== "DEPLOYED") await new Promise((resolve) => setTimeout(resolve, 5))
      }
      const total = performance.now() - t0
      const logs = (await request("POST", `/v1/projects/${id}/deploy_logs`, { body: { order: "asc", limit: 200 } })).body.logs as Array<{ message: string; timestamp: number }>
      const started = logs.find((l) => l.message.startsWith("replica ") && l.message.includes(": started"))
      const healthy = logs.find((l) => /^health .*answered 200/.test(l.message))
      const image = started && healthy ? healthy.timestamp - started.timestamp : NaN
      rows.push({ name, total: Math.round(total), image, overhead: Math.round(total - image) })
      log(`${name}: POST → DEPLOYED ${Math.round(total)} ms; image start (exec → healthy) ${image} ms; overhead ${Math.round(total - image)} ms`)
      if (showSteps) {
        const build = (await request("POST", `/v1/projects/${id}/revisions/${revision}/build_logs`, { body: { order: "asc", limit: 200 } })).body.logs as Array<{ message: string; timestamp: number }>
        for (const step of steps) log(`  poll  ${step}`)
        for (const l of build) log(`  build ${l.timestamp - wall0} ms ${l.message}`)
        for (const l of logs) log(`  deploy ${l.timestamp - wall0} ms ${l.message}`)
      }
    }
  } finally {
    await server?.close()
    await registry.stop()
    removeTestImages()
    database.remove()
  }
  const warmRows = rows.slice(1)
  const sorted = warmRows.map((r) => r.overhead).sort((a, b) => a - b)
  const warm = sorted.length === 0 ? undefined : { median: sorted[Math.floor(sorted.length / 2)]!, min: sorted[0]!, max: sorted.at(-1)! }
  const loadAfter = loadavg()[0]!
  const verdicts =
    warm === undefined
      ? []
      : [
          {
            target: `deploy time: POST -> DEPLOYED overhead < ${DEPLOY_OVERHEAD_TARGET_MS} ms (image cached)`,
            pass: warm.median < DEPLOY_OVERHEAD_TARGET_MS,
            detail: `median ${warm.median} ms (min ${warm.min}, max ${warm.max}) over ${sorted.length} warm deployments; first (cold) ${rows[0]?.total} ms in all`
          }
        ]
  const lines = [
    ...(warm === undefined ? [] : [`deploy-time warm: verdict=${warm.median < DEPLOY_OVERHEAD_TARGET_MS ? "pass" : "fail"} overhead_median_ms=${warm.median} overhead_min_ms=${warm.min} overhead_max_ms=${warm.max} deployments=${sorted.length}`]),
    `deploy-time cold: total_ms=${rows[0]?.total} image_ms=${rows[0]?.image} overhead_ms=${rows[0]?.overhead}`,
    `deploy-time load: before=${loadBefore.toFixed(2)} after=${loadAfter.toFixed(2)}`,
    ...verdicts.map((v) => `${v.pass ? "PASS" : "FAIL"}  ${v.target}: ${v.detail}`)
  ]
  for (const line of lines) log(line)
  return { rows, ...(warm === undefined ? {} : { warm }), loadAverage: { before: loadBefore, after: loadAfter }, verdicts, lines }
}

if (import.meta.main) await runDeployTimeBench({ deployments: Number(process.argv[2] ?? 5) })
