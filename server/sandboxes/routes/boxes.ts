/**
 * `/v2/sandboxes/boxes`: sandboxes, their status, and start/stop. A box is made from a template
 * (the spec) or, in the current sandbox model, from a snapshot or the default image with its own
 * resources and retention settings (docs/sandboxes.md, "Snapshots").
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import {
  Api,
  boxFailureKind,
  checkBoxTemplate,
  checkVolumeAttachment,
  type CreateBox,
  defaultMemBytes,
  defaultVcpus,
  Pagination,
  planPoolScale,
  SandboxCreationFailed,
  SandboxTimeout,
  SandboxValidationError,
  sandboxPage,
  snapshotNameCandidates
} from "../../../core/index.ts"
import { implement, now } from "../../module.ts"
import type { BoxRetention, SandboxRecord } from "../../store/SandboxStore.ts"
import type { SnapshotRecord } from "../../store/SnapshotStore.ts"
import { found, notFound, taken } from "../wire.ts"
import type { SandboxRouteContext } from "../routeContext.ts"

/** Writable layer of a box made from the default image when no `fs_capacity_bytes` is sent. */
export const defaultFsCapacityBytes = 1024 ** 3

/** Null and absent both mean "not set". */
const retentionOf = (body: { readonly ttl_seconds?: number | null; readonly idle_ttl_seconds?: number | null; readonly delete_after_stop_seconds?: number | null }): Partial<BoxRetention> => ({
  ...(body.ttl_seconds != null ? { ttl_seconds: body.ttl_seconds } : {}),
  ...(body.idle_ttl_seconds != null ? { idle_ttl_seconds: body.idle_ttl_seconds } : {}),
  ...(body.delete_after_stop_seconds != null ? { delete_after_stop_seconds: body.delete_after_stop_seconds } : {})
})

const invalid = (message: string) => new SandboxValidationError({ message })

