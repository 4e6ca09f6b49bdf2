/**
 * The `simulated` sandbox driver: nothing runs. A box is reported ready as soon as it is started,
 * and volumes are rows only. Used where no real runtime is available; its boxes have no
 * dataplane (`dataplane_url: null`, what the official clients expect then). Snapshots are
 * ready at once: nothing is pulled.
 */
import { Effect, Layer } from "effect"
import { type BoxObservationSink, SandboxDriver } from "../Driver.ts"

export const makeSimulatedSandboxDriver = Effect.sync(() => {
  let sink: BoxObservationSink = () => Effect.void
  return SandboxDriver.of({
    name: "simulated",
    observe: (next) => Effect.sync(() => void (sink = next)),
    start: (work) => sink({ sandboxId: work.sandboxId, event: { _tag: "Provisioned" } }),
    stop: () => Effect.void,
    teardown: () => Effect.void,
    createVolume: () => Effect.void,
    resizeVolume: () => Effect.void,
    deleteVolume: () => Effect.void,
    prepareImage: () => Effect.succeed({ digest: null }),
    captureBox: () => Effect.succeed({ digest: null }),
    discardImage: () => Effect.void
  })
})

export const SimulatedSandboxDriver = Layer.effect(SandboxDriver, makeSimulatedSandboxDriver)
