/**
 * Shared pieces of the reliability suites: the endpoint table, the spec's error shapes, child
 * servers on one database file, raw database inspection and valid request bodies per endpoint.
 */
import { existsSync, readFileSync, statSync } from "node:fs"
import { request as httpRequest } from "node:http"
import Database from "better-sqlite3"
import { Api, type Endpoint, renderPath } from "../../core/index.ts"
import { type ChildServer, spawnServer } from "../support/server.ts"

export const endpoints: ReadonlyArray<Endpoint> = Object.values(Api) as ReadonlyArray<Endpoint>

export const endpointNamed = (name: string): Endpoint => {
  const found = endpoints.find((endpoint) => endpoint.name === name)
  if (!found) throw new Error(`no endpoint named ${name} in Api (have: ${endpoints.map((e) => e.name).join(", ")})`)
  return found
}

/** The signed push webhook authenticates by signature, not by API key. */
export const WEBHOOK_PATH = "/v1/integrations/gitrepo/webhook"
export const isWebhook = (endpoint: Endpoint) => endpoint.path === WEBHOOK_PATH

export const pathParamNames = (endpoint: Endpoint): ReadonlyArray<string> => [...endpoint.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!)

/** A well-formed path for `endpoint`: ids are fresh uuids, names a valid label that exists nowhere. */
export const samplePath = (endpoint: Endpoint, params: Record<string, string> = {}): string => {
  const values: Record<string, string> = {}
  for (const name of pathParamNames(endpoint)) values[name] = params[name] ?? (name.endsWith("_id") ? crypto.randomUUID() : "absent-name")
  return renderPath(endpoint.path, values)
}

// ---------------------------------------------------------------------------------------------
// The spec's error shapes

const sandboxErrorNames = new Set(["NotFound", "Conflict", "ResourceInUse", "ResizeError", "TemplateNotFound", "ValidationError", "Unsupported"])

const isPlainObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value)

