/**
 * Reads and validates the action's inputs. Pure: it takes a `getInput` function (the runner's
 * `core.getInput`, or a record in tests) and the workflow context, and returns either typed
 * `Inputs` or every input error at once, each naming the offending input. Nothing here makes a
 * request, so bad inputs fail the step before the API is ever called.
 *
 * Error messages never quote a secret value (or an API key): they name the input and, for
 * secrets, the line or entry number.
 */
// @ts-nocheck

import { parse as parseYaml } from "yaml"
import { isUuid } from "../core/api/common.ts"

export type Source = "external_container" | "gitrepo"

export interface Secret {
  readonly name: string
  readonly value: string
}

export interface Inputs {
  readonly apiUrl: string
  readonly apiKey: string
  readonly tenantId: string | undefined
  readonly name: string
  /** Explicit, or inferred from image-uri (external_container) / repo-url (gitrepo); undefined when neither says. */
  readonly source: Source | undefined
  readonly imageUri: string | undefined
  readonly repoUrl: string | undefined
  /** For gitrepo: the input, or the pushed branch / tag ref from the context. Always undefined for external_container. */
  readonly repoRef: string | undefined
  readonly graphConfigPath: string | undefined
  readonly integrationId: string | undefined
  readonly listenerId: string | undefined
  readonly k8sNamespace: string | undefined
  readonly buildOnPush: boolean | undefined
  readonly secrets: ReadonlyArray<Secret> | undefined
  readonly resourceSpec: Readonly<Record<string, unknown>> | undefined
  readonly redeployRevisionId: string | undefined
  readonly wait: boolean
  readonly timeoutMs: number
  readonly pollIntervalMs: number
}

/** The parts of the workflow run the defaults come from (GITHUB_* variables). */
export interface RunContext {
  /** `owner/repo`. */
  readonly repository: string | undefined
  /** `refs/heads/main`, `refs/tags/v1.2.0`, `refs/pull/7/merge`. */
  readonly ref: string | undefined
  /** The PR's source branch on pull_request events (GITHUB_HEAD_REF). */
  readonly headRef: string | undefined
}

export interface InputError {
  /** The input's name as written in the workflow (`image-uri`). */
  readonly input: string
  readonly message: string
}

export type ParseResult = { readonly ok: true; readonly inputs: Inputs } | { readonly ok: false; readonly errors: ReadonlyArray<InputError> }

export type GetInput = (name: string) => string

/** Every input the action declares, in action.yml order. */
export const inputNames = [
  "api-url",
  "api-key",
  "tenant-id",
  "name",
  "source",
  "image-uri",
  "repo-url",
  "repo-ref",
  "graph-config-path",
  "integration-id",
  "listener-id",
  "k8s-namespace",
  "build-on-push",
  "secrets",
  "resource-spec",
  "redeploy-revision-id",
  "wait",
  "timeout",
  "poll-interval"
] as const
export type InputName = (typeof inputNames)[number]

export const defaults = { wait: "true", timeout: "15m", pollInterval: "5s" } as const

const namePattern = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/
const secretNamePattern = /^[A-Za-z_][A-Za-z0-9_]*$/

/** `Owner/My_Repo.js` → `my-repo-js`: lowercase, runs of other characters become one hyphen, at most 63 characters. */
export const nameFromRepository = (repository: string): string => {
  const repo = repository.includes("/") ? repository.slice(repository.lastIndexOf("/") + 1) : repository
  return repo
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+/, "")
    .slice(0, 63)
    .replace(/-+$/, "")
}

/** The repo_ref a push deploys: the bare branch name, or the full `refs/tags/…` path of a tag. */
export const refFromContext = (context: RunContext): string | undefined => {
  if (context.headRef) return context.headRef
  const ref = context.ref
  if (!ref) return undefined
  if (ref.startsWith("refs/heads/")) return ref.slice("refs/heads/".length)
  if (ref.startsWith("refs/tags/")) return ref
  return undefined
}

const durationUnits: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** `900` (seconds), `900s`, `15m`, `1h30m`, `250ms` → milliseconds; undefined when malformed. */
export const parseDuration = (text: string): number | undefined => {
  const trimmed = text.trim().toLowerCase()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000)
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(trimmed)) return undefined
  let total = 0
  for (const match of trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(match[1]) * durationUnits[match[2]!]!
  return Math.round(total)
}

/** YAML 1.2 core-schema booleans, as `core.getBooleanInput` accepts them. */
const parseBoolean = (text: string): boolean | undefined =>
  ["true", "True", "TRUE"].includes(text) ? true : ["false", "False", "FALSE"].includes(text) ? false : undefined

