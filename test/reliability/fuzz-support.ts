/**
 * Generators for the bad-input suite, derived from the endpoint descriptions in `Api`: every
 * property path a body schema names (with its JSON type and enum members), values near a valid
 * one for each, and whole valid bodies with one or two fields mutated.
 */
import fc from "fast-check"
import { Schema } from "effect"
import type { Endpoint } from "../../core/index.ts"

type Json = null | boolean | number | string | Array<Json> | { [key: string]: Json }
type Path = ReadonlyArray<string | number>

/** One place in a body the schema describes: its path and what the schema says it holds. */
export interface Slot {
  readonly path: Path
  readonly types: ReadonlyArray<string>
  readonly enumValues: ReadonlyArray<Json>
}

/** Walks the JSON Schema of `schema` (following $refs, unions, arrays) up to `maxDepth` levels. */
export const slotsOf = (schema: Schema.Top, maxDepth = 5): ReadonlyArray<Slot> => {
  const document = Schema.toJsonSchemaDocument(schema as any) as unknown as { schema: any; definitions?: Record<string, any> }
  const definitions = document.definitions ?? {}
  const slots: Array<Slot> = []
  const resolve = (node: any, seen: ReadonlySet<string>): Array<any> => {
    if (node === undefined || node === null || typeof node !== "object") return []
    if (typeof node.$ref === "string") {
      const name = node.$ref.replace("#/$defs/", "")
      return seen.has(name) ? [] : resolve(definitions[name], new Set([...seen, name])).map((inner) => ({ ...inner, __seen: new Set([...seen, name]) }))
    }
    const alternatives = node.anyOf ?? node.oneOf
    if (Array.isArray(alternatives)) return alternatives.flatMap((alternative: any) => resolve(alternative, seen))
    return [{ ...node, __seen: seen }]
  }
  const walk = (node: any, path: Path, seen: ReadonlySet<string>) => {
    const variants = resolve(node, seen)
    const types = [...new Set(variants.map((variant) => variant.type ?? (variant.const !== undefined ? typeof variant.const : "any")))].flat()
    const enumValues = variants.flatMap((variant) => variant.enum ?? (variant.const !== undefined ? [variant.const] : []))
    if (path.length > 0) slots.push({ path, types, enumValues })
    if (path.length >= maxDepth) return
    for (const variant of variants) {
      if (variant.type === "object" && variant.properties) {
        for (const [key, inner] of Object.entries(variant.properties)) walk(inner, [...path, key], variant.__seen)
      }
      if (variant.type === "array" && variant.items) walk(variant.items, [...path, 0], variant.__seen)
    }
  }
  walk(document.schema, [], new Set())
  // One entry per path (a union may describe the same property twice).
  const byPath = new Map<string, Slot>()
  for (const slot of slots) {
    const key = JSON.stringify(slot.path)
    const before = byPath.get(key)
    byPath.set(key, before ? { path: slot.path, types: [...new Set([...before.types, ...slot.types])], enumValues: [...before.enumValues, ...slot.enumValues] } : slot)
  }
  return [...byPath.values()]
}

const edgeStrings = [
  "",
  " ",
  "a",
  "A",
  "-",
  "a-",
  "-a",
  "a".repeat(63),
  "a".repeat(64),
  "A".repeat(64),
  "x".repeat(10_000),
  "UPPER",
  "with space",
  "é",
  "名前",
  "😀",
  "\u0000",
  "\n",
  "null",
  "true",
  "0",
  "-1",
  "1e309",
  "NaN",
  "Infinity",
  "0Gi",
  "-1Gi",
  "1Gi",
  "1.5Gi",
  "1e3",
  "9223372036854775807Ei",
  "99999999999999999999999Gi",
  "10Ki",
  "500m",
  "0.001m",
  "1m",
  "1Ti",
  "refs/tags/v1",
  "refs/heads/main",
  "https://github.com/o/r",
  "http://[::1",
  "${VAR}",
  "../../etc/passwd",
  "/",
  "/data",
  "'; DROP TABLE deployments; --",
  "%00",
  "00000000-0000-4000-8000-000000000001",
  "00000000-0000-4000-8000-00000000000g",
  "******** "
]

const edgeNumbers = [0, -0, 1, -1, 2, 1.5, -1.5, 0.1, 63, 64, 100, 101, 500, 501, 3600, 3601, 1e-9, 1e15, 2 ** 31, 2 ** 53, 2 ** 53 + 2, -(2 ** 63), 1e308, -1e308, Number.MAX_SAFE_INTEGER]

