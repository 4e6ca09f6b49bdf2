/**
 * Health checks of a deployment's replicas: HTTP `GET /ok` (the LangGraph agent server's own
 * endpoint; the path is configurable), falling back to a TCP connect.
 *
 * Modes:
 * - `http`: healthy only on a 2xx answer to `GET {path}`.
 * - `tcp`: healthy when a TCP connection is accepted.
 * - `auto` (default): `GET {path}`; a 2xx is healthy; when the replica accepts the connection but
 *   does not speak HTTP (no parsable answer within the attempt) or answers 404 (it has no such
 *   endpoint), the accepted connection counts as healthy ("tcp" fallback); any other status
 *   (5xx, 401, ...) is unhealthy: the server runs but says it is not ready.
 * A refused connection or a timeout is unhealthy in every mode.
 */
import * as http from "node:http"
import * as net from "node:net"

export type HealthMode = "http" | "tcp" | "auto"

export interface HealthTarget {
  readonly host: string
  readonly port: number
}

export interface HealthCheckOptions {
  readonly mode?: HealthMode
  /** Path of the HTTP check. Default `/ok`. */
  readonly path?: string
  /** Time one attempt may take. Default 2000 ms. */
  readonly attemptTimeoutMs?: number
}

export type HealthResult =
  | { readonly healthy: true; readonly via: "http" | "tcp"; readonly status?: number; readonly ms: number; readonly detail: string }
  | { readonly healthy: false; readonly via: "http" | "tcp"; readonly status?: number; readonly ms: number; readonly detail: string }

export interface WaitHealthyOptions extends HealthCheckOptions {
  /** Overall deadline. Default 60000 ms. */
  readonly timeoutMs?: number
  /** Pause between attempts. Default 250 ms. */
  readonly intervalMs?: number
  readonly signal?: AbortSignal
  /** Called after every attempt (for the deploy log). */
  readonly onAttempt?: (result: HealthResult, attempt: number) => void
}

/** Thrown by waitHealthy when the deadline passes; carries the last attempt's result. */
export class HealthTimeoutError extends Error {
  readonly last: HealthResult | undefined
  constructor(target: HealthTarget, timeoutMs: number, last: HealthResult | undefined) {
    super(`${target.host}:${target.port} not healthy after ${timeoutMs} ms${last === undefined ? "" : `: ${last.detail}`}`)
    this.name = "HealthTimeoutError"
    this.last = last
  }
}

const validate = (target: HealthTarget, path: string): void => {
  if (typeof target.host !== "string" || target.host === "" || !Number.isInteger(target.port) || target.port < 1 || target.port > 65535) {
    throw new TypeError(`health check: invalid target ${JSON.stringify(target)}`)
  }
  if (!path.startsWith("/") || /[\s#]/.test(path)) throw new TypeError(`health check: path must start with "/" and hold no spaces: ${JSON.stringify(path)}`)
}

/** One TCP connect attempt. */
export const checkTcp = (target: HealthTarget, timeoutMs = 2000): Promise<HealthResult> => {
  const started = Date.now()
  return new Promise((resolve) => {
    const socket = net.connect({ host: target.host, port: target.port })
    const done = (result: HealthResult) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(result)
    }
    const timer = setTimeout(() => done({ healthy: false, via: "tcp", ms: Date.now() - started, detail: `TCP connect timed out after ${timeoutMs} ms` }), timeoutMs)
    socket.once("connect", () => done({ healthy: true, via: "tcp", ms: Date.now() - started, detail: "TCP connect accepted" }))
    socket.once("error", (err: NodeJS.ErrnoException) => done({ healthy: false, via: "tcp", ms: Date.now() - started, detail: `TCP connect failed (${err.code ?? err.message})` }))
  })
}

type HttpOutcome =
  | { readonly kind: "status"; readonly status: number }
  | { readonly kind: "refused"; readonly detail: string }
  | { readonly kind: "not-http"; readonly detail: string }
  | { readonly kind: "timeout" }

const httpGet = (target: HealthTarget, path: string, timeoutMs: number): Promise<HttpOutcome> =>
  new Promise((resolve) => {
    let connected = false
    let settled = false
    const finish = (o: HttpOutcome) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      req.destroy()
      resolve(o)
    }
    const req = http.request({ host: target.host, port: target.port, path, method: "GET", agent: false, headers: { "user-agent": "slipway-health", accept: "*/*", connection: "close" } })
    const timer = setTimeout(() => finish(connected ? { kind: "not-http", detail: `no HTTP answer within ${timeoutMs} ms` } : { kind: "timeout" }), timeoutMs)
    req.on("socket", (s) => {
      if (!s.connecting) connected = true
      else s.once("connect", () => (connected = true))
    })
    req.on("response", (res) => {
      res.resume()
      finish({ kind: "status", status: res.statusCode ?? 0 })
    })
    req.on("error", (err: NodeJS.ErrnoException) => {
      const code = err.code ?? err.message
      if (!connected) finish({ kind: "refused", detail: `connect failed (${code})` })
      else finish({ kind: "not-http", detail: `no HTTP answer (${code})` })
    })
    req.end()
  })

