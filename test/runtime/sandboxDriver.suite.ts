/**
 * The sandbox `Driver` conformance suite: every driver brings a started box to `Provisioned`
 * (or reports `Failed` with a reason), stops, starts again and tears boxes down, and accepts
 * volumes. What a driver claims beyond that (volumes with real storage, images it pulls) is
 * tested for each driver that claims it. The suite plays the controller's part, taking what the
 * driver reports from the `SandboxObservations` queue.
 */
import { randomUUID } from "node:crypto"
import { expect, it } from "@effect/vitest"
import { Deferred, Effect, Queue, type Scope } from "effect"
import { type BoxObservation, type BoxWork, ImageError, SandboxDriver, SandboxObservations, VolumeError } from "../../server/sandboxes/Driver.ts"
import type { TemplateRecord } from "../../server/store/TemplateStore.ts"

export interface SandboxDriverSuiteOptions {
  readonly image: string
  readonly missingImage: string
  /** Real time (a driver that runs boxes) or the test clock. */
  readonly live: boolean
  /** What the driver does beyond reporting. */
  readonly claims: {
    /** Volumes are real storage: an existing one cannot be created again, none shrinks, a box mounts them. */
    readonly volumes: boolean
    /** `prepareImage` pulls the image: it answers its digest, and fails for an image it cannot have. */
    readonly images: boolean
  }
}

export const boxWork = (image: string, overrides: Partial<TemplateRecord> = {}, volumes: BoxWork["volumes"] = []): BoxWork => ({
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
  volumes
})

const MiB = 1024n * 1024n

export const sandboxDriverSuite = (
  name: string,
  provide: <A, E>(effect: Effect.Effect<A, E, SandboxDriver | SandboxObservations | Scope.Scope>) => Effect.Effect<A, E>,
  options: SandboxDriverSuiteOptions
) => {
  const test = options.live ? it.live : it.effect

  /**
   * The controller's part: takes what the driver reports (completing `applied`, as the controller
   * does once it has saved it) and hands it to `outcome`.
   */
  const controller = Effect.gen(function* () {
    const observations = yield* SandboxObservations
    const taken = yield* Queue.unbounded<BoxObservation>()
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.flatMap(Queue.take(observations), (observation) =>
          Effect.andThen(observation.applied ? Deferred.succeed(observation.applied, undefined) : Effect.void, Queue.offer(taken, observation))
        )
      )
    )
    /** What the driver reports last about the box (its progress skipped). */
    const outcome = Effect.fnUntraced(function* (work: BoxWork) {
      for (;;) {
        const observation = yield* Queue.take(taken)
        if (observation.sandboxId === work.sandboxId && observation.event._tag !== "Progress") return observation.event
      }
    })
    const settled = (work: BoxWork) =>
      options.live ? Effect.timeoutOption(outcome(work), "120 seconds").pipe(Effect.map((found) => (found._tag === "Some" ? found.value : undefined))) : outcome(work)
    return { driver: yield* SandboxDriver, settled }
  })

  test(`${name}: brings a started box to Provisioned; stops it, starts it again, and tears it down`, () =>
    provide(
      Effect.gen(function* () {
        const { driver, settled } = yield* controller
        const work = boxWork(options.image)
        yield* driver.start(work)
        expect((yield* settled(work))?._tag).toBe("Provisioned")
        yield* driver.stop(work.sandboxId)
        yield* driver.start(work)
        expect((yield* settled(work))?._tag).toBe("Provisioned")
        yield* driver.teardown(work.sandboxId)
      })
    )
  )

  test(`${name}: reports a box whose image cannot be had as Failed, with a reason`, () =>
    provide(
      Effect.gen(function* () {
        const { driver, settled } = yield* controller
        const work = boxWork(options.missingImage)
        yield* driver.start(work)
        const event = yield* settled(work)
        expect(event?._tag).toBe("Failed")
        expect(event && "message" in event ? event.message : "").not.toBe("")
        yield* driver.teardown(work.sandboxId)
      })
    )
  )

  test(`${name}: accepts creating, growing and deleting a volume`, () =>
    provide(
      Effect.gen(function* () {
        const driver = yield* SandboxDriver
        const id = randomUUID()
        yield* driver.createVolume(id, 128n * MiB)
        yield* driver.resizeVolume(id, 256n * MiB)
        yield* driver.deleteVolume(id)
      })
    )
  )

  if (options.claims.volumes)
    test(`${name}: volumes are storage: a box mounts one; an existing one is not created again; none shrinks; deleting frees it`, () =>
      provide(
        Effect.gen(function* () {
          const { driver, settled } = yield* controller
          const id = randomUUID()
          yield* driver.createVolume(id, 256n * MiB)
          const again = yield* Effect.flip(driver.createVolume(id, 256n * MiB))
          expect(again).toBeInstanceOf(VolumeError)
          expect(again.message).toMatch(/exists/)
          yield* driver.resizeVolume(id, 512n * MiB)
          expect((yield* Effect.flip(driver.resizeVolume(id, 300n * MiB))).message).toMatch(/shrink/)
          const work = boxWork(options.image, {}, [{ volumeId: id, mountPath: "/data", sizeBytes: 512n * MiB }])
          yield* driver.start(work)
          expect((yield* settled(work))?._tag).toBe("Provisioned")
          yield* driver.teardown(work.sandboxId)
          yield* driver.deleteVolume(id)
          // Gone: it can be made anew.
          yield* driver.createVolume(id, 256n * MiB)
          yield* driver.deleteVolume(id)
        })
      )
    )

  if (options.claims.images)
    test(`${name}: prepareImage pulls an image and answers its digest; an image it cannot have is an ImageError`, () =>
      provide(
        Effect.gen(function* () {
          const driver = yield* SandboxDriver
          const { digest } = yield* driver.prepareImage(options.image)
          expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/)
          const error = yield* Effect.flip(driver.prepareImage(options.missingImage))
          expect(error).toBeInstanceOf(ImageError)
          expect(error.message).not.toBe("")
        })
      )
    )
}