/** Any JSON value, small. */
export const anyJson: fc.Arbitrary<Json> = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>

/** A value near what `slot` accepts: one of its enum members (possibly bent), a typed edge value, or anything. */
export const nearValue = (slot: Slot): fc.Arbitrary<Json> => {
  const options: Array<fc.Arbitrary<Json>> = [anyJson, fc.constant(null)]
  if (slot.enumValues.length > 0) {
    const members = fc.constantFrom(...slot.enumValues)
    options.push(members, members, members.map((value) => (typeof value === "string" ? value.toLowerCase() : value)), members.map((value) => (typeof value === "string" ? ` ${value}` : value)))
  }
  if (slot.types.includes("string")) options.push(fc.constantFrom(...edgeStrings), fc.string({ maxLength: 80 }), fc.string({ unit: "binary", maxLength: 20 }))
  if (slot.types.includes("number") || slot.types.includes("integer")) {
    options.push(fc.constantFrom(...edgeNumbers), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom("1", "NaN", "Infinity", "-Infinity", "1.0"))
  }
  if (slot.types.includes("boolean")) options.push(fc.boolean(), fc.constantFrom("true", 1, 0))
  if (slot.types.includes("array")) options.push(fc.constant([]), fc.array(anyJson, { maxLength: 3 }), fc.constant([null]))
  if (slot.types.includes("object")) options.push(fc.constant({}), fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 3 }))
  return fc.oneof(...options)
}

const clone = <A>(value: A): A => structuredClone(value)

/** Sets `value` at `path` inside `root`, creating objects/arrays on the way; returns the new root. */
export const setAt = (root: Json, path: Path, value: Json): Json => {
  if (path.length === 0) return value
  const [head, ...rest] = path
  const base: any = typeof head === "number" ? (Array.isArray(root) ? [...root] : []) : root !== null && typeof root === "object" && !Array.isArray(root) ? { ...root } : {}
  base[head as any] = setAt(base[head as any] ?? null, rest, value)
  return base
}

export const deleteAt = (root: Json, path: Path): Json => {
  if (path.length === 0 || root === null || typeof root !== "object") return root
  const [head, ...rest] = path
  const copy: any = Array.isArray(root) ? [...root] : { ...root }
  if (rest.length === 0) {
    if (Array.isArray(copy) && typeof head === "number") copy.splice(head, 1)
    else delete copy[head as any]
  } else if (copy[head as any] !== undefined) copy[head as any] = deleteAt(copy[head as any], rest)
  return copy
}

/** Every path present in a JSON value. */
export const pathsIn = (value: Json, prefix: Path = []): Array<Path> => {
  if (value === null || typeof value !== "object") return []
  const entries: Array<[string | number, Json]> = Array.isArray(value) ? value.map((item, i) => [i, item]) : Object.entries(value)
  return entries.flatMap(([key, inner]) => [[...prefix, key], ...pathsIn(inner, [...prefix, key])])
}

type Mutation = (body: Json) => Json

/** One change to a valid body: a described field set near-valid, a present field removed or replaced, or an unknown key added. */
const mutation = (slots: ReadonlyArray<Slot>, valid: Json): fc.Arbitrary<Mutation> => {
  const present = pathsIn(valid)
  const options: Array<fc.Arbitrary<Mutation>> = [
    fc.tuple(fc.string({ minLength: 1, maxLength: 12 }), anyJson).map(([key, value]) => (body: Json) => setAt(body, [`${key}_x`], value))
  ]
  if (slots.length > 0) {
    options.push(
      fc.constantFrom(...slots).chain((slot) => nearValue(slot).map((value) => (body: Json) => setAt(body, slot.path, value))),
      fc.constantFrom(...slots).chain((slot) => nearValue(slot).map((value) => (body: Json) => setAt(body, slot.path, value)))
    )
  }
  if (present.length > 0) {
    options.push(
      fc.constantFrom(...present).map((path) => (body: Json) => deleteAt(body, path)),
      fc.tuple(fc.constantFrom(...present), anyJson).map(([path, value]) => (body: Json) => setAt(body, path, value))
    )
  }
  return fc.oneof(...options)
}

