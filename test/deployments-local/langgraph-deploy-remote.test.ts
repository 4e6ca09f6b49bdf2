/**
 * `langgraph deploy --remote` against a real Slipway server (local runtime): a JavaScript
 * LangGraph agent (test/support/agentRepo.ts, FROM the langgraphjs-api stand-in in a loopback
 * registry) packed, uploaded to the signed URL, built by the server and served.
 *
 * First replayed request for request with the published JS port's own code
 * (`@langchain/langgraph-cli`: its `HostBackendClient`, its `createArchive`, the upload's headers
 * of deploy.mjs / deploy.py), reading the build log while it builds as the CLI does (`offset` /
 * `next_offset`) and the last lines of a failed build (`desc`, 30). Then the unmodified
 * `langgraphjs deploy --remote` itself, which creates the deployment, builds and waits until it
 * serves; the official SDK talks to what it deployed. Last the unmodified Python CLI
 * (`langgraph deploy --remote`, libs/cli/langgraph_cli under Debian's python3), the same way.
 */
import { execFile } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { promisify } from "node:util"
import { randomUUID } from "node:crypto"
import { Client } from "@langchain/langgraph-sdk"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer } from "../../server/index.ts"
import { makeLogger } from "../../server/log.ts"
import { agentFiles } from "../support/agentRepo.ts"
import { requireBuildTools } from "../support/builds.ts"
import { langgraphBase, pushLanggraphBase } from "../support/langgraphBase.ts"
import { startRegistry, type TestRegistry } from "../support/registry.ts"
import { TEST_KEY, tempDatabasePath } from "../support/server.ts"
import { setEnv } from "../support/env.ts"
import { closeLocalServer } from "./closeLocalServer.ts"

const root = join(import.meta.dirname, "..", "..")
const cliDist = join(root, "node_modules", "@langchain", "langgraph-cli", "dist", "cli")
/** The Python CLI, unmodified (test/vendor/langgraph_cli/README.md), and what it needs from Debian. */
const pythonCli = join(root, "test", "vendor", "langgraph_cli")
const PYTHON = "/usr/bin/python3"
const PYTHON_PACKAGES = ["click", "dotenv", "pathspec", "httpx"]
const database = tempDatabasePath("lgremote")
const work = mkdtempSync(join(tmpdir(), "slipway-lgremote-"))
type Server = Awaited<ReturnType<typeof startServer>>
let server: Server
let registry: TestRegistry
let baseImage: string
let restoreEnv: () => void = () => undefined

/** The JS CLI's own host-backend client and archive (the modules `langgraphjs deploy` runs). */
interface HostBackendClient {
  listDeployments(nameContains?: string): Promise<any>
  createDeployment(args: { name: string; deploymentType: string; source: string; configPath?: string; secrets?: ReadonlyArray<{ name: string; value: string }> }): Promise<any>
  requestUploadUrl(deploymentId: string): Promise<any>
  updateDeploymentInternalSource(deploymentId: string, args: { sourceTarballPath: string; configPath: string; secrets?: ReadonlyArray<{ name: string; value: string }>; installCommand?: string; buildCommand?: string }): Promise<any>
  listRevisions(deploymentId: string, limit?: number): Promise<any>
  getRevision(deploymentId: string, revisionId: string): Promise<any>
  getBuildLogs(deploymentId: string, revisionId: string, payload: Record<string, unknown>): Promise<any>
  getDeployment(deploymentId: string): Promise<any>
}
let cli: HostBackendClient
let createArchive: (configPath: string) => Promise<{ archivePath: string; fileSize: number; configRel: string; cleanup: () => Promise<void> }>

beforeAll(async () => {
  requireBuildTools()
  if (!existsSync(join(cliDist, "cli.mjs"))) throw new Error("@langchain/langgraph-cli is not installed: npm install (it is a devDependency)")
  const hostBackend = (await import(join(cliDist, "utils", "host-backend.mjs"))) as { HostBackendClient: new (url: string, key: string) => HostBackendClient }
  ;({ createArchive } = await import(join(cliDist, "utils", "archive.mjs")))
  await langgraphBase()
  registry = await startRegistry()
  baseImage = (await pushLanggraphBase(registry.host)).replace(/:24$/, "")
  // Nothing here pushes images: the registry Slipway runs is not needed.
  restoreEnv = setEnv({ SLIPWAY_INSECURE_REGISTRIES: registry.host, SLIPWAY_REGISTRY: "off", SLIPWAY_DEPLOY_DRAIN_MS: "1000" })
  server = await startServer({ port: 0, databasePath: database.path, apiKey: TEST_KEY, runtime: "local", logger: makeLogger("silent") })
  cli = new hostBackend.HostBackendClient(server.url, TEST_KEY)
}, 900_000)

