/**
 * `slipway sandbox exec` and `sandbox cp` through a box's dataplane (POST {dataplane_url}/execute,
 * POST /upload?path=, GET /download?path=; /work/shared/spec/sandbox-dataplane.md): the real binary
 * against a real server with the local runtime (`SLIPWAY_RUNTIME=local`).
 *
 * The template names `python:3.12-slim`, served by a test registry (the busybox image the tests
 * build) acting as the Docker Hub mirror.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ImageMirror, startImageMirror } from "../support/mirror.ts"
import { type ChildServer, spawnServer, tempDatabasePath, TEST_KEY } from "../support/server.ts"
import { slipway } from "./run.ts"

let server: ChildServer
let database: ReturnType<typeof tempDatabasePath>
let workDir: string
let env: Record<string, string>
let mirror: ImageMirror

beforeAll(async () => {
  database = tempDatabasePath("slipway-cli-exec")
  workDir = mkdtempSync(join(tmpdir(), "slipway-cli-exec-"))
  mirror = await startImageMirror({ setProcessEnv: false })
  server = await spawnServer({ databasePath: database.path, env: { SLIPWAY_RUNTIME: "local", ...mirror.env } })
  env = { SLIPWAY_URL: server.url, SLIPWAY_API_KEY: TEST_KEY }
  const template = await server.request("POST", "/v2/sandboxes/templates", { body: { name: "shell", image: "python:3.12-slim", resources: { cpu: "500m", memory: "128Mi" } } })
  expect(template.status, JSON.stringify(template.body)).toBe(201)
  const box = await slipway(["sandbox", "create", "--template", "shell", "--name", "box-exec", "--wait", "--timeout", "120"], env)
  expect(box.code, box.stderr).toBe(0)
}, 180_000)

afterAll(async () => {
  if (server) {
    await slipway(["sandbox", "rm", "box-exec"], env)
    server.process.kill("SIGTERM")
    await server.exited
  }
  await mirror?.stop()
  database?.remove()
  if (workDir) rmSync(workDir, { recursive: true, force: true })
})

describe("sandbox exec", () => {
  it("runs a command in the box: its stdout and stderr come back, and the CLI exits with its exit code", async () => {
    const hello = await slipway(["sandbox", "exec", "box-exec", "--", "echo hello from the box; echo to-stderr >&2"], env)
    expect(hello.stderr).toContain("to-stderr")
    expect(hello.code, hello.stderr).toBe(0)
    expect(hello.stdout).toBe("hello from the box\n")
    const three = await slipway(["sandbox", "exec", "box-exec", "--", "exit 3"], env)
    expect(three.code).toBe(3)
  })

  it("quotes several words for the shell, passes --env and --cwd, and --json answers {stdout, stderr, exit_code}", async () => {
    const run = await slipway(["sandbox", "exec", "box-exec", "--json", "--env", "GREETING=hi there", "--cwd", "/tmp", "--", "sh", "-c", 'printf "%s|%s" "$GREETING" "$(pwd)"'], env)
    expect(run.code, run.stderr).toBe(0)
    expect(run.json()).toEqual({ stdout: "hi there|/tmp", stderr: "", exit_code: 0 })
  })
})

describe("sandbox cp", () => {
  it("copies a file into the box and back out, byte for byte", async () => {
    const local = join(workDir, "data.bin")
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, index) => (index * 31) % 256))
    writeFileSync(local, bytes)
    const up = await slipway(["sandbox", "cp", local, "box-exec:/tmp/data.bin"], env)
    expect(up.code, up.stderr).toBe(0)
    const size = await slipway(["sandbox", "exec", "box-exec", "--", "wc -c < /tmp/data.bin"], env)
    expect(size.stdout.trim()).toBe(String(bytes.length))
    const back = join(workDir, "back.bin")
    const down = await slipway(["sandbox", "cp", "box-exec:/tmp/data.bin", back], env)
    expect(down.code, down.stderr).toBe(0)
    expect(readFileSync(back).equals(bytes)).toBe(true)
  })

  it("a missing file in the box exits 3", async () => {
    const run = await slipway(["sandbox", "cp", "box-exec:/no/such/file", join(workDir, "x")], env)
    expect(run.code).toBe(3)
  })
})
