/**
 * `/v2/sandboxes/snapshots` (docs/sandboxes.md, "Snapshots"): a snapshot is an image reference
 * plus a filesystem capacity. Create commits it `building` and hands it to the controller, which
 * pulls the image through the driver (the local runtime's image store, shared with templates)
 * and moves it to `ready` or `failed`. A capture (`POST /boxes/{name}/snapshot`) does the same
 * with a running box's filesystem, which the driver copies into the image store.
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import {
  Api,
  isUuid,
  Pagination,
  ResourceInUse,
  SandboxUnsupported,
  SandboxValidationError,
  snapshotNameCandidates,
  snapshotPage,
  type Snapshot
} from "../../../core/index.ts"
import { implement, now } from "../../module.ts"
import type { SnapshotRecord } from "../../store/SnapshotStore.ts"
import { found, notFound, taken } from "../wire.ts"
import type { SandboxRouteContext } from "../routeContext.ts"
import { defaultFsCapacityBytes } from "./boxes.ts"

export const snapshotJson = (record: SnapshotRecord): typeof Snapshot.Encoded => ({
  id: record.id,
  name: record.name,
  docker_image: record.docker_image,
  image_digest: record.image_digest,
  fs_capacity_bytes: record.fs_capacity_bytes,
  status: record.status,
  status_message: record.status_message,
  ...(record.source_sandbox_id !== null ? { source_sandbox_id: record.source_sandbox_id } : {}),
  created_at: record.created_at,
  updated_at: record.updated_at
})

export const snapshotRoutes = ({ transaction, sandboxStore, templateStore, snapshotStore, controller, driver }: SandboxRouteContext) => {
  /** By id (a uuid), else by name (a bare name also finds `name:latest`). */
  const snapshotOf = Effect.fnUntraced(function* (tenantId: string, reference: string) {
    if (isUuid(reference)) {
      const byId = yield* snapshotStore.snapshotById(tenantId, reference.toLowerCase())
      if (byId) return byId
    }
    for (const candidate of snapshotNameCandidates(reference)) {
      const byName = yield* snapshotStore.snapshotByName(tenantId, candidate)
      if (byName) return byName
    }
    return yield* notFound("snapshot", reference)
  })

  /** Inside a create's transaction: the snapshot, `building` (its message only where a driver builds images). */
  const insertBuilding = (
    tenantId: string,
    fields: Pick<SnapshotRecord, "name" | "docker_image" | "fs_capacity_bytes" | "status_message" | "source_sandbox_id">
  ) =>
    Effect.gen(function* () {
      const at = now()
      const record: SnapshotRecord = {
        ...fields,
        id: randomUUID(),
        tenant_id: tenantId,
        image_digest: null,
        status: "building",
        status_message: driver.name === "simulated" ? null : fields.status_message,
        created_at: at,
        updated_at: at
      }
      yield* snapshotStore.insertSnapshot(record)
      return record
    })

  /** After the commit: the build starts; a driver that builds nothing (simulated) may have finished already, so answer what is stored. */
  const started = Effect.fnUntraced(function* (snapshot: SnapshotRecord) {
    yield* controller.snapshotCreated(snapshot)
    return snapshotJson((yield* snapshotStore.snapshotById(snapshot.tenant_id, snapshot.id)) ?? snapshot)
  })

  return [
    implement(Api.createSnapshot, Effect.fnUntraced(function* ({ body }, { auth }) {
      const tenantId = auth.tenantId
      const snapshot = yield* transaction(
        Effect.gen(function* () {
          if (yield* snapshotStore.snapshotByName(tenantId, body.name)) return yield* taken("snapshot", body.name)
          return yield* insertBuilding(tenantId, {
            name: body.name,
            docker_image: body.docker_image,
            fs_capacity_bytes: body.fs_capacity_bytes,
            status_message: `pulling image ${body.docker_image}`,
            source_sandbox_id: null
          })
        })
      )
      return yield* started(snapshot)
    })),

    implement(Api.listSnapshots, ({ query }, { auth }) => {
      const page = Pagination.resolve(query, snapshotPage)
      const filter = {
        ...(query.name_contains !== undefined && query.name_contains !== "" ? { nameContains: query.name_contains } : {}),
        ...(query.status !== undefined ? { status: query.status } : {})
      }
      return Effect.map(snapshotStore.listSnapshots(auth.tenantId, { ...page, ...filter }), (snapshots) => Pagination.response("snapshots", snapshots.map(snapshotJson), page))
    }),

    implement(Api.getSnapshot, ({ params }, { auth }) => Effect.map(snapshotOf(auth.tenantId, params.snapshot_id), snapshotJson)),

    implement(Api.deleteSnapshot, Effect.fnUntraced(function* ({ params }, { auth }) {
      const deleted = yield* transaction(
        Effect.gen(function* () {
          const snapshot = yield* snapshotOf(auth.tenantId, params.snapshot_id)
          const used = yield* snapshotStore.snapshotUsage(snapshot.id)
          if (used > 0) {
            return yield* new ResourceInUse({
              message: `snapshot ${snapshot.name} is used by ${used} sandbox${used === 1 ? "" : "es"}; delete ${used === 1 ? "it" : "them"} first`
            })
          }
          // A pulled image stays in the image store (templates and other snapshots may use it); a captured one is the snapshot's alone.
          yield* snapshotStore.deleteSnapshot(snapshot.id)
          return snapshot
        })
      )
      yield* controller.snapshotDeleted(deleted)
    })),

    implement(Api.captureSnapshot, Effect.fnUntraced(function* ({ params, body }, { auth }) {
      const tenantId = auth.tenantId
      const snapshot = yield* transaction(
        Effect.gen(function* () {
          const box = yield* sandboxStore.sandboxByName(tenantId, params.name).pipe(Effect.flatMap(found("sandbox", params.name)))
          if (body.docker_image != null) {
            return yield* new SandboxUnsupported({
              message: "capturing docker_image (an image built by a Docker daemon inside the sandbox) is not supported by Slipway: its boxes run no Docker daemon. Omit docker_image to capture the sandbox's own filesystem"
            })
          }
          if (box.status !== "ready") {
            return yield* new SandboxValidationError({ message: `sandbox ${box.name} is ${box.status}; only a ready (running) sandbox can be captured` })
          }
          if (yield* snapshotStore.snapshotByName(tenantId, body.name)) return yield* taken("snapshot", body.name)
          const template = box.template_id === null ? undefined : yield* templateStore.templateById(box.template_id)
          return yield* insertBuilding(tenantId, {
            name: body.name,
            docker_image: box.image ?? template?.image ?? "",
            fs_capacity_bytes:
              body.fs_capacity_bytes ?? box.fs_capacity_bytes ?? (template?.storage_bytes != null ? Number(template.storage_bytes) : defaultFsCapacityBytes),
            status_message: `capturing sandbox ${box.name}`,
            source_sandbox_id: box.id
          })
        })
      )
      return yield* started(snapshot)
    }))
  ]
}
