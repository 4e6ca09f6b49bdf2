/** Generates the OpenAPI 3.1 document from the endpoint descriptions; nothing here is written by hand. */
// @ts-nocheck

import { Schema } from "effect"
import type { Endpoint } from "./endpoint.ts"

type JsonObject = Record<string, any>

const errorSchemas: JsonObject = {
  HTTPValidationError: {
    type: "object",
    required: ["detail"],
    properties: {
      detail: {
        type: "array",
        items: {
          type: "object",
          required: ["loc", "msg", "type"],
          properties: {
            loc: { type: "array", items: { anyOf: [{ type: "string" }, { type: "integer" }] } },
            msg: { type: "string" },
            type: { type: "string" }
          }
        }
      }
    }
  },
  ErrorDetail: { type: "object", required: ["detail"], properties: { detail: { type: "string" } } },
  SandboxErrorDetail: {
    type: "object",
    required: ["detail"],
    properties: {
      detail: {
        type: "object",
        required: ["error", "message"],
        properties: {
          error: { type: "string", enum: ["NotFound", "Conflict", "ResourceInUse", "ResizeError", "TemplateNotFound", "ValidationError"] },
          message: { type: "string" }
        }
      }
    }
  }
}

const statusText: Record<number, string> = {
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No Content",
  400: "Bad Request",
  401: "Missing or invalid API key",
  403: "The key does not grant this tenant",
  404: "Not Found",
  409: "Conflict",
  413: "Request body too large",
  415: "Unsupported media type",
  422: "Validation Error",
  429: "Storage quota exceeded"
}

/** Converts one schema, moving its named definitions into the shared components. */
const toJsonSchema = (schema: Schema.Top, components: JsonObject): JsonObject => {
  const document = Schema.toJsonSchemaDocument(schema as any) as unknown as { schema: JsonObject; definitions: JsonObject }
  const rewrite = (value: any): any => {
    if (Array.isArray(value)) return value.map(rewrite)
    if (value === null || typeof value !== "object") return value
    const out: JsonObject = {}
    for (const [key, inner] of Object.entries(value)) {
      out[key] = key === "$ref" && typeof inner === "string" ? inner.replace("#/$defs/", "#/components/schemas/") : rewrite(inner)
    }
    return out
  }
  for (const [name, definition] of Object.entries(document.definitions ?? {})) components[name] = rewrite(definition)
  return rewrite(document.schema)
}

const parametersOf = (schema: Schema.Top | undefined, location: "path" | "query", components: JsonObject) => {
  if (!schema) return []
  const object = toJsonSchema(schema, components)
  const required = new Set<string>(object.required ?? [])
  return Object.entries<JsonObject>(object.properties ?? {}).map(([name, property]) => ({
    name,
    in: location,
    required: location === "path" || required.has(name),
    schema: property
  }))
}

const errorResponse = (endpoint: Endpoint, status: number) => {
  const schema =
    status === 422 ? "HTTPValidationError" : endpoint.area === "sandbox" && [400, 404, 409].includes(status) ? "SandboxErrorDetail" : "ErrorDetail"
  return {
    description: statusText[status] ?? `Error ${status}`,
    content: { "application/json": { schema: { $ref: `#/components/schemas/${schema}` } } }
  }
}

export interface OpenApiInfo {
  readonly title: string
  readonly version: string
  readonly description?: string
  readonly serverUrl?: string
}

export const makeOpenApiDocument = (endpoints: ReadonlyArray<Endpoint>, info: OpenApiInfo): JsonObject => {
  const components: JsonObject = { ...errorSchemas }
  const paths: JsonObject = {}
  for (const endpoint of endpoints) {
    const responses: JsonObject = {
      [endpoint.status]: endpoint.success
        ? { description: statusText[endpoint.status], content: { "application/json": { schema: toJsonSchema(endpoint.success, components) } } }
        : { description: statusText[endpoint.status] }
    }
    const errorStatuses = new Set([...endpoint.errors, ...(endpoint.auth ? [401, 403] : []), ...(endpoint.params || endpoint.query || endpoint.body ? [422] : [])])
    for (const status of [...errorStatuses].sort()) responses[status] = errorResponse(endpoint, status)
    const operation: JsonObject = {
      operationId: endpoint.name,
      summary: endpoint.summary,
      tags: [endpoint.tag],
      parameters: [...parametersOf(endpoint.params, "path", components), ...parametersOf(endpoint.query, "query", components)],
      responses
    }
    if (endpoint.body) {
      operation.requestBody = { required: true, content: { "application/json": { schema: toJsonSchema(endpoint.body, components) } } }
    }
    if (endpoint.auth) operation.security = [{ ApiKey: [] }, { BearerAuth: [] }]
    paths[endpoint.path] = { ...paths[endpoint.path], [endpoint.method.toLowerCase()]: operation }
  }
  return {
    openapi: "3.1.0",
    info: { title: info.title, version: info.version, ...(info.description ? { description: info.description } : {}) },
    ...(info.serverUrl ? { servers: [{ url: info.serverUrl }] } : {}),
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        ApiKey: { type: "apiKey", in: "header", name: "X-Api-Key" },
        TenantId: { type: "apiKey", in: "header", name: "X-Tenant-Id" },
        BearerAuth: { type: "http", scheme: "bearer" }
      }
    }
  }
}
