/**
 * The simulated deployment driver against the driver suite, on the test clock; and its slicing of
 * a backlog. It never fails on its own: the suite's failing image is marked, and failed by the
 * marked failures the control-plane suites run with.
 */
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { DeploymentDriver } from "../../server/deployments/Driver.ts"
import { SimulatedDeploymentDriver } from "../../server/deployments/drivers/simulated.ts"
import { markedDeploymentFailures } from "../support/faults.ts"
import { deploymentDriverSuite } from "./deploymentDriver.suite.ts"

const stepMs = 250
const provide = <A, E>(effect: Effect.Effect<A, E, DeploymentDriver>) => Effect.provide(effect, SimulatedDeploymentDriver({ stepMs }))
const provideMarked = <A, E>(effect: Effect.Effect<A, E, DeploymentDriver>) =>
  Effect.provide(effect, markedDeploymentFailures.pipe(Layer.provide(SimulatedDeploymentDriver({ stepMs }))))

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
        const driver = yield* DeploymentDriver
        const seen: Array<string> = []
        yield* driver.observe((batch) => Effect.sync(() => (seen.push(...batch.flatMap((item) => ("_tag" in item ? [] : [item.to]))), batch.map(() => true))))
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
      const driver = yield* DeploymentDriver
      const slices: Array<number> = []
      yield* driver.observe((batch) => Effect.sync(() => (slices.push(batch.length), batch.map(() => true))))
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
    }).pipe(Effect.provide(Layer.fresh(SimulatedDeploymentDriver({ stepMs: 3_600_000, batch: 512 }))))
  )
})
