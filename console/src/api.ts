/**
 * The console's only door to the server: a `fetch` wrapper that adds the API key and tenant kept
 * in this tab's sessionStorage (never localStorage: closing the tab forgets the key), and turns
 * every non-2xx answer into an `ApiError` whose `lines` say what went wrong, field by field for
 * a 422.
 */
import type { Deployment as DeploymentSchema, Revision as RevisionSchema } from "../../core/deployments/model.ts"
import type { LogEntry as LogEntrySchema, LogsRequest as LogsRequestSchema } from "../../core/api/logs.ts"
import type { Pool as PoolSchema, Sandbox as SandboxSchema, Template as TemplateSchema, Volume as VolumeSchema } from "../../core/sandboxes/model.ts"
import type { Snapshot as SnapshotSchema } from "../../core/sandboxes/snapshots.ts"

// The wire (JSON) forms of the core's schemas: type-only imports, nothing of the core is bundled.
export type Deployment = (typeof DeploymentSchema)["Encoded"]
export type Revision = (typeof RevisionSchema)["Encoded"]
export type LogEntry = (typeof LogEntrySchema)["Encoded"]
export type LogsRequest = (typeof LogsRequestSchema)["Encoded"]
export type Sandbox = (typeof SandboxSchema)["Encoded"]
export type Template = (typeof TemplateSchema)["Encoded"]
export type Pool = (typeof PoolSchema)["Encoded"]
export type Volume = (typeof VolumeSchema)["Encoded"]
export type Snapshot = (typeof SnapshotSchema)["Encoded"]

export interface Session {
  readonly key: string
  /** Empty: the key's own tenant. */
  readonly tenant: string
}

const KEY = "slipway.apiKey"
const TENANT = "slipway.tenantId"

export const loadSession = (): Session | undefined => {
  const key = sessionStorage.getItem(KEY)
  return key ? { key, tenant: sessionStorage.getItem(TENANT) ?? "" } : undefined
}

export const saveSession = (session: Session): void => {
  sessionStorage.setItem(KEY, session.key)
  sessionStorage.setItem(TENANT, session.tenant)
}

export const clearSession = (): void => {
  sessionStorage.removeItem(KEY)
  sessionStorage.removeItem(TENANT)
}

export class ApiError extends Error {
  readonly status: number
  /** One line per problem: `name: Input should contain only lowercase letters…` for each 422 issue. */
  readonly lines: ReadonlyArray<string>
  constructor(status: number, lines: ReadonlyArray<string>) {
    super(lines.join("\n"))
    this.status = status
    this.lines = lines
  }
}

/** The `detail` of an error body, as the spec shapes it: a FastAPI 422 list, a string, or a sandbox `{error, message}`. */
export const describeError = (status: number, body: unknown): Array<string> => {
  const detail = (body as { detail?: unknown } | null | undefined)?.detail
  if (Array.isArray(detail)) {
    return detail.map((issue: any) => {
      // Drop the "body" / "query" / "path" root: the user sees the form, not the request.
      const loc = Array.isArray(issue?.loc) ? issue.loc.filter((part: unknown, index: number) => !(index === 0 && ["body", "query", "path"].includes(String(part)))) : []
      return `${loc.length > 0 ? loc.join(".") + ": " : ""}${String(issue?.msg ?? "invalid")}`
    })
  }
  if (typeof detail === "string") return [detail]
  if (detail && typeof detail === "object" && "message" in detail) {
    const { error, message } = detail as { error?: unknown; message?: unknown }
    return [`${error ? `${String(error)}: ` : ""}${String(message)}`]
  }
  if (status === 0) return ["The server cannot be reached"]
  return [`HTTP ${status}`]
}

export interface RequestOptions {
  readonly body?: unknown
  readonly signal?: AbortSignal
}

/** Calls the API with the session's key and tenant; resolves the JSON answer (undefined for 204). */
export const request = async <T = unknown>(session: Session, method: string, path: string, options: RequestOptions = {}): Promise<T> => {
  const headers: Record<string, string> = { "x-api-key": session.key, accept: "application/json" }
  if (session.tenant) headers["x-tenant-id"] = session.tenant
  if (options.body !== undefined) headers["content-type"] = "application/json"
  let response: Response
  try {
    response = await fetch(path, {
      method,
      headers,
      cache: "no-store",
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      ...(options.signal ? { signal: options.signal } : {})
    })
  } catch (error) {
    if ((error as Error)?.name === "AbortError") throw error
    throw new ApiError(0, ["The server cannot be reached"])
  }
  const text = await response.text()
  let parsed: unknown = undefined
  try {
    parsed = text === "" ? undefined : JSON.parse(text)
  } catch {
    parsed = text
  }
  if (!response.ok) throw new ApiError(response.status, describeError(response.status, parsed))
  return parsed as T
}

/** Fetches every page of a list (`offset` paging). */
export const listAll = async <T>(session: Session, path: string, field: string, pageSize = 100): Promise<Array<T>> => {
  const items: Array<T> = []
  for (let offset = 0, pages = 0; pages < 50; pages++) {
    const separator = path.includes("?") ? "&" : "?"
    const page = await request<Record<string, unknown>>(session, "GET", `${path}${separator}limit=${pageSize}&offset=${offset}`)
    const batch = (page[field] ?? []) as Array<T>
    items.push(...batch)
    if (batch.length < pageSize) break
    offset += batch.length
  }
  return items
}

export interface ExecuteResult {
  readonly stdout: string
  readonly stderr: string
  readonly exit_code: number
}

/** Runs a command through a box's dataplane (`POST {dataplane_url}/execute`, sandbox-dataplane.md). */
export const execute = async (session: Session, dataplaneUrl: string, command: string, timeout = 60, shell = "/bin/sh"): Promise<ExecuteResult> => {
  let response: Response
  try {
    response = await fetch(`${dataplaneUrl.replace(/\/+$/, "")}/execute`, {
      method: "POST",
      headers: { "x-api-key": session.key, "content-type": "application/json", ...(session.tenant ? { "x-tenant-id": session.tenant } : {}) },
      body: JSON.stringify({ command, timeout, shell })
    })
  } catch {
    throw new ApiError(0, ["The box's dataplane cannot be reached"])
  }
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // keep text
  }
  if (!response.ok) throw new ApiError(response.status, describeError(response.status, parsed))
  return parsed as ExecuteResult
}
