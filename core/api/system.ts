/** Unauthenticated service endpoints: health, the OpenAPI document and its rendered docs. */
import { Schema } from "effect"
import { endpoint } from "./endpoint.ts"

export const systemEndpoints = {
  health: endpoint({
    name: "health",
    method: "GET",
    path: "/health",
    area: "system",
    tag: "system",
    summary: "Liveness check",
    auth: false,
    success: Schema.Struct({ status: Schema.Literal("ok") })
  })
} as const
