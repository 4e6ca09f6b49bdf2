/**
 * The deployment URL: Slipway answers each deployment's URL itself and proxies HTTP (streamed
 * both ways: chunked bodies, SSE) and WebSocket upgrades to the active revision's replicas, round
 * robin. Built on `http-proxy-3` (the maintained TypeScript rewrite of `http-proxy`) over one
 * keep-alive `http.Agent`; see docs/deployments-local.md for why.
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
 */
import * as http from "node:http"
import type { Duplex } from "node:stream"
import { PassThrough } from "node:stream"
import { createProxyServer } from "http-proxy-3"
import { gitrepoCustomUrl } from "../../../core/deployments/rules.ts"

export interface ProxyTarget {
  readonly host: string
  readonly port: number
}

export interface DeploymentRoute {
  /** The deployment's name, used in error messages. */
  readonly name: string
  /** The deployment URL: its `custom_url`, or `deploymentUrl(publicUrl, name)`. */
  readonly url: string
}

export interface DeploymentProxyOptions {
  /** Slipway's public base URL (`SLIPWAY_PUBLIC_URL`): URLs under it are matched on path alone. */
  readonly publicUrl: string
  /** Time to establish a TCP connection to a replica before trying the next one. Default 2000 ms. */
  readonly connectTimeoutMs?: number
  /** How long a replica that refused a connection is skipped by round robin. Default 1000 ms. */
  readonly downForMs?: number
  /** Idle keep-alive sockets per replica kept open. Default 256. */
  readonly maxFreeSockets?: number
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

export interface DeploymentProxy {
  /** Registers or updates the URL a deployment is served at. */
  readonly setRoute: (deploymentKey: string, route: DeploymentRoute) => void
  /** Atomically replaces the replicas new requests go to; requests in flight keep theirs. */
  readonly setTargets: (deploymentKey: string, targets: ReadonlyArray<ProxyTarget>) => void
  /** The current targets (a snapshot). */
  readonly targets: (deploymentKey: string) => ReadonlyArray<ProxyTarget>
  /** A health monitor's verdict: round robin skips a replica marked down (for `forMs`, default until markUp). */
  readonly markDown: (target: ProxyTarget, forMs?: number) => void
  readonly markUp: (target: ProxyTarget) => void
  /** Requests and WebSockets currently proxied to this replica. */
  readonly inFlight: (target: ProxyTarget) => number
  /**
   * Resolves true once nothing is in flight to any of these replicas (call it after `setTargets`
   * switched away from them, before stopping them), false when `timeoutMs` passes first.
   */
  readonly drain: (targets: ReadonlyArray<ProxyTarget>, timeoutMs: number) => Promise<boolean>
  /** Forgets a deployment: its URL answers nothing (handle returns false) afterwards. */
  readonly remove: (deploymentKey: string) => void
  /** Serves the request when it is for a deployment URL (returns true), otherwise returns false untouched. */
  readonly handle: (req: http.IncomingMessage, res: http.ServerResponse) => boolean
  /** The same for an HTTP upgrade (WebSocket): attach to the server's `upgrade` event. */
  readonly handleUpgrade: (req: http.IncomingMessage, socket: Duplex, head: Buffer) => boolean
  /** Closes the keep-alive sockets to the replicas. */
  readonly close: () => void
}

/** A deployment's URL: its `custom_url` when set, otherwise `{public}/d/{name}` as core generates it. */
export const deploymentUrl = (publicUrl: string, name: string, customUrl?: string | null): string =>
  customUrl ?? gitrepoCustomUrl(publicUrl, name)

/** Hop-by-hop headers (RFC 9110 section 7.6.1) that a proxy must not forward. */
const HOP_BY_HOP = ["connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer", "upgrade"]

const stripHopByHop = (headers: http.IncomingHttpHeaders | http.OutgoingHttpHeaders, keepUpgrade: boolean): void => {
  const connection = headers["connection"]
  const listed = typeof connection === "string" ? connection.split(",").map((t) => t.trim().toLowerCase()).filter((t) => t !== "") : []
  for (const name of [...HOP_BY_HOP, ...listed]) {
    if (keepUpgrade && (name === "upgrade" || name === "connection")) continue
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
}

interface Pool {
  readonly targets: ReadonlyArray<ProxyTarget>
  next: number
}

interface Match {
  readonly route: Route
  /** The path and query to forward. */
  readonly path: string
}

const defaultPort = (protocol: string): string => (protocol === "https:" ? "443" : "80")

const parseRoute = (key: string, route: DeploymentRoute, publicUrl: URL, reserved: ReadonlyArray<string>): Route => {
  let url: URL
  try {
    url = new URL(route.url)
  } catch {
    throw new TypeError(`Deployment ${route.name}: URL ${JSON.stringify(route.url)} is not an absolute URL`)
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`Deployment ${route.name}: URL ${route.url} must be http or https`)
  }
  const prefix = url.pathname.replace(/\/+$/, "")
  const underPublic = url.origin === publicUrl.origin && (publicUrl.pathname === "/" || prefix.startsWith(publicUrl.pathname.replace(/\/+$/, "")))
  if (underPublic) {
    // A deployment must not shadow Slipway's own API on the public host.
    const clash = prefix === "" ? "/" : reserved.find((r) => prefix === r || prefix.startsWith(r + "/") || r.startsWith(prefix + "/"))
    if (clash !== undefined) throw new TypeError(`Deployment ${route.name}: URL ${route.url} would take Slipway's own path ${clash}`)
  }
  const port = url.port === "" ? defaultPort(url.protocol) : url.port
  const host = underPublic ? null : `${url.hostname.toLowerCase()}:${port}`
  return { key, name: route.name, host, prefix }
}

const targetName = (t: ProxyTarget): string => `${t.host}:${t.port}`

/** The request's host as `host:port` in lower case (the port defaulted for plain HTTP). */
const requestHost = (req: http.IncomingMessage): string | null => {
  const raw = req.headers.host
  if (raw === undefined || raw === "") return null
  const lower = raw.toLowerCase()
  if (lower.startsWith("[")) return lower.includes("]:") ? lower : `${lower}:80`
  return lower.includes(":") ? lower : `${lower}:80`
}

export const makeDeploymentProxy = (options: DeploymentProxyOptions): DeploymentProxy => {
  const publicUrl = new URL(options.publicUrl)
  const connectTimeout = options.connectTimeoutMs ?? 2000
  const downForMs = options.downForMs ?? 1000
  const reserved = (options.reservedPaths ?? ["/v1", "/v2", "/health", "/openapi.json", "/docs"]).map((p) => p.replace(/\/+$/, ""))
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: options.maxFreeSockets ?? 256, scheduling: "lifo" })
  const proxy = createProxyServer({ agent, xfwd: true, connectTimeout, ws: true })
  const routes = new Map<string, Route>()
  const pools = new Map<string, Pool>()
  const down = new Map<string, number>()

  const flights = new Map<string, number>()
  /** Counts one request or WebSocket on a replica; the returned function ends it (once). */
  const acquire = (t: ProxyTarget): (() => void) => {
    const name = targetName(t)
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

  /** Per-request state, for the body gate and retries. */
  const gates = new WeakMap<http.IncomingMessage, () => void>()

  proxy.on("proxyReq", (_proxyReq, req, _res, _opts, socket) => {
    const open = gates.get(req)
    if (open === undefined) return
    gates.delete(req)
    if (socket.connecting) socket.once("connect", open)
    else open()
  })
  proxy.on("proxyRes", (proxyRes) => {
    stripHopByHop(proxyRes.headers, false)
  })
  // Errors are handled through the per-call callback; this listener only keeps an unexpected
  // one from becoming an uncaught exception.
  proxy.on("error", () => {})

  const match = (req: http.IncomingMessage): Match | undefined => {
    const url = req.url ?? "/"
    const q = url.indexOf("?")
    const pathname = q === -1 ? url : url.slice(0, q)
    const search = q === -1 ? "" : url.slice(q)
    const host = requestHost(req)
    let best: Match | undefined
    for (const route of routes.values()) {
      if (route.host !== null && route.host !== host) continue
      let rest: string
      if (route.prefix === "") rest = pathname
      else if (pathname === route.prefix) rest = "/"
      else if (pathname.startsWith(route.prefix + "/")) rest = pathname.slice(route.prefix.length)
      else continue
      // The longest prefix wins; a Host-specific route beats a path-only one of the same length.
      if (best === undefined || route.prefix.length > best.route.prefix.length || (route.prefix.length === best.route.prefix.length && route.host !== null)) {
        best = { route, path: rest + search }
      }
    }
    return best
  }

  /** Round robin over the current targets, skipping replicas that refused recently. */
  const pick = (key: string, exclude?: ProxyTarget): ProxyTarget | undefined => {
    const pool = pools.get(key)
    if (pool === undefined || pool.targets.length === 0) return undefined
    const n = pool.targets.length
    const now = Date.now()
    let fallback: ProxyTarget | undefined
    for (let i = 0; i < n; i++) {
      const t = pool.targets[(pool.next + i) % n]!
      if (exclude !== undefined && t.host === exclude.host && t.port === exclude.port) continue
      const until = down.get(targetName(t))
      if (until !== undefined && until > now) {
        fallback ??= t
        continue
      }
      pool.next = (pool.next + i + 1) % n
      return t
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

  const hasBody = (req: http.IncomingMessage): boolean => {
    const len = req.headers["content-length"]
    if (len !== undefined) return len !== "0"
    return req.headers["transfer-encoding"] !== undefined
  }

  const targetUrls = new Map<string, URL>()
  const urlOf = (t: ProxyTarget): URL => {
    const name = targetName(t)
    let url = targetUrls.get(name)
    if (url === undefined) {
      url = new URL(`http://${t.host.includes(":") ? `[${t.host}]` : t.host}:${t.port}`)
      targetUrls.set(name, url)
    }
    return url
  }

  const forward = (req: http.IncomingMessage, res: http.ServerResponse, m: Match, target: ProxyTarget, attempt: number): void => {
    const opts: Record<string, unknown> = { target: urlOf(target) }
    let bodyStarted = false
    // A request body is read only once the replica has accepted the connection, so a refused
    // connection leaves it unread and the request can go to the next replica intact. A request
    // with `Expect: 100-continue` streams at once (the library gives no hook for it).
    if (hasBody(req) && req.headers["expect"] === undefined) {
      const gate = new PassThrough()
      opts["buffer"] = gate
      gates.set(req, () => {
        bodyStarted = true
        req.pipe(gate)
      })
    } else if (hasBody(req)) {
      bodyStarted = true
    }
    const release = acquire(target)
    res.once("close", release)
    proxy.web(req, res, opts as never, (err: Error) => {
      release()
      const code = (err as NodeJS.ErrnoException).code ?? err.message
      const deployment = m.route.name
      const connectFailed = code === "ECONNREFUSED" || code === "ETIMEDOUT" || code === "EHOSTUNREACH" || code === "ECONNRESET"
      if (code === "ECONNREFUSED" || code === "ETIMEDOUT" || code === "EHOSTUNREACH") down.set(targetName(target), Date.now() + downForMs)
      if (!res.headersSent && !bodyStarted && connectFailed && attempt === 0) {
        const next = pick(m.route.key, target)
        if (next !== undefined && !(next.host === target.host && next.port === target.port)) {
          options.log?.({ type: "retry", deployment, target: targetName(target), error: code })
          forward(req, res, m, next, 1)
          return
        }
      }
      options.log?.({ type: "failed", deployment, target: targetName(target), error: code })
      sendJson(res, 502, `Deployment ${deployment}: replica ${targetName(target)} failed (${code})`)
    })
  }

  const handle = (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
    const m = match(req)
    if (m === undefined) return false
    const target = pick(m.route.key)
    if (target === undefined) {
      // Drain any body so the client connection stays usable.
      req.resume()
      sendJson(res, 503, noTargets(m.route.name))
      return true
    }
    stripHopByHop(req.headers, false)
    if (m.route.prefix !== "") req.headers["x-forwarded-prefix"] = m.route.prefix
    req.url = m.path
    forward(req, res, m, target, 0)
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
    const target = pick(m.route.key)
    if (target === undefined) {
      reject(503, noTargets(m.route.name))
      return true
    }
    stripHopByHop(req.headers, true)
    if (m.route.prefix !== "") req.headers["x-forwarded-prefix"] = m.route.prefix
    req.url = m.path
    const release = acquire(target)
    socket.once("close", release)
    proxy.ws(req, socket as never, head, { target: urlOf(target) }, (err: Error) => {
      release()
      const code = (err as NodeJS.ErrnoException).code ?? err.message
      if (code === "ECONNREFUSED" || code === "ETIMEDOUT") down.set(targetName(target), Date.now() + downForMs)
      options.log?.({ type: "failed", deployment: m.route.name, target: targetName(target), error: code })
      reject(502, `Deployment ${m.route.name}: replica ${targetName(target)} failed (${code})`)
    })
    return true
  }

  return {
    setRoute: (key, route) => {
      routes.set(key, parseRoute(key, route, publicUrl, reserved))
    },
    setTargets: (key, targets) => {
      for (const t of targets) {
        if (typeof t.host !== "string" || t.host === "" || !Number.isInteger(t.port) || t.port < 1 || t.port > 65535) {
          throw new TypeError(`setTargets(${key}): invalid target ${JSON.stringify(t)}`)
        }
      }
      // One assignment: a request either sees the old pool or the new one, never a mix.
      pools.set(key, { targets: targets.map((t) => ({ host: t.host, port: t.port })), next: 0 })
      for (const name of targetUrls.keys()) if (targetUrls.size > 1024) targetUrls.delete(name)
    },
    targets: (key) => pools.get(key)?.targets ?? [],
    inFlight: (target) => flights.get(targetName(target)) ?? 0,
    drain: async (targets, timeoutMs) => {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        if (targets.every((t) => (flights.get(targetName(t)) ?? 0) === 0)) return true
        if (Date.now() >= deadline) return false
        await new Promise((r) => setTimeout(r, Math.min(20, Math.max(1, deadline - Date.now()))))
      }
    },
    markDown: (target, forMs) => {
      down.set(targetName(target), forMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + forMs)
    },
    markUp: (target) => {
      down.delete(targetName(target))
    },
    remove: (key) => {
      routes.delete(key)
      pools.delete(key)
    },
    handle,
    handleUpgrade,
    close: () => {
      agent.destroy()
    }
  }
}
