/** Unauthenticated service endpoints: health, the OpenAPI document and its rendered docs. */
// @ts-nocheck

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
  }),
  openApi: endpoint({
    name: "openApi",
    method: "GET",
    path: "/openapi.json",
    area: "system",
    tag: "system",
    summary: "This OpenAPI 3.1 document, generated from the API description",
    auth: false,
    success: Schema.Record(Schema.String, Schema.Unknown)
  }),
  docs: endpoint({
    name: "docs",
    method: "GET",
    path: "/docs",
    area: "system",
    tag: "system",
    summary: "Human-readable API reference rendered from the OpenAPI document (HTML)",
    auth: false
  })
} as const
