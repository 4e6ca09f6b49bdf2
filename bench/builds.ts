/**
 * `npm run bench:builds`, and the builds section of `npm run bench` (bench/sections.ts): the
 * time from a push to DEPLOYED for a gitrepo deployment of the local runtime, against a bare
 * `buildah bud` of the same Dockerfile plus the image's own start, measured side by side.
 *
 *   cold   POST /v2/deployments (a new deployment: empty layer and npm caches, the base image
 *          pulled) → DEPLOYED, against `buildah bud` on an empty storage and npm cache
 *   warm   a source-only push (the webhook) → DEPLOYED, against `buildah bud` of the same change
 *          on the bare build's warm storage and npm cache (BENCH_BUILD_ROUNDS rounds, default 2,
 *          the bare build and the push alternating which goes first)
 *
 * The agent is the tests' JavaScript LangGraph agent (test/support/agentRepo.ts) on a loopback git
 * server, FROM the langgraphjs-api stand-in in a loopback registry (test/support/langgraphBase.ts).
 * The bare build runs on the host as root (`--isolation chroot`, overlay storage, the host's
 * network, the same npm cache mount as Slipway's builds); the image's own start (its main
 * process's exec to its first healthy answer) is read from the deploy log. The verdicts (issue
 * 27): Slipway's time ≤ 1.2 × (bare build + image start) + 1 s, cold and warm; the warm push
 * under 20 s. `BENCH_STEPS=1` prints every build and deploy log line with its time since the
 * push. Needs root and the packages of scripts/setup-host.sh (buildah, skopeo, git, …) and the
 * npm registry. Results: bench/results/builds.json.
 */
import { execFile } from "node:child_process"
import { randomUUID } from "node:crypto"
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { Result } from "effect"
import { langgraphDockerfile } from "../core/index.ts"
import { DEFAULT_TENANT_ID, startServer } from "../server/index.ts"
import { makeLogger } from "../server/log.ts"
import { agentFiles, agentSource } from "../test/support/agentRepo.ts"
import { requireBuildTools } from "../test/support/builds.ts"
import { startGitServer } from "../test/support/gitServer.ts"
import { pushLanggraphBase } from "../test/support/langgraphBase.ts"
import { pushDelivery } from "../test/support/pushes.ts"
import { startRegistry } from "../test/support/registry.ts"
import { makeRequester, TEST_KEY, tempDatabasePath } from "../test/support/server.ts"
import { num, root } from "./procs.ts"

/** Targets of issue 27. */
export const BUILD_OVERHEAD_RATIO = 1.2
export const BUILD_OVERHEAD_SLACK_MS = 1000
export const WARM_PUSH_TARGET_MS = 20_000

const run = promisify(execFile)

interface Timed {
  /** Push (or POST) → DEPLOYED through Slipway, ms. */
  readonly slipway: number
  /** The image's own start (exec → healthy), ms. */
  readonly start: number
  /** The bare `buildah bud`, ms. */
  readonly bare: number
}

