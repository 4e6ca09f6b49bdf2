/**
 * The `local` sandbox driver: a box is a process tree under bubblewrap (its own user, pid, ipc,
 * uts and network namespaces), on its template image's root filesystem (pulled and cached by
 * the shared image store) with a writable layer capped at the template's `storage`, memory, CPU
 * and process limits from its `resources`, and its volumes (loop-mounted btrfs of their size)
 * at their mount paths. Progress ("pulling image", "starting box") and failures go to the
 * controller as observations; a box whose init dies unexpectedly is reported failed.
 */
import { Effect, Layer } from "effect"
import { LocalHost } from "../../runtime/local/LocalHost.ts"
import type { RunningBox } from "../../runtime/local/boxes.ts"
import { ServerEnv } from "../../module.ts"
import { type BoxObservationSink, type BoxWork, ImageError, SandboxDriver, VolumeError } from "../Driver.ts"
import { imageEnvironment, type PulledImage } from "../../runtime/local/images.ts"

const MiB = 1024n * 1024n
/** Process limit of a box when the template says nothing (stops fork bombs). */
const DEFAULT_PIDS = 512
/** Writable layer of a box whose template sets no storage. */
const DEFAULT_STORAGE = 1024n * MiB


/** Runs `true` in the box and waits for it (errors are the first real command's to report). */
const warmUp = async (box: RunningBox): Promise<void> => {
  try {
    const p = box.exec(["true"])
    p.stdin.end()
    p.stdout.resume()
    p.stderr.resume()
    await Promise.race([p.exited, new Promise((resolve) => setTimeout(resolve, 5_000).unref())])
  } catch {
    /* the box is not running: its exit is reported */
  }
}

const messageOf = (error: unknown) => String((error as Error)?.message ?? error).split("\n")[0]!.slice(0, 500)

/** The pull option carrying a registry's stored credentials (none: anonymous, or the configured auth file). */
const pullAuth = (auth: BoxWork["registryAuth"]) => (auth ? { auth: { username: auth.username, password: auth.password } } : {})

