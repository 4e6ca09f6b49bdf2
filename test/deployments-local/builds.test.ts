/**
 * A push becomes a running agent, end to end: a Slipway server with the local runtime builds a
 * JavaScript LangGraph agent (test/support/agentRepo.ts) from a git repository served on loopback
 * (test/support/gitServer.ts), FROM the langgraphjs-api stand-in (test/support/langgraphBase.ts)
 * in a loopback registry, and serves it at its deployment URL, where the official
 * `@langchain/langgraph-sdk` client talks to it. Then: a push switches to the new code with no
 * failed request; a push that breaks the install ends BUILD_FAILED while the previous revision
 * keeps serving, and the pushes behind it queue (the older queued one SKIPPED); a PATCH
 * supersedes a build under way; a restart serves the built revision again without a build; a
 * private repository is cloned with the integration's read token, which nothing shows.
 */
import { execFile } from "node:child_process"
import { randomUUID } from "node:crypto"
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { Client } from "@langchain/langgraph-sdk"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DEFAULT_TENANT_ID, startServer } from "../../server/index.ts"
import { makeLogger } from "../../server/log.ts"
import { AGENT_PACKAGE_JSON, agentFiles, agentSource } from "../support/agentRepo.ts"
import { requireBuildTools } from "../support/builds.ts"
import { startGitServer, type TestGitServer, type TestRepo } from "../support/gitServer.ts"
import { langgraphBase, pushLanggraphBase } from "../support/langgraphBase.ts"
import { startRegistry, type TestRegistry } from "../support/registry.ts"
import { makeRequester, TEST_KEY, tempDatabasePath } from "../support/server.ts"
import { pushDelivery } from "../support/pushes.ts"
import { closeLocalServer } from "./closeLocalServer.ts"
import { setEnv } from "../support/env.ts"

const PRIVATE_TOKEN = `ghs_${randomUUID().replace(/-/g, "")}`
const database = tempDatabasePath("builds")
type Server = Awaited<ReturnType<typeof startServer>>
let server: Server
let request: ReturnType<typeof makeRequester>
let registry: TestRegistry
let git: TestGitServer
let repo: TestRepo
let privateRepo: TestRepo
let baseImage: string
let integration: { integration_id: string; webhook_secret: string }
let restoreEnv: () => void = () => undefined

const root = join(import.meta.dirname, "..", "..")
const keysTool = async (args: ReadonlyArray<string>) =>
  (
    await promisify(execFile)(process.execPath, ["server/keys.ts", ...args], {
      cwd: root,
      env: { ...process.env, DATABASE_PATH: database.path, LOG_LEVEL: "silent" },
      encoding: "utf8"
    })
  ).stdout

/** Starts the server (again on the same port after a restart: the deployment URLs name it). */
const start = async () => {
  server = await startServer({
    port: server?.port ?? 0,
    databasePath: database.path,
    apiKey: TEST_KEY,
    runtime: "local",
    logger: makeLogger("silent"),
    insecureGitHosts: [git.host]
  })
  request = makeRequester(server.url, TEST_KEY)
}

beforeAll(async () => {
  requireBuildTools()
  const started = Date.now()
  const base = await langgraphBase()
  registry = await startRegistry()
  baseImage = (await pushLanggraphBase(registry.host)).replace(/:24$/, "")
  git = await startGitServer({ tokens: { "acme/private.git": PRIVATE_TOKEN } })
  repo = await git.createRepo("acme/agent.git", [{ files: await agentFiles(baseImage, "v1"), message: "agent v1" }])
  // Its langgraph.json has no graphs: once cloned, the build fails with the CLI's message.
  privateRepo = await git.createRepo("acme/private.git", [{ files: { "langgraph.json": JSON.stringify({ node_version: "24", graphs: {} }) }, message: "private" }])
  restoreEnv = setEnv({ SLIPWAY_INSECURE_REGISTRIES: registry.host, SLIPWAY_DEPLOY_DRAIN_MS: "2000" })
  await start()
  integration = JSON.parse(await keysTool(["integration", "add", "--tenant", DEFAULT_TENANT_ID, "--owner", "acme"]))
  console.log(`setup: base image ${base.buildSeconds > 0 ? `built in ${base.buildSeconds.toFixed(1)} s` : "cached"}, ready after ${((Date.now() - started) / 1000).toFixed(1)} s`)
}, 900_000)