export interface BuildsBenchResult {
  readonly cold: Timed
  readonly warm: ReadonlyArray<Timed>
  readonly loadAverage: { readonly before: number; readonly after: number }
  readonly verdicts: ReadonlyArray<{ readonly target: string; readonly pass: boolean; readonly detail: string }>
  readonly lines: ReadonlyArray<string>
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`

export const runBuildsBench = async (options: { readonly rounds?: number; readonly steps?: boolean; readonly log?: (line: string) => void } = {}): Promise<BuildsBenchResult> => {
  const rounds = options.rounds ?? 2
  const showSteps = options.steps ?? process.env.BENCH_STEPS === "1"
  const log = options.log ?? ((line: string) => console.log(line))
  requireBuildTools()
  const loadBefore = loadavg()[0]!
  const scratch = mkdtempSync(join(tmpdir(), "slipway-builds-bench-"))
  chmodSync(scratch, 0o755)
  const database = tempDatabasePath("builds-bench")
  const registry = await startRegistry()
  const git = await startGitServer()
  const saved = process.env.SLIPWAY_INSECURE_REGISTRIES
  let server: Awaited<ReturnType<typeof startServer>> | undefined
  try {
    const baseImage = (await pushLanggraphBase(registry.host)).replace(/:24$/, "")
    const files = await agentFiles(baseImage, "v1")
    const repo = await git.createRepo("acme/agent.git", [{ files, message: "agent v1" }])
    process.env.SLIPWAY_INSECURE_REGISTRIES = registry.host
    server = await startServer({ port: 0, databasePath: database.path, apiKey: TEST_KEY, runtime: "local", logger: makeLogger("warn"), insecureGitHosts: [git.host] })
    const request = makeRequester(server.url, TEST_KEY)
    const keys = await run(process.execPath, ["server/keys.ts", "integration", "add", "--tenant", DEFAULT_TENANT_ID, "--owner", "acme"], {
      cwd: root,
      env: { ...process.env, DATABASE_PATH: database.path, LOG_LEVEL: "silent" }
    })
    const integration = JSON.parse(keys.stdout) as { integration_id: string; webhook_secret: string }

    // The bare build's checkout, Dockerfile (core's, as Slipway writes it), storage and npm cache.
    const context = join(scratch, "agent")
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(context, path, ".."), { recursive: true })
      writeFileSync(join(context, path), text)
    }
    const generated = langgraphDockerfile({ config: JSON.parse(files["langgraph.json"]!), configPath: "langgraph.json", rootName: "agent", tree: { files: Object.keys(files), contents: files } })
    if (Result.isFailure(generated)) throw new Error(generated.failure.message)
    writeFileSync(join(scratch, "Dockerfile"), generated.success.dockerfile)
    const policy = join(scratch, "policy.json")
    writeFileSync(policy, JSON.stringify({ default: [{ type: "insecureAcceptAnything" }] }))
    const npmCache = join(scratch, "npm-cache")
    mkdirSync(npmCache)
    let bareRun = 0
    const bare = async () => {
      const t0 = performance.now()
      await run(
        "buildah",
        [
          "--root", join(scratch, "storage"), "--runroot", join(scratch, "run"), "--storage-driver", "overlay",
          "bud", "--isolation", "chroot", "--layers", "--signature-policy", policy, "--tls-verify=false",
          "--volume", `${npmCache}:/root/.npm`, "-f", join(scratch, "Dockerfile"), "-t", `bench/agent:${++bareRun}`, context
        ],
        { env: { ...process.env, BUILDAH_ISOLATION: "chroot" }, maxBuffer: 64 * 1024 * 1024 }
      )
      return performance.now() - t0
    }

    /** Polls a revision until DEPLOYED; answers push → DEPLOYED and the image's own start. */
    const deployed = async (deploymentId: string, revisionId: string, t0: number, wall0: number) => {
      for (;;) {
        const { body } = await request("GET", `/v2/deployments/${deploymentId}/revisions/${revisionId}`)
        if (body.status === "DEPLOYED") break
        if (["BUILD_FAILED", "DEPLOY_FAILED", "INTERRUPTED", "SKIPPED"].includes(body.status)) throw new Error(`${revisionId}: ${body.status} ${body.status_message}`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      const total = performance.now() - t0
      const read = async (kind: "build" | "deploy") =>
        (await request("POST", `/v1/projects/${deploymentId}/revisions/${revisionId}/${kind}_logs`, { body: { order: "asc", limit: 1000 } })).body.logs as Array<{ message: string; timestamp: number }>
      const deploy = await read("deploy")
      const started = deploy.find((l) => l.message.startsWith("replica ") && l.message.includes(": started"))
      const healthy = deploy.find((l) => /^health .*answered 200/.test(l.message))
      if (!started || !healthy) throw new Error(`${revisionId}: no start or health line in the deploy log`)
      if (showSteps) {
        for (const l of await read("build")) log(`  build  ${String(l.timestamp - wall0).padStart(6)} ms ${l.message}`)
        for (const l of deploy) log(`  deploy ${String(l.timestamp - wall0).padStart(6)} ms ${l.message}`)
      }
      return { total, start: healthy.timestamp - started.timestamp }
    }

    // Cold: a new deployment, and a bare build on empty storage.
    const coldBare = await bare()
    log(`cold: bare buildah bud ${s(coldBare)}`)
    const name = `bench-${randomUUID().slice(0, 6)}`
    const t0 = performance.now()
    const wall0 = Date.now()
    const created = await request("POST", "/v2/deployments", {
      body: {
        name,
        source: "gitrepo",
        source_config: { integration_id: integration.integration_id, repo_url: repo.url, build_on_push: true },
        source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json" }
      }
    })
    if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`)
    const deploymentId = created.body.id as string
    const first = await deployed(deploymentId, created.body.latest_revision_id, t0, wall0)
    const cold: Timed = { slipway: first.total, start: first.start, bare: coldBare }
    log(`cold: POST → DEPLOYED ${s(cold.slipway)}; bare build ${s(cold.bare)} + image start ${s(cold.start)}`)

    // Warm: source-only pushes, each against a bare build of the same change.
    const warm: Array<Timed> = []
    for (let round = 1; round <= rounds; round++) {
      const version = `v${round + 1}`
      const source = agentSource(version)
      writeFileSync(join(context, "src/agent.ts"), source)
      const [sha] = await repo.push([{ files: { "src/agent.ts": source }, message: `agent ${version}` }])
      const push = async () => {
        const delivery = pushDelivery(integration.webhook_secret, repo.url, "acme/agent", sha!)
        const t0 = performance.now()
        const wall0 = Date.now()
        const answer = await request("POST", "/v1/integrations/gitrepo/webhook", { key: null, ...delivery })
        if (answer.status !== 202 || answer.body.revision_ids.length !== 1) throw new Error(`push: ${answer.status} ${JSON.stringify(answer.body)}`)
        return deployed(deploymentId, answer.body.revision_ids[0], t0, wall0)
      }
      let bareMs: number
      let pushed: { total: number; start: number }
      if (round % 2 === 1) {
        bareMs = await bare()
        pushed = await push()
      } else {
        pushed = await push()
        bareMs = await bare()
      }
      warm.push({ slipway: pushed.total, start: pushed.start, bare: bareMs })
      log(`warm ${round}: push → DEPLOYED ${s(pushed.total)}; bare build ${s(bareMs)} + image start ${s(pushed.start)}`)
    }

    const loadAfter = loadavg()[0]!
    const allowed = (t: Timed) => BUILD_OVERHEAD_RATIO * (t.bare + t.start) + BUILD_OVERHEAD_SLACK_MS
    const warmSlipway = median(warm.map((t) => t.slipway))
    const warmAllowed = median(warm.map(allowed))
    const verdicts = [
      {
        target: "builds: cold POST → DEPLOYED ≤ 1.2 × (bare buildah bud + image start) + 1 s",
        pass: cold.slipway <= allowed(cold),
        detail: `${s(cold.slipway)} against ${s(allowed(cold))} allowed (bare ${s(cold.bare)}, image start ${s(cold.start)}); load ${loadBefore.toFixed(1)}→${loadAfter.toFixed(1)}`
      },
      {
        target: "builds: source-only push → DEPLOYED ≤ 1.2 × (bare buildah bud + image start) + 1 s, warm caches",
        pass: warmSlipway <= warmAllowed,
        detail: `median ${s(warmSlipway)} against ${s(warmAllowed)} allowed (${warm.map((t) => `${s(t.slipway)} vs bare ${s(t.bare)} + start ${s(t.start)}`).join("; ")})`
      },
      {
        target: "builds: source-only rebuild of the test agent, push → DEPLOYED, under 20 s",
        pass: warmSlipway < WARM_PUSH_TARGET_MS,
        detail: `median ${s(warmSlipway)} over ${warm.length} pushes`
      }
    ]
    const lines = [
      `cold slipway_ms=${Math.round(cold.slipway)} bare_ms=${Math.round(cold.bare)} start_ms=${cold.start}`,
      ...warm.map((t, i) => `warm${i + 1} slipway_ms=${Math.round(t.slipway)} bare_ms=${Math.round(t.bare)} start_ms=${t.start}`),
      ...verdicts.map((v) => `${v.pass ? "PASS" : "FAIL"}  ${v.target}: ${v.detail}`)
    ]
    for (const line of lines) log(line)
    return { cold, warm, loadAverage: { before: loadBefore, after: loadAfter }, verdicts, lines }
  } finally {
    await server?.close()
    await git.stop()
    await registry.stop()
    if (saved === undefined) delete process.env.SLIPWAY_INSECURE_REGISTRIES
    else process.env.SLIPWAY_INSECURE_REGISTRIES = saved
    await run("buildah", ["--root", join(scratch, "storage"), "--runroot", join(scratch, "run"), "--storage-driver", "overlay", "rmi", "--all", "--force"]).catch(() => undefined)
    await run("umount", ["-l", join(scratch, "storage", "overlay")]).catch(() => undefined)
    rmSync(scratch, { recursive: true, force: true })
    database.remove()
  }
}

if (import.meta.main) {
  const log = (line: string) => process.stderr.write(`bench:builds: ${line}\n`)
  try {
    const only = process.env.BENCH_ONLY?.split(",").map((name) => name.trim())
    if (only !== undefined && !only.includes("builds")) process.exit(0)
    const result = await runBuildsBench({ rounds: num("BENCH_BUILD_ROUNDS", 2), log })
    const out = join(root, "bench", "results")
    mkdirSync(out, { recursive: true })
    const { lines: _lines, ...json } = result
    writeFileSync(join(out, "builds.json"), `${JSON.stringify({ generated_at: new Date().toISOString(), ...json }, null, 2)}\n`)
    log("results in bench/results/builds.json")
  } catch (error) {
    log(`failed: ${(error as Error)?.stack ?? error}`)
    process.exit(1)
  }
}
