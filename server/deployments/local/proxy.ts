/**
 * The deployment URL: Slipway answers each deployment's URL itself and proxies HTTP (streamed
 * both ways: chunked bodies, SSE) and WebSocket upgrades to the active revision's replicas, round
 * robin. HTTP goes through one keep-alive undici `Pool` per replica (`dispatch`, the lowest-cost
 * HTTP/1.1 client for Node: about half the CPU per request of `http.request` behind a proxy
 * library); WebSocket upgrades through `http-proxy-3` (the maintained TypeScript rewrite of
 * `http-proxy`). See docs/deployments-local.md for the measurements and why.
 *
 * Routing: a deployment's URL is its `custom_url`, or `{public}/d/{name}` (core's
 * `gitrepoCustomUrl`, the same rule that generates gitrepo URLs). A URL under the public base is
 * matched on its path alone (whatever Host the client used to reach Slipway); any other URL is
 * matched on Host and path. The URL's path prefix is removed before forwarding, so the agent
 * server sees `/ok`, not `/d/agent/ok`; `X-Forwarded-Prefix` carries what was removed.
 *
 * Switching: `setTargets` replaces a deployment's target list in one assignment. A request picks
 * its replica when it arrives and keeps it, so requests in flight on the old replicas finish
 * there while every new request goes to the new set (the driver stops the old replicas only once
 * they have drained, or after its grace period).
 *
 * `DeploymentProxy` is a service: its operations are Effects (`drain` polls on Effect's `Clock`),
 * `handle` and `handleUpgrade` are the Node request handlers the HTTP server calls (leaf code),
 * and closing its layer closes the keep-alive connections to the replicas.
 */
import * as http from "node:http"
import type { Duplex } from "node:stream"
import { PassThrough } from "node:stream"
import { Context, Data, Effect, Layer, Option, Schedule, type Scope } from "effect"
import { createProxyServer } from "http-proxy-3"
import { type Dispatcher, Pool } from "undici"
import { gitrepoCustomUrl } from "../../../core/deployments/rules.ts"
import { ServerEnv } from "../../module.ts"
import type { Forwarder, Peer } from "../../replicas/forward.ts"
import { Replicas } from "../../replicas/Replicas.ts"

export interface ProxyTarget {
  readonly host: string
  readonly port: number
  /**
   * A unix socket that reaches the same replica (a box's port bridge): HTTP requests dial it
   * instead of `host:port`, saving the host port's hop. `host:port` still names the replica (in
   * errors, `inFlight`, `drain`, `markDown`) and carries WebSocket upgrades.
   */
  readonly socketPath?: string
}

export interface DeploymentRoute {
  /** The deployment's name, used in error messages. */
  readonly name: string
  /** The deployment URL: its `custom_url`, or `deploymentUrl(publicUrl, name)`. */
  readonly url: string
}

/**
 * How the proxy reaches a deployment another replica serves (several replicas,
 * docs/replicas.md): the replicas' forwarder, and whether a request was forwarded here already
 * (then it is never forwarded again).
 */
export interface RemoteServing {
  readonly forwarder: Forwarder | undefined
  readonly isForwarded: (req: http.IncomingMessage) => boolean
}

export interface DeploymentProxyOptions {
  /** Slipway's public base URL (`SLIPWAY_PUBLIC_URL`): URLs under it are matched on path alone. */
  readonly publicUrl: string
  /** Deployments served by other replicas are forwarded with this; without it, `setRemote` routes answer 503. */
  readonly remote?: RemoteServing
  /** Time to establish a TCP connection to a replica before trying the next one. Default 2000 ms. */
  readonly connectTimeoutMs?: number
  /** How long a replica that refused a connection is skipped by round robin. Default 1000 ms. */
  readonly downForMs?: number
  /**
   * Connections to one replica at most (kept alive between requests). A request beyond them waits
   * for one to free up, so this bounds what one busy deployment can open, not how many requests it
   * takes; long streams (SSE) each hold one. Default 512.
   */
  readonly maxSocketsPerReplica?: number
  /**
   * Paths of Slipway's own API that no deployment URL under the public base may take.
   * Default `/v1`, `/v2`, `/health`, `/openapi.json`, `/docs`.
   */
  readonly reservedPaths?: ReadonlyArray<string>
  readonly log?: (event: ProxyLogEvent) => void
}

