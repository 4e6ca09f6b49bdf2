/**
 * The bundled action (dist/index.js) deploys for real: a Slipway server with the `local` runtime,
 * a real registry with the test images. The run waits until DEPLOYED, its `url` output is the
 * deployment URL, and the URL answers through Slipway; a crashing image fails the run.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, expect, it } from "vitest"
import { pushTestImages, removeTestImages, type TestImageRefs } from "../support/images.ts"
import { startRegistry, type TestRegistry } from "../support/registry.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

const bundle = join(import.meta.dirname, "../../dist/index.js")

let registry: TestRegistry
let refs: TestImageRefs
let server: TestServer
let workDir: string
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

const runAction = (repository: string, image: string) => {
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
      GITHUB_SHA: "0123456789abcdef0123456789abcdef01234567",
      GITHUB_SERVER_URL: "https://github.com",
      GITHUB_RUN_ID: "7",
      GITHUB_EVENT_NAME: "push",
      GITHUB_WORKSPACE: workDir,
      INPUT_WAIT: "true",
      INPUT_TIMEOUT: "3m",
      "INPUT_POLL-INTERVAL": "100ms",
      "INPUT_API-URL": server.url,
      "INPUT_API-KEY": server.key,
      "INPUT_IMAGE-URI": image
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
  registry = await startRegistry()
  refs = await pushTestImages(registry.host, { only: ["http-ok", "crash"] })
  process.env.SLIPWAY_INSECURE_REGISTRIES = registry.host
  process.env.SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS = "5000"
  server = await startTestServer({ runtime: "local" })
  workDir = mkdtempSync(join(tmpdir(), "slipway-action-local-"))
}, 180_000)

afterAll(async () => {
  await server?.close()
  await registry?.stop()
  removeTestImages()
  for (const [key, value] of [["SLIPWAY_INSECURE_REGISTRIES", saved.insecure], ["SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS", saved.timeout]] as const) {
    if (value === undefined) delete process.env[key]
    else process.env[key] = value
  }
  if (workDir) rmSync(workDir, { recursive: true, force: true })
}, 120_000)

it("deploys an image for real: DEPLOYED, the url output answers through Slipway", async () => {
  const run = await runAction("acme/Shop_API", refs.httpOk)
  expect(run.code, run.stdout).toBe(0)
  expect(run.outputs.status).toBe("DEPLOYED")
  expect(run.outputs.url).toBe(`${server.url}/d/shop-api`)
  const answer = await fetch(`${run.outputs.url}/ok`)
  expect(answer.status).toBe(200)
  expect((await answer.text()).trim()).toBe("ok")
}, 180_000)

it("fails the run when the image crashes, with the revision's reason", async () => {
  const run = await runAction("acme/crasher", refs.crash)
  expect(run.code).not.toBe(0)
  expect(run.outputs.status).toBe("DEPLOY_FAILED")
  expect(run.stdout).toMatch(/exited \(exit code 1\) before it was healthy/)
  // The last lines of its logs are printed, the process's own among them.
  expect(run.stdout).toMatch(/Last \d+ lines of the deploy log of revision/)
  expect(run.stdout).toMatch(/\[INFO\] \S+-0 crash: exiting at once/)
  expect(run.stdout).toMatch(/Last \d+ lines of the build log of revision/)
}, 180_000)
