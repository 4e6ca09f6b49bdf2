/**
 * The real LangSmith control-plane OpenAPI documents (shared/reference/, beside the repository),
 * strict validators for their schemas (ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses), and
 * instances generated from those schemas with plausible values. See docs/real-api.md.
 */
import { existsSync, readFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { Ajv2020 } from "ajv/dist/2020.js"
import addFormatsModule from "ajv-formats"

type Json = any

const documentNames = { "2025-11": "control-plane-openapi-2025-11.json", "2026-08": "control-plane-openapi-2026-08.json" } as const
export type DocumentVersion = keyof typeof documentNames

/** shared/reference/ of this workplace: $SLIPWAY_REFERENCE_DIR, else the first ancestor of the repository that holds shared/reference/. */
export const referenceDir = (): string => {
  const candidates = [process.env.SLIPWAY_REFERENCE_DIR]
  for (let dir = resolve(import.meta.dirname, "../.."); ; dir = dirname(dir)) {
    candidates.push(join(dir, "shared", "reference"))
    if (dirname(dir) === dir) break
  }
  const found = candidates.find((dir) => dir !== undefined && existsSync(join(dir, documentNames["2026-08"])))
  if (!found) throw new Error("The real API's OpenAPI documents were not found: set SLIPWAY_REFERENCE_DIR to the shared/reference directory")
  return found
}

export const loadDocument = (version: DocumentVersion): Json => JSON.parse(readFileSync(join(referenceDir(), documentNames[version]), "utf8"))

/**
 * Every object schema that lists its properties and says nothing of others refuses others: the
 * real server would silently drop a field it does not know, so a contract test must not.
 */
const strict = (schema: Json): Json => {
  if (Array.isArray(schema)) return schema.map(strict)
  if (schema === null || typeof schema !== "object") return schema
  const out: Json = {}
  for (const [key, value] of Object.entries(schema)) out[key] = key === "properties" ? Object.fromEntries(Object.entries(value as object).map(([name, inner]) => [name, strict(inner)])) : strict(value)
  if (out.properties !== undefined && out.additionalProperties === undefined) out.additionalProperties = false
  return out
}

const addFormats = ((addFormatsModule as any).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020

export interface Validators {
  /** Validates `value` against a schema of the document (refs resolve in it); the error list, empty when valid. */
  readonly check: (schema: Json, value: unknown) => Array<string>
}

export const makeValidators = (document: Json): Validators => {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats(ajv)
  ajv.addSchema({ $id: "real", components: strict(document.components) })
  const cache = new Map<string, ReturnType<Ajv2020["compile"]>>()
  return {
    check: (schema, value) => {
      const text = JSON.stringify(schema).replaceAll('"#/components/', '"real#/components/')
      let validate = cache.get(text)
      if (!validate) cache.set(text, (validate = ajv.compile(strict(JSON.parse(text)))))
      return validate(value) ? [] : (validate.errors ?? []).map((error) => `${error.instancePath || "/"} ${error.message} ${JSON.stringify(error.params)}`)
    }
  }
}

export const resolveRef = (document: Json, schema: Json): Json => {
  let current = schema
  while (current?.$ref) current = current.$ref.replace("#/", "").split("/").reduce((node: Json, key: string) => node[key], document)
  return current
}

// ---------------------------------------------------------------------------------------------
// Instances of the real schemas

export interface GenerateOptions {
  /**
   * "full": every property, the non-null branch of each `X | null`; "nulls": every property,
   * explicit null for every nullable scalar, at any depth; "minimal": required properties only.
   */
  readonly mode: "full" | "nulls" | "minimal"
  /** Which value of each enum (modulo its length): variant k covers the k-th value of every enum. */
  readonly variant: number
}

/** Plausible strings by property name, valid for Slipway's stricter checks too (URLs, DNS labels, C identifiers). */
const stringFor = (property: string, owner: string, counter: { n: number }): string => {
  if (property === "name" && (owner === "Volume" || owner === "VolumeMount")) return "data"
  if (property === "name" && owner === "Container") return `box${++counter.n}`
  // Kubernetes (and Slipway) refuse a value beside a valueFrom.
  if (property === "value" && owner === "EnvVar") return ""
  const table: Record<string, string> = {
    name: "agent",
    image: "registry.example.com/agent:1.0.0",
    image_uri: "registry.example.com/agent:1.0.0",
    repo_url: "https://github.com/acme/agent",
    url: "https://github.com/acme/agent",
    custom_url: "https://agent.example.com",
    repo_ref: "main",
    default_branch: "main",
    langgraph_config_path: "langgraph.json",
    mountPath: "/data",
    imagePullPolicy: "IfNotPresent",
    restartPolicy: "Always",
    mountPropagation: "None",
    k8s_namespace: "agents",
    k8s_namespaces: "agents",
    compute_id: "cluster-1",
    version: "0.1.0",
    owner: "acme",
    value: "secret-value",
    secret_name: "agent-secrets",
    secret_key: "api-key",
    install_command: "npm ci",
    build_command: "npm run build",
    repo_commit_sha: "0123456789abcdef0123456789abcdef01234567",
    source_tarball_path: "uploads/agent.tar.gz",
    service_account_name: "agent",
    image_version: "0.2.0"
  }
  return table[property] ?? "agent"
}

export const generate = (document: Json, schema: Json, options: GenerateOptions): unknown => {
  const counter = { n: 0 }
  const walk = (node: Json, property: string, owner: string): unknown => {
    if (node?.$ref) return walk(resolveRef(document, node), property, node.$ref.split("/").pop())
    if (node.anyOf) {
      const nonNull = node.anyOf.filter((branch: Json) => branch.type !== "null")
      const nullable = nonNull.length < node.anyOf.length
      if (!nullable || options.mode === "full") return walk(nonNull[0], property, owner)
      if (options.mode === "minimal") return null
      // "nulls": objects and lists are walked so their own fields are null in turn; scalars are null.
      const branch = nonNull[0]
      const structured = branch.$ref !== undefined || branch.type === "object" || branch.type === "array"
      return structured ? walk(branch, property, owner) : null
    }
    if ("const" in node) return node.const
    if (node.enum) return node.enum[options.variant % node.enum.length]
    switch (node.type) {
      case "object": {
        const out: Record<string, unknown> = {}
        const required = new Set<string>(node.required ?? [])
        for (const [key, inner] of Object.entries<Json>(node.properties ?? {})) {
          if (options.mode !== "minimal" || required.has(key)) out[key] = walk(inner, key, owner)
        }
        if (node.properties === undefined && typeof node.additionalProperties === "object") out.app = walk(node.additionalProperties, "label", owner)
        return out
      }
      case "array":
        return options.mode !== "minimal" ? [walk(node.items, property, owner)] : []
      case "string":
        if (node.format === "uuid") return "3c90c3cc-0d44-4b50-8888-8dd25736052a"
        if (node.format === "date-time") return "2026-08-01T12:00:00.000Z"
        return stringFor(property, owner, counter)
      case "integer":
        return Math.max(node.minimum ?? 1, 1)
      case "number":
        return Math.min(Math.max(node.minimum ?? 1, 1), node.maximum ?? 1)
      case "boolean":
        return false
      default:
        return {}
    }
  }
  return walk(schema, "", "")
}

/** Enough variants for every value of the longest enum in the schema (13 revision statuses). */
export const variantCount = 13

// ---------------------------------------------------------------------------------------------
// Requests toward the real API

export interface Operation {
  readonly method: string
  readonly template: string
  readonly pattern: RegExp
  readonly operation: Json
}

export const operationsOf = (document: Json): Array<Operation> =>
  Object.entries<Json>(document.paths).flatMap(([template, methods]) =>
    Object.entries<Json>(methods).map(([method, operation]) => ({
      method: method.toUpperCase(),
      template,
      pattern: new RegExp(`^${template.replace(/\{(\w+)\}/g, "(?<$1>[^/]+)")}$`),
      operation
    }))
  )


/** The first success response of an operation: its status and schema (undefined for 204). */
export const successOf = (operation: Json): { status: number; schema: Json | undefined } => {
  const status = Object.keys(operation.responses).find((code) => code.startsWith("2"))!
  return { status: Number(status), schema: operation.responses[status].content?.["application/json"]?.schema }
}

/** A query value as FastAPI reads it for the parameter's schema. */
const queryValue = (schema: Json, values: Array<string>): unknown => {
  const type = schema.type ?? schema.anyOf?.find((branch: Json) => branch.type !== "null")?.type
  if (type === "array") return values
  const value = values[0]!
  if (type === "integer") return /^-?\d+$/.test(value) ? Number(value) : value
  if (type === "boolean") return value === "true" ? true : value === "false" ? false : value
  return value
}

export interface Sent {
  readonly method: string
  readonly url: string
  readonly headers: Record<string, string>
  readonly body: unknown
}

/** Checks requests against a real document: the operation exists, its parameters and body validate (strictly). */
export const requestChecker = (document: Json, validators: Validators) => {
  const realOperations = operationsOf(document)
  const findOperation = (method: string, path: string) => realOperations.find((op) => op.method === method && op.pattern.test(path))
/** What is wrong with a request toward the real API; empty when it is a valid one. */
  const problemsOf = (sent: Sent): Array<string> => {
  const url = new URL(sent.url)
  const path = url.pathname
  const match = findOperation(sent.method, path)
  if (!match) return [`${sent.method} ${path}: the real API has no such operation`]
  const problems: Array<string> = []
  const parameters: Array<Json> = match.operation.parameters ?? []
  if (!sent.headers["x-api-key"]) problems.push("no X-Api-Key header")
  if (!sent.headers["x-tenant-id"]) problems.push("no X-Tenant-Id header")
  const pathValues = match.pattern.exec(path)!.groups ?? {}
  for (const [name, value] of Object.entries(pathValues)) {
    const parameter = parameters.find((p) => p.in === "path" && p.name === name)
    if (!parameter) problems.push(`path parameter ${name} is not declared`)
    else problems.push(...validators.check(parameter.schema, decodeURIComponent(value)).map((e) => `path ${name}: ${e}`))
  }
  for (const name of new Set(url.searchParams.keys())) {
    const parameter = parameters.find((p) => p.in === "query" && p.name === name)
    if (!parameter) problems.push(`query parameter ${name} is not one the real API has`)
    else problems.push(...validators.check(parameter.schema, queryValue(parameter.schema, url.searchParams.getAll(name))).map((e) => `query ${name}: ${e}`))
  }
  for (const parameter of parameters) {
    if (parameter.required && parameter.in === "query" && !url.searchParams.has(parameter.name)) problems.push(`required query parameter ${parameter.name} missing`)
  }
  const bodySchema = match.operation.requestBody?.content?.["application/json"]?.schema
  if (bodySchema && sent.body === undefined) problems.push("the real API requires a body")
  if (!bodySchema && sent.body !== undefined) problems.push("the real API takes no body here")
  if (bodySchema && sent.body !== undefined) problems.push(...validators.check(bodySchema, sent.body).map((e) => `body: ${e}`))
  return problems
}
  return { realOperations, findOperation, problemsOf }
}