export type ProxyLogEvent =
  | { readonly type: "retry"; readonly deployment: string; readonly target: string; readonly error: string }
  | { readonly type: "failed"; readonly deployment: string; readonly target: string; readonly error: string }

/** A deployment URL the proxy cannot serve (not absolute, not http(s), or taking Slipway's own path). */
export class DeploymentUrlError extends Data.TaggedError("DeploymentUrlError")<{ readonly message: string }> {}

export class DeploymentProxy extends Context.Service<
  DeploymentProxy,
  {
    /** Registers or updates the URL a deployment is served at. */
    readonly setRoute: (deploymentKey: string, route: DeploymentRoute) => Effect.Effect<void, DeploymentUrlError>
    /** Atomically replaces the replicas new requests go to; requests in flight keep theirs. (Invalid targets are a defect.) */
    readonly setTargets: (deploymentKey: string, targets: ReadonlyArray<ProxyTarget>) => Effect.Effect<void>
    /** The current targets (a snapshot). */
    readonly targets: (deploymentKey: string) => Effect.Effect<ReadonlyArray<ProxyTarget>>
    /** A health monitor's verdict: round robin skips a replica marked down (for `forMs`, default until markUp). */
    readonly markDown: (target: ProxyTarget, forMs?: number) => Effect.Effect<void>
    readonly markUp: (target: ProxyTarget) => Effect.Effect<void>
    /** Requests and WebSockets currently proxied to this replica. */
    readonly inFlight: (target: ProxyTarget) => Effect.Effect<number>
    /**
     * True once nothing is in flight to any of these replicas (call it after `setTargets`
     * switched away from them, before stopping them), false when `timeoutMs` passes first.
     */
    readonly drain: (targets: ReadonlyArray<ProxyTarget>, timeoutMs: number) => Effect.Effect<boolean>
    /** Forgets a deployment: its URL answers nothing (handle returns false) afterwards. */
    readonly remove: (deploymentKey: string) => Effect.Effect<void>
    /**
     * The deployment is served by another replica: its URL's requests (HTTP and WebSocket) are
     * forwarded there as they came, until `setTargets` gives it replicas here (or `remove`).
     */
    readonly setRemote: (deploymentKey: string, route: DeploymentRoute, peer: Peer) => Effect.Effect<void, DeploymentUrlError>
    /** The deployments currently forwarded to another replica, by key. */
    readonly remotes: Effect.Effect<ReadonlyMap<string, Peer>>
    /** Serves the request when it is for a deployment URL (returns true), otherwise returns false untouched. */
    readonly handle: (req: http.IncomingMessage, res: http.ServerResponse) => boolean
    /** The same for an HTTP upgrade (WebSocket): attach to the server's `upgrade` event. */
    readonly handleUpgrade: (req: http.IncomingMessage, socket: Duplex, head: Buffer) => boolean
  }
>()("slipway/DeploymentProxy") {}

/** Paths of Slipway's own that no deployment URL under the public base may take. */
export const RESERVED_PATHS = ["/v1", "/v2", "/health", "/openapi.json", "/docs", "/sandboxes", "/metrics", "/console", "/internal"]

/** A deployment's URL: its `custom_url` when set, otherwise `{public}/d/{name}` as core generates it. */
export const deploymentUrl = (publicUrl: string, name: string, customUrl?: string | null): string =>
  customUrl ?? gitrepoCustomUrl(publicUrl, name)

/** Hop-by-hop headers (RFC 9110 section 7.6.1) that a proxy must not forward. */
const HOP_BY_HOP = ["connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer", "upgrade"]

/**
 * Request headers not forwarded over HTTP: the hop-by-hop ones, `transfer-encoding` (the body is
 * re-framed), `expect` (Node's server has already answered `100 Continue`), and the
 * `x-forwarded-*` ones this proxy rewrites itself.
 */
const DROP_REQUEST = new Set([...HOP_BY_HOP, "transfer-encoding", "expect", "x-forwarded-for", "x-forwarded-port", "x-forwarded-proto", "x-forwarded-prefix"])
/** Response headers not forwarded: hop-by-hop, and `transfer-encoding` (Node re-frames the body). */
const DROP_RESPONSE = new Set([...HOP_BY_HOP, "transfer-encoding"])

/** The header names a `Connection` value lists besides the usual tokens (rare: a slow path). */
const connectionListed = (value: string | undefined): ReadonlyArray<string> => {
  if (value === undefined) return []
  const names: string[] = []
  for (const token of value.split(",")) {
    const name = token.trim().toLowerCase()
    if (name !== "" && name !== "keep-alive" && name !== "close" && name !== "upgrade") names.push(name)
  }
  return names
}

