/**
 * `/v2/sandboxes/snapshots` (docs/sandboxes.md, "Snapshots"): a snapshot is an image reference
 * plus a filesystem capacity. Create commits it `building` and hands it to the controller, which
 * pulls the image through the driver (the local runtime's image store, shared with templates)
 * and moves it to `ready` or `failed`. Capturing a box as a snapshot is refused (unsupported).
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { Api, isUuid, Pagination, ResourceInUse, SandboxUnsupported, snapshotNameCandidates, snapshotPage, type Snapshot } from "../../../core/index.ts"
import { implement, now } from "../../module.ts"
import type { SnapshotRecord } from "../../store/SandboxStore.ts"
import { found, notFound, type SandboxShared, taken } from "../shared.ts"

export const snapshotJson = (record: SnapshotRecord): typeof Snapshot.Encoded => ({
  id: record.id,
  name: record.name,
  docker_image: record.docker_image,
  image_digest: record.image_digest,
  fs_capacity_bytes: record.fs_capacity_bytes,
  status: record.status,
  status_message: record.status_message,
  created_at: record.created_at,
  updated_at: record.updated_at
})

export const snapshotRoutes = ({ store, controller, driver }: SandboxShared) => {
  /** By id (a uuid), else by name (a bare name also finds `name:latest`). */
  const snapshotOf = (tenantId: string, reference: string) =>
    Effect.gen(function* () {
      if (isUuid(reference)) {
        const byId = yield* store.snapshotById(tenantId, reference.toLowerCase())
        if (byId) return byId
      }
      for (const candidate of snapshotNameCandidates(reference)) {
        const byName = yield* store.snapshotByName(tenantId, candidate)
        if (byName) return byName
      }
      return yield* notFound("snapshot", reference)
    })

  return [
    implement(Api.createSnapshot, ({ body }, { auth }) =>
      Effect.gen(function* () {
        const tenantId = auth.tenantId
        const snapshot = yield* store.transaction(
          Effect.gen(function* () {
            if (yield* store.snapshotByName(tenantId, body.name)) return yield* taken("snapshot", body.name)
            const at = now()
            const record: SnapshotRecord = {
              id: randomUUID(),
              tenant_id: tenantId,
              name: body.name,
              docker_image: body.docker_image,
              image_digest: null,
              fs_capacity_bytes: body.fs_capacity_bytes,
              status: "building",
              status_message: driver.name === "simulated" ? null : `pulling image ${body.docker_image}`,
              created_at: at,
              updated_at: at
            }
            yield* store.insertSnapshot(record)
            return record
          })
        )
        yield* controller.snapshotCreated(snapshot)
        // A driver that pulls nothing (simulated) may have finished already: answer what is stored.
        return snapshotJson((yield* store.snapshotById(tenantId, snapshot.id)) ?? snapshot)
      })
    ),

    implement(Api.listSnapshots, ({ query }, { auth }) => {
      const page = Pagination.resolve(query, snapshotPage)
      const filter = {
        ...(query.name_contains !== undefined && query.name_contains !== "" ? { nameContains: query.name_contains } : {}),
        ...(query.status !== undefined ? { status: query.status } : {})
      }
      return Effect.map(store.listSnapshots(auth.tenantId, { ...page, ...filter }), (snapshots) => Pagination.response("snapshots", snapshots.map(snapshotJson), page))
    }),

    implement(Api.getSnapshot, ({ params }, { auth }) => Effect.map(snapshotOf(auth.tenantId, params.snapshot_id), snapshotJson)),

    implement(Api.deleteSnapshot, ({ params }, { auth }) =>
      store.transaction(
        Effect.gen(function* () {
          const snapshot = yield* snapshotOf(auth.tenantId, params.snapshot_id)
          const used = yield* store.snapshotUsage(snapshot.id)
          if (used > 0) {
            return yield* new ResourceInUse({
              message: `snapshot ${snapshot.name} is used by ${used} sandbox${used === 1 ? "" : "es"}; delete ${used === 1 ? "it" : "them"} first`
            })
          }
          // The image stays in the image store: templates and other snapshots may use it.
          yield* store.deleteSnapshot(snapshot.id)
        })
      )
    ),

    implement(Api.captureSnapshot, ({ params }, { auth }) =>
      Effect.gen(function* () {
        yield* store.sandboxByName(auth.tenantId, params.name).pipe(Effect.flatMap(found("sandbox", params.name)))
        return yield* new SandboxUnsupported({
          message:
            "capturing a sandbox as a snapshot is not supported by Slipway: boxes run on a shared read-only image with a private writable layer, and Slipway does not turn that layer into an image. Create a snapshot from an image reference instead (POST /v2/sandboxes/snapshots)"
        })
      })
    )
  ]
}
