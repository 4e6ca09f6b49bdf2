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
 *
 * One attempt is an Effect over leaf socket code (interrupting it closes the connection); waiting
 * until healthy repeats attempts on a `Schedule`, with the deadline on Effect's `Clock`.
 */
import * as http from "node:http"
import * as net from "node:net"
import { Data, Duration, Effect, Schedule } from "effect"

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

/** A target or path a check cannot be made with. */
export class HealthCheckError extends Data.TaggedError("HealthCheckError")<{ readonly message: string }> {}

/** The deadline passed before an attempt was healthy; `last` is the last attempt's result. */
export class HealthTimeoutError extends Data.TaggedError("HealthTimeoutError")<{ readonly message: string; readonly last: HealthResult | undefined }> {}

export interface PollHealthOptions {
  /** Overall deadline. */
  readonly timeoutMs: number
  /** When to try again after an unhealthy attempt. Default every 250 ms. */
  readonly schedule?: Schedule.Schedule<unknown, HealthResult>
  /** After every attempt (for the deploy log). */
  readonly onAttempt?: (result: HealthResult, attempt: number) => Effect.Effect<void>
}

export interface WaitHealthyOptions extends HealthCheckOptions, Partial<PollHealthOptions> {}

const validate = (target: HealthTarget, path: string): Effect.Effect<void, HealthCheckError> => {
  if (typeof target.host !== "string" || target.host === "" || !Number.isInteger(target.port) || target.port < 1 || target.port > 65535) {
    return Effect.fail(new HealthCheckError({ message: `health check: invalid target ${JSON.stringify(target)}` }))
  }
  if (!path.startsWith("/") || /[\s#]/.test(path)) return Effect.fail(new HealthCheckError({ message: `health check: path must start with "/" and hold no spaces: ${JSON.stringify(path)}` }))
  return Effect.void
}

/** One TCP connect attempt. */
export const checkTcp = (target: HealthTarget, timeoutMs = 2000): Effect.Effect<HealthResult> =>
  Effect.callback<HealthResult>((resume) => {
    const started = Date.now()
    const socket = net.connect({ host: target.host, port: target.port })
    const done = (result: HealthResult) => {
      clearTimeout(timer)
      socket.destroy()
      resume(Effect.succeed(result))
    }
    const timer = setTimeout(() => done({ healthy: false, via: "tcp", ms: Date.now() - started, detail: `TCP connect timed out after ${timeoutMs} ms` }), timeoutMs)
    socket.once("connect", () => done({ healthy: true, via: "tcp", ms: Date.now() - started, detail: "TCP connect accepted" }))
    socket.once("error", (err: NodeJS.ErrnoException) => done({ healthy: false, via: "tcp", ms: Date.now() - started, detail: `TCP connect failed (${err.code ?? err.message})` }))
    return Effect.sync(() => {
      clearTimeout(timer)
      socket.destroy()
    })
  })

type HttpOutcome =
  | { readonly kind: "status"; readonly status: number }
  | { readonly kind: "refused"; readonly detail: string }
  | { readonly kind: "not-http"; readonly detail: string }
  | { readonly kind: "timeout" }

const httpGet = (target: HealthTarget, path: string, timeoutMs: number): Effect.Effect<HttpOutcome> =>
  Effect.callback<HttpOutcome>((resume) => {
    let connected = false
    let settled = false
    const finish = (o: HttpOutcome) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      req.destroy()
      resume(Effect.succeed(o))
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
    return Effect.sync(() => {
      settled = true
      clearTimeout(timer)
      req.destroy()
    })
  })

/** One health check attempt. */
export const checkHealth = (target: HealthTarget, options: HealthCheckOptions = {}): Effect.Effect<HealthResult, HealthCheckError> => {
  const mode = options.mode ?? "auto"
  const path = options.path ?? "/ok"
  const timeoutMs = options.attemptTimeoutMs ?? 2000
  return Effect.andThen(
    validate(target, path),
    mode === "tcp"
      ? checkTcp(target, timeoutMs)
      : Effect.map(Effect.timed(httpGet(target, path, timeoutMs)), ([duration, o]): HealthResult => {
          const ms = Math.round(Duration.toMillis(duration))
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
        })
  )
}

/**
 * Repeats `check` on `options.schedule` until an attempt is healthy (its result), or fails with
 * `HealthTimeoutError` once `timeoutMs` has passed on the `Clock` (an attempt under way then is
 * interrupted). `what` names the target in the error.
 */
export const pollHealth = <E, R>(what: string, check: Effect.Effect<HealthResult, E, R>, options: PollHealthOptions): Effect.Effect<HealthResult, E | HealthTimeoutError, R> =>
  Effect.suspend(() => {
    let last: HealthResult | undefined
    let attempt = 0
    const once = Effect.tap(check, (result) => {
      last = result
      return options.onAttempt ? options.onAttempt(result, ++attempt) : Effect.void
    })
    return once.pipe(
      Effect.repeat({ schedule: options.schedule ?? Schedule.spaced("250 millis"), until: (result) => result.healthy }),
      Effect.timeoutOrElse({
        duration: options.timeoutMs,
        orElse: () =>
          Effect.fail(new HealthTimeoutError({ message: `${what} not healthy after ${options.timeoutMs} ms${last === undefined ? "" : `: ${last.detail}`}`, last }))
      })
    )
  })

/** Checks `target` until healthy (default: within 60 s, every 250 ms). */
export const waitHealthy = (target: HealthTarget, options: WaitHealthyOptions = {}): Effect.Effect<HealthResult, HealthCheckError | HealthTimeoutError> =>
  pollHealth(`${target.host}:${target.port}`, checkHealth(target, options), { ...options, timeoutMs: options.timeoutMs ?? 60_000 })
