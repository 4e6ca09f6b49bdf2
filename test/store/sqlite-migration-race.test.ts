/**
 * Several processes starting at once on one fresh SQLite file all come up: the applied
 * migrations are read inside the migration's write lock (BEGIN IMMEDIATE), so a process that
 * waited for another's migration sees it applied instead of applying it a second time
 * ("table organizations already exists").
 */
import Database from "better-sqlite3"
import { afterAll, describe, expect, it } from "vitest"
import { type ChildServer, spawnServer, tempDatabasePath } from "../support/server.ts"

const STARTS = 6
const children: Array<ChildServer> = []
const databases: Array<ReturnType<typeof tempDatabasePath>> = []

afterAll(async () => {
  for (const child of children) {
    if (child.process.exitCode === null) {
      child.process.kill("SIGTERM")
      await child.exited
    }
  }
  for (const database of databases) database.remove()
})

describe("SQLite: concurrent first starts", () => {
  it(`${STARTS} node server/main.ts processes started together on one fresh file all come up`, async () => {
    // Two rounds: the race is a window of a few milliseconds, one round may miss it by luck.
    for (let round = 0; round < 2; round++) {
      const database = tempDatabasePath("slipway-migrate-race")
      databases.push(database)
      // The barrier: an empty file in WAL mode (no table: still a first start) whose write lock
      // this test holds while the processes boot, so they all reach their migrations together,
      // as replicas started at once by an orchestrator do, instead of staggered by their boot times.
      const barrier = new Database(database.path)
      barrier.pragma("journal_mode = WAL")
      barrier.exec("BEGIN IMMEDIATE")
      const pending = Promise.allSettled(Array.from({ length: STARTS }, () => spawnServer({ databasePath: database.path })))
      await new Promise((resolve) => setTimeout(resolve, 2_500))
      barrier.exec("ROLLBACK")
      barrier.close()
      const starts = await pending
      for (const start of starts) if (start.status === "fulfilled") children.push(start.value)
      const failures = starts.flatMap((start) => (start.status === "rejected" ? [String((start.reason as Error).message)] : []))
      expect(failures).toEqual([])
      const health = await Promise.all(children.slice(-STARTS).map((child) => child.request("GET", "/v2/deployments")))
      expect(health.map((answer) => answer.status)).toEqual(Array(STARTS).fill(200))
      for (const child of children.splice(0)) {
        child.process.kill("SIGTERM")
        expect(await child.exited).toBe(0)
      }
    }
  }, 90_000)
})
