/**
 * The bundled action (dist/index.js) deploys for real: a Slipway server with the `local` runtime,
 * a real registry with the test images. The run waits until DEPLOYED, its `url` output is the
 * deployment URL, and the URL answers through Slipway; a crashing image fails the run. In
 * repository mode the server builds the pushed commit of a git repository served on loopback (the
 * tests' JavaScript LangGraph agent, FROM the langgraphjs-api stand-in) and serves it; a commit
 * whose install breaks fails the run with the build log's last lines.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, expect, it } from "vitest"
import { AGENT_PACKAGE_JSON, agentFiles } from "../support/agentRepo.ts"
import { requireBuildTools } from "../support/builds.ts"
import { startGitServer, type TestGitServer, type TestRepo } from "../support/gitServer.ts"
import { pushTestImages, removeTestImages, type TestImageRefs } from "../support/images.ts"
import { pushLanggraphBase } from "../support/langgraphBase.ts"
import { startRegistry, type TestRegistry } from "../support/registry.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

const bundle = join(import.meta.dirname, "../../dist/index.js")

let registry: TestRegistry
let refs: TestImageRefs
let server: TestServer
let workDir: string
let git: TestGitServer
let agent: TestRepo
let broken: TestRepo
const saved = { insecure: process.env.SLIPWAY_INSECURE_REGISTRIES, timeout: process.env.SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS }

const parseOutputFile = (text: string): Record<string, string> => {
  const outputs: Record<string, string> = {}
  const lines = text.split("\n")
  for (let index = 0; index < lines.length; index++) {
    const match = /^([^<]+)<<(.+)$/.exec(lines[index]!)
    if (!match) continue
    const value: Array<string> = []
    while (++index < lines.length && lines[index] !== match[2]) value.push(lines[index]!)
    outputs[match[1]!] = value.join("\n")
  }
  return outputs
}

/** The action as a workflow runs it for a push of `sha` to main of `repository`, with `inputs` (`INPUT_*` names without the prefix). */
const runAction = (repository: string, inputs: Record<string, string>, sha = "0123456789abcdef0123456789abcdef01234567") => {
  const outputFile = join(workDir, `output-${repository.replace("/", "-")}`)
  writeFileSync(outputFile, "")
  writeFileSync(join(workDir, "summary"), "")
  const child = spawn(process.execPath, [bundle], {
    cwd: workDir,
    env: {
      PATH: process.env.PATH ?? "",
      GITHUB_ACTIONS: "true",
      GITHUB_OUTPUT: outputFile,
      GITHUB_STEP_SUMMARY: join(workDir, "summary"),
      GITHUB_REPOSITORY: repository,
      GITHUB_REF: "refs/heads/main",
      GITHUB_SHA: sha,
      GITHUB_SERVER_URL: "https://github.com",
      GITHUB_RUN_ID: "7",
      GITHUB_EVENT_NAME: "push",
      GITHUB_WORKSPACE: workDir,
      INPUT_WAIT: "true",
      INPUT_TIMEOUT: "3m",
      "INPUT_POLL-INTERVAL": "100ms",
      "INPUT_API-URL": server.url,
      "INPUT_API-KEY": server.key,
      ...Object.fromEntries(Object.entries(inputs).map(([name, value]) => [`INPUT_${name.toUpperCase()}`, value]))
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  child.stdout.on("data", (chunk) => (stdout += chunk))
  child.stderr.on("data", (chunk) => (stdout += chunk))
  return new Promise<{ code: number | null; stdout: string; outputs: Record<string, string> }>((resolve, reject) => {
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, outputs: parseOutputFile(readFileSync(outputFile, "utf8")) }))
  })
}

