/**
 * The `simulated` sandbox driver: nothing runs. A box is reported ready as soon as it is started,
 * and volumes are rows only. Used where no real runtime is available; its boxes have no
 * dataplane (`dataplane_url: null`, what the official clients expect then). Snapshots are
 * ready at once: nothing is pulled.
 */
import { Deferred, Effect, Layer, Queue } from "effect"
import { SandboxDriver, SandboxObservations } from "../Driver.ts"

export const makeSimulatedSandboxDriver = Effect.gen(function* () {
  const observations = yield* SandboxObservations
  return SandboxDriver.of({
    name: "simulated",
    volumesOnThisReplica: false,
    // The box is ready at once, and in the answer that created it: start waits until the controller applied that.
    start: (work) =>
      Effect.suspend(() => {
        const applied = Deferred.makeUnsafe<void>()
        return Queue.offer(observations, {
          sandboxId: work.sandboxId,
          event: { _tag: "Provisioned" },
          applied
        }).pipe(Effect.andThen(Deferred.await(applied)))
      }),
    stop: () => Effect.void,
    teardown: () => Effect.void,
    recover: () => Effect.void,
    createVolume: () => Effect.void,
    resizeVolume: () => Effect.void,
    deleteVolume: () => Effect.void,
    prepareImage: () => Effect.succeed({ digest: null }),
    captureBox: () => Effect.succeed({ digest: null }),
    discardImage: () => Effect.void
  })
})

export const SimulatedSandboxDriver = Layer.effect(SandboxDriver, makeSimulatedSandboxDriver)