/** For WebSocket upgrades (through http-proxy-3): removes the hop-by-hop headers but Upgrade and Connection. */
const stripHopByHopForUpgrade = (headers: http.IncomingHttpHeaders): void => {
  const connection = headers["connection"]
  for (const name of [...HOP_BY_HOP, ...connectionListed(typeof connection === "string" ? connection : undefined)]) {
    if (name === "upgrade" || name === "connection") continue
    delete headers[name]
  }
}

interface Route {
  readonly key: string
  readonly name: string
  /** Lower-case `host[:port]`, or null to match any Host. */
  readonly host: string | null
  /** Path prefix without a trailing slash ("" for the root). */
  readonly prefix: string
  /** How many `/` the prefix has: the number of path segments it spans. */
  readonly depth: number
}

/** A replica as the proxy keeps it: its name (`host:port`) computed once. */
interface Replica {
  readonly target: ProxyTarget
  readonly name: string
  /** Its connection pool's key: the name, and the socket when there is one (a port may be reused). */
  readonly poolKey: string
}

interface Targets {
  readonly replicas: ReadonlyArray<Replica>
  /** What `targets()` answers (copies of what was set). */
  readonly targets: ReadonlyArray<ProxyTarget>
  next: number
}

interface Match {
  readonly route: Route
  /** The path and query to forward. */
  readonly path: string
}

const defaultPort = (protocol: string): string => (protocol === "https:" ? "443" : "80")

const depthOf = (prefix: string): number => {
  let n = 0
  for (let i = 0; i < prefix.length; i++) if (prefix.charCodeAt(i) === 47) n++
  return n
}

const parseRoute = (key: string, route: DeploymentRoute, publicUrl: URL, reserved: ReadonlyArray<string>): Route => {
  let url: URL
  try {
    url = new URL(route.url)
  } catch {
    throw new DeploymentUrlError({ message: `Deployment ${route.name}: URL ${JSON.stringify(route.url)} is not an absolute URL` })
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new DeploymentUrlError({ message: `Deployment ${route.name}: URL ${route.url} must be http or https` })
  }
  const prefix = url.pathname.replace(/\/+$/, "")
  const underPublic = url.origin === publicUrl.origin && (publicUrl.pathname === "/" || prefix.startsWith(publicUrl.pathname.replace(/\/+$/, "")))
  if (underPublic) {
    // A deployment must not shadow Slipway's own API on the public host.
    const clash = prefix === "" ? "/" : reserved.find((r) => prefix === r || prefix.startsWith(r + "/") || r.startsWith(prefix + "/"))
    if (clash !== undefined) throw new DeploymentUrlError({ message: `Deployment ${route.name}: URL ${route.url} would take Slipway's own path ${clash}` })
  }
  const port = url.port === "" ? defaultPort(url.protocol) : url.port
  const host = underPublic ? null : `${url.hostname.toLowerCase()}:${port}`
  return { key, name: route.name, host, prefix, depth: depthOf(prefix) }
}

const targetName = (t: ProxyTarget): string => `${t.host}:${t.port}`

/** A `Host` value as `host:port` in lower case (the port defaulted for plain HTTP). */
const normalHost = (raw: string | undefined): string | null => {
  if (raw === undefined || raw === "") return null
  const lower = raw.toLowerCase()
  if (lower.startsWith("[")) return lower.includes("]:") ? lower : `${lower}:80`
  return lower.includes(":") ? lower : `${lower}:80`
}

/** The first `Host` of the raw headers (without building `req.headers`). */
const rawHost = (raw: ReadonlyArray<string>): string | undefined => {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!
    if (name.length === 4 && name.toLowerCase() === "host") return raw[i + 1]
  }
  return undefined
}

/** The error code of a failed upstream request: a Node socket error's code, or undici's. */
const codeOf = (err: unknown): string => {
  const e = err as { code?: unknown; errors?: ReadonlyArray<{ code?: unknown }>; message?: unknown }
  if (typeof e?.code === "string") {
    // undici names its own errors UND_ERR_*: report the ones a reader knows by their usual name.
    if (e.code === "UND_ERR_CONNECT_TIMEOUT") return "ETIMEDOUT"
    if (e.code === "UND_ERR_SOCKET") return "ECONNRESET"
    return e.code
  }
  const inner = e?.errors?.[0]?.code
  if (typeof inner === "string") return inner
  return typeof e?.message === "string" ? e.message : String(err)
}

