/**
 * The sandbox controller over a real SQLite store and the simulated driver, on the test clock:
 * it brings back what the store says should run, and its retention sweep deletes a box past
 * `ttl_seconds`, stops a ready box idle for `idle_ttl_seconds` and deletes a box stopped for
 * `delete_after_stop_seconds`, each at its time and not before.
 */
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { afterAll } from "vitest"
import { defaultConfig } from "../../server/config.ts"
import { makeLogger } from "../../server/log.ts"
import { ServerEnv } from "../../server/module.ts"
import { layerSingleReplica } from "../../server/replicas/Replicas.ts"
import { SandboxController, SandboxControllerLive } from "../../server/sandboxes/controller.ts"
import { UnavailableDataplane } from "../../server/sandboxes/dataplane/Dataplane.ts"
import { SandboxObservationsLive } from "../../server/sandboxes/Driver.ts"
import { SimulatedSandboxDriver } from "../../server/sandboxes/drivers/simulated.ts"
import { KeyStore } from "../../server/store/KeyStore.ts"
import { SandboxStore } from "../../server/store/SandboxStore.ts"
import { SqliteStores } from "../../server/store/sqlite/index.ts"

const dir = mkdtempSync(join(tmpdir(), "slipway-sandbox-controller-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const env = Layer.succeed(ServerEnv, { config: defaultConfig, log: makeLogger("silent"), publicUrl: "http://slipway.test" })
/** The test clock's time zero, as the store writes times. */
const at = (seconds: number) => new Date(seconds * 1000).toISOString()

/** A fresh file; `seed` runs before the controller starts (what a previous process left). */
const withController = <A, E>(seed: Effect.Effect<unknown, unknown, SandboxStore | KeyStore>, test: Effect.Effect<A, E, SandboxStore | SandboxController>) => {
  const stores = Layer.fresh(SqliteStores({ path: join(dir, `${randomUUID()}.db`) }))
  const seeded = Layer.effectDiscard(Effect.orDie(seed)).pipe(Layer.provideMerge(stores))
  const controller = SandboxControllerLive.pipe(
    Layer.provide(Layer.mergeAll(SimulatedSandboxDriver, UnavailableDataplane).pipe(Layer.provideMerge(SandboxObservationsLive))),
    Layer.provide(Layer.mergeAll(env, layerSingleReplica()))
  )
  return Effect.provide(test, controller.pipe(Layer.provideMerge(seeded)))
}

describe("sandbox controller", () => {
  it.effect("applies ttl_seconds, idle_ttl_seconds and delete_after_stop_seconds on the clock, each at its time; a dataplane request counts as activity", () => {
    const tenantId = randomUUID()
    const ids = { ttl: randomUUID(), idle: randomUUID(), touched: randomUUID(), afterStop: randomUUID(), kept: randomUUID() }
    const seed = Effect.gen(function* () {
      yield* (yield* KeyStore).ensureTenant(tenantId, randomUUID())
      const store = yield* SandboxStore
      const box = (id: string, retention: { ttl_seconds?: number; idle_ttl_seconds?: number; delete_after_stop_seconds?: number }) =>
        store.insertSandbox({
          id,
          tenant_id: tenantId,
          name: `box-${id.slice(0, 8)}`,
          template_id: null,
          pool_id: null,
          status: "ready",
          status_message: null,
          image: "python:3.12-slim",
          created_at: at(0),
          updated_at: at(0),
          ...retention
        })
      yield* box(ids.ttl, { ttl_seconds: 60 })
      yield* box(ids.idle, { idle_ttl_seconds: 20 })
      yield* box(ids.touched, { idle_ttl_seconds: 20 })
      yield* box(ids.afterStop, { delete_after_stop_seconds: 30 })
      yield* store.setSandboxStatus(ids.afterStop, "ready", "stopped", null, at(0))
      yield* box(ids.kept, {})
    })
    return withController(
      seed,
      Effect.gen(function* () {
        const store = yield* SandboxStore
        const controller = yield* SandboxController
        const status = (id: string) => Effect.map(store.sandboxById(tenantId, id), (box) => box?.status ?? "deleted")
        const statuses = Effect.all({ ttl: status(ids.ttl), idle: status(ids.idle), touched: status(ids.touched), afterStop: status(ids.afterStop), kept: status(ids.kept) })
        const until = (seconds: number) => TestClock.setTime(seconds * 1000)
        // Brought back at start: the ready boxes are provisioned again and ready.
        yield* until(1)
        expect(yield* statuses).toEqual({ ttl: "ready", idle: "ready", touched: "ready", afterStop: "stopped", kept: "ready" })
        yield* until(15)
        controller.touch(ids.touched)
        yield* until(19)
        expect(yield* statuses).toEqual({ ttl: "ready", idle: "ready", touched: "ready", afterStop: "stopped", kept: "ready" })
        // Idle for 20 s: stopped, not deleted; the box used at 15 s is not idle yet.
        yield* until(21)
        expect(yield* statuses).toEqual({ ttl: "ready", idle: "stopped", touched: "ready", afterStop: "stopped", kept: "ready" })
        // Stopped for 30 s: deleted.
        yield* until(29)
        expect((yield* statuses).afterStop).toBe("stopped")
        yield* until(31)
        expect((yield* statuses).afterStop).toBe("deleted")
        // 20 s after its last request: stopped.
        yield* until(34)
        expect((yield* statuses).touched).toBe("ready")
        yield* until(36)
        expect((yield* statuses).touched).toBe("stopped")
        // 60 s after it was created: deleted.
        yield* until(59)
        expect((yield* statuses).ttl).toBe("ready")
        yield* until(61)
        expect(yield* statuses).toEqual({ ttl: "deleted", idle: "stopped", touched: "stopped", afterStop: "deleted", kept: "ready" })
      })
    )
  })
})
