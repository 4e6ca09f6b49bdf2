/**
 * The simulated deployment driver against the driver suite, on the test clock; and its slicing of
 * a backlog. It never fails on its own: the suite's failing image is marked, and failed by the
 * marked failures the control-plane suites run with.
 */
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { DeploymentDriver, DeploymentObservations, DeploymentObservationsLive } from "../../server/deployments/Driver.ts"
import { SimulatedDeploymentDriver, type SimulatedOptions } from "../../server/deployments/drivers/simulated.ts"
import { markedDeploymentFailures } from "../support/faults.ts"
import { deploymentDriverSuite, type SuiteServices } from "./deploymentDriver.suite.ts"

const stepMs = 250
const driverLayer = (options: SimulatedOptions) => SimulatedDeploymentDriver(options).pipe(Layer.provideMerge(DeploymentObservationsLive))
const provide = <A, E>(effect: Effect.Effect<A, E, SuiteServices>) => Effect.scoped(Effect.provide(effect, driverLayer({ stepMs })))
/** With the marked failures the control-plane suites run with: the suite's failing image is marked. */
const provideMarked = <A, E>(effect: Effect.Effect<A, E, SuiteServices>) =>
  Effect.scoped(Effect.provide(effect, markedDeploymentFailures.pipe(Layer.provideMerge(driverLayer({ stepMs })))))

/** Plays the controller: every report is answered as applied; `seen` hears each batch. */
const answering = (seen: (batch: ReadonlyArray<unknown>) => void) =>
  Effect.gen(function* () {
    const channel = yield* DeploymentObservations
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.gen(function* () {
          for (const report of yield* channel.take) {
            seen(report.observations)
            if (report.applied) yield* Deferred.succeed(report.applied, report.observations.map(() => true))
          }
        })
      )
    )
    return yield* DeploymentDriver
  })

describe("simulated deployment driver", () => {
  deploymentDriverSuite("simulated", provideMarked, {
    advance: (millis) => TestClock.adjust(millis),
    healthyImage: "ghcr.io/acme/agent:1",
    failingImage: "ghcr.io/acme/agent:fail-deploy",
    settleMs: stepMs * 10
  })

  it.effect("spends stepMs in each state: nothing before, one step after", () =>
    provide(
      Effect.gen(function* () {
        const seen: Array<string> = []
        const driver = yield* answering((batch) => seen.push(...batch.flatMap((item: any) => ("_tag" in item ? [] : [item.to]))))
        yield* driver.apply({
          tenantId: randomUUID(),
          deploymentId: randomUUID(),
          deploymentName: "timing",
          revisionId: randomUUID(),
          source: "external_container",
          status: "CREATING",
          sourceConfig: {},
          sourceRevisionConfig: { image_uri: "acme/agent:1" },
          secrets: () => [],
          since: new Date(0).toISOString()
        })
        yield* TestClock.adjust(stepMs - 1)
        expect(seen).toEqual([])
        yield* TestClock.adjust(1)
        expect(seen).toEqual(["QUEUED"])
        yield* TestClock.adjust(stepMs * 3)
        expect(seen).toEqual(["QUEUED", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"])
      })
    )
  )

  it.effect("works off a resumed backlog in slices of at most `batch` steps, letting other fibers (requests) run between slices", () =>
    Effect.gen(function* () {
      const slices: Array<number> = []
      const driver = yield* answering((batch) => slices.push(batch.length))
      for (let index = 0; index < 1300; index++) {
        yield* driver.apply({
          tenantId: "t",
          deploymentId: `d${index}`,
          deploymentName: `d${index}`,
          revisionId: `r${index}`,
          source: "external_container",
          status: "CREATING",
          sourceConfig: {},
          sourceRevisionConfig: { image_uri: "acme/agent:1" },
          secrets: () => [],
          since: new Date(-3_600_000).toISOString()
        })
      }
      yield* TestClock.adjust(1)
      // The driver yielded after one slice: this fiber (a request, say) ran before the next.
      expect(slices).toEqual([512])
      for (let turn = 0; turn < 10; turn++) yield* Effect.yieldNow
      expect(slices).toEqual([512, 512, 276])
    }).pipe(Effect.scoped, Effect.provide(Layer.fresh(driverLayer({ stepMs: 3_600_000, batch: 512 }))))
  )
})
