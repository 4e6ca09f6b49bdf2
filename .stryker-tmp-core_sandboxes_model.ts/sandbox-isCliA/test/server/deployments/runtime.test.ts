/**
 * The local runtime against a real SQLite file: a resumed backlog is worked off in slices, with
 * the event loop free between them, and every revision still gets its step.
 */
// @ts-nocheck

import { randomUUID } from "node:crypto"
import { afterEach, describe, expect, it } from "vitest"
import { makeKeyStore } from "../../../server/auth/keys.ts"
import { closeDatabase, openDatabase } from "../../../server/db/database.ts"
import { makeDeploymentRepository } from "../../../server/deployments/repository.ts"
import { type DeploymentRuntime, makeLocalRuntime } from "../../../server/deployments/runtime.ts"
import { allMigrations } from "../../../server/index.ts"
import { makeLogger } from "../../../server/log.ts"
import { tempDatabasePath } from "../../support/server.ts"

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A database holding `count` container deployments whose first revision has waited in CREATING since an hour ago. */
const backlog = (count: number) => {
  const database = tempDatabasePath("runtime")
  const db = openDatabase(database.path, allMigrations())
  cleanups.push(database.remove, () => closeDatabase(db))
  const tenantId = randomUUID()
  makeKeyStore(db).ensureTenant(tenantId, randomUUID())
  const repository = makeDeploymentRepository(db)
  const anHourAgo = new Date(Date.now() - 3_600_000).toISOString()
  const config = JSON.stringify({ repo_ref: null, graph_config_path: null, image_uri: "ghcr.io/acme/agent:1", repo_commit_sha: null })
  repository.transaction(() => {
    for (let index = 0; index < count; index++) {
      const id = randomUUID()
      const revisionId = randomUUID()
      repository.insertDeployment({
        id,
        tenant_id: tenantId,
        name: `backlog-${index}`,
        source: "external_container",
        source_config: "{}",
        source_revision_config: config,
        secrets: "[]",
        image_version: null,
        status: "AWAITING_DATABASE",
        latest_revision_id: revisionId,
        active_revision_id: null,
        revision_seq: 1,
        created_at: anHourAgo,
        updated_at: anHourAgo
      })
      repository.insertRevision({
        id: revisionId,
        tenant_id: tenantId,
        deployment_id: id,
        seq: 1,
        source: "external_container",
        status: "CREATING",
        status_message: null,
        source_revision_config: config,
        secrets: "[]",
        deployed_at: null,
        created_at: anHourAgo,
        updated_at: anHourAgo
      })
    }
  })
  const moved = db.prepare("SELECT count(*) FROM revisions WHERE status != 'CREATING'").pluck()
  return { repository, moved: () => moved.get() as number }
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * `moved()` once per turn of the event loop until it reaches `count` (or 10 s pass): a timer
 * fires at most once per turn, so two observations in a row are at most one tick apart.
 */
const observeTurns = async (moved: () => number, count: number): Promise<Array<number>> => {
  const deadline = Date.now() + 10_000
  const seen = [moved()]
  while (seen[seen.length - 1]! < count && Date.now() < deadline) {
    await nextTurn()
    seen.push(moved())
  }
  return seen
}

describe("local runtime", () => {
  it("works off a resumed backlog in slices of at most `batch` steps, letting the event loop turn in between", async () => {
    const count = 1300
    const batch = 512
    const { repository, moved } = backlog(count)
    // An hour per state: each revision is due exactly once during the test (its resumed step).
    const runtime: DeploymentRuntime = makeLocalRuntime({ repository, stepMs: 3_600_000, log: makeLogger("silent"), batch })
    cleanups.push(() => runtime.close())
    runtime.start()

    // One observation per turn of the event loop: no turn may carry more than one slice.
    const seen = await observeTurns(moved, count)
    expect(seen[seen.length - 1]).toBe(count)
    const slices = seen.slice(1).map((value, index) => value - seen[index]!)
    expect(Math.max(...slices)).toBeLessThanOrEqual(batch)
    expect(slices.filter((slice) => slice > 0)).toEqual([512, 512, 276])
  })

  it("applies a backlog smaller than one slice in a single transaction", async () => {
    const { repository, moved } = backlog(40)
    const runtime = makeLocalRuntime({ repository, stepMs: 3_600_000, log: makeLogger("silent"), batch: 512 })
    cleanups.push(() => runtime.close())
    runtime.start()
    const seen = await observeTurns(moved, 40)
    expect(seen.filter((value) => value > 0)[0]).toBe(40)
  })
})
