/**
 * `/v2/sandboxes/boxes/{name}/service-url(s)` and `/download-url`: links to one port or one file
 * of a box that carry their own token instead of an API key (served by access/http.ts).
 *
 * A service URL's token names a grant (one row per box and port): minting again extends the
 * grant, and `DELETE …/service-urls` removes it, which voids every token minted for that port at
 * once (the real API lets them run to expiry; Slipway is stricter). Download links are signed and
 * stateless: pinned to the box, the path and the answer's headers, expiring when asked to.
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { Api, defaultServiceUrlSeconds, SandboxValidationError } from "../../../core/index.ts"
import { implement } from "../../module.ts"
import { type AccessContext, DOWNLOAD_PREFIX, SERVICE_LOGIN_PATH, servicePath } from "../access/context.ts"
import type { DownloadClaims } from "../access/tokens.ts"
import { found } from "../wire.ts"

export const accessRoutes = ({ transaction, sandboxStore, grantStore, tokens, publicUrl }: AccessContext) => {
  const mustGetBox = (tenantId: string, name: string) => sandboxStore.sandboxByName(tenantId, name).pipe(Effect.flatMap(found("sandbox", name)))

  return [
    implement(Api.createServiceUrl, Effect.fnUntraced(function* ({ params, body }, { auth }) {
      if (body.access === "restricted" || body.access === "workspace") {
        return yield* new SandboxValidationError({
          message: `access "${body.access}" (LangSmith login) is not offered by Slipway: omit access for a token URL`
        })
      }
      const box = yield* mustGetBox(auth.tenantId, params.name)
      const nowMs = Date.now()
      // Whole seconds: the token's expiry and the answer's are the same instant.
      const expiry = Math.floor(nowMs / 1000) + (body.expires_in_seconds ?? defaultServiceUrlSeconds)
      const expiresAt = new Date(expiry * 1000).toISOString()
      const at = new Date(nowMs).toISOString()
      const grant = yield* transaction(
        Effect.gen(function* () {
          const current = yield* grantStore.serviceGrant(box.id, body.port)
          if (current && current.tenant_id === auth.tenantId && Date.parse(current.expires_at) > nowMs) {
            if (Date.parse(current.expires_at) < expiry * 1000) yield* grantStore.extendServiceGrant(current.id, expiresAt)
            return current
          }
          const fresh = { id: randomUUID(), tenant_id: auth.tenantId, sandbox_id: box.id, port: body.port, created_at: at, expires_at: expiresAt }
          yield* grantStore.putServiceGrant(fresh)
          return fresh
        })
      )
      const token = tokens.sign({ k: "s", t: auth.tenantId, b: box.id, p: body.port, g: grant.id, e: expiry })
      return {
        browser_url: `${publicUrl}${SERVICE_LOGIN_PATH}?token=${encodeURIComponent(token)}`,
        service_url: `${publicUrl}${servicePath(box.id, body.port)}`,
        token,
        expires_at: expiresAt
      }
    })),

    implement(Api.listServiceUrls, Effect.fnUntraced(function* ({ params }, { auth }) {
      const box = yield* mustGetBox(auth.tenantId, params.name)
      const grants = yield* grantStore.listServiceGrants(box.id, new Date().toISOString())
      return {
        items: grants
          .filter((grant) => grant.tenant_id === auth.tenantId)
          .map((grant) => ({ access: "token" as const, port: grant.port, created_at: grant.created_at, expires_at: grant.expires_at })),
        next_cursor: null
      }
    })),

    implement(Api.deleteServiceUrls, Effect.fnUntraced(function* ({ params, query }, { auth }) {
      const box = yield* mustGetBox(auth.tenantId, params.name)
      yield* grantStore.deleteServiceGrants(box.id, query.port)
    })),

    implement(Api.createDownloadUrl, Effect.fnUntraced(function* ({ params, body }, { auth }) {
      const box = yield* mustGetBox(auth.tenantId, params.name)
      const expiry = body.expires_in_seconds === undefined ? undefined : Math.floor(Date.now() / 1000) + body.expires_in_seconds
      const claims: DownloadClaims = {
        k: "d",
        t: auth.tenantId,
        b: box.id,
        f: body.path,
        ...(expiry !== undefined ? { e: expiry } : {}),
        ...(body.content_type !== undefined ? { ct: body.content_type } : {}),
        ...(body.content_disposition !== undefined ? { cd: body.content_disposition } : {})
      }
      const token = tokens.sign(claims)
      return {
        download_url: `${publicUrl}${DOWNLOAD_PREFIX}${token}`,
        token,
        expires_at: expiry === undefined ? null : new Date(expiry * 1000).toISOString()
      }
    }))
  ]
}
