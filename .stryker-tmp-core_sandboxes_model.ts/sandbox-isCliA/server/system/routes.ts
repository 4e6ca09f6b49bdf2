/** Health, the generated OpenAPI document and its HTML rendering. */
// @ts-nocheck

import { Effect } from "effect"
import { Api, makeOpenApiDocument } from "../../core/index.ts"
import { RawResponse } from "../http/app.ts"
import type { ServerModule } from "../module.ts"
import { implement } from "../module.ts"
import { renderDocs } from "./docs.ts"

export const openApiDocument = (serverUrl?: string) =>
  makeOpenApiDocument(Object.values(Api), {
    title: "Slipway",
    version: "0.1.0",
    description: "Self-hostable deployment control plane and sandbox API.",
    ...(serverUrl ? { serverUrl } : {})
  })

export const systemModule: ServerModule = {
  name: "system",
  migrations: [],
  routes: (context) => {
    // Built once: the description is static for the life of the process.
    const document = openApiDocument(context.publicUrl)
    const html = new RawResponse("text/html; charset=utf-8", renderDocs(document))
    return [
      implement(Api.health, () => Effect.succeed({ status: "ok" as const })),
      implement(Api.openApi, () => Effect.succeed(document)),
      implement(Api.docs, () => Effect.succeed(html))
    ]
  }
}
