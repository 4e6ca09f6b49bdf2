/**
 * Starts real Slipway servers for tests: in-process (`startTestServer`) or as a child process
 * running `node server/main.ts` (`spawnServer`), always on a fresh SQLite file and a free port.
 */
import { Effect, Layer } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type StartOptions, startServer, type SlipwayServer } from "../../server/index.ts"
import { makeLogger } from "../../server/log.ts"
import { markedFailures } from "./faults.ts"

export const TEST_KEY = "slw_test_key_0123456789abcdefghijklmnopqrstuv"

export const tempDatabasePath = (label = "slipway", options: { readonly deep?: boolean } = {}) => {
  const top = mkdtempSync(join(tmpdir(), `${label}-`))
  // The local runtime's boxes run as unprivileged uids that must traverse to their state (o+x).
  chmodSync(top, 0o711)
  // `deep`: a data directory far longer than a unix socket path may be (107 bytes), as a user's may be.
  const dir = options.deep ? join(top, ...Array.from({ length: 6 }, (_, index) => `a-rather-long-directory-name-${index}`)) : top
  if (options.deep) mkdirSync(dir, { recursive: true, mode: 0o711 })
  return { path: join(dir, "slipway.db"), dir, remove: () => rmSync(top, { recursive: true, force: true }) }
}

export interface ApiResponse<T = any> {
  readonly status: number
  readonly body: T
  readonly headers: Headers
}

export interface RequestOptions {
  readonly body?: unknown
  readonly key?: string | null
  readonly tenant?: string
  readonly headers?: Record<string, string>
  /** Sent as-is instead of JSON-encoding `body`. */
  readonly raw?: string | Buffer
}

const idempotent = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"])

export const makeRequester =
  (baseUrl: string, defaultKey: string) =>
  async <T = any>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> => {
    const headers: Record<string, string> = { ...options.headers }
    const key = options.key === undefined ? defaultKey : options.key
    if (key !== null) headers["x-api-key"] ??= key
    if (options.tenant) headers["x-tenant-id"] = options.tenant
    let body: string | Buffer | undefined = options.raw
    if (body === undefined && options.body !== undefined) {
      body = JSON.stringify(options.body)
      headers["content-type"] ??= "application/json"
    }
    const send = () => fetch(baseUrl + path, { method, headers, ...(body !== undefined ? { body } : {}) })
    let response: Response
    try {
      response = await send()
    } catch (error) {
      // A reused keep-alive connection the server closed as the request went out (no byte
      // answered): HTTP clients retry an idempotent request once on a fresh connection.
      const code = ((error as { cause?: { code?: string } }).cause ?? {}).code
      if (!idempotent.has(method) || (code !== "UND_ERR_SOCKET" && code !== "ECONNRESET")) throw error
      response = await send()
    }
    const text = await response.text()
    let parsed: unknown = text
    try {
      parsed = text === "" ? undefined : JSON.parse(text)
    } catch {
      // Non-JSON answers (the /docs page) stay text.
    }
    return { status: response.status, body: parsed as T, headers: response.headers }
  }

export interface TestServer {
  readonly server: SlipwayServer
  readonly url: string
  readonly key: string
  readonly databasePath: string
  readonly request: ReturnType<typeof makeRequester>
  /** Mints a key for another tenant (its own organization unless given). */
  readonly keyFor: (tenantId: string, organizationId?: string) => string
  readonly close: () => Promise<void>
}

/**
 * An in-process server on a fresh file. The control-plane suites run on the simulated runtime,
 * with the marked failures of test/support/faults.ts (an image named `...:fail-deploy` fails to
 * deploy); the runtime suites ask for `local`, which runs what it is given. `substitute` adds to
 * the marked failures.
 */
export const startTestServer = async (options: StartOptions = {}): Promise<TestServer> => {
  const database = tempDatabasePath()
  const simulated = (options.runtime ?? "simulated") === "simulated"
  const server = await startServer({
    port: 0,
    databasePath: database.path,
    apiKey: TEST_KEY,
    revisionStepMs: 20,
    runtime: "simulated",
    logger: makeLogger("silent"),
    ...options,
    substitute: Layer.mergeAll(simulated ? markedFailures : Layer.empty, options.substitute ?? Layer.empty)
  })
  return {
    server,
    url: server.url,
    key: TEST_KEY,
    databasePath: database.path,
    request: makeRequester(server.url, TEST_KEY),
    // The SQLite store answers synchronously.
    keyFor: (tenantId, organizationId) => Effect.runSync(server.keys.createKey({ tenantId, ...(organizationId ? { organizationId } : {}) })).key,
    close: async () => {
      await server.close()
      database.remove()
    }
  }
}

export interface ChildServer {
  readonly url: string
  readonly process: ChildProcess
  readonly output: () => string
  readonly request: ReturnType<typeof makeRequester>
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>
}

const nodeBinary = process.execPath

/** The server with substituted faults, for `SpawnOptions.entry` (test/support/faultyServer.ts). */
export const faultyServerEntry = "test/support/faultyServer.ts"

export interface SpawnOptions {
  /** The script the child runs (default `server/main.ts`, as `npm start`). */
  readonly entry?: string
  readonly databasePath: string
  readonly env?: Record<string, string>
  readonly key?: string
}

/**
 * Runs `node server/main.ts` as a child, like `npm start`; resolves once it answers /health.
 * Suites run servers at the same time, so a random port may be taken by the time the child
 * binds it: that start is retried on another port; any other start failure is thrown at once.
 */
/**
 * A random port for a server a test starts, below Linux's ephemeral range (32768-60999), so no
 * outgoing connection of this machine can hold it; another test's server still may, and a start
 * that loses that race is retried (EADDRINUSE).
 */
/** Runs `command` with /bin/sh in a box at its dataplane URL (`POST /execute`), as a client does; anything but a 200 throws. */
export const executeIn = async (dataplaneUrl: string, key: string, command: string, timeout = 60) => {
  const response = await fetch(`${dataplaneUrl}/execute`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({ command, timeout, shell: "/bin/sh" })
  })
  if (response.status !== 200) throw new Error(`POST ${dataplaneUrl}/execute answered ${response.status}: ${await response.text()}`)
  return (await response.json()) as { stdout: string; stderr: string; exit_code: number }
}

export const testPort = () => 20000 + Math.floor(Math.random() * 12000)

export const spawnServer = async (options: SpawnOptions): Promise<ChildServer> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnOnce(options)
    } catch (error) {
      if (attempt >= 4 || !/EADDRINUSE/.test(String((error as Error).message))) throw error
    }
  }
}

const spawnOnce = async (options: SpawnOptions): Promise<ChildServer> => {
  const port = testPort()
  const key = options.key ?? TEST_KEY
  const child = spawn(nodeBinary, [options.entry ?? "server/main.ts"], {
    cwd: join(import.meta.dirname, "../.."),
    env: {
      ...process.env,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_PATH: options.databasePath,
      SLIPWAY_API_KEY: key,
      SLIPWAY_REVISION_STEP_MS: "20",
      SLIPWAY_RUNTIME: "simulated",
      LOG_LEVEL: "warn",
      ...options.env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 15_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}):\n${output}`)
    try {
      const response = await fetch(`${url}/health`)
      if (response.ok) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL")
      throw new Error(`server did not start within 15s:\n${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return { url, process: child, output: () => output, request: makeRequester(url, key), exited }
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export const eventually = async <T>(check: () => Promise<T | undefined>, timeoutMs = 10_000, intervalMs = 25): Promise<T> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs}ms`)
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}
