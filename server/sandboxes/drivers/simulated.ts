/**
 * The `simulated` sandbox driver: nothing runs. A box is reported ready as soon as it is started,
 * and volumes are rows only. Used where no real runtime is available; its boxes have no
 * dataplane (`dataplane_url: null`, what the official clients expect then).
 *
 * Failure hooks, as for deployments: a template image containing `fail-start` makes its boxes
 * fail, and a snapshot image containing `fail-pull` makes the snapshot fail, so users and tests
 * can watch the failure paths without a real runtime.
 */
import { Deferred, Effect, Layer, Queue } from "effect"
import { ImageError, SandboxDriver, SandboxObservations } from "../Driver.ts"

export const makeSimulatedSandboxDriver = Effect.gen(function* () {
  const observations = yield* SandboxObservations
  return SandboxDriver.of({
    name: "simulated",
    // The box is ready at once, and in the answer that created it: start waits until the controller applied that.
    start: (work) =>
      Effect.suspend(() => {
        const applied = Deferred.makeUnsafe<void>()
        return Queue.offer(observations, {
          sandboxId: work.sandboxId,
          event: work.template.image.includes("fail-start") ? { _tag: "Failed", message: "Box could not be started (fail-start marker)" } : { _tag: "Provisioned" },
          applied
        }).pipe(Effect.andThen(Deferred.await(applied)))
      }),
    stop: () => Effect.void,
    teardown: () => Effect.void,
    createVolume: () => Effect.void,
    resizeVolume: () => Effect.void,
    deleteVolume: () => Effect.void,
    // Nothing is pulled: a snapshot is ready at once, unless its image carries the `fail-pull` marker.
    prepareImage: (image) =>
      image.includes("fail-pull") ? Effect.fail(new ImageError({ message: `image ${image} could not be pulled (fail-pull marker)` })) : Effect.succeed({ digest: null }),
    captureBox: () => Effect.succeed({ digest: null }),
    discardImage: () => Effect.void
  })
})

export const SimulatedSandboxDriver = Layer.effect(SandboxDriver, makeSimulatedSandboxDriver)
