/**
 * The two URLs of `langgraph deploy` served outside the API table, without an API key (each has
 * its own credential; docs/registry.md):
 *
 * - `GET {public}/v2/registry/token` (`REGISTRY_TOKEN_PATH`): the registry's token realm, which
 *   `docker login` / `docker push` (or skopeo) call with Basic auth `oauth2accesstoken:<push token>`;
 * - `PUT {public}/v2/source-uploads/<token>` (`SOURCE_UPLOAD_PREFIX`): a signed upload URL taking
 *   one source tarball.
 *
 * Each request is a fiber of the server's request runner (interrupted when its client goes away).
 * An upload refused before its body was read (too large, expired) is answered with
 * `Connection: close`, so the server does not read the rest of it.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Cause, Effect, Exit } from "effect"
import { clientGone, makeRequestRunner } from "../http/app.ts"
import type { NeutralResponse } from "../http/neutral.ts"
import { type RawHttp, ServerEnv } from "../module.ts"
import { Registry, REGISTRY_TOKEN_PATH } from "../registry/Registry.ts"
import { SOURCE_UPLOAD_PREFIX, SourceUploads } from "../uploads/SourceUploads.ts"

const send = (request: IncomingMessage, response: ServerResponse, answer: NeutralResponse) => {
  if (response.headersSent) return
  const body = JSON.stringify(answer.body)
  response.writeHead(answer.status, { ...answer.headers, "content-length": String(Buffer.byteLength(body)), ...(request.complete ? {} : { connection: "close" }) })
  response.end(body)
}

export const sourceHttp = Effect.gen(function* () {
  const registry = yield* Registry
  const uploads = yield* SourceUploads
  const { log } = yield* ServerEnv
  const runRequest = makeRequestRunner(yield* Effect.context<never>())

  const run = (request: IncomingMessage, response: ServerResponse, effect: Effect.Effect<NeutralResponse>) => {
    const done = (exit: Exit.Exit<NeutralResponse>) => {
      if (clientGone(exit)) return
      if (Exit.isSuccess(exit)) return send(request, response, exit.value)
      log.error("unhandled error", { path: request.url?.split("?")[0], error: String(Cause.squash(exit.cause)) })
      send(request, response, { status: 500, headers: { "content-type": "application/json" }, body: { detail: "Internal Server Error" } })
    }
    const exit = runRequest(effect, response)
    if (exit instanceof Promise) void exit.then(done)
    else done(exit)
  }

  return {
    request: (request: IncomingMessage, response: ServerResponse) => {
      // Every deployment URL's request passes here first: decide on the raw path before parsing it.
      const raw = request.url ?? "/"
      if (!raw.startsWith(REGISTRY_TOKEN_PATH) && !raw.startsWith(SOURCE_UPLOAD_PREFIX)) return false
      const url = new URL(raw, "http://slipway")
      const neutral = { method: request.method ?? "GET", headers: request.headers, query: url.searchParams }
      if (url.pathname === REGISTRY_TOKEN_PATH) {
        run(request, response, registry.handleTokenRequest(neutral))
        return true
      }
      if (url.pathname.startsWith(SOURCE_UPLOAD_PREFIX)) {
        run(request, response, uploads.handleUpload({ ...neutral, path: url.pathname, body: request }))
        return true
      }
      return false
    }
  } satisfies RawHttp
})