afterAll(async () => {
  const { running, leftCgroups, closed } = await closeLocalServer(server, database.dir, 120_000)
  await git?.stop()
  await registry?.stop()
  restoreEnv()
  database.remove()
  if (closed) throw closed
  expect(running).toEqual([])
  expect(leftCgroups).toEqual([])
}, 300_000)

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const FINAL = ["DEPLOYED", "DEPLOY_FAILED", "BUILD_FAILED", "CREATE_FAILED", "INTERRUPTED", "SKIPPED"]

/** Polls a revision until `until` holds (default: a final state); records every status it showed. */
const waitRevision = async (deploymentId: string, revisionId: string, until: (revision: any) => boolean = (r) => FINAL.includes(r.status), timeoutMs = 600_000) => {
  const statuses: Array<string> = []
  const messages: Array<string> = []
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const { body } = await request("GET", `/v2/deployments/${deploymentId}/revisions/${revisionId}`)
    if (statuses.at(-1) !== body.status) statuses.push(body.status)
    if (body.status_message && messages.at(-1) !== body.status_message) messages.push(body.status_message)
    if (until(body)) return { statuses, messages, last: body }
    if (Date.now() > deadline) throw new Error(`revision ${revisionId} still ${body.status} (${body.status_message}) after ${timeoutMs} ms`)
    await sleep(50)
  }
}

/** The revision's build log, as the CLI reads it. */
const buildLog = async (deploymentId: string, revisionId: string) => {
  const { status, body } = await request("POST", `/v1/projects/${deploymentId}/revisions/${revisionId}/build_logs`, { body: { order: "asc", limit: 1000 } })
  expect(status).toBe(200)
  return (body.logs as Array<{ message: string }>).map((entry) => entry.message)
}

/** A push of `sha` to main, delivered to the webhook as GitHub delivers it; answers the revisions it made. */
const deliverPush = async (sha: string): Promise<Array<string>> => {
  const { status, body: answer } = await request("POST", "/v1/integrations/gitrepo/webhook", { key: null, ...pushDelivery(integration.webhook_secret, repo.url, "acme/agent", sha) })
  expect(status, JSON.stringify(answer)).toBe(202)
  return answer.revision_ids
}

/** The official SDK's client for a deployment's URL, with no retries (a failed request shows). */
const sdk = (name: string) => new Client({ apiUrl: `${server.url}/d/${name}`, apiKey: null, callerOptions: { maxRetries: 0 }, timeoutMs: 30_000 })

const ask = async (name: string, question = "hello") => (await sdk(name).runs.wait(null, "agent", { input: { question } })) as { answer?: string }

const name = `agent-${randomUUID().slice(0, 8)}`
let deploymentId: string
const revisionsOf = async () => (await request("GET", `/v2/deployments/${deploymentId}/revisions?limit=100`)).body.resources as Array<{ id: string; status: string }>

