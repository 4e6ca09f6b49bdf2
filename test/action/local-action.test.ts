/**
 * GitHub's own local runner, `@github/local-action` (npm), runs the action's sources: it imports
 * action/main.ts with @actions/core stubbed and calls the exported `run()`. Against a real server.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { delimiter, dirname, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestServer, type TestServer } from "../support/server.ts"

const root = join(import.meta.dirname, "../..")
const localAction = join(root, "node_modules/@github/local-action/bin/local-action.js")

let server: TestServer
let workDir: string
beforeAll(async () => {
  server = await startTestServer({ revisionStepMs: 20 })
  workDir = mkdtempSync(join(tmpdir(), "slipway-local-action-"))
})
afterAll(async () => {
  await server?.close()
  if (workDir) rmSync(workDir, { recursive: true, force: true })
})

const runLocal = (env: Record<string, string>) => {
  const envFile = join(workDir, `${Object.keys(env).length}-${Date.now()}.env`)
  writeFileSync(envFile, Object.entries(env).map(([key, value]) => `${key}=${value}`).join("\n") + "\n")
  const child = spawn(process.execPath, [localAction, "run", root, "action/main.ts", envFile], {
    cwd: root,
    // local-action re-runs itself through `npm exec tsx`: the Node 24 running this test comes first on PATH.
    env: { ...process.env, PATH: [dirname(process.execPath), process.env.PATH ?? ""].join(delimiter), NO_COLOR: "1", FORCE_COLOR: "0" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.on("data", (chunk) => (output += chunk))
  child.stderr.on("data", (chunk) => (output += chunk))
  return new Promise<{ code: number | null; output: string }>((resolve) => child.on("close", (code) => resolve({ code, output })))
}

describe("@github/local-action", () => {
  it("imports action/main.ts without starting it, calls run(), and the deploy reaches DEPLOYED", { timeout: 120_000 }, async () => {
    const { code, output } = await runLocal({
      "INPUT_API-URL": server.url,
      "INPUT_API-KEY": server.key,
      INPUT_NAME: "local-run",
      "INPUT_IMAGE-URI": "registry.example.com/local:1",
      "INPUT_POLL-INTERVAL": "50ms",
      GITHUB_REPOSITORY: "acme/local",
      GITHUB_REF: "refs/heads/main",
      GITHUB_SHA: "0123456789abcdef0123456789abcdef01234567"
    })
    expect(output).toContain("Running Action")
    expect(output).not.toContain("does not export a run() function")
    expect(code, output).toBe(0)
    const list = await server.request("GET", "/v2/deployments?name_contains=local-run")
    const [deployment] = list.body.resources
    expect(deployment.active_revision_id).toBe(deployment.latest_revision_id)
    const revision = await server.request("GET", `/v2/deployments/${deployment.id}/revisions/${deployment.active_revision_id}`)
    expect(revision.body.status).toBe("DEPLOYED")
    // The outputs table local-action prints at the end.
    expect(output).toMatch(/'status'\s*│\s*'DEPLOYED'/)
    expect(output).toContain(deployment.active_revision_id)
    expect(output).not.toContain(server.key.slice(8))
  })

  it("a failing deploy ends with exit code 1 and the annotation", { timeout: 120_000 }, async () => {
    const { code, output } = await runLocal({
      "INPUT_API-URL": server.url,
      "INPUT_API-KEY": "slw_wrong_key_0000000000000000000000000000",
      "INPUT_IMAGE-URI": "registry.example.com/local:1",
      GITHUB_REPOSITORY: "acme/local"
    })
    expect(code).toBe(1)
    expect(output).toContain("api-key: Invalid API key")
  })
})
