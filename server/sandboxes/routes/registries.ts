/**
 * `/v2/sandboxes/registries`: credentials for private image registries. The password is sealed
 * with the server's secrets key before it is stored (server/secrets/secrets.ts, as deployment
 * secrets are) and no answer, log line or error carries it, nor the username. A box whose
 * template image's host matches a registry pulls with it (server/sandboxes/access/registries.ts).
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { Api, parseRegistryUrl, registryProvider, type Registry, SandboxValidationError } from "../../../core/index.ts"
import { implement, now } from "../../module.ts"
import type { RegistryRecord } from "../../store/RegistryStore.ts"
import type { AccessContext } from "../access/context.ts"
import { found, taken } from "../wire.ts"

export const registryJson = (record: RegistryRecord): typeof Registry.Encoded => {
  const location = parseRegistryUrl(record.url)
  return {
    id: record.id,
    name: record.name,
    url: record.url,
    auth_type: "DOCKER_CONFIG",
    provider: typeof location === "string" ? "DOCKER_REGISTRY" : registryProvider(location),
    repository_search_mode: "NONE",
    created_at: record.created_at,
    updated_at: record.updated_at
  }
}

const refuseAwsRole = (authType: string | undefined) =>
  authType === "AWS_ROLE"
    ? Effect.fail(new SandboxValidationError({ message: "auth_type AWS_ROLE is not supported: Slipway pulls with a username and password (auth_type DOCKER_CONFIG)" }))
    : Effect.void

/** Opaque cursor of the registry list: the offset of the next page. */
const encodeCursor = (offset: number) => Buffer.from(JSON.stringify({ o: offset }), "utf8").toString("base64url")
const decodeCursor = (cursor: string): number | undefined => {
  try {
    const { o } = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as { o?: unknown }
    return typeof o === "number" && Number.isSafeInteger(o) && o >= 0 ? o : undefined
  } catch {
    return undefined
  }
}

export const registryRoutes = ({ transaction, registryStore, secrets }: AccessContext) => {
  const mustGet = (tenantId: string, name: string) => registryStore.registryByName(tenantId, name).pipe(Effect.flatMap(found("registry", name)))

  return [
    implement(Api.createRegistry, Effect.fnUntraced(function* ({ body }, { auth }) {
      yield* refuseAwsRole(body.auth_type)
      if (body.username === undefined || body.password === undefined) {
        return yield* new SandboxValidationError({ message: "a registry needs both username and password" })
      }
      const at = now()
      const record: RegistryRecord = {
        id: randomUUID(),
        tenant_id: auth.tenantId,
        name: body.name,
        url: body.url.trim(),
        username: body.username,
        password_sealed: secrets.seal(body.password),
        created_at: at,
        updated_at: at
      }
      yield* transaction(
        Effect.gen(function* () {
          if (yield* registryStore.registryByName(auth.tenantId, body.name)) return yield* taken("registry", body.name)
          yield* registryStore.insertRegistry(record)
        })
      )
      return registryJson(record)
    })),

    implement(Api.listRegistries, Effect.fnUntraced(function* ({ query }, { auth }) {
      const cursorMode = query.cursor !== undefined || query.page_size !== undefined
      let offset: number
      let limit: number
      if (cursorMode) {
        const decoded = query.cursor === undefined || query.cursor === "" ? 0 : decodeCursor(query.cursor)
        if (decoded === undefined) return yield* new SandboxValidationError({ message: "cursor is not one this endpoint answered" })
        offset = decoded
        limit = query.page_size ?? 20
      } else {
        offset = query.offset ?? 0
        limit = query.limit ?? 50
      }
      const rows = yield* registryStore.listRegistries(auth.tenantId, { limit: limit + 1, offset }, query.name_contains || undefined)
      const more = rows.length > limit
      const items = rows.slice(0, limit).map(registryJson)
      return {
        items,
        registries: items,
        next_cursor: more ? encodeCursor(offset + limit) : null,
        offset: more ? offset + limit : 0
      }
    })),

    implement(Api.getRegistry, ({ params }, { auth }) => Effect.map(mustGet(auth.tenantId, params.name), registryJson)),

    implement(Api.updateRegistry, Effect.fnUntraced(function* ({ params, body }, { auth }) {
      yield* refuseAwsRole(body.auth_type)
      return yield* transaction(
        Effect.gen(function* () {
          const before = yield* mustGet(auth.tenantId, params.name)
          const name = body.name ?? before.name
          if (name !== before.name && (yield* registryStore.registryByName(auth.tenantId, name))) return yield* taken("registry", name)
          const after: RegistryRecord = {
            ...before,
            name,
            url: body.url?.trim() ?? before.url,
            username: body.username ?? before.username,
            password_sealed: body.password === undefined ? before.password_sealed : secrets.seal(body.password),
            updated_at: now()
          }
          yield* registryStore.updateRegistry(after)
          return registryJson(after)
        })
      )
    })),

    implement(Api.deleteRegistry, ({ params }, { auth }) =>
      transaction(Effect.flatMap(mustGet(auth.tenantId, params.name), (registry) => registryStore.deleteRegistry(registry.id)))
    )
  ]
}