export const boxRoutes = ({ transaction, sandboxStore, volumeStore, templateStore, poolStore, snapshotStore, controller, sandboxJson, freeSandboxName, launch, defaultSandboxImage }: SandboxRouteContext) => {
  const mustGetBox = (tenantId: string, name: string) => sandboxStore.sandboxByName(tenantId, name).pipe(Effect.flatMap(found("sandbox", name)))

  /**
   * Inside the create's transaction: the name a create asks for is free, or held by a box that
   * failed, which the new box replaces (its row goes here, its remains once committed: answers its
   * id). Any other holder is a 409.
   */
  const takeName = Effect.fnUntraced(function* (tenantId: string, name: string | undefined) {
    if (name === undefined) return undefined
    const holder = yield* sandboxStore.sandboxByName(tenantId, name)
    if (!holder) return undefined
    if (holder.status !== "failed") return yield* taken("sandbox", name)
    yield* sandboxStore.deleteSandbox(holder.id)
    return holder.id
  })

  /**
   * The answer to a create: the box as stored now. With `wait_for_ready`, a box that failed is a
   * 422 naming why (the clients' creation error), one still starting after `timeout` a 408.
   */
  const created = Effect.fnUntraced(function* (tenantId: string, launched: SandboxRecord, body: CreateBox) {
    const stored = yield* sandboxStore.sandboxById(tenantId, launched.id)
    if (!body.wait_for_ready) return sandboxJson(stored ?? launched)
    // Deleted while it was starting.
    if (!stored) return yield* notFound("sandbox", launched.name)
    const box = stored
    if (box.status === "failed") {
      return yield* new SandboxCreationFailed({ reason: boxFailureKind(box.status_message), message: `sandbox ${box.name} failed: ${box.status_message ?? "unknown error"}` })
    }
    if (box.status === "provisioning") {
      return yield* new SandboxTimeout({
        message: `sandbox ${box.name} is not ready after ${body.timeout} s (${box.status_message ?? "provisioning"}); it goes on starting: GET /v2/sandboxes/boxes/${box.name}/status`
      })
    }
    return sandboxJson(box)
  })

  /** The snapshot a create names (by id or name reference), ready; 404 when there is none. */
  const snapshotFor = Effect.fnUntraced(function* (tenantId: string, body: CreateBox) {
    let snapshot: SnapshotRecord | undefined
    let label: string
    if (body.snapshot_id != null) {
      label = body.snapshot_id
      snapshot = yield* snapshotStore.snapshotById(tenantId, body.snapshot_id)
    } else {
      label = body.snapshot_name!
      for (const candidate of snapshotNameCandidates(label)) {
        snapshot ??= yield* snapshotStore.snapshotByName(tenantId, candidate)
      }
    }
    if (!snapshot) return yield* notFound("snapshot", label)
    if (snapshot.status === "building") return yield* invalid(`snapshot ${snapshot.name} is still building; wait until it is ready`)
    if (snapshot.status === "failed") return yield* invalid(`snapshot ${snapshot.name} failed to build: ${snapshot.status_message ?? "unknown error"}`)
    return snapshot
  })

  /** A box of the current model: from a snapshot, or the default image when the body names none. */
  const createImageBox = Effect.fnUntraced(function* (tenantId: string, body: CreateBox) {
    const snapshot = body.snapshot_id != null || body.snapshot_name != null ? yield* snapshotFor(tenantId, body) : undefined
    if (snapshot && body.fs_capacity_bytes != null && body.fs_capacity_bytes < snapshot.fs_capacity_bytes) {
      return yield* invalid(`fs_capacity_bytes ${body.fs_capacity_bytes} is smaller than snapshot ${snapshot.name}'s ${snapshot.fs_capacity_bytes}`)
    }
    const replaced = yield* takeName(tenantId, body.name)
    const name = body.name ?? (yield* freeSandboxName(tenantId, "sandbox"))
    const at = now()
    const id = randomUUID()
    yield* sandboxStore.insertSandbox({
      id,
      tenant_id: tenantId,
      name,
      template_id: null,
      pool_id: null,
      status: "provisioning",
      status_message: null,
      created_at: at,
      updated_at: at,
      snapshot_id: snapshot?.id ?? null,
      image: snapshot?.docker_image ?? defaultSandboxImage,
      vcpus: body.vcpus ?? defaultVcpus,
      mem_bytes: body.mem_bytes ?? defaultMemBytes,
      fs_capacity_bytes: body.fs_capacity_bytes ?? snapshot?.fs_capacity_bytes ?? defaultFsCapacityBytes,
      ...retentionOf(body)
    })
    return { box: (yield* sandboxStore.sandboxById(tenantId, id))!, replaced }
  })

  /**
   * Inside the create's transaction: takes the oldest `ready` box of the tenant's pools of this
   * template out of its pool under `name`, and inserts the pool's replacement (in `provisioning`,
   * started after the commit). Undefined when no pool of the template has a ready box.
   */
  const claimWarm = Effect.fnUntraced(function* (tenantId: string, templateId: string, name: string, at: string) {
    // A few candidates: under PostgreSQL a concurrent claim may take one between the read and the update.
    const candidates = yield* sandboxStore.readyPoolSandboxes(tenantId, templateId, 4)
    for (const candidate of candidates) {
      if (!(yield* sandboxStore.claimSandbox(candidate, name, at))) continue
      const pool = candidate.pool_name === null ? undefined : yield* poolStore.poolByName(tenantId, candidate.pool_name)
      const replacements: Array<SandboxRecord> = []
      if (pool) {
        const members = yield* sandboxStore.poolSandboxes(pool.id)
        const { create } = planPoolScale(members.map((member) => member.name), pool.replicas)
        for (let index = 0; index < create; index++) {
          const replacement = { id: randomUUID(), tenant_id: tenantId, name: yield* freeSandboxName(tenantId, pool.name), template_id: pool.template_id, pool_id: pool.id, status: "provisioning" as const, status_message: null, created_at: at, updated_at: at }
          yield* sandboxStore.insertSandbox(replacement)
          replacements.push((yield* sandboxStore.sandboxById(tenantId, replacement.id))!)
        }
      }
      return { box: (yield* sandboxStore.sandboxById(tenantId, candidate.id))!, replacements }
    }
    return undefined
  })

  return [
    implement(Api.createBox, Effect.fnUntraced(function* ({ body }, { auth }) {
      const tenantId = auth.tenantId
      const sources = [body.template_name, body.snapshot_id, body.snapshot_name].filter((value) => value != null)
      if (sources.length > 1) return yield* invalid("send at most one of template_name, snapshot_id and snapshot_name")
      if (body.template_name === undefined) {
        const { box, replaced } = yield* transaction(createImageBox(tenantId, body))
        if (replaced !== undefined) yield* controller.boxesDeleted([replaced])
        const [launched] = yield* launch(tenantId, [box], body)
        return yield* created(tenantId, launched ?? box, body)
      }
      if (body.vcpus != null || body.mem_bytes != null || body.fs_capacity_bytes != null) {
        return yield* invalid("vcpus, mem_bytes and fs_capacity_bytes apply to boxes made from a snapshot; a template sets its own resources")
      }
      const templateName = body.template_name
      const { box, claimed, replacements, replaced } = yield* transaction(
        Effect.gen(function* () {
          const template = yield* Effect.fromResult(checkBoxTemplate(templateName, yield* templateStore.templateByName(tenantId, templateName)))
          // The rule pools follow too: a volume attaches to a single sandbox.
          const attached = template.mounts.length === 0 ? [] : yield* volumeStore.volumesAttached(template.mounts.map((mount) => mount.volume_id))
          yield* Effect.fromResult(checkVolumeAttachment(template.name, { volume_mounts: template.mounts }, "box", attached))
          const replaced = yield* takeName(tenantId, body.name)
          const name = body.name ?? (yield* freeSandboxName(tenantId, template.name))
          const at = now()
          const retention = retentionOf(body)
          // Warm claim: a ready box of one of the tenant's pools of this template is handed over.
          const warm = template.mounts.length === 0 ? yield* claimWarm(tenantId, template.id, name, at) : undefined
          if (warm) {
            if (Object.keys(retention).length > 0) yield* sandboxStore.updateSandboxRetention(warm.box.id, retention, at)
            return { box: (yield* sandboxStore.sandboxById(tenantId, warm.box.id))!, claimed: true, replacements: warm.replacements, replaced }
          }
          const id = randomUUID()
          yield* sandboxStore.insertSandbox({
            id,
            tenant_id: tenantId,
            name,
            template_id: template.id,
            pool_id: null,
            status: "provisioning",
            status_message: null,
            created_at: at,
            updated_at: at,
            ...retention
          })
          return { box: (yield* sandboxStore.sandboxById(tenantId, id))!, claimed: false, replacements: [] as ReadonlyArray<SandboxRecord>, replaced }
        })
      )
      if (replaced !== undefined) yield* controller.boxesDeleted([replaced])
      if (claimed) {
        // The pool starts a box in place of the one handed over; the claimed box is ready already.
        yield* controller.boxesCreated(replacements)
        return sandboxJson(box)
      }
      const [launched] = yield* launch(tenantId, [box], body)
      // A driver that provisions at once (simulated) has moved the box already: answer what is stored.
      return yield* created(tenantId, launched ?? box, body)
    })),

    implement(Api.listBoxes, ({ query }, { auth }) => {
      const page = Pagination.resolve(query, sandboxPage)
      const filter = {
        ...(query.name_contains !== undefined && query.name_contains !== "" ? { nameContains: query.name_contains } : {}),
        ...(query.status !== undefined ? { status: query.status } : {})
      }
      // Unfiltered pages keep the indexed deep-offset path; filtered ones walk the matches.
      const boxes = Object.keys(filter).length === 0 ? sandboxStore.listSandboxes(auth.tenantId, page) : sandboxStore.listSandboxesMatching(auth.tenantId, { ...page, ...filter })
      return Effect.map(boxes, (found) => Pagination.response("sandboxes", found.map(sandboxJson), page))
    }),

    implement(Api.getBox, ({ params }, { auth }) => Effect.map(mustGetBox(auth.tenantId, params.name), sandboxJson)),

    implement(Api.updateBox, ({ params, body }, { auth }) =>
      transaction(
        Effect.gen(function* () {
          const box = yield* mustGetBox(auth.tenantId, params.name)
          const retention = retentionOf(body)
          const rename = body.name !== undefined && body.name !== box.name
          if (!rename && Object.keys(retention).length === 0) return sandboxJson(box)
          const at = now()
          if (rename) {
            if (yield* sandboxStore.sandboxNameTaken(auth.tenantId, body.name!)) return yield* taken("sandbox", body.name!)
            yield* sandboxStore.renameSandbox(box, body.name!, at)
          }
          if (Object.keys(retention).length > 0) yield* sandboxStore.updateSandboxRetention(box.id, retention, at)
          return sandboxJson((yield* sandboxStore.sandboxById(auth.tenantId, box.id))!)
        })
      )
    ),

    implement(Api.deleteBox, Effect.fnUntraced(function* ({ params }, { auth }) {
      const id = yield* transaction(
        Effect.gen(function* () {
          const box = yield* mustGetBox(auth.tenantId, params.name)
          yield* sandboxStore.deleteSandbox(box.id)
          return box.id
        })
      )
      yield* controller.boxesDeleted([id])
    })),

    implement(Api.getBoxStatus, ({ params }, { auth }) =>
      Effect.map(mustGetBox(auth.tenantId, params.name), (box) => ({ status: box.status, status_message: box.status_message }))
    ),

    implement(Api.startBox, ({ params }, { auth }) =>
      Effect.flatMap(mustGetBox(auth.tenantId, params.name), (box) => Effect.map(controller.request(box, { _tag: "Start" }), sandboxJson))
    ),

    implement(Api.stopBox, ({ params }, { auth }) =>
      Effect.flatMap(mustGetBox(auth.tenantId, params.name), (box) => Effect.map(controller.request(box, { _tag: "Stop" }), sandboxJson))
    )
  ]
}
