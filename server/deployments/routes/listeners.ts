/** `/v2/listeners`: the compute a deployment deploys to (namespaces of a cluster). */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { Api, Conflict, controlPage, NotFound, Pagination } from "../../../core/index.ts"
import { implement, now } from "../../module.ts"
import type { ListenerRecord } from "../../store/ListenerStore.ts"
import { toListener } from "../wire.ts"
import type { DeploymentWrites } from "../writes.ts"

const listenerNotFound = (id: string) => new NotFound({ message: `Listener ${id} not found` })

export const listenerRoutes = ({ transaction, listenerStore }: DeploymentWrites) =>
  Effect.sync(() => {
    const mustGetListener = (tenantId: string, id: string) =>
      Effect.flatMap(listenerStore.listener(tenantId, id), (record) => (record ? Effect.succeed(record) : Effect.fail(listenerNotFound(id))))

    return [
      implement(Api.listListeners, ({ query }, { auth }) => {
        const page = Pagination.resolve(query, controlPage)
        return Effect.map(listenerStore.listListeners(auth.tenantId, page), (records) => Pagination.response("resources", records.map(toListener), page))
      }),

      implement(Api.createListener, ({ body }, { auth }) => {
        const at = now()
        const id = randomUUID()
        const listener: ListenerRecord = {
          id,
          tenant_id: auth.tenantId,
          compute_type: body.compute_type,
          compute_id: body.compute_id ?? id,
          version: body.version ?? null,
          compute_config: body.compute_config,
          created_at: at,
          updated_at: at
        }
        return Effect.as(listenerStore.insertListener(listener), toListener(listener))
      }),

      implement(Api.getListener, ({ params }, { auth }) => Effect.map(mustGetListener(auth.tenantId, params.listener_id), toListener)),

      implement(Api.updateListener, ({ params, body }, { auth }) =>
        transaction(
          Effect.gen(function* () {
            const listener = yield* mustGetListener(auth.tenantId, params.listener_id)
            const computeConfig = body.compute_config ?? listener.compute_config
            const served = new Set<string>(computeConfig.k8s_namespaces)
            const stranded = (yield* listenerStore.listenerUsers(auth.tenantId, listener.id)).filter((user) => user.namespace !== null && !served.has(user.namespace))
            if (stranded.length > 0) {
              return yield* new Conflict({
                message: `Namespace '${stranded[0]!.namespace}' is still used by deployment '${stranded[0]!.name}' on listener ${listener.id}`
              })
            }
            const updated: ListenerRecord = { ...listener, compute_type: body.compute_type ?? listener.compute_type, version: body.version ?? listener.version, compute_config: computeConfig, updated_at: now() }
            yield* listenerStore.updateListener(updated)
            return toListener(updated)
          })
        )
      ),

      implement(Api.deleteListener, ({ params }, { auth }) =>
        transaction(
          Effect.gen(function* () {
            yield* mustGetListener(auth.tenantId, params.listener_id)
            const users = yield* listenerStore.listenerUsers(auth.tenantId, params.listener_id)
            if (users.length > 0) {
              return yield* new Conflict({
                message: `Listener ${params.listener_id} is used by ${users.length} deployment(s): ${users.map((user) => user.name).join(", ")}`
              })
            }
            yield* listenerStore.deleteListener(auth.tenantId, params.listener_id)
          })
        )
      )
    ]
  })
