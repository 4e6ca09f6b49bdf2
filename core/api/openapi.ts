/** Generates the OpenAPI 3.1 document from the endpoint descriptions; nothing here is written by hand. */
import { Schema } from "effect"
import type { Endpoint } from "./endpoint.ts"

type JsonObject = Record<string, any>

const errorSchemas: JsonObject = {
  HTTPValidationError: {
    type: "object",
    required: ["detail"],
    properties: {
      detail: {
        description: "Every invalid field of the request",
        type: "array",
        items: {
          type: "object",
          required: ["loc", "msg", "type"],
          properties: {
            loc: { type: "array", items: { anyOf: [{ type: "string" }, { type: "integer" }] }, description: "Where the problem is: body, path or query, then the field's path", examples: [["body", "name"]] },
            msg: { type: "string", description: "What is wrong", examples: ["String should have at least 1 character"] },
            type: { type: "string", description: "The problem's kind, as pydantic names it", examples: ["string_too_short"] }
          }
        }
      }
    }
  },
  ErrorDetail: {
    type: "object",
    required: ["detail"],
    properties: { detail: { type: "string", description: "What went wrong", examples: ["Deployment 6f1c2a3e-8b0d-4c5e-9f7a-1b2c3d4e5f60 not found"] } }
  },
  SandboxErrorDetail: {
    type: "object",
    required: ["detail"],
    properties: {
      detail: {
        description: "The error",
        type: "object",
        required: ["error", "message"],
        properties: {
          error: {
            type: "string",
            enum: ["NotFound", "Conflict", "ResourceInUse", "ResizeError", "TemplateNotFound", "ValidationError", "Unsupported", "ImagePull", "CrashLoop", "SandboxConfig", "Timeout"],
            description: "The kind of error (a sandbox created with wait_for_ready: ImagePull, CrashLoop or SandboxConfig when it failed, Timeout when it was not ready in time)",
            examples: ["NotFound"]
          },
          message: { type: "string", description: "What went wrong", examples: ["Sandbox 'my-sandbox' not found"] }
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
  408: "Not ready within the timeout",
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

/**
 * An example value for a schema, read from what the schema states: its own `examples`, else its
 * `default`, first enum member or constant, a sample of its `format`, the lower bound of a
 * number, an array of its items' example. `undefined` when the schema says too little (a plain
 * string: such fields carry an `examples` annotation in the core instead).
 */
export const exampleOf = (schema: JsonObject | undefined, components: JsonObject, seen: ReadonlySet<string> = new Set()): unknown => {
  if (schema === undefined || typeof schema !== "object") return undefined
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0]
  if (schema.default !== undefined) return schema.default
  if (typeof schema.$ref === "string") {
    const name = schema.$ref.split("/").pop()!
    return seen.has(name) ? undefined : exampleOf(components[name], components, new Set([...seen, name]))
  }
  for (const key of ["anyOf", "oneOf"] as const) {
    if (Array.isArray(schema[key])) {
      for (const member of schema[key]) {
        if (member?.type === "null") continue
        const example = exampleOf(member, components, seen)
        if (example !== undefined) return example
      }
      return undefined
    }
  }
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0]
  if ("const" in schema) return schema.const
  if (schema.format === "uuid") return "6f1c2a3e-8b0d-4c5e-9f7a-1b2c3d4e5f60"
  if (schema.format === "date-time") return "2026-01-01T12:00:00.000Z"
  switch (schema.type) {
    case "boolean":
      return false
    case "integer":
    case "number":
      return schema.minimum ?? (typeof schema.exclusiveMinimum === "number" ? schema.exclusiveMinimum + 1 : undefined) ?? schema.maximum ?? 0
    case "array": {
      const item = exampleOf(schema.items, components, seen)
      return item === undefined ? [] : [item]
    }
    case "object": {
      if (schema.properties === undefined) return {}
      const out: JsonObject = {}
      for (const name of schema.required ?? []) {
        const value = exampleOf(schema.properties[name], components, seen)
        if (value === undefined) return undefined
        out[name] = value
      }
      return out
    }
  }
  return undefined
}

/** What a nullable member (`anyOf: [X, {type: null}]`) documents, shown on the property itself. */
const describedMember = (schema: JsonObject): JsonObject | undefined =>
  Array.isArray(schema.anyOf) ? schema.anyOf.find((member: JsonObject) => member?.type !== "null" && typeof member?.description === "string") : undefined

/**
 * Completes every object property in place: a nullable member's description moves up to the
 * property (where OpenAPI UIs show it), and a property without `examples` gets one from
 * `exampleOf`. References are left alone: their component carries its own.
 */
const completeProperties = (node: unknown, components: JsonObject): void => {
  if (Array.isArray(node)) return node.forEach((child) => completeProperties(child, components))
  if (node === null || typeof node !== "object") return
  const object = node as JsonObject
  // `true` is JSON Schema's default: stating it only makes UIs invent `additionalProp1` in examples.
  if (object.additionalProperties === true && object.type === "object") delete object.additionalProperties
  if (object.properties && typeof object.properties === "object") {
    for (const property of Object.values<JsonObject>(object.properties)) {
      if (typeof property.$ref === "string") continue
      const member = describedMember(property)
      if (property.description === undefined && member) property.description = member.description
      if (property.examples === undefined) {
        const example = exampleOf(property, components)
        if (example !== undefined) property.examples = [example]
      }
    }
  }
  for (const value of Object.values(object)) completeProperties(value, components)
}

/** The constraints of a parameter's schema in words, for UIs that show only a parameter's description. */
const constraintText = (schema: JsonObject): string => {
  const parts: Array<string> = []
  const target = describedMember(schema) ?? (Array.isArray(schema.anyOf) ? schema.anyOf.find((m: JsonObject) => m?.type !== "null") : schema) ?? schema
  if (Array.isArray(target.enum)) parts.push(`one of ${target.enum.join(", ")}`)
  if (target.format) parts.push(target.format)
  if (target.minimum !== undefined && target.maximum !== undefined) parts.push(`${target.minimum} to ${target.maximum}`)
  else if (target.minimum !== undefined) parts.push(`at least ${target.minimum}`)
  if (target.pattern) parts.push(`pattern ${target.pattern}`)
  return parts.join("; ")
}

const parametersOf = (schema: Schema.Top | undefined, location: "path" | "query", components: JsonObject) => {
  if (!schema) return []
  // Parameters travel as text (`"20"`): documented as the values they decode to (an integer 1-100,
  // a boolean, a list sent comma-separated), with those values' constraints.
  const object = toJsonSchema(Schema.toType(schema as any) as Schema.Top, components)
  const required = new Set<string>(object.required ?? [])
  return Object.entries<JsonObject>(object.properties ?? {}).map(([name, property]) => {
    const example = exampleOf(property, components)
    const description = parameterDescriptions[name] ?? property.description ?? describedMember(property)?.description
    const constraints = constraintText(property)
    return {
      name,
      in: location,
      required: location === "path" || required.has(name),
      description: [description, constraints && `(${constraints})`].filter(Boolean).join(" ") || `The ${name.replace(/_/g, " ")}`,
      schema: property,
      ...(property.type === "array" ? { style: "form", explode: false } : {}),
      // An optional filter's example would be sent by "Try it out" as if the user had chosen it.
      ...(example !== undefined && (location === "path" || required.has(name)) ? { example } : {})
    }
  })
}

/** Names shared by many endpoints' parameters, described once. */
const parameterDescriptions: Record<string, string> = {
  offset: "Items to skip: the previous page's answered `offset`.",
  deployment_id: "The deployment's id.",
  revision_id: "The revision's id.",
  listener_id: "The listener's id.",
  integration_id: "The git-host integration's id."
}

const errorResponse = (endpoint: Endpoint, status: number) => {
  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })
  const sandbox = endpoint.area === "sandbox"
  // A sandbox endpoint that documents 422 itself answers it for a failure too (a box created with wait_for_ready), besides a bad request.
  const schema =
    status === 422
      ? sandbox && endpoint.errors.includes(422)
        ? { anyOf: [ref("HTTPValidationError"), ref("SandboxErrorDetail")] }
        : ref("HTTPValidationError")
      : ref(sandbox && [400, 404, 408, 409].includes(status) ? "SandboxErrorDetail" : "ErrorDetail")
  return {
    description: statusText[status] ?? `Error ${status}`,
    content: { "application/json": { schema } }
  }
}

const errorStyle = (endpoint: Endpoint): string =>
  endpoint.area === "sandbox"
    ? "Errors answer `{\"detail\": {\"error\", \"message\"}}` (a 422 lists every invalid field as `{loc, msg, type}`)."
    : "Errors answer `{\"detail\": \"...\"}` (a 422 lists every invalid field as `{loc, msg, type}`)."

/** The operation's description: its own text (`endpoint.description`) or its summary, then what every such operation shares. */
const operationDescription = (endpoint: Endpoint): string => {
  const parts = [`${endpoint.description ?? endpoint.summary}.`.replace(/\.\.$/, ".")]
  if (endpoint.query && /^list/.test(endpoint.name)) parts.push("Paginated with `limit` and `offset`; the answer's `offset` is where the next page starts.")
  if (endpoint.auth) {
    parts.push(
      "Needs an API key (`X-Api-Key`, or `Authorization: Bearer`); `X-Tenant-Id` picks one of the key's tenants (default: the key's own). " + errorStyle(endpoint)
    )
  } else parts.push("No API key needed.")
  return parts.join("\n\n")
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
      description: operationDescription(endpoint),
      tags: [endpoint.tag],
      parameters: [...parametersOf(endpoint.params, "path", components), ...parametersOf(endpoint.query, "query", components)],
      responses
    }
    if (endpoint.body) {
      operation.requestBody = { required: endpoint.bodyOptional !== true, content: { "application/json": { schema: toJsonSchema(endpoint.body, components) } } }
    }
    // X-Tenant-Id goes with either key scheme (optional: a key's own tenant is the default).
    if (endpoint.auth) operation.security = [{ ApiKey: [], TenantId: [] }, { BearerAuth: [], TenantId: [] }, { ApiKey: [] }, { BearerAuth: [] }]
    paths[endpoint.path] = { ...paths[endpoint.path], [endpoint.method.toLowerCase()]: operation }
  }
  completeProperties(components, components)
  completeProperties(paths, components)
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
