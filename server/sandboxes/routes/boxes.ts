/** `/v2/sandboxes/boxes`: sandboxes, their status, and start/stop. */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { Api, checkBoxTemplate, checkVolumeAttachment, Pagination, sandboxPage } from "../../../core/index.ts"
import { implement, now } from "../../module.ts"
import { found, type SandboxShared, taken } from "../shared.ts"

export const boxRoutes = ({ store, controller, sandboxJson, freeSandboxName, launch }: SandboxShared) => {
  const mustGetBox = (tenantId: string, name: string) => store.sandboxByName(tenantId, name).pipe(Effect.flatMap(found("sandbox", name)))

  return [
    implement(Api.createBox, ({ body }, { auth }) =>
      Effect.gen(function* () {
        const tenantId = auth.tenantId
        const box = yield* store.transaction(
          Effect.gen(function* () {
            const template = yield* Effect.fromResult(checkBoxTemplate(body.template_name, yield* store.templateByName(tenantId, body.template_name)))
            // The rule pools follow too: a volume attaches to a single sandbox.
            const attached = template.mounts.length === 0 ? [] : yield* store.volumesAttached(template.mounts.map((mount) => mount.volume_id))
            yield* Effect.fromResult(checkVolumeAttachment(template.name, { volume_mounts: template.mounts }, "box", attached))
            if (body.name !== undefined && (yield* store.sandboxNameTaken(tenantId, body.name))) return yield* taken("sandbox", body.name)
            const name = body.name ?? (yield* freeSandboxName(tenantId, template.name))
            const at = now()
            const id = randomUUID()
            yield* store.insertSandbox({ id, tenant_id: tenantId, name, template_id: template.id, pool_id: null, status: "provisioning", status_message: null, created_at: at, updated_at: at })
            return (yield* store.sandboxById(tenantId, id))!
          })
        )
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
