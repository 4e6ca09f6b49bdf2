/**
 * The sandbox runtime's controller: starts, stops and tears boxes down through the driver and
 * persists what the driver observes, through the core's box lifecycle (`nextBoxState`). A box
 * moves only from the state the controller read, so a box deleted or stopped meanwhile is not
 * resurrected by a late report. At start it hands the driver every box the store says should be
 * running, so a server restart brings every box back to the state the database records.
 */
import { Context, Deferred, Effect, Layer } from "effect"
import { type BoxEvent, nextBoxState, wantsRunning } from "../../core/index.ts"
import { makeSecretBox } from "../deployments/secrets.ts"
import { ServerEnv } from "../module.ts"
import { SandboxStore, type SandboxRecord } from "../store/SandboxStore.ts"
import type { StoreError } from "../store/StoreError.ts"
import { makeRegistryCredentials } from "./access/registries.ts"
import { Dataplane } from "./Dataplane.ts"
import { type BoxWork, SandboxDriver } from "./Driver.ts"

export class SandboxController extends Context.Service<
  SandboxController,
  {
    /** Boxes committed in `provisioning`: bring them up. */
    readonly boxesCreated: (boxes: ReadonlyArray<SandboxRecord>) => Effect.Effect<void, StoreError>
    /** Boxes whose rows were deleted: end their processes and free their disk (in the background). */
    readonly boxesDeleted: (sandboxIds: ReadonlyArray<string>) => Effect.Effect<void>
    /** Applies a caller's request (`Stop`, `Start`) to a box; answers the box as it is afterwards. */
    readonly request: (box: SandboxRecord, event: Extract<BoxEvent, { readonly _tag: "Stop" | "Start" }>) => Effect.Effect<SandboxRecord, StoreError>
    /** Waits until the box is ready, failed or stopped (or gone), at most `timeoutMs`; answers it as it is then. */
    readonly awaitSettled: (tenantId: string, sandboxId: string, timeoutMs: number) => Effect.Effect<SandboxRecord | undefined, StoreError>
  }
>()("slipway/SandboxController") {}

const settled = (box: SandboxRecord | undefined) => box === undefined || (box.status !== "provisioning" && box.status !== "deleting")

export const makeSandboxController = Effect.gen(function* () {
  const store = yield* SandboxStore
  const driver = yield* SandboxDriver
  const dataplane = yield* Dataplane
  const { log, config } = yield* ServerEnv
  const registryAuthFor = makeRegistryCredentials(store, makeSecretBox(config.secretsKey, config.previousSecretsKeys), log.warn)
  /** Which tenant each box the driver knows belongs to (reports carry only the box id). */
  const tenants = new Map<string, string>()
  /** Callers waiting for a box to settle. */
  const waiters = new Map<string, Set<Deferred.Deferred<void>>>()

  const notify = (sandboxId: string) => {
    const waiting = waiters.get(sandboxId)
    if (!waiting) return
    waiters.delete(sandboxId)
    for (const deferred of waiting) Deferred.doneUnsafe(deferred, Effect.void)
  }

  /** Moves the box by `event` if it applies to the state it is in now. */
  const apply = (tenantId: string, sandboxId: string, event: BoxEvent) =>
    store.transaction(
      Effect.gen(function* () {
        const box = yield* store.sandboxById(tenantId, sandboxId)
        if (!box) return undefined
        const next = nextBoxState(box, event)
        if (!next) return box
        const at = new Date().toISOString()
        const moved = yield* store.setSandboxStatus(box.id, box.status, next.status, next.status_message, at)
        return moved ? { ...box, ...next, updated_at: at } : box
      })
    ).pipe(Effect.tap(() => Effect.sync(() => notify(sandboxId))))

  yield* driver.observe((observation) => {
    const tenantId = tenants.get(observation.sandboxId)
    if (tenantId === undefined) return Effect.void
    return apply(tenantId, observation.sandboxId, observation.event).pipe(
      Effect.asVoid,
      Effect.catch((error) => Effect.sync(() => log.error("sandbox state not saved", { sandbox_id: observation.sandboxId, error: error.message })))
    )
  })

  const workOf = (box: SandboxRecord) =>
    Effect.gen(function* () {
      const template = yield* store.templateById(box.template_id)
      if (!template) return undefined
      const volumes = yield* Effect.forEach(template.mounts, (mount) =>
        Effect.map(store.volumeByName(box.tenant_id, mount.volume_name), (volume) =>
          volume ? [{ volumeId: volume.id, mountPath: mount.mount_path, sizeBytes: volume.size_bytes }] : []
        )
      )
      const registryAuth = yield* registryAuthFor(box.tenant_id, template.image)
      return { tenantId: box.tenant_id, sandboxId: box.id, name: box.name, template, volumes: volumes.flat(), registryAuth } satisfies BoxWork
    })

  const start = (box: SandboxRecord) =>
    Effect.gen(function* () {
      const work = yield* workOf(box)
      if (!work) return
      tenants.set(box.id, box.tenant_id)
      yield* driver.start(work)
    })

  // Bring back what the store says should run: provisioning until the driver reports it up again.
  const boxes = yield* Effect.orDie(store.allSandboxes())
  const running = boxes.filter((box) => wantsRunning(box.status))
  yield* Effect.orDie(
    Effect.forEach(running, (box) => Effect.flatMap(apply(box.tenant_id, box.id, { _tag: "Resume" }), (resumed) => start(resumed ?? box)), { discard: true })
  )
  if (running.length > 0) log.info("sandboxes resumed", { sandboxes: running.length, driver: driver.name })

  return SandboxController.of({
    boxesCreated: (created) => Effect.forEach(created, start, { discard: true }),
    boxesDeleted: (sandboxIds) =>
      Effect.forEach(
        sandboxIds,
        (id) =>
          Effect.suspend(() => {
            tenants.delete(id)
            notify(id)
            // Its service URL grants go with it (they name the box by id, without a foreign key).
            return Effect.forkDetach(Effect.andThen(dataplane.release(id), driver.teardown(id)).pipe(Effect.andThen(Effect.ignore(store.deleteServiceGrants(id)))))
          }),
        { discard: true }
      ),
    request: (box, event) =>
      Effect.gen(function* () {
        const after = (yield* apply(box.tenant_id, box.id, event)) ?? box
        if (after.status === box.status) return after
        if (event._tag === "Stop") yield* Effect.andThen(dataplane.release(box.id), driver.stop(box.id))
        else yield* start(after)
        return (yield* store.sandboxById(box.tenant_id, box.id)) ?? after
      }),
    awaitSettled: (tenantId, sandboxId, timeoutMs) =>
      Effect.gen(function* () {
        const deadline = Date.now() + timeoutMs
        for (;;) {
          const deferred = Deferred.makeUnsafe<void>()
          let waiting = waiters.get(sandboxId)
          if (!waiting) waiters.set(sandboxId, (waiting = new Set()))
          waiting.add(deferred)
          const box = yield* store.sandboxById(tenantId, sandboxId)
          const remaining = deadline - Date.now()
          if (settled(box) || remaining <= 0) {
            waiting.delete(deferred)
            return box
          }
          // Another replica may move the box: look again at least every 250 ms.
          yield* Effect.timeoutOption(Deferred.await(deferred), Math.min(remaining, 250))
        }
      })
  })
})

export const SandboxControllerLive = Layer.effect(SandboxController, makeSandboxController)