/** Valid bodies with one or two mutations, bodies of the wrong JSON type, and arbitrary JSON. */
export const bodyArbitrary = (endpoint: Endpoint, valid: () => Json): fc.Arbitrary<Json> => {
  const slots = endpoint.body ? slotsOf(endpoint.body) : []
  const base = valid()
  return fc.oneof(
    { weight: 6, arbitrary: fc.array(mutation(slots, base), { minLength: 1, maxLength: 2 }).map((changes) => changes.reduce((body, change) => change(body), clone(valid()))) },
    { weight: 1, arbitrary: fc.constantFrom<Json>([], "string", 0, true, null, [base]) },
    { weight: 1, arbitrary: anyJson }
  )
}

/**
 * Path parameter values as a function of a real one (an existing item): the real value, bent
 * copies of it (suffixes, case, a changed character), random text and encodings that test the router.
 */
export const paramArbitrary = (name: string): fc.Arbitrary<(real: string) => string> => {
  const fixed = (arbitrary: fc.Arbitrary<string>) => arbitrary.map((value) => () => value)
  const encoded = fixed(fc.string({ maxLength: 40 }).map(percentEncode))
  const raw = fixed(fc.constantFrom("%", "%zz", "%E0%A4%A", "%2F", "a%2Fb", "%00", "..", ".", "%2e%2e", "a%20b", "a?b=1", "a#b", "~", "+", "\\", "%C0%AE"))
  const real = fc.constant((value: string) => value)
  const suffixed = fc.constantFrom("-", "A", ".", "_", "%20", "%00", "x".repeat(60), "/", "/x").map((suffix) => (value: string) => value + suffix)
  const bent = fc.tuple(fc.nat(40), fc.constantFrom("g", "-", "", "Z", "0", "%25", "A")).map(([at, char]) => (value: string) => {
    const index = at % Math.max(1, value.length)
    return value.slice(0, index) + char + value.slice(index + 1)
  })
  const options = [real, real, suffixed, bent, fc.constant((value: string) => value.toUpperCase()), encoded, raw, fixed(fc.string({ unit: "binary", maxLength: 10 }).map(percentEncode))]
  if (name.endsWith("_id")) options.push(fixed(fc.uuid()), fc.constant((value: string) => `{${value}}`))
  // An empty segment addresses another route (the list), which is not this endpoint's input.
  return fc.oneof(...options).map((make) => (value: string) => {
    const made = make(value)
    return made === "" ? "x" : made
  })
}

