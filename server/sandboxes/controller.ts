/**
 * The sandbox runtime's controller: starts, stops and tears boxes down through the driver and
 * persists what the driver observes, through the core's box lifecycle (`nextBoxState`). A box
 * moves only from the state the controller read, so a box deleted or stopped meanwhile is not
 * resurrected by a late report. At start it hands the driver every box the store says should be
 * running, so a server restart brings every box back to the state the database records.
 *
 * What the driver observes arrives on the `SandboxObservations` queue, which the controller
 * takes from in one fiber of its own, in order.
 *
 * It also builds snapshots (the driver pulls the image; `building` → `ready` or `failed`, and
 * snapshots still building at start are built again) and applies boxes' retention settings
 * (a sweep every `SLIPWAY_SANDBOX_SWEEP_MS`, default 1000): a box past `ttl_seconds` since its
 * creation is deleted, a ready box with no dataplane request for `idle_ttl_seconds` is stopped,
 * a box stopped for `delete_after_stop_seconds` is deleted. Its time is Effect's `Clock` (tests
 * drive it with `TestClock`).
 *
 * With several replicas (docs/replicas.md) each box runs on one replica (`ClusterStore`): a box
 * starts where its volume lives, else where it ran before (if that replica lives), else here;
 * every third of the lease the controller runs what its replica owns (and ends what it no longer
 * owns), and fails the boxes of replicas that stopped answering with the reason. `locate` tells
 * the dataplane and the links where to forward a box's requests.
 */
import { Clock, Context, Deferred, Effect, Layer, Queue, Schedule, Semaphore } from "effect"
import { type BoxEvent, type BoxLifecycle, formatQuantity, fromBytes, nextBoxState, wantsRunning } from "../../core/index.ts"
import { makeSecretBox } from "../secrets/secrets.ts"
import { ServerEnv } from "../module.ts"
import { describeReplica, Replicas } from "../replicas/Replicas.ts"
import type { Peer } from "../replicas/forward.ts"
import { ClusterStore, type ReplicaRecord } from "../store/ClusterStore.ts"
import { RegistryStore } from "../store/RegistryStore.ts"
import { type SandboxRecord, SandboxStore } from "../store/SandboxStore.ts"
import { ServiceGrantStore } from "../store/ServiceGrantStore.ts"
import { type SnapshotRecord, SnapshotStore } from "../store/SnapshotStore.ts"
import type { StoreError } from "../store/StoreError.ts"
import { type TemplateRecord, TemplateStore } from "../store/TemplateStore.ts"
import { Transactions } from "../store/Transactions.ts"
import { SandboxVolumeStore } from "../store/SandboxVolumeStore.ts"
import { makeRegistryCredentials } from "./access/registries.ts"
import { Dataplane } from "./dataplane/Dataplane.ts"
import { type BoxWork, ImageError, SandboxDriver, SandboxObservations } from "./Driver.ts"

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
    /** A snapshot committed in `building`: pull its image, or capture its source box (in the background), and record the outcome. */
    readonly snapshotCreated: (snapshot: SnapshotRecord) => Effect.Effect<void>
    /** A captured snapshot was deleted: drop its image. */
    readonly snapshotDeleted: (snapshot: SnapshotRecord) => Effect.Effect<void>
    /** A dataplane request reached the box: it is not idle. */
    readonly touch: (sandboxId: string) => void
    /** One retention sweep now (the controller runs one every `SLIPWAY_SANDBOX_SWEEP_MS`). */
    readonly sweep: Effect.Effect<void>
    /**
     * Where a box runs: here, on a peer (forward its requests there), or on a replica that is
     * gone (its lease expired, or it does not answer). Always `here` with one replica.
     */
    readonly locate: (sandboxId: string) => Effect.Effect<BoxLocation, StoreError>
    /** One ownership round now (runs every third of the lease with several replicas): what this replica should run, it runs. */
    readonly reconcile: Effect.Effect<void>
  }
