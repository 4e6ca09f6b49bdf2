/**
 * The deployment controller over a real SQLite store and the simulated driver, on the test
 * clock: it resumes what the store says is unfinished, persists each observed step, activates a
 * revision that reaches DEPLOYED, leaves a superseded revision alone, and finishes deletes.
 */
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schedule } from "effect"
import { TestClock } from "effect/testing"
import { afterAll } from "vitest"
import { defaultConfig } from "../../server/config.ts"
import { DeploymentController, DeploymentControllerLive } from "../../server/deployments/controller.ts"
import { DeploymentObservations, DeploymentObservationsLive } from "../../server/deployments/Driver.ts"
import { SimulatedDeploymentDriver } from "../../server/deployments/drivers/simulated.ts"
import { makeLogger } from "../../server/log.ts"
import { ServerEnv } from "../../server/module.ts"
import { layerSingleReplica } from "../../server/replicas/Replicas.ts"
import { DeploymentStore } from "../../server/store/DeploymentStore.ts"
import type { Stores } from "../../server/store/index.ts"
import { KeyStore } from "../../server/store/KeyStore.ts"
import { RevisionStore } from "../../server/store/RevisionStore.ts"
import { SqliteStores } from "../../server/store/sqlite/index.ts"
import { deploymentWithRevision } from "../store/fixtures.ts"
import { deploymentSourcesForTests } from "../support/deploymentSources.ts"

