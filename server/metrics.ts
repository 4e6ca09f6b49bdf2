/**
 * Prometheus metrics (`GET /metrics`, docs/metrics.md), with `prom-client`, in a registry of the
 * server's own (two servers in one process never share counters).
 *
 * - `slipway_http_request_duration_seconds{method,route}` and
 *   `slipway_http_requests_total{method,route,code}`: per route template (`/v2/deployments/{deployment_id}`,
 *   never the raw path, so the label set stays bounded), `code` the status class (`2xx`…`5xx`).
 *   These are on the request hot path, so each route's series is resolved once, when the app is
 *   built: a request adds to plain numbers of its route (`RouteObserver.observe`), without the
 *   label hashing prom-client's `labels()` children still do on every observation. The numbers
 *   are handed to prom-client's registry as a metric object of our own (`get()` in prom-client's
 *   format), so the text exposition is prom-client's.
 * - `slipway_revision_transitions_total{from,to}`: state changes the deployment runtime applied.
 * - `slipway_sandboxes{status}` and `slipway_runtime_queue_depth{queue}`: read from the stores
 *   when scraped.
 * - prom-client's default process metrics (`process_*`, `nodejs_*`).
 *
 * Access: without `SLIPWAY_METRICS_TOKEN` only loopback peers may scrape; with it, any peer that
 * sends `Authorization: Bearer <token>`. API keys are not used: a scraper is not a tenant.
 */
import { timingSafeEqual, createHash } from "node:crypto"
import { Context, Effect } from "effect"
import { collectDefaultMetrics, Counter, Gauge, Registry } from "prom-client"
import { endpoint, type Endpoint } from "../core/index.ts"
import { RawResponse, type Route } from "./http/app.ts"
import { implement, ServerEnv } from "./module.ts"
import { DeploymentStore } from "./store/DeploymentStore.ts"
import { RevisionStore } from "./store/RevisionStore.ts"
import { SandboxStore } from "./store/SandboxStore.ts"

/** Seconds: from sub-millisecond reads to slow waits (`wait_for_ready`, up to an hour). */
export const latencyBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60] as const

/** What a route's requests add to: resolved once per route, so a request does two array writes. */
export interface RouteObserver {
  readonly observe: (status: number, seconds: number) => void
}

interface RouteSeries extends RouteObserver {
  readonly method: string
  readonly route: string
  /** Not cumulative: `buckets[i]` counts observations in (bounds[i-1], bounds[i]]; the last slot is +Inf. */
  readonly buckets: Float64Array
  /** Requests by status class: index 1..5 for 1xx..5xx. */
  readonly codes: Float64Array
  sum: number
  count: number
}

const statusClasses = ["1xx", "2xx", "3xx", "4xx", "5xx"] as const

const makeSeries = (method: string, route: string): RouteSeries => {
  const series: RouteSeries = {
    method,
    route,
    buckets: new Float64Array(latencyBuckets.length + 1),
    codes: new Float64Array(6),
    sum: 0,
    count: 0,
    observe: (status, seconds) => {
      let index = 0
      while (index < latencyBuckets.length && seconds > latencyBuckets[index]!) index++
      series.buckets[index]!++
      series.sum += seconds
      series.count++
      series.codes[status >= 100 && status < 600 ? Math.floor(status / 100) : 5]!++
    }
  }
  return series
}

export interface ServerMetrics {
  readonly registry: Registry
  /** The observer of an endpoint's requests (`undefined`: requests that matched no route). */
  readonly route: (endpoint: Endpoint | undefined) => RouteObserver
  /** A revision moved from one status to another (committed). */
  readonly revisionTransition: (from: string, to: string) => void
}

export class Metrics extends Context.Service<Metrics, ServerMetrics>()("slipway/Metrics") {}

export const makeServerMetrics = (): ServerMetrics => {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })

  const series = new Map<string, RouteSeries>()
  const route = (endpoint: Endpoint | undefined): RouteObserver => {
    const method = endpoint?.method ?? "any"
    const template = endpoint?.path ?? "(unmatched)"
    const key = `${method} ${template}`
    let found = series.get(key)
    if (!found) series.set(key, (found = makeSeries(method, template)))
    return found
  }

  registry.registerMetric({
    name: "slipway_http_request_duration_seconds",
    help: "Time from a request's arrival to its answer, per route template",
    type: "histogram",
    get: async () => ({
      name: "slipway_http_request_duration_seconds",
      help: "Time from a request's arrival to its answer, per route template",
      type: "histogram",
      aggregator: "sum",
      values: [...series.values()]
        .filter((s) => s.count > 0)
        .flatMap((s) => {
          const labels = { method: s.method, route: s.route }
          let cumulative = 0
          const buckets = latencyBuckets.map((le, index) => {
            cumulative += s.buckets[index]!
            return { metricName: "slipway_http_request_duration_seconds_bucket", labels: { ...labels, le }, value: cumulative }
          })
          return [
            ...buckets,
            { metricName: "slipway_http_request_duration_seconds_bucket", labels: { ...labels, le: "+Inf" }, value: s.count },
            { metricName: "slipway_http_request_duration_seconds_sum", labels, value: s.sum },
            { metricName: "slipway_http_request_duration_seconds_count", labels, value: s.count }
          ]
        })
    })
  } as any)

  registry.registerMetric({
    name: "slipway_http_requests_total",
    help: "Requests answered, per route template and status class",
    type: "counter",
    get: async () => ({
      name: "slipway_http_requests_total",
      help: "Requests answered, per route template and status class",
      type: "counter",
      aggregator: "sum",
      values: [...series.values()].flatMap((s) =>
        statusClasses.flatMap((code, index) => (s.codes[index + 1]! > 0 ? [{ labels: { method: s.method, route: s.route, code }, value: s.codes[index + 1]! }] : []))
      )
    })
  } as any)

  const transitions = new Counter({
    name: "slipway_revision_transitions_total",
    help: "Revision status changes the deployment runtime applied",
    labelNames: ["from", "to"] as const,
    registers: [registry]
  })

  return { registry, route, revisionTransition: (from, to) => transitions.inc({ from, to }) }
}

