/**
 * The sandbox `Driver` conformance suite: every driver brings a started box to `Provisioned`
 * (or reports `Failed` with a reason), stops and tears boxes down, and keeps volumes. The suite
 * plays the controller's part, recording what the driver reports.
 */
import { randomUUID } from "node:crypto"
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type BoxObservation, type BoxWork, SandboxDriver } from "../../server/sandboxes/Driver.ts"
import type { TemplateRecord } from "../../server/store/TemplateStore.ts"

export interface SandboxDriverSuiteOptions {
  readonly advance: (millis: number) => Effect.Effect<void>
  readonly image: string
  readonly missingImage: string
  readonly settleMs: number
}

export const boxWork = (image: string, overrides: Partial<TemplateRecord> = {}): BoxWork => ({
  tenantId: randomUUID(),
  sandboxId: randomUUID(),
  name: `box-${randomUUID().slice(0, 8)}`,
  template: {
    id: randomUUID(),
    tenant_id: randomUUID(),
    name: "suite",
    image,
    cpu: "500m",
    cpu_millicores: 500n,
    memory: "256Mi",
    memory_bytes: 256n * 1024n * 1024n,
    storage: "64Mi",
    storage_bytes: 64n * 1024n * 1024n,
    proxy_config: null,
    mounts: [],
    created_at: new Date().toISOString(),
    updated_at: new Date().toISOString(),
    ...overrides
  },
  volumes: []
})

export const sandboxDriverSuite = (name: string, provide: <A, E>(effect: Effect.Effect<A, E, SandboxDriver>) => Effect.Effect<A, E, any>, options: SandboxDriverSuiteOptions) => {
  const recording = Effect.gen(function* () {
    const driver = yield* SandboxDriver
    const seen: Array<BoxObservation> = []
    yield* driver.observe((observation) => Effect.sync(() => void seen.push(observation)))
    return { driver, seen }
  })
  const last = (seen: ReadonlyArray<BoxObservation>, work: BoxWork) => seen.filter((item) => item.sandboxId === work.sandboxId && item.event._tag !== "Progress").at(-1)

  it.effect(`${name}: brings a started box to Provisioned, and stops and tears it down`, () =>
    provide(
      Effect.gen(function* () {
        const { driver, seen } = yield* recording
        const work = boxWork(options.image)
        yield* driver.start(work)
        yield* options.advance(options.settleMs)
        expect(last(seen, work)?.event._tag).toBe("Provisioned")
        yield* driver.stop(work.sandboxId)
        yield* driver.teardown(work.sandboxId)
      })
    )
  )

  it.effect(`${name}: reports a box whose image cannot be had as Failed, with a reason`, () =>
    provide(
      Effect.gen(function* () {
        const { driver, seen } = yield* recording
        const work = boxWork(options.missingImage)
        yield* driver.start(work)
        yield* options.advance(options.settleMs)
        const event = last(seen, work)?.event
        expect(event?._tag).toBe("Failed")
        expect(event && "message" in event ? event.message : "").not.toBe("")
        yield* driver.teardown(work.sandboxId)
      })
    )
  )

  it.effect(`${name}: creates, grows and deletes a volume`, () =>
    provide(
      Effect.gen(function* () {
        const driver = yield* SandboxDriver
        const id = randomUUID()
        yield* driver.createVolume(id, 128n * 1024n * 1024n)
        yield* driver.resizeVolume(id, 256n * 1024n * 1024n)
        yield* driver.deleteVolume(id)
      })
    )
  )
}
