/**
 * The simulated sandbox driver against the sandbox driver suite: it reports and accepts, it
 * stores and pulls nothing. It never fails on its own: the suite's failing image is marked, and
 * failed by the marked failures the control-plane suites run with.
 */
import { describe } from "@effect/vitest"
import { Effect, Layer, type Scope } from "effect"
import { type SandboxDriver, type SandboxObservations, SandboxObservationsLive } from "../../server/sandboxes/Driver.ts"
import { SimulatedSandboxDriver } from "../../server/sandboxes/drivers/simulated.ts"
import { markedSandboxFailures } from "../support/faults.ts"
import { sandboxDriverSuite } from "./sandboxDriver.suite.ts"

describe("simulated sandbox driver", () => {
  sandboxDriverSuite(
    "simulated",
    <A, E>(effect: Effect.Effect<A, E, SandboxDriver | SandboxObservations | Scope.Scope>) =>
      Effect.scoped(Effect.provide(effect, markedSandboxFailures.pipe(Layer.provideMerge(SimulatedSandboxDriver.pipe(Layer.provideMerge(SandboxObservationsLive)))))),
    {
      image: "python:3.12-slim",
      missingImage: "registry.invalid/fail-start:1",
      live: false,
      claims: { volumes: false, images: false }
    }
  )
})
