/** `/v2/sandboxes/volumes`: storage of a size, within the organization's quota. */
import { randomUUID } from "node:crypto"
import { Effect, Schedule } from "effect"
import { Api, checkVolumeCreate, type PatchVolume, ServerError, checkVolumeDeletable, formatQuantity, Pagination, planVolumeResize, resolveStorageClass, sandboxPage } from "../../../core/index.ts"
import { implement, now } from "../../module.ts"
import type { AuthContext } from "../../store/KeyStore.ts"
import type { VolumeRecord } from "../../store/SandboxVolumeStore.ts"
import type { VolumeError } from "../Driver.ts"
import { exactBytes, found, storedQuantity, taken, volumeJson } from "../wire.ts"
import type { SandboxRouteContext } from "../routeContext.ts"

/** The runtime could not make or grow the storage: the row is put back and the caller told why. */
const storageFailed = (error: VolumeError) => new ServerError({ status: 503, message: `Volume storage unavailable: ${error.message}` })

export const volumeRoutes = ({ transaction, volumeStore, driver, config, storage, replicas, cluster, onVolumeHolder, log }: SandboxRouteContext) => {
  /** PATCH, inside its transaction: the volume before and after (the same record when nothing changes). */
  const updateInTransaction = Effect.fnUntraced(function* (auth: AuthContext, name: string, body: PatchVolume) {
    const volume = yield* volumeStore.volumeByName(auth.tenantId, name).pipe(Effect.flatMap(found("volume", name)))
    let next: VolumeRecord = volume
    if (body.size !== undefined) {
      const { usage, quota } = yield* storage(auth.organizationId)
      const plan = yield* Effect.fromResult(planVolumeResize({ name: volume.name, size: storedQuantity(volume.size) }, body.size, usage, quota))
      const bytes = exactBytes(plan.size)
      if (bytes !== volume.size_bytes) next = { ...next, size_bytes: bytes, size: formatQuantity(plan.size) }
    }
    if (body.name !== undefined && body.name !== volume.name) {
      if (yield* volumeStore.volumeByName(auth.tenantId, body.name)) return yield* taken("volume", body.name)
      next = { ...next, name: body.name }
    }
    if (next === volume) return { before: volume, after: volume }
    next = { ...next, updated_at: now() }
    yield* volumeStore.updateVolume(volume, next)
    return { before: volume, after: next }
  })

  return [
    implement(Api.createVolume, Effect.fnUntraced(function* ({ body }, { auth }) {
      const volume = yield* transaction(
      Effect.gen(function* () {
        const storageClass = yield* Effect.fromResult(resolveStorageClass(body.storage_class, config.storageClasses))
        if (yield* volumeStore.volumeByName(auth.tenantId, body.name)) return yield* taken("volume", body.name)
        const { usage, quota } = yield* storage(auth.organizationId)
        yield* Effect.fromResult(checkVolumeCreate(body.size, usage, quota))
        const at = now()
        const volume: VolumeRecord = {
          id: randomUUID(),
          tenant_id: auth.tenantId,
          organization_id: auth.organizationId,
          name: body.name,
          size_bytes: exactBytes(body.size),
          size: formatQuantity(body.size),
          storage_class: storageClass,
          created_at: at,
          updated_at: at
        }
        yield* volumeStore.insertVolume(volume)
        return volume
      })
      )
      // The real storage is made after the commit (a transaction holds no slow I/O); if it cannot be, the row goes.
      yield* driver.createVolume(volume.id, volume.size_bytes).pipe(
        Effect.catch((error) => Effect.andThen(volumeStore.deleteVolume(volume.id), Effect.fail(storageFailed(error))))
      )
      // It lives on this replica's disk: boxes that mount it run here (docs/replicas.md).
      if (replicas.shared && driver.volumesOnThisReplica) yield* cluster.holdVolume(volume.id, replicas.self.id)
      return volumeJson(volume)
    })),

    implement(Api.listVolumes, ({ query }, { auth }) => {
      const page = Pagination.resolve(query, sandboxPage)
      return Effect.map(volumeStore.listVolumes(auth.tenantId, page), (volumes) => Pagination.response("volumes", volumes.map(volumeJson), page))
    }),

    implement(Api.getVolume, ({ params }, { auth }) =>
      volumeStore.volumeByName(auth.tenantId, params.name).pipe(Effect.flatMap(found("volume", params.name)), Effect.map(volumeJson))
    ),

    implement(Api.updateVolume, Effect.fnUntraced(function* ({ params, body }, { auth }) {
      const { before, after } = yield* transaction(updateInTransaction(auth, params.name, body))
      if (after.size_bytes !== before.size_bytes) {
        // Grown after the commit; if the storage cannot grow, the size goes back.
        yield* onVolumeHolder(after.id, { _tag: "resize", sizeBytes: after.size_bytes }).pipe(
          Effect.catch((error) =>
            Effect.andThen(volumeStore.updateVolume(after, { ...after, size_bytes: before.size_bytes, size: before.size }), Effect.fail(storageFailed(error)))
          )
        )
      }
      return volumeJson(after)
    })),

    implement(Api.deleteVolume, ({ params }, { auth }) =>
      transaction(
        Effect.gen(function* () {
          const volume = yield* volumeStore.volumeByName(auth.tenantId, params.name).pipe(Effect.flatMap(found("volume", params.name)))
          yield* Effect.fromResult(checkVolumeDeletable(volume.name, yield* volumeStore.templatesMounting(volume.id)))
          // Where it lives, read before its row goes.
          const [holder] = replicas.shared ? yield* cluster.volumeHolders([volume.id]) : []
          yield* volumeStore.deleteVolume(volume.id)
          return { id: volume.id, holder: holder?.replica_id ?? null }
        })
      ).pipe(
        Effect.flatMap(({ id, holder }) =>
          onVolumeHolder(id, { _tag: "delete" }, holder).pipe(
            // Still mounted by a box that is ending (on this replica or the one that holds it): tried again for a minute.
            Effect.catch(() =>
              Effect.asVoid(
                Effect.forkDetach(
                  onVolumeHolder(id, { _tag: "delete" }, holder).pipe(
                    Effect.retry({ schedule: Schedule.spaced("1 second"), times: 60 }),
                    Effect.catch((error) => Effect.sync(() => log.warn("volume storage not freed", { volume_id: id, error: error.message })))
                  )
                )
              )
            )
          )
        )
      )
    )
  ]
}