/** Why `body` is not the spec's error body for `status` on `endpoint`, or undefined when it is. */
export const errorShapeProblem = (endpoint: Endpoint | undefined, status: number, body: unknown): string | undefined => {
  if (status >= 500) return `server error ${status}`
  if (!isPlainObject(body)) return `body is not a JSON object: ${JSON.stringify(body)}`
  const keys = Object.keys(body)
  if (keys.length !== 1 || keys[0] !== "detail") return `body has keys ${JSON.stringify(keys)}, expected only "detail"`
  const detail = body.detail
  if (status === 422) {
    if (!Array.isArray(detail) || detail.length === 0) return `422 detail is not a non-empty list: ${JSON.stringify(detail)}`
    for (const entry of detail) {
      if (!isPlainObject(entry)) return `422 entry is not an object: ${JSON.stringify(entry)}`
      const entryKeys = Object.keys(entry).sort().join(",")
      if (entryKeys !== "loc,msg,type") return `422 entry has keys ${entryKeys}: ${JSON.stringify(entry)}`
      const { loc, msg, type } = entry
      if (!Array.isArray(loc) || loc.length === 0) return `422 loc is not a non-empty list: ${JSON.stringify(entry)}`
      if (!loc.every((part) => typeof part === "string" || (typeof part === "number" && Number.isInteger(part)))) {
        return `422 loc holds something other than strings and integers: ${JSON.stringify(entry)}`
      }
      if (!["body", "path", "query"].includes(loc[0] as string)) return `422 loc does not start with body/path/query: ${JSON.stringify(entry)}`
      if (typeof msg !== "string" || msg === "") return `422 msg is not a non-empty string: ${JSON.stringify(entry)}`
      if (typeof type !== "string" || type === "") return `422 type is not a non-empty string: ${JSON.stringify(entry)}`
    }
    return undefined
  }
  // Sandbox-area resource errors carry {error, message}; everything else (auth, 413, 415, 429, control plane) a string.
  const sandboxObject = endpoint?.area === "sandbox" && [400, 404, 409].includes(status)
  if (sandboxObject) {
    if (!isPlainObject(detail)) return `sandbox-area ${status} detail is not an {error, message} object: ${JSON.stringify(detail)}`
    if (Object.keys(detail).sort().join(",") !== "error,message") return `sandbox detail keys: ${JSON.stringify(detail)}`
    if (!sandboxErrorNames.has(detail.error as string)) return `unknown sandbox error name: ${JSON.stringify(detail)}`
    if (typeof detail.message !== "string" || detail.message === "") return `sandbox error message is not a string: ${JSON.stringify(detail)}`
    if (status === 404 && detail.error !== "NotFound") return `404 with error ${String(detail.error)}`
    if (status === 409 && !["Conflict", "ResourceInUse"].includes(detail.error as string)) return `409 with error ${String(detail.error)}`
    return undefined
  }
  if (typeof detail !== "string" || detail === "") return `${status} detail is not a non-empty string: ${JSON.stringify(detail)}`
  if (status === 429 && !/^Storage quota exceeded: limit \S+, current usage \S+, requested increase \S+$/.test(detail)) {
    return `429 detail does not name limit, usage and increase: ${detail}`
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------
// Child servers

/** Two child servers on one database file: their SQLite transactions contend for real. */
export const spawnPair = async (databasePath: string, env: Record<string, string> = {}): Promise<[ChildServer, ChildServer]> => {
  const first = await spawnServer({ databasePath, env })
  try {
    const second = await spawnServer({ databasePath, env })
    return [first, second]
  } catch (error) {
    first.process.kill("SIGKILL")
    throw error
  }
}

/** Stops a child (SIGKILL unless told otherwise) and waits for it to be gone. */
export const stopChild = async (child: ChildServer | undefined, signal: NodeJS.Signals = "SIGKILL"): Promise<number | null> => {
  if (!child) return null
  if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill(signal)
  return child.exited
}

// ---------------------------------------------------------------------------------------------
// The database file, read directly

export const databaseFiles = (path: string) => [path, `${path}-wal`, `${path}-shm`, `${path}-journal`].filter((file) => existsSync(file))

export const databaseBytes = (path: string): Buffer => Buffer.concat(databaseFiles(path).map((file) => readFileSync(file)))

export const walSize = (path: string): number => (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0)

/** Opens the file outside any server (recovering the WAL as SQLite does) and runs `work`. */
export const withDatabase = <A>(path: string, work: (db: Database.Database) => A): A => {
  const db = new Database(path)
  try {
    db.pragma("busy_timeout = 5000")
    return work(db)
  } finally {
    db.close()
  }
}

export const integrityCheck = (path: string): ReadonlyArray<string> => withDatabase(path, (db) => db.pragma("integrity_check", { simple: false }) as any).map((row: any) => row.integrity_check)

// ---------------------------------------------------------------------------------------------
// Raw HTTP: requests whose body arrives slowly, so they are in flight when a signal lands

export interface SlowRequest {
  /** Sends the rest of the body; resolves with the answer. */
  readonly finish: () => Promise<{ status: number; body: string; headers: Record<string, unknown> }>
  /** Resolves once the server has the headers and the first part of the body. */
  readonly started: Promise<void>
}

export const slowRequest = (baseUrl: string, method: string, path: string, body: string, headers: Record<string, string>): SlowRequest => {
  const url = new URL(path, baseUrl)
  const bytes = Buffer.from(body, "utf8")
  const half = Math.max(1, Math.floor(bytes.length / 2))
  let resolveAnswer!: (value: { status: number; body: string; headers: Record<string, unknown> }) => void
  let rejectAnswer!: (error: unknown) => void
  const answer = new Promise<{ status: number; body: string; headers: Record<string, unknown> }>((resolve, reject) => {
    resolveAnswer = resolve
    rejectAnswer = reject
  })
  answer.catch(() => {})
  const request = httpRequest(
    { host: url.hostname, port: url.port, path: url.pathname + url.search, method, agent: false, headers: { ...headers, "content-length": String(bytes.length) } },
    (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => resolveAnswer({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8"), headers: response.headers }))
      response.on("error", rejectAnswer)
    }
  )
  request.on("error", rejectAnswer)
  const started = new Promise<void>((resolve, reject) => {
    request.on("socket", (socket) => {
      socket.on("connect", () => {
        request.write(bytes.subarray(0, half), (error) => (error ? reject(error) : resolve()))
      })
    })
    request.on("error", reject)
  })
  request.flushHeaders()
  return {
    started,
    finish: () => {
      request.end(bytes.subarray(half))
      return answer
    }
  }
}

/** One request over a fresh connection, with headers and body exactly as given (no client-side normalization). */
export const rawHttp = (baseUrl: string, method: string, path: string, body: Buffer | undefined, headers: Record<string, string>) =>
  new Promise<{ status: number; body: any; text: string }>((resolve, reject) => {
    const url = new URL(baseUrl)
    const request = httpRequest({ host: url.hostname, port: url.port, method, path, agent: false, headers }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        let parsed: unknown = text
        try {
          parsed = text === "" ? undefined : JSON.parse(text)
        } catch {
          // stays text; callers' shape checks report it
        }
        resolve({ status: response.statusCode ?? 0, body: parsed, text })
      })
    })
    request.on("error", reject)
    request.end(body)
  })

/** True when nothing accepts connections at `baseUrl` any more. */
export const refusesConnections = async (baseUrl: string): Promise<boolean> => {
  try {
    await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(2_000) })
    return false
  } catch (error) {
    const code = (error as { cause?: { code?: string } }).cause?.code
    return code === "ECONNREFUSED" || code === "ECONNRESET"
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
