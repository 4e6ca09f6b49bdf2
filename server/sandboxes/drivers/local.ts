/**
 * The `local` sandbox driver: a box is a process tree under bubblewrap (its own user, pid, ipc,
 * uts and network namespaces) or a gVisor sandbox (`SLIPWAY_SANDBOX_ISOLATION`, default gVisor
 * where runsc can run: docs/runtime-isolation.md), on its template image's root filesystem (pulled and cached by
 * the shared image store) with a writable layer capped at the template's `storage`, memory, CPU
 * and process limits from its `resources`, and its volumes (loop-mounted btrfs of their size)
 * at their mount paths.
 *
 * A box in progress or running is a fiber in a `FiberMap` keyed by its sandbox id: it brings the
 * box up in a scope of its own (image, box, its registration for the dataplane), reports it
 * `Provisioned`, then waits on the box's exit; an unexpected death is reported `Failed`. Stopping
 * interrupts the fiber, which closes the scope (the box ends, its files stay); a teardown then
 * frees its disk. Progress ("pulling image", "starting box") and failures go to the controller on
 * the `SandboxObservations` queue.
 */
import { Data, Effect, Fiber, FiberMap, FiberSet, Layer, Queue } from "effect"
import { boxFailure, type BoxFailureKind } from "../../../core/index.ts"
import { ServerEnv } from "../../module.ts"
import { BoxRunner, type RunningBox } from "../../runtime/local/BoxRunner.ts"
import { ImageStore, imageEnvironment, type PulledImage } from "../../runtime/local/ImageStore.ts"
import { VolumeStore } from "../../runtime/local/VolumeStore.ts"
import { BoxRegistry } from "../BoxRegistry.ts"
import { type BoxObservation, type BoxWork, ImageError, SandboxDriver, SandboxObservations, VolumeError } from "../Driver.ts"

const MiB = 1024n * 1024n
/** Process limit of a box when the template says nothing (stops fork bombs). */
const DEFAULT_PIDS = 512
/** Writable layer of a box whose template sets no storage. */
const DEFAULT_STORAGE = 1024n * MiB

const messageOf = (error: { readonly message: string }) => error.message.split("\n")[0]!.slice(0, 500)

/** A bring-up step failed: why, in the kinds the clients tell apart (`boxFailure`). */
class BringUpFailed extends Data.TaggedError("BringUpFailed")<{ readonly kind: BoxFailureKind; readonly message: string }> {}

const because = (kind: BoxFailureKind) => (error: { readonly message: string }) => new BringUpFailed({ kind, message: messageOf(error) })

/** Runs `true` in the box and waits for it, at most 5 s: the box's exec helper starts with its first command (errors are the first real command's to report). */
const warmUp = (box: RunningBox) =>
  Effect.scoped(
    Effect.flatMap(box.exec(["true"]), (process) => {
      process.stdin.end()
      process.stdout.resume()
      process.stderr.resume()
      return Effect.timeoutOption(process.exited, "5 seconds")
    })
  ).pipe(Effect.ignore)

/** The pull option carrying a registry's stored credentials (none: anonymous, or the configured auth file). */
const pullAuth = (auth: BoxWork["registryAuth"]) => (auth ? { auth: { username: auth.username, password: auth.password } } : {})