afterAll(async () => {
  const { running, closed } = await closeLocalServer(server, database.dir)
  await registry?.stop()
  restoreEnv()
  rmSync(work, { recursive: true, force: true })
  database.remove()
  if (closed) throw closed
  // The server stopped everything it ran.
  expect(running).toEqual([])
}, 300_000)

/** A project directory holding the agent at `version` (as a user's checkout), and its .env. */
const project = async (version: string, files: Record<string, string> = {}) => {
  const dir = join(work, `${version}-${randomUUID().slice(0, 8)}`, "agent")
  for (const [path, content] of Object.entries({ ...(await agentFiles(baseImage, version)), ".env": "GREETING=hello\n", ...files })) {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), content)
  }
  return dir
}

/** `_upload_to_gcs` / `uploadToGcs`: one PUT of the tarball with the CLI's headers, no API key. */
const upload = async (url: string, archivePath: string, size: number) => {
  const response = await fetch(url, {
    method: "PUT",
    headers: { "Content-Type": "application/gzip", "Content-Length": String(size), "X-Goog-Content-Length-Range": "0,209715200" },
    body: readFileSync(archivePath)
  })
  expect(response.status, await response.clone().text()).toBe(200)
}

const FINAL = ["DEPLOYED", "CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED", "SKIPPED"]

/**
 * `pollRevisionStatus` of a remote build: the latest revision, then every 3 s until a final
 * status; while AWAITING_BUILD or BUILDING, the build log as `--verbose` streams it (asc, 50,
 * offset = the last next_offset).
 */
const pollAsCli = async (deploymentId: string) => {
  const revisionId = (await cli.listRevisions(deploymentId, 1)).resources[0].id as string
  const statuses: Array<string> = []
  const lines: Array<{ id: string; message: string }> = []
  let offset: string | null = null
  const deadline = Date.now() + 900_000
  for (;;) {
    const revision = await cli.getRevision(deploymentId, revisionId)
    if (statuses.at(-1) !== revision.status) statuses.push(revision.status)
    if (FINAL.includes(revision.status)) return { revision, statuses, lines }
    if (revision.status === "AWAITING_BUILD" || revision.status === "BUILDING") {
      const logs = await cli.getBuildLogs(deploymentId, revisionId, offset ? { order: "asc", limit: 50, offset } : { order: "asc", limit: 50 })
      lines.push(...logs.logs)
      if (typeof logs.next_offset === "string") offset = logs.next_offset
    }
    if (Date.now() > deadline) throw new Error(`revision ${revisionId} still ${revision.status} after 900 s`)
    await new Promise((resolve) => setTimeout(resolve, 3000))
  }
}

/** The official SDK's answer from the deployment's URL. */
const ask = async (url: string) => {
  const client = new Client({ apiUrl: url, apiKey: null, callerOptions: { maxRetries: 0 }, timeoutMs: 30_000 })
  return (await client.runs.wait(null, "agent", { input: { question: "hello" } })) as { answer?: string }
}

