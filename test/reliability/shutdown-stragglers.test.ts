/**
 * Shutdown that does not depend on clients: a request whose client stopped sending is cut off
 * after the grace period and the server still checkpoints and exits 0; and `npm start` stops
 * cleanly when its own pid (the one a process manager or container runtime knows) is signalled.
 */
import { spawn } from "node:child_process"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { type ChildServer, eventually, spawnServer, tempDatabasePath, TEST_KEY, testPort } from "../support/server.ts"
import { integrityCheck, refusesConnections, sleep, slowRequest, stopChild, walSize, withDatabase } from "./support.ts"

let child: ChildServer | undefined
let database: ReturnType<typeof tempDatabasePath> | undefined
afterEach(async () => {
  await stopChild(child)
  child = undefined
  database?.remove()
  database = undefined
})

const jsonHeaders = { "content-type": "application/json", "x-api-key": TEST_KEY }

describe("SIGTERM with a client that never finishes its request", () => {
  it("closes the straggler after the grace period, checkpoints the WAL and exits 0", async () => {
    database = tempDatabasePath("slipway-stragglers")
    child = await spawnServer({ databasePath: database.path, env: { SLIPWAY_SHUTDOWN_GRACE_MS: "1500" } })
    const server = child
    for (let i = 0; i < 10; i++) {
      expect((await server.request("POST", "/v2/sandboxes/volumes", { body: { name: `kept-${i}`, size: "1Gi" } })).status).toBe(201)
    }
    expect(walSize(database.path)).toBeGreaterThan(0)
    // Headers and half a body, and then nothing more: this client never finishes.
    const stalled = slowRequest(server.url, "POST", "/v2/sandboxes/volumes", JSON.stringify({ name: "never", size: "1Gi" }), jsonHeaders)
    await stalled.started
    await sleep(100)

    const signalled = performance.now()
    server.process.kill("SIGTERM")
    await eventually(async () => ((await refusesConnections(server.url)) ? true : undefined), 5_000)
    const code = await server.exited
    const ms = performance.now() - signalled
    expect(code, server.output()).toBe(0)
    expect(ms).toBeGreaterThanOrEqual(1_400)
    expect(ms).toBeLessThan(6_000)
    expect(server.output()).toMatch(/grace period over/)
    expect(server.output()).not.toMatch(/unhandled|shutdown failed/i)
    expect(walSize(database.path)).toBe(0)
    expect(integrityCheck(database.path)).toEqual(["ok"])
    const names = withDatabase(database.path, (db) => db.prepare("SELECT name FROM sandbox_volumes ORDER BY name").pluck().all()) as Array<string>
    expect(names).toHaveLength(10)
    expect(names).not.toContain("never")
  })
})

describe("npm start", () => {
  it("stops cleanly when the npm process itself is signalled: exit 0, the server gone, the WAL checkpointed", async () => {
    database = tempDatabasePath("slipway-npm-start")
    const port = testPort()
    const npm = spawn("npm", ["start", "--silent"], {
      cwd: join(import.meta.dirname, "../.."),
      env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATABASE_PATH: database.path, SLIPWAY_API_KEY: TEST_KEY, SLIPWAY_RUNTIME: "simulated", LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    npm.stdout!.on("data", (chunk) => (output += chunk))
    npm.stderr!.on("data", (chunk) => (output += chunk))
    const exited = new Promise<number | null>((resolve) => npm.on("exit", (code) => resolve(code)))
    const url = `http://127.0.0.1:${port}`
    try {
      await eventually(async () => {
        if (npm.exitCode !== null) throw new Error(`npm start exited early (${npm.exitCode}):\n${output}`)
        try {
          return (await fetch(`${url}/health`)).ok ? true : undefined
        } catch {
          return undefined
        }
      }, 20_000, 100)
      for (let i = 0; i < 5; i++) {
        const response = await fetch(`${url}/v2/sandboxes/volumes`, {
          method: "POST",
          headers: jsonHeaders,
          body: JSON.stringify({ name: `npm-${i}`, size: "1Gi" })
        })
        expect(response.status).toBe(201)
      }
      expect(walSize(database.path)).toBeGreaterThan(0)

      npm.kill("SIGTERM")
      const code = await Promise.race([exited, sleep(15_000).then(() => "timeout" as const)])
      expect(code, output).toBe(0)
      // The server itself is gone too (not orphaned, still serving).
      expect(await refusesConnections(url)).toBe(true)
      expect(walSize(database.path)).toBe(0)
      expect(integrityCheck(database.path)).toEqual(["ok"])
    } finally {
      if (npm.exitCode === null) npm.kill("SIGKILL")
      // Should the server have been orphaned, stop it through its own endpoint's process: find it by port.
      if (!(await refusesConnections(url))) {
        const { execSync } = await import("node:child_process")
        const pids = execSync(`ss -Hltnp 'sport = :${port}' | grep -o 'pid=[0-9]*' | cut -d= -f2 || true`).toString().trim().split(/\s+/).filter(Boolean)
        for (const pid of pids) process.kill(Number(pid), "SIGKILL")
      }
    }
  }, 40_000)
})