export const makeLocalSandboxDriver = Effect.gen(function* () {
  const host = yield* LocalHost
  const { log } = yield* ServerEnv
  let sink: BoxObservationSink = () => Effect.void
  const report = (sandboxId: string, event: Parameters<BoxObservationSink>[0]["event"]) => Effect.runPromise(sink({ sandboxId, event }))
  /** What each box was last asked to run, and the image it runs (for a capture). */
  const works = new Map<string, BoxWork>()
  const runs = new Map<string, PulledImage>()
  /** Starts in flight, so a stop or teardown waits for them. */
  const starting = new Map<string, Promise<void>>()
  /** Teardowns in flight: the server's shutdown waits for them, so no box is left half-removed (mounted). */
  const tearingDown = new Set<Promise<void>>()
  yield* Effect.addFinalizer(() => Effect.promise(() => Promise.allSettled([...tearingDown, ...starting.values()])))

  const bringUp = async (work: BoxWork): Promise<void> => {
    const id = work.sandboxId
    const existing = host.running.get(id) ?? (await host.boxes.attach(id))
    if (existing && existing.status() === "running") {
      host.running.set(id, existing)
      await warmUp(existing)
      await report(id, { _tag: "Provisioned" })
      return
    }
    await report(id, { _tag: "Progress", message: `pulling image ${work.template.image}` })
    // A snapshot's box runs the image the snapshot was built with (by digest, from the cache), not whatever its tag points at now.
    const pinned = work.imageDigest ? await host.images.lookup(work.imageDigest) : null
    if (!pinned && work.digestOnly) throw new Error(`the captured image ${work.imageDigest ?? "(none)"} of this sandbox's snapshot is not in the image store`)
    const image =
      pinned ??
      (await host.images.pull(work.template.image, {
        onProgress: (message) => void report(id, { _tag: "Progress", message }),
        ...pullAuth(work.registryAuth)
      }))
    runs.set(id, image)
    await report(id, { _tag: "Progress", message: "starting box" })
    const box: RunningBox = await host.boxes.start({
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
      volumes: work.volumes.map((volume) => ({ hostPath: host.volumes.path(volume.volumeId), mountPath: volume.mountPath }))
    })
    host.running.set(id, box)
    // The box's exec helper starts with its first command: run one now, so a ready box (a warm
    // pool box above all) answers its first command without that start.
    await warmUp(box)
    box.onExit((exit) => {
      if (host.running.get(id) === box) host.running.delete(id)
      if (!exit.expected) void report(id, { _tag: "Failed", message: `box exited unexpectedly (${exit.signal ?? `code ${exit.code}`})` })
    })
    await report(id, { _tag: "Provisioned" })
  }

  const settle = (id: string) => starting.get(id) ?? Promise.resolve()

  return SandboxDriver.of({
    name: "local",
    observe: (next) => Effect.sync(() => void (sink = next)),
    start: (work) =>
      Effect.sync(() => {
        works.set(work.sandboxId, work)
        const run = settle(work.sandboxId)
          .then(() => bringUp(work))
          .catch((error) => {
            log.warn("sandbox failed to start", { sandbox_id: work.sandboxId, error: messageOf(error) })
            return report(work.sandboxId, { _tag: "Failed", message: messageOf(error) })
          })
          .finally(() => {
            if (starting.get(work.sandboxId) === run) starting.delete(work.sandboxId)
          })
        starting.set(work.sandboxId, run)
      }),
    stop: (sandboxId) =>
      Effect.promise(async () => {
        await settle(sandboxId)
        const box = host.running.get(sandboxId)
        host.running.delete(sandboxId)
        await box?.stop()
      }),
    teardown: (sandboxId) =>
      Effect.promise(() => {
        works.delete(sandboxId)
        runs.delete(sandboxId)
        const work = (async () => {
          await settle(sandboxId)
          host.running.delete(sandboxId)
          await host.boxes.destroy(sandboxId).catch((error) => log.warn("sandbox teardown failed", { sandbox_id: sandboxId, error: messageOf(error) }))
        })()
        tearingDown.add(work)
        return work.finally(() => tearingDown.delete(work))
      }),
    createVolume: (volumeId, sizeBytes) =>
      Effect.tryPromise({ try: () => host.volumes.create(volumeId, Number(sizeBytes)), catch: (error) => new VolumeError({ message: messageOf(error) }) }).pipe(Effect.asVoid),
    resizeVolume: (volumeId, sizeBytes) =>
      Effect.tryPromise({ try: () => host.volumes.grow(volumeId, Number(sizeBytes)), catch: (error) => new VolumeError({ message: messageOf(error) }) }).pipe(Effect.asVoid),
    deleteVolume: (volumeId) =>
      Effect.tryPromise({ try: () => host.volumes.destroy(volumeId), catch: (error) => new VolumeError({ message: messageOf(error) }) }),
    // The same image store as templates: a snapshot is ready once its image is pulled and unpacked.
    prepareImage: (image, registryAuth) =>
      Effect.tryPromise({
        try: async () => ({ digest: (await host.images.pull(image, pullAuth(registryAuth))).digest }),
        catch: (error) => new ImageError({ message: messageOf(error) })
      }),
    // The box's filesystem as it sees it (the overlay of its image and its writable layer), copied
    // into the image store as a new local image: what the box wrote and deleted, nothing else.
    captureBox: (sandboxId) =>
      Effect.tryPromise({
        try: async () => {
          await settle(sandboxId)
          const box = host.running.get(sandboxId)
          if (!box || box.status() !== "running") throw new Error("the sandbox is not running: start it, then capture it")
          const work = works.get(sandboxId)
          const image =
            runs.get(sandboxId) ??
            (work?.imageDigest ? await host.images.lookup(work.imageDigest) : null) ??
            (work ? await host.images.pull(work.template.image) : null)
          if (!image) throw new Error("the sandbox's image is not known to this server")
          const captured = await host.images.importTree(box.filesystem, { reference: image.reference, config: image.config, uidBase: box.hostUid })
          return { digest: captured.digest }
        },
        catch: (error) => new ImageError({ message: `capture failed: ${messageOf(error)}` })
      }),
    discardImage: (digest) =>
      Effect.promise(() => host.images.remove(digest).then(() => undefined, (error) => log.warn("captured image not removed", { digest, error: messageOf(error) })))
  })
})

export const LocalSandboxDriver = Layer.effect(SandboxDriver, makeLocalSandboxDriver)
