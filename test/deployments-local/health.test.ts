/** Health checks against real HTTP and TCP servers on loopback. */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { checkHealth, checkTcp, HealthTimeoutError, waitHealthy } from "../../server/deployments/local/health.ts"

let web: http.Server
let webPort: number
let raw: net.Server
let rawPort: number
let silent: net.Server
let silentPort: number
let deadPort: number
const sockets = new Set<net.Socket>()
const track = (s: net.Socket) => {
  sockets.add(s)
  s.on("error", () => {})
  s.on("close", () => sockets.delete(s))
}
let readyAfter = 0
let okCalls = 0

const listen = async (s: net.Server): Promise<number> => {
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r))
  return (s.address() as AddressInfo).port
}

beforeAll(async () => {
  web = http.createServer((req, res) => {
    if (req.url === "/ok") {
      okCalls++
      res.writeHead(okCalls > readyAfter ? 200 : 503)
      return res.end()
    }
    if (req.url === "/healthz") return res.writeHead(204).end()
    if (req.url === "/private") return res.writeHead(401).end()
    res.writeHead(404).end()
  })
  webPort = await listen(web)
  // Speaks something that is not HTTP.
  raw = net.createServer((s) => {
    track(s)
    s.end("SSH-2.0-OpenSSH_9.2\r\n")
  })
  rawPort = await listen(raw)
  // Accepts and never says anything.
  silent = net.createServer(track)
  silentPort = await listen(silent)
  const tmp = net.createServer()
  deadPort = await listen(tmp)
  await new Promise<void>((r) => tmp.close(() => r()))
})

afterAll(async () => {
  for (const s of sockets) s.destroy()
  for (const s of [web, raw, silent]) {
    ;(s as http.Server).closeAllConnections?.()
    await new Promise<void>((r) => s.close(() => r()))
  }
})

const t = (port: number) => ({ host: "127.0.0.1", port })

describe("checkHealth", () => {
  it("is healthy on a 2xx from GET /ok, and uses a configured path", async () => {
    readyAfter = 0
    expect(await checkHealth(t(webPort))).toMatchObject({ healthy: true, via: "http", status: 200 })
    expect(await checkHealth(t(webPort), { path: "/healthz", mode: "http" })).toMatchObject({ healthy: true, via: "http", status: 204 })
  })

  it("is unhealthy on 5xx and 401 in every HTTP mode", async () => {
    readyAfter = Infinity
    expect(await checkHealth(t(webPort))).toMatchObject({ healthy: false, status: 503, detail: "GET /ok answered 503" })
    expect(await checkHealth(t(webPort), { path: "/private" })).toMatchObject({ healthy: false, status: 401 })
    readyAfter = 0
  })

  it("auto falls back to TCP on 404 or a server that does not speak HTTP; http mode does not", async () => {
    expect(await checkHealth(t(webPort), { path: "/missing" })).toMatchObject({ healthy: true, via: "tcp", status: 404 })
    expect(await checkHealth(t(webPort), { path: "/missing", mode: "http" })).toMatchObject({ healthy: false, via: "http", status: 404 })
    expect(await checkHealth(t(rawPort))).toMatchObject({ healthy: true, via: "tcp" })
    expect(await checkHealth(t(rawPort), { mode: "http" })).toMatchObject({ healthy: false, via: "http" })
    const quiet = await checkHealth(t(silentPort), { attemptTimeoutMs: 300 })
    expect(quiet).toMatchObject({ healthy: true, via: "tcp" })
    expect(quiet.detail).toMatch(/no HTTP answer within 300 ms/)
  })

  it("is unhealthy when the connection is refused, in every mode", async () => {
    for (const mode of ["auto", "http", "tcp"] as const) {
      const r = await checkHealth(t(deadPort), { mode })
      expect(r.healthy).toBe(false)
      expect(r.detail).toMatch(/ECONNREFUSED/)
    }
    expect(await checkTcp(t(rawPort))).toMatchObject({ healthy: true, via: "tcp" })
  })

  it("rejects a bad target or path with a clear error", async () => {
    await expect(checkHealth({ host: "127.0.0.1", port: 70000 })).rejects.toThrow(/invalid target/)
    await expect(checkHealth(t(webPort), { path: "ok" })).rejects.toThrow(/path must start with/)
  })
})

describe("waitHealthy", () => {
  it("polls until healthy and reports every attempt", async () => {
    okCalls = 0
    readyAfter = 3
    const attempts: boolean[] = []
    const r = await waitHealthy(t(webPort), { intervalMs: 20, timeoutMs: 5000, onAttempt: (a) => attempts.push(a.healthy) })
    expect(r).toMatchObject({ healthy: true, status: 200 })
    expect(attempts).toEqual([false, false, false, true])
    readyAfter = 0
  })

  it("rejects with HealthTimeoutError carrying the last result when the deadline passes", async () => {
    readyAfter = Infinity
    const started = Date.now()
    const err = await waitHealthy(t(webPort), { intervalMs: 50, timeoutMs: 400 }).catch((e) => e)
    expect(err).toBeInstanceOf(HealthTimeoutError)
    expect(err.message).toMatch(/not healthy after 400 ms: GET \/ok answered 503/)
    expect(err.last).toMatchObject({ healthy: false, status: 503 })
    expect(Date.now() - started).toBeLessThan(1500)
    readyAfter = 0
  })

  it("stops when the signal aborts", async () => {
    const controller = new AbortController()
    setTimeout(() => controller.abort(new Error("superseded")), 150)
    await expect(waitHealthy(t(deadPort), { intervalMs: 50, timeoutMs: 10_000, signal: controller.signal })).rejects.toThrow("superseded")
  })
})
