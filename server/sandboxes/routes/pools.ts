/** `/v2/sandboxes/pools`: sets of identical sandboxes from one template, kept at `replicas`. */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { Api, checkPoolTemplate, Pagination, planPoolDeletion, planPoolScale, sandboxPage } from "../../../core/index.ts"
import { implement, now } from "../../module.ts"
import type { SandboxRecord } from "../../store/SandboxStore.ts"
import { found, poolJson, taken } from "../wire.ts"
import type { SandboxRouteContext } from "../routeContext.ts"

export const poolRoutes = ({ transaction, sandboxStore, templateStore, poolStore, controller, freeSandboxName, launch }: SandboxRouteContext) => {
  /** Inside the transaction: `count` new boxes of the pool, in `provisioning`. */
  const addBoxes = Effect.fnUntraced(function* (tenantId: string, prefix: string, templateId: string, poolId: string, count: number, at: string) {
    const created: Array<SandboxRecord> = []
    for (let index = 0; index < count; index++) {
      const name = yield* freeSandboxName(tenantId, prefix)
      const box = { id: randomUUID(), tenant_id: tenantId, name, template_id: templateId, pool_id: poolId, status: "provisioning" as const, status_message: null, created_at: at, updated_at: at }
      yield* sandboxStore.insertSandbox(box)
      created.push((yield* sandboxStore.sandboxById(tenantId, box.id))!)
    }
    return created
  })

  return [
    implement(Api.createPool, Effect.fnUntraced(function* ({ body }, { auth }) {
      const tenantId = auth.tenantId
      const { pool, created } = yield* transaction(
        Effect.gen(function* () {
          const record = yield* templateStore.templateByName(tenantId, body.template_name)
          const template = yield* Effect.fromResult(
            checkPoolTemplate(body.template_name, record && { id: record.id, volume_mounts: record.mounts })
          )
          if (yield* poolStore.poolByName(tenantId, body.name)) return yield* taken("pool", body.name)
          const at = now()
          const id = randomUUID()
          yield* poolStore.insertPool({ id, tenant_id: tenantId, name: body.name, template_id: template.id, replicas: body.replicas, created_at: at, updated_at: at })
          const created = yield* addBoxes(tenantId, body.name, template.id, id, planPoolScale([], body.replicas).create, at)
          return { pool: (yield* poolStore.poolByName(tenantId, body.name))!, created }
        })
      )
      yield* launch(tenantId, created, body)
      return poolJson(pool)
    })),

    implement(Api.listPools, ({ query }, { auth }) => {
      const page = Pagination.resolve(query, sandboxPage)
      return Effect.map(poolStore.listPools(auth.tenantId, page), (pools) => Pagination.response("pools", pools.map(poolJson), page))
    }),

    implement(Api.getPool, ({ params }, { auth }) => poolStore.poolByName(auth.tenantId, params.name).pipe(Effect.flatMap(found("pool", params.name)), Effect.map(poolJson))),

    implement(Api.updatePool, Effect.fnUntraced(function* ({ params, body }, { auth }) {
      const tenantId = auth.tenantId
      const { pool, created, removed } = yield* transaction(
        Effect.gen(function* () {
          const pool = yield* poolStore.poolByName(tenantId, params.name).pipe(Effect.flatMap(found("pool", params.name)))
          const name = body.name ?? pool.name
          const replicas = body.replicas ?? pool.replicas
          if (name !== pool.name && (yield* poolStore.poolByName(tenantId, name))) return yield* taken("pool", name)
          if (name === pool.name && replicas === pool.replicas) return { pool, created: [], removed: [] }
          const at = now()
          yield* poolStore.updatePool(pool, { name, replicas, updated_at: at })
          const boxes = yield* sandboxStore.poolSandboxes(pool.id)
          const plan = planPoolScale(
            boxes.map((box) => box.name),
            replicas
          )
          const idByName = new Map(boxes.map((box) => [box.name, box.id]))
          const removed = plan.remove.map((boxName) => idByName.get(boxName)!)
          yield* Effect.forEach(removed, (id) => sandboxStore.deleteSandbox(id), { discard: true })
          const created = yield* addBoxes(tenantId, name, pool.template_id, pool.id, plan.create, at)
          return { pool: (yield* poolStore.poolByName(tenantId, name))!, created, removed }
        })
      )
      yield* controller.boxesDeleted(removed)
      yield* controller.boxesCreated(created)
      return poolJson(pool)
    })),

    implement(Api.deletePool, Effect.fnUntraced(function* ({ params }, { auth }) {
      const removed = yield* transaction(
        Effect.gen(function* () {
          const pool = yield* poolStore.poolByName(auth.tenantId, params.name).pipe(Effect.flatMap(found("pool", params.name)))
          const boxes = planPoolDeletion(pool, yield* sandboxStore.poolSandboxes(pool.id))
          yield* Effect.forEach(boxes, (box) => sandboxStore.deleteSandbox(box.id), { discard: true })
          yield* poolStore.deletePool(pool.id)
          return boxes.map((box) => box.id)
        })
      )
      yield* controller.boxesDeleted(removed)
    }))
  ]
}