/** Percent-encodes UTF-8 bytes (lone surrogates included, which `encodeURIComponent` refuses). */
export const percentEncode = (text: string): string =>
  [...Buffer.from(text, "utf8")].map((byte) => (/[A-Za-z0-9\-_.~]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`)).join("")

/** Characters an HTTP client cannot put in a request line are sent percent-encoded; the rest as generated. */
export const requestLineSafe = (text: string): string => text.replace(/[^\x21-\x7e]/gu, (char) => percentEncode(char))

/** Query strings built from the names the query schema describes, with bent values. */
export const queryArbitrary = (endpoint: Endpoint): fc.Arbitrary<string> => {
  const slots = endpoint.query ? slotsOf(endpoint.query, 1) : []
  const names = slots.map((slot) => String(slot.path[0]))
  const value = fc.oneof(
    fc.constantFrom("", "0", "1", "-1", "1.5", "20", "100", "101", "500", "501", "99999999999999999999", "1e3", " 5", "abc", "null", "true", "%zz", "%00", ",", ",,", "READY", "ready", "DEPLOYED,FAILED", "DEPLOYED,,BUILDING", "dev", "prod"),
    fc.string({ maxLength: 30 }).map(percentEncode),
    fc.uuid(),
    fc.array(fc.uuid(), { maxLength: 3 }).map((ids) => ids.join(",")),
    fc.integer().map(String)
  )
  const key = names.length > 0 ? fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: fc.string({ maxLength: 8 }).map(percentEncode) }) : fc.string({ maxLength: 8 }).map(percentEncode)
  return fc.array(fc.tuple(key, value), { maxLength: 4 }).map((pairs) => requestLineSafe(pairs.map(([k, v]) => `${k}=${v}`).join("&")))
}

let counter = 0
/** A name not given before in this process. */
export const unique = (prefix: string) => `${prefix}-${(counter++).toString(36)}`
/** How many names `unique` has given: the fuzz alternates between the two deployment sources on it. */
export const uniqueCount = () => counter

/** A valid body for each endpoint that takes one: the baseline the mutations start from. */
export const validBodies: Record<string, () => any> = {
  createTemplate: () => ({
    name: unique("fz-tpl"),
    image: "python:3.12",
    resources: { cpu: "500m", memory: "512Mi", storage: "1Gi" },
    volume_mounts: [{ volume_name: "fz-volume", mount_path: "/data" }],
    proxy_config: { rules: [{ name: "api", match_hosts: ["api.example.com"], inject_headers: { authorization: "Bearer ${TOKEN}" }, match_paths: ["/v1/*"], enabled: true }], no_proxy: ["localhost"] }
  }),
  updateTemplate: () => ({ name: unique("fz-tpl") }),
  createVolume: () => ({ name: unique("fz-vol"), size: "1Gi", storage_class: "standard", wait_for_ready: false, timeout: 60 }),
  updateVolume: () => ({ name: unique("fz-vol"), size: "2Gi" }),
  createPool: () => ({ name: unique("fz-pool"), template_name: "fz-template", replicas: 1, wait_for_ready: true, timeout: 30 }),
  updatePool: () => ({ name: unique("fz-pool"), replicas: 2 }),
  createBox: () => ({ template_name: "fz-template", name: unique("fz-box"), wait_for_ready: false, timeout: 60 }),
  updateBox: () => ({ name: unique("fz-box"), idle_ttl_seconds: 3600 }),
  createSnapshot: () => ({ name: unique("fz-snap"), docker_image: "python:3.12", fs_capacity_bytes: 1024 ** 3 }),
  captureSnapshot: () => ({ name: unique("fz-captured") }),
  createRegistry: () => ({ name: unique("fz-reg"), url: "registry.example.com/acme", username: "robot", password: "fuzz-secret" }),
  updateRegistry: () => ({ name: unique("fz-reg"), password: "rotated-secret" }),
  createServiceUrl: () => ({ port: 8000, expires_in_seconds: 600 }),
  createDownloadUrl: () => ({ path: "/home/user/report.csv", expires_in_seconds: 600, content_type: "text/csv", content_disposition: "attachment" }),
  getBuildLogs: () => ({ limit: 50, order: "asc", offset: null, level: "INFO", query: "pull", start_time: null, end_time: null }),
  getDeployLogs: () => ({ limit: 10, order: "desc", query: null }),
  getRevisionDeployLogs: () => ({ limit: 100 }),
  createDeployment: () => ({
    name: unique("fz-dep"),
    source: "external_container",
    source_config: {
      custom_url: "https://example.com/agent",
      resource_spec: {
        min_scale: 1,
        max_scale: 3,
        cpu: 1,
        memory_mb: 1024,
        labels: { team: "fuzz" },
        volumes: [{ name: "data", emptyDir: {} }],
        volume_mounts: [{ name: "data", mountPath: "/data" }],
        sidecars: [{ name: "side", image: "busybox", env: [{ name: "A_B", value: "1" }], resources: { limits: { cpu: "1" } } }]
      }
    },
    source_revision_config: { image_uri: "registry.example.com/agent:1" },
    secrets: [{ name: "OPENAI_API_KEY", value: "sk-fuzz" }],
    image_version: "1.0.0"
  }),
  // Alternates between the two sources (the fresh deployments alternate too), so both sets of rules are fuzzed.
  updateDeployment: () =>
    uniqueCount() % 2 === 0
      ? { source_revision_config: { image_uri: `registry.example.com/agent:${unique("v")}` }, secrets: [{ name: "K", value: "v" }], image_version: "2", source_config: { custom_url: "https://example.com/x" } }
      : { source_config: { build_on_push: true, resource_spec: null, install_command: "npm ci", build_command: "npm run build" }, source_revision_config: { repo_ref: `feature-${unique("b")}`, graph_config_path: "langgraph.json" } },
  createRevision: () => ({ source_revision_config: { image_uri: "registry.example.com/agent:3" }, secrets: null }),
  createListener: () => ({ compute_type: "k8s", compute_config: { k8s_namespaces: ["default", "agents"] } }),
  updateListener: () => ({ compute_config: { k8s_namespaces: ["other"] } }),
  gitPushWebhook: () => ({
    ref: "refs/heads/main",
    after: "0123456789abcdef0123456789abcdef01234567",
    repository: { clone_url: "https://github.com/o/r.git", html_url: "https://github.com/o/r", full_name: "o/r" }
  })
}