>()("slipway/SandboxController") {}

/** Where a box runs (`SandboxController.locate`). */
export type BoxLocation =
  | { readonly _tag: "here" }
  | { readonly _tag: "peer"; readonly peer: Peer }
  | { readonly _tag: "gone"; readonly replica: ReplicaRecord | undefined; readonly replicaId: string }

const HERE: BoxLocation = { _tag: "here" }

/** Why a box its replica no longer runs is failed (the box's `status_message`). */
export const replicaGoneMessage = (replicaId: string, replica: ReplicaRecord | undefined) =>
  `the replica that ran it stopped answering: ${replica ? describeReplica(replica) : replicaId} (its lease expired)`

/** How often the retention sweep runs (read when the controller starts). */
const sweepInterval = () => Math.max(50, Number(process.env.SLIPWAY_SANDBOX_SWEEP_MS ?? 1000) || 1000)

const MiB = 1024n * 1024n

/** The template a box made from an image (a snapshot's or the default) runs as: its own spec, no mounts, no proxy rules. */
export const imageBoxTemplate = (box: SandboxRecord): TemplateRecord => {
  const cpuMillicores = BigInt((box.vcpus ?? 1) * 1000)
  const memoryBytes = BigInt(box.mem_bytes ?? Number(512n * MiB))
  const storageBytes = box.fs_capacity_bytes === null ? null : BigInt(box.fs_capacity_bytes)
  return {
    id: box.id,
    tenant_id: box.tenant_id,
    name: box.name,
    image: box.image!,
    cpu_millicores: cpuMillicores,
    cpu: String(box.vcpus ?? 1),
    memory_bytes: memoryBytes,
    memory: formatQuantity(fromBytes(memoryBytes)),
    storage_bytes: storageBytes,
    storage: storageBytes === null ? null : formatQuantity(fromBytes(storageBytes)),
    proxy_config: null,
    mounts: [],
    created_at: box.created_at,
    updated_at: box.updated_at
  }
}

const settled = (box: SandboxRecord | undefined) => box === undefined || (box.status !== "provisioning" && box.status !== "deleting")