describe("langgraph deploy --remote: upload-url, PUT, PATCH internal_source, the server builds and serves", () => {
  it("replayed with the CLI's own client and archive: builds, streams the build log by next_offset, serves the agent", async () => {
    const name = `remote-${randomUUID().slice(0, 8)}`
    const dir = await project("v1")
    const listed = await cli.listDeployments(name)
    expect(listed.resources.filter((deployment: { name: string }) => deployment.name === name)).toEqual([])
    const created = await cli.createDeployment({ name, deploymentType: "dev", source: "internal_source", secrets: [{ name: "GREETING", value: "hello" }] })
    expect(created).toMatchObject({ source: "internal_source", latest_revision_id: null })
    const archive = await createArchive(join(dir, "langgraph.json"))
    try {
      const target = await cli.requestUploadUrl(created.id)
      await upload(target.upload_url, archive.archivePath, archive.fileSize)
      const updated = await cli.updateDeploymentInternalSource(created.id, {
        sourceTarballPath: target.object_path,
        configPath: archive.configRel,
        secrets: [{ name: "GREETING", value: "hello" }]
      })
      expect(updated.latest_revision_id).not.toBeNull()
    } finally {
      await archive.cleanup()
    }
    const { revision, statuses, lines } = await pollAsCli(created.id)
    expect(revision.status, `${revision.status_message} (${statuses.join(" > ")})`).toBe("DEPLOYED")
    expect(statuses).toContain("BUILDING")
    // The build log as streamed: in order, each line once, the build's steps among them.
    expect(new Set(lines.map((line) => line.id)).size).toBe(lines.length)
    expect(lines.some((line) => line.message.includes("RUN npm ci"))).toBe(true)
    const url = (await cli.getDeployment(created.id)).source_config.custom_url as string
    expect(url).toBe(`${server.url}/d/${name}`)
    expect((await ask(url)).answer).toBe("slipway v1 answers: HELLO")
  }, 900_000)

  it("a build that fails is BUILD_FAILED, and its last lines read as the CLI reads them (desc, 30)", async () => {
    const name = `remote-bad-${randomUUID().slice(0, 8)}`
    const dir = await project("bad", { "langgraph.json": JSON.stringify({ node_version: "24", base_image: baseImage, graphs: {} }) })
    const created = await cli.createDeployment({ name, deploymentType: "dev", source: "internal_source" })
    const archive = await createArchive(join(dir, "langgraph.json"))
    try {
      const target = await cli.requestUploadUrl(created.id)
      await upload(target.upload_url, archive.archivePath, archive.fileSize)
      await cli.updateDeploymentInternalSource(created.id, { sourceTarballPath: target.object_path, configPath: archive.configRel })
    } finally {
      await archive.cleanup()
    }
    const { revision } = await pollAsCli(created.id)
    expect(revision.status).toBe("BUILD_FAILED")
    const last = await cli.getBuildLogs(created.id, revision.id, { order: "desc", limit: 30 })
    expect(last.logs.length).toBeGreaterThan(0)
    expect(last.logs.length).toBeLessThanOrEqual(30)
    expect(last.logs.map((entry: { message: string }) => entry.message).join("\n")).toMatch(/graphs/i)
  }, 600_000)

  it("the unmodified langgraphjs deploy --remote creates, uploads, builds and waits until the agent serves", async () => {
    const name = `js-cli-${randomUUID().slice(0, 8)}`
    const dir = await project("v2")
    const run = await promisify(execFile)(
      process.execPath,
      [join(cliDist, "cli.mjs"), "deploy", "--remote", "--host-url", server.url, "--api-key", TEST_KEY, "--name", name, "--no-input", "--verbose"],
      { cwd: dir, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/root", NO_COLOR: "1", LANGGRAPH_CLI_NO_ANALYTICS: "1" }, encoding: "utf8", timeout: 900_000, maxBuffer: 64 * 1024 * 1024 }
    ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`langgraphjs deploy failed: ${error.message}\n${error.stdout ?? ""}\n${error.stderr ?? ""}`)
    })
    expect(run.stdout).toContain("Deployment successful!")
    expect(run.stdout).toContain(`${server.url}/d/${name}`)
    // --verbose streamed the build log while it built.
    expect(run.stdout).toMatch(/BUILDING \(build logs\)|AWAITING_BUILD \(build logs\)/)
    expect((await ask(`${server.url}/d/${name}`)).answer).toBe("slipway v2 answers: HELLO")
    // The secret from .env reached the deployment (masked in answers).
    const listed = await cli.listDeployments(name)
    const deployment = listed.resources.find((item: { name: string }) => item.name === name)
    expect(deployment).toMatchObject({ source: "internal_source", secrets: [{ name: "GREETING", value: "********" }] })
  }, 900_000)

  it("the unmodified Python langgraph deploy --remote (LANGGRAPH_HOST_URL at Slipway) creates, uploads, builds and waits until the agent serves", async () => {
    if (!existsSync(PYTHON)) throw new Error(`${PYTHON} not found: install Debian package python3`)
    for (const module of PYTHON_PACKAGES) {
      if (!existsSync(join("/usr/lib/python3/dist-packages", module))) throw new Error(`python module ${module} not found: install Debian package python3-${module}`)
    }
    const name = `py-cli-${randomUUID().slice(0, 8)}`
    const dir = await project("v3")
    const run = await promisify(execFile)(PYTHON, ["-m", "langgraph_cli", "deploy", "--remote", "--api-key", TEST_KEY, "--name", name, "--no-input", "--verbose"], {
      cwd: dir,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: process.env.HOME ?? "/root",
        PYTHONPATH: pythonCli,
        PYTHONDONTWRITEBYTECODE: "1",
        LANGGRAPH_HOST_URL: server.url,
        LANGGRAPH_CLI_NO_ANALYTICS: "1",
        NO_COLOR: "1"
      },
      encoding: "utf8",
      timeout: 900_000,
      maxBuffer: 64 * 1024 * 1024
    }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`langgraph deploy failed: ${error.message}\n${error.stdout ?? ""}\n${error.stderr ?? ""}`)
    })
    const output = run.stdout + run.stderr
    expect(output).toContain("Deployment successful!")
    expect(output).toContain(`${server.url}/d/${name}`)
    expect((await ask(`${server.url}/d/${name}`)).answer).toBe("slipway v3 answers: HELLO")
    const listed = await cli.listDeployments(name)
    const deployment = listed.resources.find((item: { name: string }) => item.name === name)
    expect(deployment).toMatchObject({ source: "internal_source", secrets: [{ name: "GREETING", value: "********" }] })
  }, 900_000)
})
