/** `/v2/sandboxes/boxes`: sandboxes, their status, and start/stop. */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { Api, checkBoxTemplate, checkVolumeAttachment, Pagination, planPoolScale, sandboxPage } from "../../../core/index.ts"
import { implement, now } from "../../module.ts"
import type { SandboxRecord } from "../../store/SandboxStore.ts"
import { found, type SandboxShared, taken } from "../shared.ts"

export const boxRoutes = ({ store, controller, sandboxJson, freeSandboxName, launch }: SandboxShared) => {
  const mustGetBox = (tenantId: string, name: string) => store.sandboxByName(tenantId, name).pipe(Effect.flatMap(found("sandbox", name)))

  /**
   * Inside the create's transaction: takes the oldest `ready` box of the tenant's pools of this
   * template out of its pool under `name`, and inserts the pool's replacement (in `provisioning`,
   * started after the commit). Undefined when no pool of the template has a ready box.
   */
  const claimWarm = (tenantId: string, templateId: string, name: string, at: string) =>
    Effect.gen(function* () {
      // A few candidates: under PostgreSQL a concurrent claim may take one between the read and the update.
      const candidates = yield* store.readyPoolSandboxes(tenantId, templateId, 4)
      for (const candidate of candidates) {
        if (!(yield* store.claimSandbox(candidate, name, at))) continue
        const pool = candidate.pool_name === null ? undefined : yield* store.poolByName(tenantId, candidate.pool_name)
        const replacements: Array<SandboxRecord> = []
        if (pool) {
          const members = yield* store.poolSandboxes(pool.id)
          const { create } = planPoolScale(members.map((member) => member.name), pool.replicas)
          for (let index = 0; index < create; index++) {
            const replacement = { id: randomUUID(), tenant_id: tenantId, name: yield* freeSandboxName(tenantId, pool.name), template_id: pool.template_id, pool_id: pool.id, status: "provisioning" as const, status_message: null, created_at: at, updated_at: at }
            yield* store.insertSandbox(replacement)
            replacements.push((yield* store.sandboxById(tenantId, replacement.id))!)
          }
        }
        return { box: (yield* store.sandboxById(tenantId, candidate.id))!, replacements }
      }
      return undefined
    })

  return [
    implement(Api.createBox, ({ body }, { auth }) =>
      Effect.gen(function* () {
        const tenantId = auth.tenantId
        const { box, claimed, replacements } = yield* store.transaction(
          Effect.gen(function* () {
            const template = yield* Effect.fromResult(checkBoxTemplate(body.template_name, yield* store.templateByName(tenantId, body.template_name)))
            // The rule pools follow too: a volume attaches to a single sandbox.
            const attached = template.mounts.length === 0 ? [] : yield* store.volumesAttached(template.mounts.map((mount) => mount.volume_id))
            yield* Effect.fromResult(checkVolumeAttachment(template.name, { volume_mounts: template.mounts }, "box", attached))
            if (body.name !== undefined && (yield* store.sandboxNameTaken(tenantId, body.name))) return yield* taken("sandbox", body.name)
            const name = body.name ?? (yield* freeSandboxName(tenantId, template.name))
            const at = now()
            // Warm claim: a ready box of one of the tenant's pools of this template is handed over.
            const warm = template.mounts.length === 0 ? yield* claimWarm(tenantId, template.id, name, at) : undefined
            if (warm) return { box: warm.box, claimed: true, replacements: warm.replacements }
            const id = randomUUID()
            yield* store.insertSandbox({ id, tenant_id: tenantId, name, template_id: template.id, pool_id: null, status: "provisioning", status_message: null, created_at: at, updated_at: at })
            return { box: (yield* store.sandboxById(tenantId, id))!, claimed: false, replacements: [] as ReadonlyArray<SandboxRecord> }
          })
        )
        if (claimed) {
          // The pool starts a box in place of the one handed over; the claimed box is ready already.
          yield* controller.boxesCreated(replacements)
          return sandboxJson(box)
        }
        const [launched] = yield* launch(tenantId, [box], body)
        // A driver that provisions at once (simulated) has moved the box already: answer what is stored.
        return sandboxJson((yield* store.sandboxById(tenantId, box.id)) ?? launched!)
      })
    ),

    implement(Api.listBoxes, ({ query }, { auth }) => {
      const page = Pagination.resolve(query, sandboxPage)
      return Effect.map(store.listSandboxes(auth.tenantId, page), (boxes) => Pagination.response("sandboxes", boxes.map(sandboxJson), page))
    }),

    implement(Api.getBox, ({ params }, { auth }) => Effect.map(mustGetBox(auth.tenantId, params.name), sandboxJson)),

    implement(Api.updateBox, ({ params, body }, { auth }) =>
      store.transaction(
        Effect.gen(function* () {
          const box = yield* mustGetBox(auth.tenantId, params.name)
          if (body.name === box.name) return sandboxJson(box)
          if (yield* store.sandboxNameTaken(auth.tenantId, body.name)) return yield* taken("sandbox", body.name)
          yield* store.renameSandbox(box, body.name, now())
          return sandboxJson((yield* store.sandboxByName(auth.tenantId, body.name))!)
        })
      )
    ),

    implement(Api.deleteBox, ({ params }, { auth }) =>
      Effect.gen(function* () {
        const id = yield* store.transaction(
          Effect.gen(function* () {
            const box = yield* mustGetBox(auth.tenantId, params.name)
            yield* store.deleteSandbox(box.id)
            return box.id
          })
        )
        yield* controller.boxesDeleted([id])
      })
    ),

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
