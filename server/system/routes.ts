/** Health, the generated OpenAPI document and its HTML rendering. */
import { Effect } from "effect"
import { Api, makeOpenApiDocument } from "../../core/index.ts"
import { implement, ServerEnv } from "../module.ts"
import { consoleRoutes } from "./console.ts"
import { docsRoutes } from "./docs.ts"

export const openApiDocument = (serverUrl?: string) =>
  makeOpenApiDocument(Object.values(Api), {
    title: "Slipway",
    version: "0.1.0",
    description: "Self-hostable deployment control plane and sandbox API.",
    ...(serverUrl ? { serverUrl } : {})
  })

export const systemModule = {
  name: "system",
  routes: Effect.map(ServerEnv, ({ publicUrl, log }) => {
    // Built once: the description is static for the life of the process.
    const document = openApiDocument(publicUrl)
    return [
      implement(Api.health, () => Effect.succeed({ status: "ok" as const })),
      implement(Api.openApi, () => Effect.succeed(document)),
      ...docsRoutes(),
      ...consoleRoutes({ log })
    ]
  })
}
