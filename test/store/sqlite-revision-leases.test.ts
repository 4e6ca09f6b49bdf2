/** The one-replica RevisionLeases of the SQLite backend: every unfinished revision is this process's, handed out once. */
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { afterAll } from "vitest"
import { DeploymentStore } from "../../server/store/DeploymentStore.ts"
import { KeyStore } from "../../server/store/KeyStore.ts"
import { RevisionLeases } from "../../server/store/RevisionLeases.ts"
import { SqliteStores } from "../../server/store/sqlite/index.ts"
import { deploymentWithRevision } from "./fixtures.ts"

const dir = mkdtempSync(join(tmpdir(), "slipway-leases-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("SQLite RevisionLeases", () => {
  it.effect("claims every unfinished revision once, in pages of the limit; grants, renews and releases everything", () =>
    Effect.gen(function* () {
      const store = yield* DeploymentStore
      const tenantId = randomUUID()
      yield* (yield* KeyStore).ensureTenant(tenantId, randomUUID())
      const ids: Array<string> = []
      for (let index = 0; index < 3; index++) {
        const { deployment, revision } = deploymentWithRevision(tenantId)
        yield* store.createDeployment(deployment, revision, randomUUID())
        ids.push(revision.id)
      }
      const leases = yield* RevisionLeases
      const first = yield* leases.claim(2)
      const second = yield* leases.claim(2)
      expect(first).toHaveLength(2)
      expect([...first, ...second].map((revision) => revision.id).sort()).toEqual([...ids].sort())
      expect(yield* leases.claim(2)).toEqual([])
      expect(yield* leases.claimOne(tenantId, ids[0]!)).toBe(true)
      expect(yield* leases.renew(ids)).toEqual(ids)
      yield* leases.release(ids)
      // Released or not, a revision is handed out once: this process keeps driving what it holds.
      expect(yield* leases.claim(10)).toEqual([])
    }).pipe(Effect.provide(Layer.fresh(SqliteStores({ path: join(dir, `${randomUUID()}.db`) }))))
  )
})