beforeAll(async () => {
  requireBuildTools()
  registry = await startRegistry()
  refs = await pushTestImages(registry.host, { only: ["http-ok", "crash"] })
  const baseImage = (await pushLanggraphBase(registry.host)).replace(/:24$/, "")
  git = await startGitServer()
  const files = await agentFiles(baseImage, "v1")
  agent = await git.createRepo("acme/agent.git", [{ files, message: "agent v1" }])
  const lockless = JSON.stringify({ ...JSON.parse(AGENT_PACKAGE_JSON), dependencies: { ...JSON.parse(AGENT_PACKAGE_JSON).dependencies, "left-pad": "1.3.0" } })
  broken = await git.createRepo("acme/broken.git", [{ files: { ...files, "package.json": lockless }, message: "a dependency without its lock" }])
  process.env.SLIPWAY_INSECURE_REGISTRIES = registry.host
  // An agent server takes a few seconds to answer /ok on a loaded machine.
  process.env.SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS = "60000"
  server = await startTestServer({ runtime: "local", insecureGitHosts: [git.host] })
  workDir = mkdtempSync(join(tmpdir(), "slipway-action-local-"))
}, 900_000)

afterAll(async () => {
  await server?.close()
  await git?.stop()
  await registry?.stop()
  removeTestImages()
  for (const [key, value] of [["SLIPWAY_INSECURE_REGISTRIES", saved.insecure], ["SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS", saved.timeout]] as const) {
    if (value === undefined) delete process.env[key]
    else process.env[key] = value
  }
  if (workDir) rmSync(workDir, { recursive: true, force: true })
}, 120_000)

it("deploys an image for real: DEPLOYED, the url output answers through Slipway", async () => {
  const run = await runAction("acme/Shop_API", { "image-uri": refs.httpOk })
  expect(run.code, run.stdout).toBe(0)
  expect(run.outputs.status).toBe("DEPLOYED")
  expect(run.outputs.url).toBe(`${server.url}/d/shop-api`)
  const answer = await fetch(`${run.outputs.url}/ok`)
  expect(answer.status).toBe(200)
  expect((await answer.text()).trim()).toBe("ok")
}, 180_000)

it("fails the run when the image crashes, with the revision's reason", async () => {
  const run = await runAction("acme/crasher", { "image-uri": refs.crash })
  expect(run.code).not.toBe(0)
  expect(run.outputs.status).toBe("DEPLOY_FAILED")
  expect(run.stdout).toMatch(/exited \(exit code 1\) before it was healthy/)
  // The last lines of its logs are printed, the process's own among them.
  expect(run.stdout).toMatch(/Last \d+ lines of the deploy log of revision/)
  expect(run.stdout).toMatch(/\[INFO\] \S+-0 crash: exiting at once/)
  expect(run.stdout).toMatch(/Last \d+ lines of the build log of revision/)
}, 180_000)

it("repository mode: the server builds the pushed commit and serves it; the url output answers with the agent", async () => {
  const run = await runAction("acme/agent", { "repo-url": agent.url, "graph-config-path": "langgraph.json", "poll-interval": "500ms", timeout: "10m" }, agent.commits[0])
  expect(run.code, run.stdout).toBe(0)
  expect(run.outputs.status).toBe("DEPLOYED")
  expect(run.outputs.url).toBe(`${server.url}/d/agent`)
  const revision = (await fetch(`${server.url}/v2/deployments/${run.outputs["deployment-id"]}/revisions/${run.outputs["revision-id"]}`, { headers: { "x-api-key": server.key } }).then((r) => r.json())) as any
  expect(revision.source_revision_config.repo_commit_sha).toBe(agent.commits[0])
  const answer = await fetch(`${run.outputs.url}/runs/wait`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ assistant_id: "agent", input: { question: "from the action" } })
  })
  expect(answer.status).toBe(200)
  expect(await answer.json()).toMatchObject({ answer: "slipway v1 answers: FROM THE ACTION" })
}, 900_000)

it("repository mode: a commit whose install breaks fails the run with BUILD_FAILED and the build log's last lines", async () => {
  const run = await runAction("acme/broken", { "repo-url": broken.url, "graph-config-path": "langgraph.json", "poll-interval": "500ms", timeout: "10m" }, broken.commits[0])
  expect(run.code).not.toBe(0)
  expect(run.outputs.status).toBe("BUILD_FAILED")
  expect(run.stdout).toMatch(/STEP 5\/8: RUN npm ci failed \(exit status 1\)/)
  expect(run.stdout).toMatch(/Last \d+ lines of the build log of revision/)
  expect(run.stdout).toMatch(/BUILD FAILED \(build\): STEP 5\/8: RUN npm ci failed/)
}, 900_000)
