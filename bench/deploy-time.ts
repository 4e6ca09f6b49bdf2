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
 */
import { startServer } from "../server/index.ts"
import { makeLogger } from "../server/log.ts"
import { pushTestImages, removeTestImages } from "../test/support/images.ts"
import { startRegistry } from "../test/support/registry.ts"
import { makeRequester, TEST_KEY, tempDatabasePath } from "../test/support/server.ts"

const count = Number(process.argv[2] ?? 5)
const registry = await startRegistry()
const refs = await pushTestImages(registry.host, { only: ["http-ok"] })
process.env.SLIPWAY_INSECURE_REGISTRIES = registry.host
const database = tempDatabasePath("deploy-bench")
const server = await startServer({ port: 0, databasePath: database.path, apiKey: TEST_KEY, runtime: "local", logger: makeLogger("warn") })
const request = makeRequester(server.url, TEST_KEY)

const rows: Array<{ name: string; total: number; image: number; overhead: number }> = []
try {
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
    console.log(`${name}: POST → DEPLOYED ${Math.round(total)} ms; image start (exec → healthy) ${image} ms; overhead ${Math.round(total - image)} ms`)
    if (process.env.BENCH_STEPS === "1") {
      const build = (await request("POST", `/v1/projects/${id}/revisions/${revision}/build_logs`, { body: { order: "asc", limit: 200 } })).body.logs as Array<{ message: string; timestamp: number }>
      for (const step of steps) console.log(`  poll  ${step}`)
      for (const l of build) console.log(`  build ${l.timestamp - wall0} ms ${l.message}`)
      for (const l of logs) console.log(`  deploy ${l.timestamp - wall0} ms ${l.message}`)
    }
  }
  const warm = rows.slice(1)
  if (warm.length > 0) {
    const sorted = warm.map((r) => r.overhead).sort((a, b) => a - b)
    console.log(`warm (image cached, database server up): overhead median ${sorted[Math.floor(sorted.length / 2)]} ms, min ${sorted[0]} ms, max ${sorted.at(-1)} ms`)
  }
} finally {
  await server.close()
  await registry.stop()
  removeTestImages()
  database.remove()
}