describe("a gitrepo deployment built and served by the local runtime", () => {
  it("builds the agent at the branch's tip and serves it: the states, the commit built, the build log, and the SDK's answer", async () => {
    const created = await request("POST", "/v2/deployments", {
      body: {
        name,
        source: "github",
        source_config: { integration_id: integration.integration_id, repo_url: repo.url, build_on_push: true },
        source_revision_config: { repo_ref: "main", langgraph_config_path: "langgraph.json" }
      }
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    deploymentId = created.body.id
    const started = Date.now()
    // The build log as the CLI follows it: pages of what came since the last `next_offset`.
    const pages: Array<ReadonlyArray<string>> = []
    let following = true
    const follower = (async () => {
      let offset: string | undefined
      const page = async () => {
        const { body } = await request("POST", `/v1/projects/${deploymentId}/revisions/${created.body.latest_revision_id}/build_logs`, {
          body: { order: "asc", limit: 50, ...(offset ? { offset } : {}) }
        })
        pages.push((body.logs as Array<{ message: string }>).map((entry) => entry.message))
        offset = body.next_offset ?? offset
        return body.logs.length as number
      }
      while (following) if ((await page()) < 50) await sleep(200)
      // What came after the last poll.
      while ((await page()) === 50);
    })()
    const seen = await waitRevision(deploymentId, created.body.latest_revision_id)
    following = false
    await follower
    console.log(`first build and rollout: ${((Date.now() - started) / 1000).toFixed(1)} s; ${seen.messages.join(" → ")}`)
    expect(seen.last.status, seen.last.status_message).toBe("DEPLOYED")
    // Every state seen was the next one of a build's path (a poll may miss a short one), building included.
    const path = ["CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"]
    expect(seen.statuses.map((status) => path.indexOf(status))).toEqual([...seen.statuses.map((status) => path.indexOf(status))].sort((a, b) => a - b))
    expect(seen.statuses).toEqual(expect.arrayContaining(["BUILDING", "DEPLOYING", "DEPLOYED"]))
    expect(seen.messages).toContain("Building")
    expect(seen.last.source_revision_config.repo_commit_sha).toBe(repo.commits[0])

    const log = await buildLog(deploymentId, created.body.latest_revision_id)
    // It streamed: many polls brought new lines while it built, and the pages add up to the log, no line twice.
    expect(pages.filter((page) => page.length > 0).length).toBeGreaterThan(5)
    expect(pages.flat()).toEqual(log)
    expect(log).toContain(`checked out commit ${repo.commits[0]}`)
    expect(log).toContain("STEP 5/8: RUN npm ci")
    expect(log.some((line) => /^added \d+ packages/.test(line))).toBe(true)
    expect(log.some((line) => /^STEP 5\/8 done in \d+\.\d s$/.test(line))).toBe(true)
    expect(log.some((line) => line.startsWith(`image localhost/slipway/${deploymentId}:${created.body.latest_revision_id} (sha256:`))).toBe(true)

    const client = sdk(name)
    const thread = await client.threads.create()
    const answer = await client.runs.wait(thread.thread_id, "agent", { input: { question: "hello" } })
    expect(answer).toMatchObject({ question: "hello", answer: "slipway v1 answers: HELLO" })
  }, 900_000)

  it("a push builds the pushed commit and switches to it with no failed request", async () => {
    expect(deploymentId, "the first test deployed").toBeDefined()
    const [sha] = await repo.push([{ files: { "src/agent.ts": agentSource("v2") }, message: "agent v2" }])
    const answers: Array<{ readonly sent: number; readonly answer: string }> = []
    const failures: Array<string> = []
    let polling = true
    const poller = (async () => {
      while (polling) {
        const sent = Date.now()
        try {
          answers.push({ sent, answer: (await ask(name, "poll")).answer ?? "(none)" })
        } catch (error) {
          failures.push(String((error as Error).message ?? error))
        }
      }
    })()
    const started = Date.now()
    const [revisionId] = await deliverPush(sha!)
    const seen = await waitRevision(deploymentId, revisionId!)
    const deployedAt = Date.now()
    const seconds = (deployedAt - started) / 1000
    // A few more requests, all sent after DEPLOYED.
    const deadline = Date.now() + 60_000
    while (answers.filter((a) => a.sent > deployedAt).length < 3 && failures.length === 0 && Date.now() < deadline) await sleep(100)
    polling = false
    await poller
    console.log(`source-only push to DEPLOYED: ${seconds.toFixed(1)} s, ${answers.length} requests during it`)
    expect(seen.last.status, seen.last.status_message).toBe("DEPLOYED")
    expect(seen.last.source_revision_config.repo_commit_sha).toBe(sha)
    expect(failures).toEqual([])
    expect(answers[0]!.answer).toBe("slipway v1 answers: POLL")
    expect(new Set(answers.map((a) => a.answer))).toEqual(new Set(["slipway v1 answers: POLL", "slipway v2 answers: POLL"]))
    // Once DEPLOYED, every request is the new revision's (one in flight at the switch finishes on the old).
    const after = answers.filter((a) => a.sent > deployedAt)
    expect(after.length).toBeGreaterThan(0)
    expect(after.every((a) => a.answer === "slipway v2 answers: POLL")).toBe(true)
    // A source-only push reused every layer before ADD (the config's dockerfile_lines), not ADD's.
    const log = await buildLog(deploymentId, revisionId!)
    expect(log.some((line) => /^STEP 2\/8 done in .* \(cached\)$/.test(line))).toBe(true)
    expect(log.some((line) => /^STEP 3\/8 done in [\d.]+ s$/.test(line))).toBe(true)
  }, 900_000)

  it("a push that breaks the install ends BUILD_FAILED while the previous revision serves; pushes behind it queue and only the newest is built", async () => {
    const broken = JSON.stringify({ ...JSON.parse(AGENT_PACKAGE_JSON), dependencies: { ...JSON.parse(AGENT_PACKAGE_JSON).dependencies, "left-pad": "1.3.0" } }, null, 2)
    const [sha3] = await repo.push([{ files: { "package.json": broken }, message: "a dependency without its lock" }])
    const [failing] = await deliverPush(sha3!)
    await waitRevision(deploymentId, failing!, (r) => r.status === "BUILDING" || FINAL.includes(r.status))
    // Two pushes while it builds: both queue behind it; the second replaces the first.
    const [sha4] = await repo.push([{ files: { "package.json": AGENT_PACKAGE_JSON, "src/agent.ts": agentSource("v4") }, message: "agent v4" }])
    const [queued] = await deliverPush(sha4!)
    const waiting = await waitRevision(deploymentId, queued!, (r) => r.status_message?.startsWith("Queued behind") || FINAL.includes(r.status))
    expect(waiting.last.status).toBe("QUEUED")
    const [sha5] = await repo.push([{ files: { "src/agent.ts": agentSource("v5") }, message: "agent v5" }])
    const [newest] = await deliverPush(sha5!)
    expect((await waitRevision(deploymentId, queued!)).last.status).toBe("SKIPPED")

    const failed = await waitRevision(deploymentId, failing!)
    expect(failed.last.status).toBe("BUILD_FAILED")
    expect(failed.last.status_message).toMatch(/^STEP 5\/8: RUN npm ci failed \(exit status 1\): \S/)
    const failedLog = await buildLog(deploymentId, failing!)
    expect(failedLog.some((line) => /in sync/.test(line))).toBe(true)
    expect(failedLog.some((line) => line.startsWith("BUILD FAILED (build): STEP 5/8: RUN npm ci failed"))).toBe(true)
    // The previous revision keeps serving.
    expect((await ask(name)).answer).toBe("slipway v2 answers: HELLO")

    const built = await waitRevision(deploymentId, newest!)
    expect(built.last.status, built.last.status_message).toBe("DEPLOYED")
    expect(built.last.source_revision_config.repo_commit_sha).toBe(sha5)
    expect((await ask(name)).answer).toBe("slipway v5 answers: HELLO")
  }, 900_000)

  it("a PATCH supersedes a build under way (INTERRUPTED, its build stopped) and the new revision builds the branch's tip", async () => {
    const [sha6] = await repo.push([{ files: { "src/agent.ts": agentSource("v6") }, message: "agent v6" }])
    const [pushed] = await deliverPush(sha6!)
    await waitRevision(deploymentId, pushed!, (r) => r.status === "BUILDING" || FINAL.includes(r.status))
    const patched = await request("PATCH", `/v2/deployments/${deploymentId}`, { body: { source_revision_config: { repo_ref: "main" } } })
    expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    const interrupted = await waitRevision(deploymentId, pushed!)
    expect(interrupted.last.status).toBe("INTERRUPTED")
    expect((await buildLog(deploymentId, pushed!)).some((line) => line.startsWith("image "))).toBe(false)
    const built = await waitRevision(deploymentId, patched.body.latest_revision_id)
    expect(built.last.status, built.last.status_message).toBe("DEPLOYED")
    // Unpinned, it built the tip of main and says which commit that was.
    expect(built.last.source_revision_config.repo_commit_sha).toBe(sha6)
    expect((await ask(name)).answer).toBe("slipway v6 answers: HELLO")
  }, 900_000)

  it("after a restart the built revision serves again, without a build or a new revision", async () => {
    const before = await revisionsOf()
    await server.close()
    await start()
    const deadline = Date.now() + 120_000
    let answer: string | undefined
    while (answer === undefined) {
      answer = await ask(name).then((a) => a.answer, () => undefined)
      if (answer === undefined) {
        if (Date.now() > deadline) throw new Error("the agent did not answer after the restart")
        await sleep(250)
      }
    }
    expect(answer).toBe("slipway v6 answers: HELLO")
    expect(await revisionsOf()).toEqual(before)
  }, 300_000)
})

describe("a private repository", () => {
  const privateDeployment = async () => {
    const created = await request("POST", "/v2/deployments", {
      body: {
        name: `private-${randomUUID().slice(0, 8)}`,
        source: "github",
        source_config: { integration_id: integration.integration_id, repo_url: privateRepo.url },
        source_revision_config: { repo_ref: "main", langgraph_config_path: "langgraph.json" }
      }
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    return { id: created.body.id as string, revision: await waitRevision(created.body.id, created.body.latest_revision_id) }
  }

  it("fails to clone without the integration's read token; with it the clone works (the build then fails on the config, with the CLI's message)", async () => {
    const without = await privateDeployment()
    expect(without.revision.last.status).toBe("BUILD_FAILED")
    expect(without.revision.last.status_message).toMatch(/^fetching main: authentication failed \(no token for this repository\)/)

    const tokenFile = join(database.dir, "read-token")
    writeFileSync(tokenFile, `${PRIVATE_TOKEN}\n`, { mode: 0o600 })
    expect(await keysTool(["integration", "token", integration.integration_id, "--tenant", DEFAULT_TENANT_ID, "--read-token-file", tokenFile])).toContain("set the read token")
    rmSync(tokenFile)
    const listed = (await keysTool(["integration", "list", "--tenant", DEFAULT_TENANT_ID])).trim().split("\n").map((line) => JSON.parse(line))
    expect(listed).toEqual([expect.objectContaining({ id: integration.integration_id, read_token: true })])

    const mark = git.requests.length
    const withToken = await privateDeployment()
    expect(withToken.revision.last.status).toBe("BUILD_FAILED")
    expect(withToken.revision.last.status_message).toMatch(/^langgraph\.json: No graphs found in config\. Add at least one graph/)
    expect(git.requests.slice(mark).some((r) => r.basic === `x-access-token:${PRIVATE_TOKEN}`)).toBe(true)

    // The token is shown nowhere and left nowhere.
    const everything = JSON.stringify([
      (await request("GET", "/v1/integrations/gitrepo/install")).body,
      (await request("GET", `/v2/deployments/${withToken.id}`)).body,
      withToken.revision.last,
      await buildLog(withToken.id, withToken.revision.last.id),
      listed
    ])
    expect(everything).not.toContain(PRIVATE_TOKEN)
    const work = join(database.dir, "runtime", "builds", "work")
    expect(existsSync(work) ? readdirSync(work) : []).toEqual([])
    for (const file of [database.path, `${database.path}-wal`]) if (existsSync(file)) expect(readFileSync(file).includes(PRIVATE_TOKEN)).toBe(false)
  }, 300_000)
})
