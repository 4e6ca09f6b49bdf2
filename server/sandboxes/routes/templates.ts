/** `/v2/sandboxes/templates`: how a sandbox is built (image, resources, volume mounts, proxy rules). */
import { randomUUID } from "node:crypto"
import { Effect, Result } from "effect"
import { Api, checkTemplateDeletable, checkTemplateVolumes, formatQuantity, Pagination, sandboxPage, toMillis } from "../../../core/index.ts"
import { implement, now } from "../../module.ts"
import { exactBytes, found, taken, templateJson } from "../wire.ts"
import type { SandboxRouteContext } from "../routeContext.ts"

export const templateRoutes = ({ transaction, templateStore, volumeStore }: SandboxRouteContext) => [
  implement(Api.createTemplate, ({ body }, { auth }) =>
    transaction(
      Effect.gen(function* () {
        const tenantId = auth.tenantId
        const volumes = yield* Effect.forEach(body.volume_mounts, (mount) => volumeStore.volumeByName(tenantId, mount.volume_name))
        yield* Effect.fromResult(
          checkTemplateVolumes(
            body.volume_mounts,
            volumes.flatMap((volume) => (volume ? [volume.name] : []))
          )
        )
        if (yield* templateStore.templateByName(tenantId, body.name)) return yield* taken("template", body.name)
        const at = now()
        const { cpu, memory, storage } = body.resources
        yield* templateStore.insertTemplate({
          id: randomUUID(),
          tenant_id: tenantId,
          name: body.name,
          image: body.image,
          cpu_millicores: Result.getOrThrow(toMillis(cpu)),
          cpu: formatQuantity(cpu),
          memory_bytes: exactBytes(memory),
          memory: formatQuantity(memory),
          storage_bytes: storage === undefined ? null : exactBytes(storage),
          storage: storage === undefined ? null : formatQuantity(storage),
          proxy_config: body.proxy_config,
          created_at: at,
          updated_at: at,
          mounts: body.volume_mounts.map((mount, index) => ({ volume_id: volumes[index]!.id, mount_path: mount.mount_path }))
        })
        return templateJson((yield* templateStore.templateByName(tenantId, body.name))!)
      })
    )
  ),

  implement(Api.listTemplates, ({ query }, { auth }) => {
    const page = Pagination.resolve(query, sandboxPage)
    return Effect.map(templateStore.listTemplates(auth.tenantId, page), (templates) => Pagination.response("templates", templates.map(templateJson), page))
  }),

  implement(Api.getTemplate, ({ params }, { auth }) =>
    templateStore.templateByName(auth.tenantId, params.name).pipe(Effect.flatMap(found("template", params.name)), Effect.map(templateJson))
  ),

  implement(Api.updateTemplate, ({ params, body }, { auth }) =>
    transaction(
      Effect.gen(function* () {
        const template = yield* templateStore.templateByName(auth.tenantId, params.name).pipe(Effect.flatMap(found("template", params.name)))
        if (body.name !== template.name) {
          if (yield* templateStore.templateByName(auth.tenantId, body.name)) return yield* taken("template", body.name)
          yield* templateStore.renameTemplate(template, body.name, now())
        }
        return templateJson((yield* templateStore.templateByName(auth.tenantId, body.name))!)
      })
    )
  ),

  implement(Api.deleteTemplate, ({ params }, { auth }) =>
    transaction(
      Effect.gen(function* () {
        const template = yield* templateStore.templateByName(auth.tenantId, params.name).pipe(Effect.flatMap(found("template", params.name)))
        const usage = yield* templateStore.templateUsage(template.id)
        yield* Effect.fromResult(checkTemplateDeletable(template.name, usage.sandboxes, usage.pools))
        yield* templateStore.deleteTemplate(template.id)
      })
    )
  )
]