/**
 * `secrets`: either JSON (an object `{"NAME": "value"}` or an array `[{"name", "value"}]`) or
 * one `NAME=value` per line (blank lines and lines starting with `#` are skipped; the value is
 * everything after the first `=`, kept verbatim). Messages name lines and entries, never values.
 */
export const parseSecrets = (text: string): { ok: true; secrets: Array<Secret> } | { ok: false; errors: Array<string> } => {
  const errors: Array<string> = []
  const secrets: Array<Secret> = []
  const add = (name: unknown, value: unknown, where: string) => {
    if (typeof name !== "string" || !secretNamePattern.test(name)) {
      errors.push(`${where}: the name must be a letter or underscore followed by letters, digits or underscores`)
    } else if (typeof value !== "string") {
      errors.push(`${where} (${name}): the value must be a string`)
    } else if (secrets.some((secret) => secret.name === name)) {
      errors.push(`${where}: ${name} is given more than once`)
    } else {
      secrets.push({ name, value })
    }
  }
  const trimmed = text.trim()
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    let parsed: unknown
    try {
      parsed = JSON.parse(trimmed)
    } catch {
      // The parser's message may quote the text around the error, i.e. a secret value.
      return { ok: false, errors: ["not valid JSON (expected an object of NAME: value, or an array of {name, value})"] }
    }
    if (Array.isArray(parsed)) {
      parsed.forEach((entry, index) => {
        if (entry === null || typeof entry !== "object" || Array.isArray(entry)) errors.push(`entry ${index + 1}: expected an object with name and value`)
        else add((entry as any).name, (entry as any).value, `entry ${index + 1}`)
      })
    } else if (parsed !== null && typeof parsed === "object") {
      for (const [name, value] of Object.entries(parsed)) add(name, value, `key ${JSON.stringify(name)}`)
    }
  } else {
    text.split(/\r?\n/).forEach((line, index) => {
      if (line.trim() === "" || line.trimStart().startsWith("#")) return
      const equals = line.indexOf("=")
      if (equals < 0) errors.push(`line ${index + 1}: expected NAME=value`)
      else add(line.slice(0, equals).trim(), line.slice(equals + 1), `line ${index + 1}`)
    })
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, secrets }
}

/** `resource-spec`: a JSON or YAML mapping (JSON is YAML, so one parser reads both). */
export const parseResourceSpec = (text: string): { ok: true; spec: Record<string, unknown> } | { ok: false; error: string } => {
  let parsed: unknown
  try {
    parsed = parseYaml(text, { prettyErrors: false })
  } catch (error) {
    const firstLine = String((error as Error).message ?? error).split("\n")[0]
    return { ok: false, error: `not valid JSON or YAML: ${firstLine}` }
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    return { ok: false, error: "expected a mapping of resource fields (e.g. cpu: 1, memory_mb: 1024)" }
  }
  return { ok: true, spec: parsed as Record<string, unknown> }
}

/** Inputs that belong to one source only, and which source. */
const sourceOnly: ReadonlyArray<readonly [InputName, Source]> = [
  ["image-uri", "external_container"],
  ["listener-id", "external_container"],
  ["k8s-namespace", "external_container"],
  ["resource-spec", "external_container"],
  ["repo-url", "gitrepo"],
  ["repo-ref", "gitrepo"],
  ["graph-config-path", "gitrepo"],
  ["integration-id", "gitrepo"],
  ["build-on-push", "gitrepo"]
]