const dir = mkdtempSync(join(tmpdir(), "slipway-controller-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const stepMs = 100
const log = makeLogger("silent")
const env = Layer.succeed(ServerEnv, { config: defaultConfig, log, publicUrl: "http://slipway.test" })
// Deletes remove a deployment's images and uploads: no registry runs here, the uploads live in `dir`.
const sources = deploymentSourcesForTests(join(dir, "uploads.db"), log)

/** A fresh file; `seed` runs before the controller starts (what a previous process left). */
const withController = <A, E>(seed: Effect.Effect<unknown, unknown, Stores>, test: Effect.Effect<A, E, Stores | DeploymentController | DeploymentObservations>) => {
  const stores = Layer.fresh(SqliteStores({ path: join(dir, `${randomUUID()}.db`) }))
  const seeded = Layer.effectDiscard(Effect.orDie(seed)).pipe(Layer.provideMerge(stores))
  const controller = DeploymentControllerLive.pipe(
    Layer.provide(SimulatedDeploymentDriver({ stepMs })),
    Layer.provideMerge(DeploymentObservationsLive),
    Layer.provide(sources),
    Layer.provide(Layer.mergeAll(env, layerSingleReplica()))
  )
  return Effect.provide(test, controller.pipe(Layer.provideMerge(seeded)))
}

const tenant = Effect.gen(function* () {
  const id = randomUUID()
  yield* (yield* KeyStore).ensureTenant(id, randomUUID())
  return id
})

describe("deployment controller", () => {
  it.effect("resumes unfinished revisions from the store and walks them to DEPLOYED, activating each", () => {
    const seeded: Array<{ tenantId: string; deploymentId: string; revisionId: string }> = []
    const seed = Effect.gen(function* () {
      const store = yield* DeploymentStore
      const tenantId = yield* tenant
      for (let index = 0; index < 30; index++) {
        const { deployment, revision } = deploymentWithRevision(tenantId, { created_at: new Date(0).toISOString() })
        yield* store.createDeployment(deployment, { ...revision, updated_at: new Date(0).toISOString() }, randomUUID())
        seeded.push({ tenantId, deploymentId: deployment.id, revisionId: revision.id })
      }
    })
    return withController(
      seed,
      Effect.gen(function* () {
        const store = yield* DeploymentStore
        const revisions = yield* RevisionStore
        yield* TestClock.adjust(stepMs)
        for (const item of seeded) expect((yield* revisions.revision(item.tenantId, item.deploymentId, item.revisionId))?.status).toBe("QUEUED")
        yield* TestClock.adjust(stepMs * 3)
        for (const item of seeded) {
          expect((yield* revisions.revision(item.tenantId, item.deploymentId, item.revisionId))).toMatchObject({ status: "DEPLOYED", status_message: "Deployed" })
          expect(yield* store.deployment(item.tenantId, item.deploymentId)).toMatchObject({ status: "READY", active_revision_id: item.revisionId })
        }
      })
    )
  })

  it.effect("a deployment whose database is ready but whose only revision failed stays AWAITING_DATABASE (it serves nothing)", () => {
    const seeded = { tenantId: "", deploymentId: "", revisionId: "" }
    const seed = Effect.gen(function* () {
      const tenantId = yield* tenant
      const { deployment, revision } = deploymentWithRevision(tenantId)
      yield* (yield* DeploymentStore).createDeployment(deployment, { ...revision, status: "DEPLOY_FAILED", status_message: "replica exited" }, randomUUID())
      Object.assign(seeded, { tenantId, deploymentId: deployment.id, revisionId: revision.id })
    })
    return withController(
      seed,
      Effect.gen(function* () {
        const channel = yield* DeploymentObservations
        // The local runtime provisions the database beside the rollout and says so.
        expect(yield* channel.report([{ _tag: "Database", tenantId: seeded.tenantId, deploymentId: seeded.deploymentId, ready: true }])).toEqual([true])
        expect(yield* (yield* DeploymentStore).deployment(seeded.tenantId, seeded.deploymentId)).toMatchObject({ status: "AWAITING_DATABASE", active_revision_id: null })
      })
    )
  })

  it.effect("does not move a revision superseded in the store meanwhile (by this process or another)", () =>
    withController(
      Effect.void,
      Effect.gen(function* () {
        const store = yield* DeploymentStore
        const revisions = yield* RevisionStore
        const controller = yield* DeploymentController
        const tenantId = yield* tenant
        const { deployment, revision } = deploymentWithRevision(tenantId, { created_at: new Date(0).toISOString() })
        yield* store.createDeployment(deployment, { ...revision, updated_at: new Date(0).toISOString() }, randomUUID())
        yield* controller.revisionCreated(deployment, { ...revision, updated_at: new Date(0).toISOString() }, [])
        yield* TestClock.adjust(stepMs)
        // Another process supersedes it without telling this controller.
        expect(yield* revisions.supersedeUnfinished(tenantId, deployment.id, new Date().toISOString())).toEqual([revision.id])
        yield* TestClock.adjust(stepMs * 5)
        // It was QUEUED: superseded before any work started.
        expect((yield* revisions.revision(tenantId, deployment.id, revision.id))?.status).toBe("SKIPPED")
        expect((yield* store.deployment(tenantId, deployment.id))?.active_revision_id).toBeNull()
      })
    )
  )

  it.effect("finishes a delete once the driver has torn the deployment down", () =>
    withController(
      Effect.void,
      Effect.gen(function* () {
        const store = yield* DeploymentStore
        const controller = yield* DeploymentController
        const tenantId = yield* tenant
        const { deployment, revision } = deploymentWithRevision(tenantId)
        yield* store.createDeployment(deployment, revision, randomUUID())
        yield* store.setDeploymentStatus(tenantId, deployment.id, "AWAITING_DELETE", new Date(0).toISOString())
        yield* controller.deleteRequested(tenantId, deployment.id, new Date(0).toISOString())
        yield* TestClock.adjust(stepMs - 1)
        expect(yield* store.deployment(tenantId, deployment.id)).toBeDefined()
        yield* TestClock.adjust(1)
        // Removing its uploads is real file I/O: the delete completes once that is done (live time, bounded).
        const gone = yield* store.deployment(tenantId, deployment.id).pipe(
          Effect.repeat({ until: (record) => record === undefined, schedule: Schedule.spaced("10 millis"), times: 500 }),
          TestClock.withLive
        )
        expect(gone).toBeUndefined()
      })
    )
  )
})