/** Gauges read from the stores when scraped: sandboxes by status, the runtime's unfinished work. */
const registerStoreGauges = (registry: Registry, read: () => Promise<{ sandboxes: Record<string, number>; queues: Record<string, number> }>) => {
  let pending: Promise<{ sandboxes: Record<string, number>; queues: Record<string, number> }> | undefined
  // One read per scrape, shared by both gauges.
  const once = () => (pending ??= read().finally(() => setTimeout(() => (pending = undefined), 0)))
  new Gauge({
    name: "slipway_sandboxes",
    help: "Sandboxes, by status",
    labelNames: ["status"] as const,
    registers: [registry],
    async collect() {
      const { sandboxes } = await once()
      this.reset()
      for (const [status, count] of Object.entries(sandboxes)) this.set({ status }, count)
    }
  })
  new Gauge({
    name: "slipway_runtime_queue_depth",
    help: "Work the runtime has yet to finish: revisions not in a final state, deployments being deleted, sandboxes provisioning or being deleted",
    labelNames: ["queue"] as const,
    registers: [registry],
    async collect() {
      const { queues } = await once()
      for (const [queue, count] of Object.entries(queues)) this.set({ queue }, count)
    }
  })
}

const metricsEndpoint = endpoint({
  name: "metrics",
  method: "GET",
  path: "/metrics",
  area: "system",
  tag: "system",
  auth: false,
  // Described here, not in core/api: not part of the API (no client method, not in /openapi.json).
  summary: "Prometheus metrics (loopback only, or with the bearer token SLIPWAY_METRICS_TOKEN)"
})

const isLoopback = (address: string | undefined) =>
  address !== undefined && (address === "::1" || /^127\./.test(address) || /^::ffff:127\./.test(address))

const digest = (text: string) => createHash("sha256").update(text).digest()

/** Constant-time comparison of the presented bearer token with the configured one. */
const tokenMatches = (authorization: string | undefined, token: string) => {
  const presented = /^Bearer\s+(.+)$/i.exec(authorization?.trim() ?? "")?.[1]
  return presented !== undefined && timingSafeEqual(digest(presented), digest(token))
}

const plain = (status: number, text: string, headers: Record<string, string> = {}) =>
  new RawResponse("text/plain; charset=utf-8", text, { status, headers: { "cache-control": "no-store", ...headers } })

/** `GET /metrics` for the server's registry, with the store-read gauges; `token` from SLIPWAY_METRICS_TOKEN. */
export const metricsRoutes = Effect.gen(function* () {
  const metrics = yield* Metrics
  const { config, log } = yield* ServerEnv
  const deployments = yield* DeploymentStore
  const revisions = yield* RevisionStore
  const sandboxes = yield* SandboxStore
  registerStoreGauges(metrics.registry, () =>
    Effect.runPromise(
      Effect.gen(function* () {
        const boxes = yield* sandboxes.allSandboxes()
        const byStatus: Record<string, number> = { provisioning: 0, ready: 0, failed: 0, stopped: 0, deleting: 0 }
        for (const box of boxes) byStatus[box.status] = (byStatus[box.status] ?? 0) + 1
        const unfinished = yield* revisions.inProgressRevisions()
        const deletes = yield* deployments.pendingDeletes()
        return {
          sandboxes: byStatus,
          queues: { revisions: unfinished.length, deployment_deletes: deletes.length, sandboxes: byStatus.provisioning! + byStatus.deleting! }
        }
      })
    ).catch((error) => {
      // The request metrics are still worth a scrape: the store gauges are left out this time.
      log.warn("metrics: reading the stores failed", { error: String((error as Error)?.message ?? error) })
      return { sandboxes: {}, queues: {} }
    })
  )
  const token = config.metricsToken
  return [
    implement(metricsEndpoint, (_input, context) => {
      if (token !== undefined) {
        if (!tokenMatches(typeof context.headers.authorization === "string" ? context.headers.authorization : undefined, token)) {
          return Effect.succeed(plain(401, "Send the metrics token: Authorization: Bearer <SLIPWAY_METRICS_TOKEN>\n", { "www-authenticate": 'Bearer realm="metrics"' }))
        }
      } else if (!isLoopback(context.remoteAddress)) {
        return Effect.succeed(plain(403, "Metrics are served to loopback clients only; set SLIPWAY_METRICS_TOKEN to scrape from elsewhere\n"))
      }
      return Effect.map(
        Effect.promise(() => metrics.registry.metrics()),
        (text) => new RawResponse(metrics.registry.contentType, text, { headers: { "cache-control": "no-store" } })
      )
    })
  ] as ReadonlyArray<Route>
})

/** The /metrics route as a server area (server/modules.ts). */
export const metricsModule = { name: "metrics", routes: metricsRoutes }