export const parseInputs = (getInput: GetInput, context: RunContext): ParseResult => {
  const errors: Array<InputError> = []
  const fail = (input: InputName, message: string) => void errors.push({ input, message })
  const raw = (name: InputName): string | undefined => {
    const value = getInput(name).trim()
    return value === "" ? undefined : value
  }
  const uuid = (name: InputName): string | undefined => {
    const value = raw(name)
    if (value !== undefined && !isUuid(value)) fail(name, `must be a UUID, got ${JSON.stringify(value)}`)
    return value
  }
  const duration = (name: InputName, fallback: string, minimumMs: number): number => {
    const text = raw(name) ?? fallback
    const ms = parseDuration(text)
    if (ms === undefined) fail(name, `must be a duration such as 15m, 90s, 1h30m or a number of seconds, got ${JSON.stringify(text)}`)
    else if (ms < minimumMs) fail(name, `must be at least ${minimumMs} ms, got ${JSON.stringify(text)}`)
    return ms ?? 0
  }
  const boolean = (name: InputName, fallback?: string): boolean | undefined => {
    const text = raw(name) ?? fallback
    if (text === undefined) return undefined
    const value = parseBoolean(text)
    if (value === undefined) fail(name, `must be true or false, got ${JSON.stringify(text)}`)
    return value
  }

  const apiUrl = raw("api-url")
  if (apiUrl === undefined) fail("api-url", "is required (the Slipway server's base URL, e.g. https://slipway.example.com)")
  else if (!/^https?:\/\/[^/\s]+/.test(apiUrl) || !URL.canParse(apiUrl)) fail("api-url", `must be an http(s) URL, got ${JSON.stringify(apiUrl)}`)

  const apiKey = raw("api-key")
  if (apiKey === undefined) fail("api-key", "is required (store it as a repository secret: api-key: ${{ secrets.SLIPWAY_API_KEY }})")

  const tenantId = uuid("tenant-id")

  const explicitName = raw("name")
  const name = explicitName ?? (context.repository ? nameFromRepository(context.repository) : "")
  if (explicitName !== undefined && !namePattern.test(explicitName)) {
    fail("name", `must be 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit, got ${JSON.stringify(explicitName)}`)
  } else if (explicitName === undefined && !namePattern.test(name)) {
    fail("name", `is required: no valid name could be derived from the repository ${JSON.stringify(context.repository ?? "")}`)
  }

  const sourceText = raw("source")
  let source: Source | undefined
  if (sourceText === undefined) {
    if (raw("image-uri") !== undefined && raw("repo-url") === undefined) source = "external_container"
    else if (raw("repo-url") !== undefined && raw("image-uri") === undefined) source = "gitrepo"
  } else if (sourceText === "external_container" || sourceText === "gitrepo") {
    source = sourceText
  } else {
    fail("source", `must be external_container or gitrepo, got ${JSON.stringify(sourceText)}`)
  }
  if (source !== undefined) {
    for (const [input, owner] of sourceOnly) {
      if (owner !== source && raw(input) !== undefined) fail(input, `applies to source ${owner} only, but source is ${source}`)
    }
  } else if (sourceText === undefined && raw("image-uri") !== undefined && raw("repo-url") !== undefined) {
    fail("source", "is required when both image-uri and repo-url are given (external_container uses image-uri, gitrepo uses repo-url)")
  }

  const imageUri = raw("image-uri")
  const repoUrl = raw("repo-url")
  const repoRef = source === "gitrepo" ? (raw("repo-ref") ?? refFromContext(context)) : undefined
  const graphConfigPath = raw("graph-config-path")
  const integrationId = uuid("integration-id")
  const listenerId = uuid("listener-id")
  const k8sNamespace = raw("k8s-namespace")
  const buildOnPush = boolean("build-on-push")
  if (buildOnPush === true && repoRef?.startsWith("refs/tags/")) {
    fail("build-on-push", `cannot be true when repo-ref is a tag (${repoRef})`)
  }

  let secrets: Array<Secret> | undefined
  const secretsText = getInput("secrets")
  if (secretsText.trim() !== "") {
    const parsed = parseSecrets(secretsText)
    if (parsed.ok) secrets = parsed.secrets
    else for (const message of parsed.errors) fail("secrets", message)
  }

  let resourceSpec: Record<string, unknown> | undefined
  const specText = raw("resource-spec")
  if (specText !== undefined) {
    const parsed = parseResourceSpec(specText)
    if (parsed.ok) resourceSpec = parsed.spec
    else fail("resource-spec", parsed.error)
  }

  const redeployRevisionId = uuid("redeploy-revision-id")
  const wait = boolean("wait", defaults.wait) ?? true
  const timeoutMs = duration("timeout", defaults.timeout, 1000)
  const pollIntervalMs = duration("poll-interval", defaults.pollInterval, 10)

  if (errors.length > 0) return { ok: false, errors }
  return {
    ok: true,
    inputs: {
      apiUrl: apiUrl!,
      apiKey: apiKey!,
      tenantId,
      name,
      source,
      imageUri,
      repoUrl,
      repoRef,
      graphConfigPath,
      integrationId,
      listenerId,
      k8sNamespace,
      buildOnPush,
      secrets,
      resourceSpec,
      redeployRevisionId,
      wait,
      timeoutMs,
      pollIntervalMs
    }
  }
}

/** `api-key: is required …` — one line per error, for the log and the step's failure message. */
export const formatInputErrors = (errors: ReadonlyArray<InputError>): string => errors.map((error) => `${error.input}: ${error.message}`).join("\n")
