/**
 * Several processes starting at once on one fresh SQLite file all come up: the applied
 * migrations are read inside the migration's write lock (BEGIN IMMEDIATE), so a process that
 * waited for another's migration sees it applied instead of applying it a second time
 * ("table organizations already exists", 1–3 of 6 processes on the old code).
 *
 * The processes are started like `npm start` (`node server/main.ts`); six node starts at once on
 * a shared CI machine can take longer than spawnServer's 15 s, so they are awaited here for 90 s.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { join } from "node:path"
import Database from "better-sqlite3"
import { afterAll, describe, expect, it } from "vitest"
import { TEST_KEY, tempDatabasePath, testPort } from "../support/server.ts"

const STARTS = 6
const children: Array<ChildProcess> = []
const databases: Array<ReturnType<typeof tempDatabasePath>> = []

afterAll(async () => {
  await Promise.all(
    children.map((child) =>
      child.exitCode === null && child.signalCode === null ? new Promise((resolve) => (child.once("exit", resolve), child.kill("SIGKILL"))) : undefined
    )
  )
  for (const database of databases) database.remove()
})

/**
 * Starts `node server/main.ts` on a random port; resolves when /health answers 200, rejects when
 * the process exits first. A start whose port another process holds (EADDRINUSE: it fails at
 * listen, before its migrations) is retried on another port.
 */
const start = async (databasePath: string): Promise<{ child: ChildProcess; port: number }> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(databasePath)
    } catch (error) {
      if (attempt >= 4 || !/EADDRINUSE/.test(String((error as Error).message))) throw error
    }
  }
}

const startOnce = (databasePath: string) => {
  const port = testPort()
  const child = spawn(process.execPath, ["server/main.ts"], {
    cwd: join(import.meta.dirname, "../.."),
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATABASE_PATH: databasePath, SLIPWAY_API_KEY: TEST_KEY, LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  children.push(child)
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  const ready = (async () => {
    const deadline = Date.now() + 90_000
    for (;;) {
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${output.trim()}`)
      try {
        if ((await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2_000) })).ok) return { child, port }
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`did not start within 90 s: ${output.trim()}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  })()
  return ready
}

describe("SQLite: concurrent first starts", () => {
  it(`${STARTS} node server/main.ts processes started together on one fresh file all come up`, async () => {
    // Two rounds: the race is a window of milliseconds between processes; one round can miss it.
    for (let round = 0; round < 2; round++) {
      const database = tempDatabasePath("slipway-migrate-race")
      databases.push(database)
      // The barrier: an empty file in WAL mode (no table: still a first start) whose write lock
      // this test holds while the processes boot, so they all reach their migrations together,
      // as replicas started at once by an orchestrator do, instead of staggered by their boot times.
      const barrier = new Database(database.path)
      barrier.pragma("journal_mode = WAL")
      barrier.exec("BEGIN IMMEDIATE")
      const pending = Promise.allSettled(Array.from({ length: STARTS }, () => start(database.path)))
      await new Promise((resolve) => setTimeout(resolve, 2_500))
      barrier.exec("ROLLBACK")
      barrier.close()
      const starts = await pending
      const failures = starts.flatMap((outcome) => (outcome.status === "rejected" ? [String((outcome.reason as Error).message)] : []))
      expect(failures).toEqual([])
      for (const outcome of starts) {
        if (outcome.status !== "fulfilled") continue
        const answer = await fetch(`http://127.0.0.1:${outcome.value.port}/v2/deployments`, { headers: { "x-api-key": TEST_KEY } })
        expect(answer.status).toBe(200)
      }
      await Promise.all(
        starts.map((outcome) =>
          outcome.status === "fulfilled" ? new Promise((resolve) => (outcome.value.child.once("exit", resolve), outcome.value.child.kill("SIGTERM"))) : undefined
        )
      )
    }
  }, 240_000)
})