/** Errors that mean the replica did not take the request (nothing of it was sent). */
const CONNECT_FAILED = new Set(["ECONNREFUSED", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL", "ENOENT"])

/** The proxy; its connections to the replicas are closed with the scope. */
export const makeDeploymentProxy = (options: DeploymentProxyOptions): Effect.Effect<DeploymentProxy["Service"], never, Scope.Scope> =>
  Effect.acquireRelease(Effect.sync(() => makeProxy(options)), (proxy) => Effect.sync(proxy.close)).pipe(Effect.map(({ close: _, ...service }) => DeploymentProxy.of(service)))

const makeProxy = (options: DeploymentProxyOptions) => {
  const publicUrl = new URL(options.publicUrl)
  const connectTimeout = options.connectTimeoutMs ?? 2000
  const downForMs = options.downForMs ?? 1000
  const maxSockets = options.maxSocketsPerReplica ?? 512
  const reserved = (options.reservedPaths ?? ["/v1", "/v2", "/health", "/openapi.json", "/docs"]).map((p) => p.replace(/\/+$/, ""))
  // WebSocket upgrades only: each upgraded socket leaves the agent, so keep-alive buys nothing there.
  const wsProxy = createProxyServer({ xfwd: true, connectTimeout, ws: true })

  // Routes, indexed so that a request costs a few map lookups whatever the number of deployments:
  // by Host (null: path alone), then by prefix; `depths` lists the prefix depths present, deepest first.
  const routes = new Map<string, Route>()
  const byPath = new Map<string, Route>()
  const byHost = new Map<string, Map<string, Route>>()
  const depthCounts = new Map<number, number>()
  let depths: ReadonlyArray<number> = []
  /** Call after removing `route` from `routes`. */
  const unindex = (route: Route): void => {
    // Two deployments given the same URL: the one set last serves it; removing it gives it back
    // to the other (a scan, on this rare path only).
    let other: Route | undefined
    for (const r of routes.values()) if (r.host === route.host && r.prefix === route.prefix) other = r
    if (route.host === null) {
      if (byPath.get(route.prefix) === route) {
        if (other === undefined) byPath.delete(route.prefix)
        else byPath.set(route.prefix, other)
      }
    } else {
      const m = byHost.get(route.host)
      if (m?.get(route.prefix) === route) {
        if (other === undefined) m.delete(route.prefix)
        else m.set(route.prefix, other)
      }
      if (m?.size === 0) byHost.delete(route.host)
    }
    const n = (depthCounts.get(route.depth) ?? 1) - 1
    if (n > 0) depthCounts.set(route.depth, n)
    else {
      depthCounts.delete(route.depth)
      depths = [...depthCounts.keys()].sort((x, y) => y - x)
    }
  }
  const index = (route: Route): void => {
    if (route.host === null) byPath.set(route.prefix, route)
    else {
      let m = byHost.get(route.host)
      if (m === undefined) byHost.set(route.host, (m = new Map()))
      m.set(route.prefix, route)
    }
    const n = depthCounts.get(route.depth) ?? 0
    depthCounts.set(route.depth, n + 1)
    if (n === 0) depths = [...depthCounts.keys()].sort((x, y) => y - x)
  }

  const pools = new Map<string, Targets>()
  /** Deployments another replica serves: forwarded there (checked before the targets). */
  const remotes = new Map<string, Peer>()
  const down = new Map<string, number>()
  const upstreams = new Map<string, Pool>()

  /** The keep-alive connection pool to a replica (made on first use). */
  const upstream = (replica: Replica): Pool => {
    let pool = upstreams.get(replica.poolKey)
    if (pool === undefined || pool.closed || pool.destroyed) {
      const host = replica.target.host.includes(":") ? `[${replica.target.host}]` : replica.target.host
      pool = new Pool(`http://${host}:${replica.target.port}`, {
        ...(replica.target.socketPath === undefined ? {} : { socketPath: replica.target.socketPath }),
        connections: maxSockets,
        pipelining: 1,
        connectTimeout: connectTimeout,
        // A replica may take its time: an agent run streams for minutes, with pauses. The client's
        // side is bounded by Slipway's own server timeouts.
        headersTimeout: 0,
        bodyTimeout: 0
      })
      upstreams.set(replica.poolKey, pool)
    }
    return pool
  }

  /** Closes the pools of replicas no deployment targets any more, once their requests end. */
  const closeUnused = (): void => {
    if (upstreams.size === 0) return
    const used = new Set<string>()
    for (const p of pools.values()) for (const r of p.replicas) used.add(r.poolKey)
    for (const [name, pool] of upstreams) {
      if (used.has(name)) continue
      upstreams.delete(name)
      // close() lets the requests in flight finish, then closes the connections.
      pool.close().catch(() => undefined)
    }
  }

  const flights = new Map<string, number>()
  /** Counts one request or WebSocket on a replica; the returned function ends it (once). */
  const acquire = (name: string): (() => void) => {
    flights.set(name, (flights.get(name) ?? 0) + 1)
    let done = false
    return () => {
      if (done) return
      done = true
      const n = (flights.get(name) ?? 1) - 1
      if (n <= 0) flights.delete(name)
      else flights.set(name, n)
    }
  }

  // Errors are handled through the per-call callback; this listener only keeps an unexpected
  // one from becoming an uncaught exception.
  wsProxy.on("error", () => {})

  const match = (req: http.IncomingMessage): Match | undefined => {
    if (routes.size === 0) return undefined
    const url = req.url ?? "/"
    const q = url.indexOf("?")
    const pathname = q === -1 ? url : url.slice(0, q)
    const hostRoutes = byHost.size === 0 ? undefined : byHost.get(normalHost(rawHost(req.rawHeaders)) ?? "")
    // The candidate prefixes of the path, deepest first: the longest prefix wins, and a
    // Host-specific route beats a path-only one of the same length.
    let slashes = -1
    for (const depth of depths) {
      let end: number
      if (depth === 0) end = 0
      else {
        if (slashes === -1) slashes = depthOf(pathname)
        if (depth > slashes) continue
        // The end of the depth-th segment: the (depth + 1)-th slash, or the end of the path.
        end = -1
        let seen = 0
        for (let i = 0; i < pathname.length; i++) {
          if (pathname.charCodeAt(i) === 47 && ++seen === depth + 1) {
            end = i
            break
          }
        }
        if (end === -1) end = pathname.length
      }
      const prefix = pathname.slice(0, end)
      const route = hostRoutes?.get(prefix) ?? byPath.get(prefix)
      if (route !== undefined) {
        const rest = end === pathname.length ? "/" : pathname.slice(end)
        return { route, path: q === -1 ? rest : rest + url.slice(q) }
      }
    }
    return undefined
  }

  /** Round robin over the current targets, skipping replicas that refused recently. */
  const pick = (key: string, exclude?: Replica): Replica | undefined => {
    const pool = pools.get(key)
    if (pool === undefined || pool.replicas.length === 0) return undefined
    const replicas = pool.replicas
    const n = replicas.length
    if (down.size === 0 && exclude === undefined) {
      const r = replicas[pool.next % n]!
      pool.next = (pool.next + 1) % n
      return r
    }
    const now = Date.now()
    let fallback: Replica | undefined
    for (let i = 0; i < n; i++) {
      const r = replicas[(pool.next + i) % n]!
      if (exclude !== undefined && r.name === exclude.name) continue
      const until = down.get(r.name)
      if (until !== undefined) {
        if (until > now) {
          fallback ??= r
          continue
        }
        down.delete(r.name)
      }
      pool.next = (pool.next + i + 1) % n
      return r
    }
    if (fallback !== undefined) pool.next = (pool.next + 1) % n
    return fallback
  }

  const sendJson = (res: http.ServerResponse, status: number, detail: string): void => {
    if (res.headersSent) {
      res.destroy()
      return
    }
    const body = JSON.stringify({ detail })
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), "cache-control": "no-store" })
    res.end(body)
  }

  const noTargets = (name: string): string => `Deployment ${name} has no active revision`

  /**
   * The headers to send to the replica, from the request's raw headers in one pass (node's
   * `req.headers` object is never built): hop-by-hop ones dropped, `X-Forwarded-*` added.
   */
  const forwardHeaders = (req: http.IncomingMessage, prefix: string): { headers: string[]; hasBody: boolean } => {
    const raw = req.rawHeaders
    const out: string[] = []
    let connection: string | undefined
    let host: string | undefined
    let forwardedFor: string | undefined
    let forwardedPort: string | undefined
    let forwardedProto: string | undefined
    let forwardedHost = false
    let hasBody = false
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!
      const value = raw[i + 1]!
      const lower = name.toLowerCase()
      if (DROP_REQUEST.has(lower)) {
        if (lower === "connection") connection = connection === undefined ? value : `${connection}, ${value}`
        else if (lower === "transfer-encoding") hasBody = true
        else if (lower === "x-forwarded-for") forwardedFor = forwardedFor === undefined ? value : `${forwardedFor},${value}`
        else if (lower === "x-forwarded-port") forwardedPort = forwardedPort === undefined ? value : `${forwardedPort},${value}`
        else if (lower === "x-forwarded-proto") forwardedProto = forwardedProto === undefined ? value : `${forwardedProto},${value}`
        continue
      }
      if (lower === "host") {
        // undici refuses a second Host (node's parser lets it through): the first one counts.
        if (host !== undefined) continue
        host = value
      } else if (lower === "content-length") {
        hasBody ||= value !== "0"
      } else if (lower === "x-forwarded-host") forwardedHost = true
      out.push(name, value)
    }
    const listed = connectionListed(connection)
    if (listed.length > 0) {
      for (let i = out.length - 2; i >= 0; i -= 2) {
        if (listed.includes(out[i]!.toLowerCase())) out.splice(i, 2)
      }
    }
    const encrypted = (req.socket as { encrypted?: boolean }).encrypted === true
    const client = req.socket.remoteAddress ?? ""
    const port = host === undefined ? undefined : /:(\d+)$/.exec(host)?.[1]
    out.push("x-forwarded-for", forwardedFor === undefined ? client : `${forwardedFor},${client}`)
    out.push("x-forwarded-port", (forwardedPort === undefined ? "" : `${forwardedPort},`) + (port ?? (encrypted ? "443" : "80")))
    out.push("x-forwarded-proto", (forwardedProto === undefined ? "" : `${forwardedProto},`) + (encrypted ? "https" : "http"))
    if (!forwardedHost) out.push("x-forwarded-host", host ?? "")
    if (prefix !== "") out.push("x-forwarded-prefix", prefix)
    return { headers: out, hasBody }
  }

  /** The replica's response headers for the client: hop-by-hop ones dropped, duplicates kept. */
  const responseHeaders = (headers: Record<string, string | string[] | undefined>): Array<string | string[]> => {
    const connection = headers["connection"]
    const listed = connectionListed(Array.isArray(connection) ? connection.join(",") : connection)
    const out: Array<string | string[]> = []
    for (const name in headers) {
      const value = headers[name]
      if (value === undefined || DROP_RESPONSE.has(name) || (listed.length > 0 && listed.includes(name))) continue
      out.push(name, value)
    }
    return out
  }

  const forward = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    m: Match,
    headers: string[],
    hasBody: boolean,
    replica: Replica,
    attempt: number
  ): void => {
    // A request body is read only once the replica has accepted the connection (undici calls
    // onRequestStart on a connected socket), so a refused connection leaves it unread and the
    // request can go to the next replica intact.
    const gate = hasBody ? new PassThrough() : null
    let started = false
    let controller: Dispatcher.DispatchController | undefined
    let failed = false
    /** The replica's answer ended (completely or with an error): nothing to abort any more. */
    let settled = false
    let waitingDrain = false
    const release = acquire(replica.name)
    const onClientClose = () => {
      release()
      // The client went away before the answer was complete: stop the replica's work on it.
      if (!settled && !res.writableFinished) controller?.abort(new Error("client closed the connection"))
    }
    res.once("close", onClientClose)
    const fail = (err: unknown) => {
      if (failed) return
      failed = true
      release()
      const code = codeOf(err)
      const deployment = m.route.name
      if (CONNECT_FAILED.has(code)) down.set(replica.name, Date.now() + downForMs)
      if (res.destroyed || res.writableEnded) return
      if (!res.headersSent && !started && attempt === 0 && (CONNECT_FAILED.has(code) || code === "ECONNRESET")) {
        const next = pick(m.route.key, replica)
        if (next !== undefined && next.name !== replica.name) {
          res.off("close", onClientClose)
          options.log?.({ type: "retry", deployment, target: replica.name, error: code })
          forward(req, res, m, headers, hasBody, next, 1)
          return
        }
      }
      options.log?.({ type: "failed", deployment, target: replica.name, error: code })
      if (gate !== null) {
        req.unpipe(gate)
        req.resume()
      }
      sendJson(res, 502, `Deployment ${deployment}: replica ${replica.name} failed (${code})`)
    }
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: (c) => {
        controller = c
        started = true
        if (res.destroyed) {
          c.abort(new Error("client closed the connection"))
          return
        }
        if (gate !== null) req.pipe(gate)
      },
      onResponseStart: (c, statusCode, headers, statusMessage) => {
        if (statusCode < 200) return
        if (res.destroyed) {
          c.abort(new Error("client closed the connection"))
          return
        }
        res.writeHead(statusCode, statusMessage, responseHeaders(headers) as never)
      },
      onResponseData: (c, chunk) => {
        if (!res.write(chunk) && !waitingDrain) {
          // Back-pressure: the client reads slower than the replica answers.
          waitingDrain = true
          c.pause()
          res.once("drain", () => {
            waitingDrain = false
            c.resume()
          })
        }
      },
      onResponseEnd: () => {
        settled = true
        res.end()
      },
      onResponseError: (_c, err) => {
        settled = true
        if (res.headersSent) {
          release()
          res.destroy(err)
          return
        }
        fail(err)
      }
    }
    try {
      upstream(replica).dispatch({ method: req.method ?? "GET", path: m.path, headers, body: gate }, handler)
    } catch (err) {
      fail(err)
    }
  }

  /** Why a deployment another replica serves cannot be reached from here, or undefined when it can. */
  const remoteProblem = (req: http.IncomingMessage, name: string, peer: Peer): string | undefined => {
    if (options.remote?.isForwarded(req)) return `Deployment ${name} moved to replica ${peer.id} while this request was forwarded; retry`
    if (options.remote?.forwarder === undefined) return `Deployment ${name} is served by replica ${peer.id}, and this replica cannot forward to it: set SLIPWAY_INTERNAL_TOKEN on every replica`
    return undefined
  }
  const peerFailed = (name: string, peer: Peer, code: string): string =>
    `Deployment ${name} is served by replica ${peer.id} (${peer.url}), which does not answer (${code}); if it stopped, another replica serves the deployment once its lease expires`

  const handle = (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
    const m = match(req)
    if (m === undefined) return false
    const remote = remotes.size === 0 ? undefined : remotes.get(m.route.key)
    if (remote !== undefined) {
      const problem = remoteProblem(req, m.route.name, remote)
      if (problem !== undefined) {
        req.resume()
        sendJson(res, 503, problem)
      } else options.remote!.forwarder!.http(req, res, remote, (code) => sendJson(res, 502, peerFailed(m.route.name, remote, code)))
      return true
    }
    const replica = pick(m.route.key)
    if (replica === undefined) {
      // Drain any body so the client connection stays usable.
      req.resume()
      sendJson(res, 503, noTargets(m.route.name))
      return true
    }
    const { headers, hasBody } = forwardHeaders(req, m.route.prefix)
    forward(req, res, m, headers, hasBody, replica, 0)
    return true
  }

  const handleUpgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer): boolean => {
    const m = match(req)
    if (m === undefined) return false
    const reject = (status: number, detail: string) => {
      const body = JSON.stringify({ detail })
      const reason = status === 503 ? "Service Unavailable" : "Bad Gateway"
      if (socket.writable) {
        socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`)
      } else socket.destroy()
    }
    const remote = remotes.size === 0 ? undefined : remotes.get(m.route.key)
    if (remote !== undefined) {
      const problem = remoteProblem(req, m.route.name, remote)
      if (problem !== undefined) reject(503, problem)
      else options.remote!.forwarder!.upgrade(req, socket, head, remote, (code) => reject(502, peerFailed(m.route.name, remote, code)))
      return true
    }
    const replica = pick(m.route.key)
    if (replica === undefined) {
      reject(503, noTargets(m.route.name))
      return true
    }
    stripHopByHopForUpgrade(req.headers)
    if (m.route.prefix !== "") req.headers["x-forwarded-prefix"] = m.route.prefix
    req.url = m.path
    const release = acquire(replica.name)
    socket.once("close", release)
    const host = replica.target.host.includes(":") ? `[${replica.target.host}]` : replica.target.host
    wsProxy.ws(req, socket as never, head, { target: `http://${host}:${replica.target.port}` }, (err: Error) => {
      release()
      const code = codeOf(err)
      if (CONNECT_FAILED.has(code)) down.set(replica.name, Date.now() + downForMs)
      options.log?.({ type: "failed", deployment: m.route.name, target: replica.name, error: code })
      reject(502, `Deployment ${m.route.name}: replica ${replica.name} failed (${code})`)
    })
    return true
  }

  const idle = (targets: ReadonlyArray<ProxyTarget>) => targets.every((t) => (flights.get(targetName(t)) ?? 0) === 0)

  const setRoute = (key: string, route: DeploymentRoute) =>
    Effect.try({
      try: () => {
        const parsed = parseRoute(key, route, publicUrl, reserved)
        const previous = routes.get(key)
        routes.set(key, parsed)
        if (previous !== undefined) unindex(previous)
        index(parsed)
      },
      catch: (error) => (error instanceof DeploymentUrlError ? error : new DeploymentUrlError({ message: String(error) }))
    })

  return {
    setRoute,
    setRemote: (key: string, route: DeploymentRoute, peer: Peer) =>
      Effect.andThen(
        setRoute(key, route),
        Effect.sync(() => {
          remotes.set(key, { id: peer.id, url: peer.url })
          // Replicas here (if any) get no new request; those in flight finish (`drain` counts them).
          pools.delete(key)
          closeUnused()
        })
      ),
    remotes: Effect.sync(() => new Map(remotes)),
    setTargets: (key: string, targets: ReadonlyArray<ProxyTarget>) =>
      Effect.sync(() => {
        for (const t of targets) {
          if (typeof t.host !== "string" || t.host === "" || !Number.isInteger(t.port) || t.port < 1 || t.port > 65535) {
            throw new TypeError(`setTargets(${key}): invalid target ${JSON.stringify(t)}`)
          }
        }
        for (const t of targets) {
          if (t.socketPath !== undefined && (typeof t.socketPath !== "string" || !t.socketPath.startsWith("/"))) {
            throw new TypeError(`setTargets(${key}): invalid socketPath ${JSON.stringify(t.socketPath)}`)
          }
        }
        // Served here from now on.
        remotes.delete(key)
        const copies = targets.map((t): ProxyTarget => (t.socketPath === undefined ? { host: t.host, port: t.port } : { host: t.host, port: t.port, socketPath: t.socketPath }))
        // One assignment: a request either sees the old list or the new one, never a mix.
        pools.set(key, { targets: copies, replicas: copies.map((target) => ({ target, name: targetName(target), poolKey: target.socketPath === undefined ? targetName(target) : `${targetName(target)} ${target.socketPath}` })), next: 0 })
        closeUnused()
      }),
    targets: (key: string) => Effect.sync(() => pools.get(key)?.targets ?? []),
    inFlight: (target: ProxyTarget) => Effect.sync(() => flights.get(targetName(target)) ?? 0),
    drain: (targets: ReadonlyArray<ProxyTarget>, timeoutMs: number) =>
      Effect.sync(() => idle(targets)).pipe(
        Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (done) => done }),
        Effect.timeoutOption(timeoutMs),
        Effect.map(Option.isSome)
      ),
    markDown: (target: ProxyTarget, forMs?: number) =>
      Effect.sync(() => void down.set(targetName(target), forMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + forMs)),
    markUp: (target: ProxyTarget) => Effect.sync(() => void down.delete(targetName(target))),
    remove: (key: string) =>
      Effect.sync(() => {
        const previous = routes.get(key)
        routes.delete(key)
        pools.delete(key)
        remotes.delete(key)
        if (previous !== undefined) unindex(previous)
        closeUnused()
      }),
    handle,
    handleUpgrade,
    close: () => {
      for (const pool of upstreams.values()) pool.destroy().catch(() => undefined)
      upstreams.clear()
    }
  }
}

export const layerDeploymentProxy = (options: DeploymentProxyOptions) => Layer.effect(DeploymentProxy, makeDeploymentProxy(options))

/** The server's: URLs under `SLIPWAY_PUBLIC_URL` matched on path, Slipway's own paths reserved. */
export const DeploymentProxyLive = Layer.unwrap(
  Effect.gen(function* () {
    const { publicUrl, log } = yield* ServerEnv
    const replicas = yield* Replicas
    return layerDeploymentProxy({
      publicUrl,
      reservedPaths: RESERVED_PATHS,
      log: (event) => log.debug("deployment proxy", { ...event }),
      remote: { forwarder: replicas.forwarder, isForwarded: replicas.isForwarded }
    })
  })
)
