/**
 * The simulated sandbox driver against the sandbox driver suite. It never fails on its own: the
 * suite's failing image is marked, and failed by the marked failures the control-plane suites run with.
 */
import { describe } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import type { SandboxDriver } from "../../server/sandboxes/Driver.ts"
import { SimulatedSandboxDriver } from "../../server/sandboxes/drivers/simulated.ts"
import { markedSandboxFailures } from "../support/faults.ts"
import { sandboxDriverSuite } from "./sandboxDriver.suite.ts"

describe("simulated sandbox driver", () => {
  sandboxDriverSuite("simulated", <A, E>(effect: Effect.Effect<A, E, SandboxDriver>) => Effect.provide(effect, markedSandboxFailures.pipe(Layer.provide(SimulatedSandboxDriver))), {
    advance: (millis) => TestClock.adjust(millis),
    image: "python:3.12-slim",
    missingImage: "registry.invalid/fail-start:1",
    settleMs: 10
  })
})