/** One health check attempt. */
export const checkHealth = async (target: HealthTarget, options: HealthCheckOptions = {}): Promise<HealthResult> => {
  const mode = options.mode ?? "auto"
  const path = options.path ?? "/ok"
  const timeoutMs = options.attemptTimeoutMs ?? 2000
  validate(target, path)
  if (mode === "tcp") return checkTcp(target, timeoutMs)
  const started = Date.now()
  const o = await httpGet(target, path, timeoutMs)
  const ms = Date.now() - started
  switch (o.kind) {
    case "status": {
      if (o.status >= 200 && o.status < 300) return { healthy: true, via: "http", status: o.status, ms, detail: `GET ${path} answered ${o.status}` }
      if (mode === "auto" && o.status === 404) {
        return { healthy: true, via: "tcp", status: o.status, ms, detail: `GET ${path} answered 404 (no health endpoint); the server accepts connections` }
      }
      return { healthy: false, via: "http", status: o.status, ms, detail: `GET ${path} answered ${o.status}` }
    }
    case "refused":
      return { healthy: false, via: "http", ms, detail: `GET ${path}: ${o.detail}` }
    case "timeout":
      return { healthy: false, via: "http", ms, detail: `GET ${path}: connect timed out after ${timeoutMs} ms` }
    case "not-http":
      if (mode === "auto") return { healthy: true, via: "tcp", ms, detail: `GET ${path}: ${o.detail}; TCP connect accepted` }
      return { healthy: false, via: "http", ms, detail: `GET ${path}: ${o.detail}` }
  }
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(t)
      reject(signal!.reason)
    }
    signal?.addEventListener("abort", onAbort, { once: true })
  })

/**
 * Checks until healthy (resolves with that result), until `timeoutMs` (rejects with
 * HealthTimeoutError) or until `signal` aborts (rejects with its reason).
 */
export const waitHealthy = async (target: HealthTarget, options: WaitHealthyOptions = {}): Promise<HealthResult> => {
  const timeoutMs = options.timeoutMs ?? 60_000
  const intervalMs = options.intervalMs ?? 250
  const deadline = Date.now() + timeoutMs
  let last: HealthResult | undefined
  for (let attempt = 1; ; attempt++) {
    if (options.signal?.aborted) throw options.signal.reason
    const remaining = deadline - Date.now()
    if (remaining <= 0) throw new HealthTimeoutError(target, timeoutMs, last)
    last = await checkHealth(target, { ...options, attemptTimeoutMs: Math.max(1, Math.min(options.attemptTimeoutMs ?? 2000, remaining)) })
    options.onAttempt?.(last, attempt)
    if (last.healthy) return last
    const wait = Math.min(intervalMs, deadline - Date.now())
    if (wait <= 0) throw new HealthTimeoutError(target, timeoutMs, last)
    await sleep(wait, options.signal)
  }
}