export const makeLocalSandboxDriver = Effect.gen(function* () {
  const boxes = yield* BoxRunner
  const images = yield* ImageStore
  const volumes = yield* VolumeStore
  const registry = yield* BoxRegistry
  const observations = yield* SandboxObservations
  const { log } = yield* ServerEnv
  /** What each box was last asked to run, and the image it runs (for a capture). */
  const works = new Map<string, BoxWork>()
  const runs = new Map<string, PulledImage>()
  /** Teardowns under way: the driver's end waits for them, so no box is left half-removed (mounted). */
  const teardowns = yield* FiberSet.make<void>()
  yield* Effect.addFinalizer(() => FiberSet.awaitEmpty(teardowns))
  /** The boxes in progress or running, by sandbox id. */
  const lives = yield* FiberMap.make<string, void>()

  const report = (sandboxId: string, event: BoxObservation["event"]) => Queue.offer(observations, { sandboxId, event })

  /** Brings the box up (or adopts the one a previous server process left running) in this scope. */
  const bringUp = Effect.fnUntraced(function* (work: BoxWork) {
    const id = work.sandboxId
    const adopted = yield* boxes.attach(id)
    if (adopted) return adopted
    yield* report(id, { _tag: "Progress", message: `pulling image ${work.template.image}` })
    // A snapshot's box runs the image the snapshot was built with (by digest, from the cache), not whatever its tag points at now.
    const pinned = work.imageDigest ? yield* images.lookup(work.imageDigest) : null
    if (!pinned && work.digestOnly) {
      return yield* new BringUpFailed({ kind: "ImagePull", message: `the captured image ${work.imageDigest ?? "(none)"} of this sandbox's snapshot is not in the image store` })
    }
    const image =
      pinned ??
      (yield* images
        .pull(work.template.image, { onProgress: (message) => report(id, { _tag: "Progress", message }), ...pullAuth(work.registryAuth) })
        .pipe(Effect.mapError(because("ImagePull"))))
    runs.set(id, image)
    yield* report(id, { _tag: "Progress", message: "starting box" })
    const mounts = yield* Effect.forEach(work.volumes, (volume) => Effect.map(volumes.path(volume.volumeId), (hostPath) => ({ hostPath, mountPath: volume.mountPath })))
    return yield* Effect.mapError(boxes.start({
      id,
      rootfs: image.rootfs,
      env: { ...imageEnvironment(image.config.env), HOME: "/home/user" },
      hostname: work.name.slice(0, 63),
      storageBytes: Number(work.template.storage_bytes ?? DEFAULT_STORAGE),
      resources: {
        memoryBytes: Number(work.template.memory_bytes),
        cpuMillis: Number(work.template.cpu_millicores),
        pids: DEFAULT_PIDS
      },
      volumes: mounts,
      isolation: boxes.isolationOf.sandboxes.isolation
    }), because("SandboxConfig"))
  })

  const failed = (work: BoxWork, message: string) =>
    Effect.andThen(
      Effect.sync(() => log.warn("sandbox failed to start", { sandbox_id: work.sandboxId, error: message })),
      report(work.sandboxId, { _tag: "Failed", message })
    )

  /** A box's life: up, registered for the dataplane, ready, then until its init exits (or the fiber is interrupted: a stop). */
  const life = (work: BoxWork) =>
    Effect.scoped(
      Effect.gen(function* () {
        const id = work.sandboxId
        const box = yield* bringUp(work)
        yield* registry.register(id, box)
        // The box's exec helper starts with its first command: run one now, so a ready box (a warm
        // pool box above all) answers its first command without that start. A gVisor box's helper
        // came up with it (its pid 1): it is ready at once, and the first command only primes
        // gVisor's address spaces, after the ready.
        if (box.isolation === "gvisor") yield* report(id, { _tag: "Provisioned" })
        yield* warmUp(box)
        if (box.isolation !== "gvisor") yield* report(id, { _tag: "Provisioned" })
        const exit = yield* box.exited
        if (!exit.expected) yield* report(id, { _tag: "Failed", message: boxFailure("CrashLoop", exit.signal ?? `code ${exit.code}`) })
      })
    ).pipe(
      // A failure (or a bug) ends the box as Failed with its reason, never as a box stuck provisioning.
      Effect.catch((error) => failed(work, boxFailure(error._tag === "BringUpFailed" ? error.kind : "SandboxConfig", messageOf(error)))),
      Effect.catchDefect((defect) => failed(work, boxFailure("SandboxConfig", messageOf({ message: String((defect as Error)?.message ?? defect) }))))
    )

  /** Ends the box's fiber (its bring-up, or the box itself) and waits until its scope is closed. */
  const end = (sandboxId: string) => FiberMap.remove(lives, sandboxId)

  return SandboxDriver.of({
    name: "local",
    volumesOnThisReplica: true,
    start: (work) =>
      Effect.andThen(
        Effect.andThen(
          Effect.sync(() => void works.set(work.sandboxId, work)),
          end(work.sandboxId)
        ),
        Effect.asVoid(FiberMap.run(lives, work.sandboxId, life(work)))
      ),
    stop: end,
    teardown: (sandboxId) =>
      FiberSet.run(
        teardowns,
        Effect.gen(function* () {
          works.delete(sandboxId)
          runs.delete(sandboxId)
          yield* end(sandboxId)
          yield* boxes.destroy(sandboxId).pipe(Effect.catch((error) => Effect.sync(() => log.warn("sandbox teardown failed", { sandbox_id: sandboxId, error: messageOf(error) }))))
        }).pipe(Effect.uninterruptible)
      ).pipe(Effect.flatMap(Fiber.await), Effect.asVoid),
    recover: (owned) =>
      Effect.gen(function* () {
        // Mounts, loop devices and cgroups of boxes whose init is gone are undone here.
        const { running } = yield* boxes.recover
        const alive = new Set(running.map((spec) => spec.id))
        let ended = 0
        let freed = 0
        for (const spec of yield* boxes.list) {
          // Deployment replicas are the deployment driver's (it removes what it left at start).
          if (spec.id.startsWith("d-")) continue
          const wanted = owned.get(spec.id)
          if (wanted === "run") continue
          if (wanted === "keep") {
            // Stopped here (or failed) while a previous process was killed: end it, keep its files.
            if (alive.has(spec.id)) {
              yield* Effect.scoped(boxes.attach(spec.id))
              ended++
            }
            continue
          }
          // Deleted, or run by another replica now: nothing of it stays here.
          yield* boxes.destroy(spec.id)
          freed++
        }
        if (ended + freed > 0) log.info("sandbox boxes left by a previous process", { ended, freed })
      }).pipe(Effect.catch((error) => Effect.sync(() => log.warn("sandbox boxes could not be recovered", { error: messageOf(error) })))),
    createVolume: (volumeId, sizeBytes) => volumes.create(volumeId, Number(sizeBytes)).pipe(Effect.mapError((error) => new VolumeError({ message: messageOf(error) })), Effect.asVoid),
    resizeVolume: (volumeId, sizeBytes) => volumes.grow(volumeId, Number(sizeBytes)).pipe(Effect.mapError((error) => new VolumeError({ message: messageOf(error) })), Effect.asVoid),
    deleteVolume: (volumeId) => volumes.destroy(volumeId).pipe(Effect.mapError((error) => new VolumeError({ message: messageOf(error) }))),
    // The same image store as templates: a snapshot is ready once its image is pulled and unpacked.
    prepareImage: (image, registryAuth) =>
      images.pull(image, pullAuth(registryAuth)).pipe(
        Effect.map((pulled) => ({ digest: pulled.digest })),
        Effect.mapError((error) => new ImageError({ message: messageOf(error) }))
      ),
    // The box's filesystem as it sees it (the overlay of its image and its writable layer), copied
    // into the image store as a new local image: what the box wrote and deleted, nothing else.
    captureBox: (sandboxId) =>
      Effect.gen(function* () {
        const box = registry.get(sandboxId)?.box
        if (!box || !box.isRunning()) return yield* new ImageError({ message: "the sandbox is not running: start it, then capture it" })
        const work = works.get(sandboxId)
        const image =
          runs.get(sandboxId) ??
          (work?.imageDigest ? yield* images.lookup(work.imageDigest) : null) ??
          (work ? yield* images.pull(work.template.image) : null)
        if (!image) return yield* new ImageError({ message: "the sandbox's image is not known to this server" })
        const captured = yield* images.importTree(box.filesystem, { reference: image.reference, config: image.config, uidBase: box.hostUid })
        return { digest: captured.digest }
      }).pipe(Effect.mapError((error) => new ImageError({ message: `capture failed: ${messageOf(error)}` }))),
    discardImage: (digest) =>
      images.remove(digest).pipe(
        Effect.asVoid,
        Effect.catch((error) => Effect.sync(() => log.warn("captured image not removed", { digest, error: messageOf(error) })))
      )
  })
})

export const LocalSandboxDriver = Layer.effect(SandboxDriver, makeLocalSandboxDriver)