export const makeSandboxController = Effect.gen(function* () {
  const { transaction } = yield* Transactions
  const sandboxStore = yield* SandboxStore
  const volumeStore = yield* SandboxVolumeStore
  const templateStore = yield* TemplateStore
  const snapshotStore = yield* SnapshotStore
  const grantStore = yield* ServiceGrantStore
  const driver = yield* SandboxDriver
  const dataplane = yield* Dataplane
  const observations = yield* SandboxObservations
  const clock = yield* Clock.Clock
  const nowIso = () => new Date(clock.currentTimeMillisUnsafe()).toISOString()
  const { log, config } = yield* ServerEnv
  const replicas = yield* Replicas
  const cluster = yield* ClusterStore
  const me = replicas.self.id
  const registryAuthFor = makeRegistryCredentials(yield* RegistryStore, makeSecretBox(config.secretsKey, config.previousSecretsKeys), log.warn)
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
    transaction(
      Effect.gen(function* () {
        const box = yield* sandboxStore.sandboxById(tenantId, sandboxId)
        if (!box) return undefined
        const next = nextBoxState(box, event)
        if (!next) return box
        const at = nowIso()
        const moved = yield* sandboxStore.setSandboxStatus(box.id, box.status, next.status, next.status_message, at)
        return moved ? { ...box, ...next, updated_at: at } : box
      })
    ).pipe(Effect.tap(() => Effect.sync(() => notify(sandboxId))))

  /** What the driver observed, applied in order. */
  const observed = Effect.flatMap(Queue.take(observations), (observation) => {
    const tenantId = tenants.get(observation.sandboxId)
    const applied = tenantId === undefined
      ? Effect.void
      : apply(tenantId, observation.sandboxId, observation.event).pipe(
          Effect.asVoid,
          Effect.catch((error) => Effect.sync(() => log.error("sandbox state not saved", { sandbox_id: observation.sandboxId, error: error.message })))
        )
    return observation.applied ? Effect.ensuring(applied, Deferred.succeed(observation.applied, undefined)) : applied
  })
  yield* Effect.forkScoped(Effect.forever(observed))

  const workOf = Effect.fnUntraced(function* (box: SandboxRecord) {
    if (box.template_id === null) {
      const snapshot = box.snapshot_id === null ? undefined : yield* snapshotStore.snapshotById(box.tenant_id, box.snapshot_id)
      const digest = snapshot?.image_digest
      const registryAuth = yield* registryAuthFor(box.tenant_id, box.image!)
      return {
        tenantId: box.tenant_id,
        sandboxId: box.id,
        name: box.name,
        template: imageBoxTemplate(box),
        volumes: [],
        registryAuth,
        ...(digest ? { imageDigest: digest } : {}),
        ...(snapshot?.source_sandbox_id != null ? { digestOnly: true } : {})
      } satisfies BoxWork
    }
    const template = yield* templateStore.templateById(box.template_id)
    if (!template) return undefined
    const volumes = yield* Effect.forEach(template.mounts, (mount) =>
      Effect.map(volumeStore.volumeByName(box.tenant_id, mount.volume_name), (volume) =>
        volume ? [{ volumeId: volume.id, mountPath: mount.mount_path, sizeBytes: volume.size_bytes }] : []
      )
    )
    const registryAuth = yield* registryAuthFor(box.tenant_id, template.image)
    return { tenantId: box.tenant_id, sandboxId: box.id, name: box.name, template, volumes: volumes.flat(), registryAuth } satisfies BoxWork
  })

  /** Boxes this replica's driver was asked to run (and not stopped or deleted since). */
  const local = new Set<string>()

  const locate = (sandboxId: string): Effect.Effect<BoxLocation, StoreError> =>
    !replicas.shared || local.has(sandboxId)
      ? Effect.succeed(HERE)
      : Effect.map(cluster.boxOwner(sandboxId), (owner): BoxLocation => {
          if (!owner?.replica_id || owner.replica_id === me) return HERE
          if (!owner.replica?.alive) return { _tag: "gone", replica: owner.replica, replicaId: owner.replica_id }
          return { _tag: "peer", peer: { id: owner.replica_id, url: owner.replica.internal_url } }
        })

  /** Hands the box to this replica's driver. */
  const startHere = Effect.fnUntraced(function* (box: SandboxRecord) {
    const work = yield* workOf(box)
    if (!work) return
    tenants.set(box.id, box.tenant_id)
    local.add(box.id)
    yield* driver.start(work)
  })

  /**
   * Where a box (to be started) runs, with several replicas: on the replica whose disk holds its
   * volumes; else where it ran before, if that replica lives (its files are there); else here.
   * A failure message when its volumes are on a replica that is gone (or on two replicas).
   */
  const placement = Effect.fnUntraced(function* (box: SandboxRecord) {
    const template = box.template_id === null ? undefined : yield* templateStore.templateById(box.template_id)
    const holders = template && template.mounts.length > 0 ? yield* cluster.volumeHolders(template.mounts.map((mount) => mount.volume_id)) : []
    const pinned = [...new Set(holders.flatMap((holder) => (holder.replica_id === null ? [] : [holder.replica_id])))]
    if (pinned.length > 1) return { fail: `its volumes are on different replicas (${pinned.join(", ")}): a box runs where its volumes are` } as const
    if (pinned.length === 1) {
      const holder = holders.find((h) => h.replica_id === pinned[0])!
      if (pinned[0] !== me && !holder.replica?.alive) {
        return { fail: `its volume lives on replica ${holder.replica ? describeReplica(holder.replica) : pinned[0]}, which is not answering (its lease expired)` } as const
      }
      return { replicaId: pinned[0]! }
    }
    const owner = yield* cluster.boxOwner(box.id)
    if (owner?.replica_id && owner.replica_id !== me && owner.replica?.alive) return { replicaId: owner.replica_id }
    return { replicaId: me }
  })

  /** Brings a box up where it belongs: here, or (several replicas) on its replica, told at once. */
  const start = Effect.fnUntraced(function* (box: SandboxRecord) {
    if (!replicas.shared) return yield* startHere(box)
    const placed: { readonly fail: string } | { readonly replicaId: string } = yield* placement(box)
    if ("fail" in placed) {
      yield* apply(box.tenant_id, box.id, { _tag: "Failed", message: placed.fail })
      return
    }
    yield* cluster.placeBoxes([box.id], placed.replicaId)
    if (placed.replicaId === me) return yield* startHere(box)
    // Its replica starts it (its next round at the latest).
    if (local.has(box.id)) yield* stopHere(box.id)
    yield* replicas.nudge(placed.replicaId, "boxes")
  })

  /** Ends a box this replica runs (its files stay). */
  const stopHere = (sandboxId: string) =>
    Effect.suspend(() => {
      local.delete(sandboxId)
      return Effect.andThen(dataplane.release(sandboxId), driver.stop(sandboxId))
    })

  // What a previous process left (it may have been killed): the boxes this replica runs are
  // adopted or started again, the rest of what it left is ended (files kept) or freed.
  const boxes = replicas.shared
    ? yield* Effect.orDie(Effect.flatMap(cluster.boxesOf(me), (owned) => Effect.forEach(owned, (row) => sandboxStore.sandboxById(row.tenant_id, row.id)))).pipe(
        Effect.map((found) => found.filter((box): box is SandboxRecord => box !== undefined))
      )
    : yield* Effect.orDie(sandboxStore.allSandboxes())
  yield* driver.recover(new Map(boxes.map((box) => [box.id, wantsRunning(box.status) ? "run" : "keep"])))
  // Bring back what the store says should run: provisioning until the driver reports it up again.
  const running = boxes.filter((box) => wantsRunning(box.status))
  yield* Effect.orDie(
    Effect.forEach(running, (box) => Effect.flatMap(apply(box.tenant_id, box.id, { _tag: "Resume" }), (resumed) => startHere(resumed ?? box)), { discard: true })
  )
  if (running.length > 0) log.info("sandboxes resumed", { sandboxes: running.length, driver: driver.name })

  // Snapshots: the driver pulls the image; the outcome moves the snapshot only from `building`.
  const buildSnapshot = (snapshot: SnapshotRecord) =>
    (snapshot.source_sandbox_id === null
      ? Effect.flatMap(registryAuthFor(snapshot.tenant_id, snapshot.docker_image), (auth) => driver.prepareImage(snapshot.docker_image, auth))
      : Effect.flatMap(Effect.orElseSucceed(locate(snapshot.source_sandbox_id), () => HERE), (location) =>
          location._tag === "here"
            ? driver.captureBox(snapshot.source_sandbox_id!)
            : Effect.fail(new ImageError({ message: `the sandbox runs on another replica (${location._tag === "peer" ? location.peer.id : location.replicaId}): capturing a box another replica runs is not supported yet (docs/replicas.md)` }))
        )
    ).pipe(
      Effect.matchEffect({
        onSuccess: ({ digest }) => snapshotStore.setSnapshotStatus(snapshot.id, "building", "ready", null, digest, nowIso()),
        onFailure: (error) => snapshotStore.setSnapshotStatus(snapshot.id, "building", "failed", error.message, null, nowIso())
      }),
      Effect.catch((error) => Effect.sync(() => log.error("snapshot state not saved", { snapshot_id: snapshot.id, error: error.message }))),
      Effect.asVoid
    )
  const snapshotCreated = (snapshot: SnapshotRecord) => Effect.asVoid(Effect.forkDetach(buildSnapshot(snapshot)))
  const building = yield* Effect.orDie(snapshotStore.buildingSnapshots())
  // A capture cut short by a restart is not taken again: the box has changed since it was asked.
  yield* Effect.orDie(
    Effect.forEach(
      building.filter((snapshot) => snapshot.source_sandbox_id !== null),
      (snapshot) => snapshotStore.setSnapshotStatus(snapshot.id, "building", "failed", "the server restarted during the capture; capture the sandbox again", null, nowIso()),
      { discard: true }
    )
  )
  yield* Effect.forEach(
    building.filter((snapshot) => snapshot.source_sandbox_id === null),
    snapshotCreated,
    { discard: true }
  )
  if (building.length > 0) log.info("snapshot builds resumed", { snapshots: building.length })

  /** Last dataplane request per box (this process only: after a restart, idleness counts from the box's last state change). */
  const activity = new Map<string, number>()

  const boxesDeleted = (sandboxIds: ReadonlyArray<string>) =>
    Effect.forEach(
      sandboxIds,
      (id) =>
        Effect.suspend(() => {
          tenants.delete(id)
          activity.delete(id)
          notify(id)
          const here = local.delete(id) || !replicas.shared
          // Its service URL grants go with it (they name the box by id, without a foreign key).
          return Effect.andThen(
            Effect.forkDetach(Effect.andThen(dataplane.release(id), driver.teardown(id)).pipe(Effect.andThen(Effect.ignore(grantStore.deleteServiceGrants(id))))),
            // Run elsewhere: its replica ends it when it looks (now, when it answers).
            here ? Effect.void : replicas.nudgeAll("boxes")
          )
        }),
      { discard: true }
    )

  const request = Effect.fnUntraced(function* (box: SandboxRecord, event: Extract<BoxEvent, { readonly _tag: "Stop" | "Start" }>) {
    const after = (yield* apply(box.tenant_id, box.id, event)) ?? box
    if (after.status === box.status) return after
    if (event._tag === "Stop") {
      if (local.has(box.id) || !replicas.shared) yield* stopHere(box.id)
      else {
        const owner = yield* cluster.boxOwner(box.id)
        if (owner?.replica_id) yield* replicas.nudge(owner.replica_id, "boxes")
      }
    } else yield* start(after)
    return (yield* sandboxStore.sandboxById(box.tenant_id, box.id)) ?? after
  })

  /** Deletes a box whose time is up (if it is still there). */
  const expire = Effect.fnUntraced(function* (box: SandboxRecord, reason: string) {
    const gone = yield* transaction(
      Effect.gen(function* () {
        const current = yield* sandboxStore.sandboxById(box.tenant_id, box.id)
        if (!current) return false
        yield* sandboxStore.deleteSandbox(box.id)
        return true
      })
    )
    if (!gone) return
    log.info("sandbox expired", { sandbox_id: box.id, name: box.name, reason })
    yield* boxesDeleted([box.id])
  })

  const sweep = Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    for (const box of yield* sandboxStore.sandboxesWithRetention()) {
      if (box.status === "deleting") continue
      if ((box.ttl_seconds ?? 0) > 0 && now >= Date.parse(box.created_at) + box.ttl_seconds! * 1000) {
        yield* expire(box, `ttl_seconds ${box.ttl_seconds} passed`)
      } else if (box.status === "stopped" && (box.delete_after_stop_seconds ?? 0) > 0 && box.stopped_at !== null && now >= Date.parse(box.stopped_at) + box.delete_after_stop_seconds! * 1000) {
        yield* expire(box, `stopped for delete_after_stop_seconds ${box.delete_after_stop_seconds}`)
      } else if (box.status === "ready" && (box.idle_ttl_seconds ?? 0) > 0 && (local.has(box.id) || !replicas.shared)) {
        // Only the process that runs the box (and so serves its dataplane) knows when it was last used.
        const lastActive = Math.max(activity.get(box.id) ?? 0, Date.parse(box.updated_at))
        if (now >= lastActive + box.idle_ttl_seconds! * 1000) {
          log.info("sandbox idle: stopping", { sandbox_id: box.id, name: box.name, idle_ttl_seconds: box.idle_ttl_seconds })
          yield* request(box, { _tag: "Stop" })
        }
      }
    }
  }).pipe(Effect.catch((error) => Effect.sync(() => log.warn("sandbox retention sweep failed", { error: error.message }))))

  const intervalMs = sweepInterval()
  yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(intervalMs), sweep)))

  /**
   * With several replicas: this replica runs what the store says it runs (boxes placed here by
   * another replica start, boxes stopped, deleted or moved elsewhere end), and the boxes of
   * replicas that stopped answering are failed with the reason. One round at a time.
   */
  const rounds = yield* Semaphore.make(1)
  const reconcile = rounds.withPermits(1)(
    Effect.gen(function* () {
      if (!replicas.shared) return
      const owned = new Map((yield* cluster.boxesOf(me)).map((row) => [row.id, row]))
      for (const row of owned.values()) {
        if (!wantsRunning(row.status as BoxLifecycle) || local.has(row.id)) continue
        const box = yield* sandboxStore.sandboxById(row.tenant_id, row.id)
        if (box && wantsRunning(box.status)) yield* startHere(box)
      }
      for (const id of [...local]) {
        const row = owned.get(id)
        if (row && wantsRunning(row.status as BoxLifecycle)) continue
        if (row) yield* stopHere(id)
        else {
          // Deleted, or placed on another replica: nothing of it stays here.
          local.delete(id)
          tenants.delete(id)
          yield* Effect.andThen(dataplane.release(id), driver.teardown(id))
        }
      }
      for (const orphan of yield* cluster.orphanedBoxes(replicas.leaseMs)) {
        if (orphan.replica_id === null) {
          // Written before ownership existed: it runs where it is placed now.
          const box = yield* sandboxStore.sandboxById(orphan.tenant_id, orphan.id)
          if (box) yield* start(box)
          continue
        }
        const message = replicaGoneMessage(orphan.replica_id, orphan.replica)
        const failed = yield* apply(orphan.tenant_id, orphan.id, { _tag: "Failed", message })
        if (failed?.status === "failed") log.warn("sandbox failed: its replica stopped answering", { sandbox_id: orphan.id, replica: orphan.replica_id })
      }
    })
  ).pipe(Effect.catch((error) => Effect.sync(() => log.warn("sandbox ownership round failed", { error: error.message }))))

  if (replicas.shared) {
    const every = Math.max(50, Math.floor(replicas.leaseMs / 3))
    yield* Effect.forkScoped(reconcile.pipe(Effect.repeat(Schedule.spaced(every))))
    yield* replicas.listen("boxes", reconcile)
  }


  return SandboxController.of({
    boxesCreated: (created) => Effect.forEach(created, start, { discard: true }),
    boxesDeleted,
    request,
    snapshotCreated,
    snapshotDeleted: (snapshot) =>
      snapshot.source_sandbox_id !== null && snapshot.image_digest !== null ? Effect.asVoid(Effect.forkDetach(driver.discardImage(snapshot.image_digest))) : Effect.void,
    touch: (sandboxId) => void activity.set(sandboxId, clock.currentTimeMillisUnsafe()),
    sweep,
    locate,
    reconcile,
    awaitSettled: Effect.fnUntraced(function* (tenantId, sandboxId, timeoutMs) {
      const deadline = (yield* Clock.currentTimeMillis) + timeoutMs
      for (;;) {
        const deferred = Deferred.makeUnsafe<void>()
        let waiting = waiters.get(sandboxId)
        if (!waiting) waiters.set(sandboxId, (waiting = new Set()))
        waiting.add(deferred)
        const box = yield* sandboxStore.sandboxById(tenantId, sandboxId)
        const remaining = deadline - (yield* Clock.currentTimeMillis)
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
