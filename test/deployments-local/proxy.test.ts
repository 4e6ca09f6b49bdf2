/**
 * The deployment proxy against real HTTP servers on loopback: routing, round robin, streaming
 * both ways, WebSocket, retries, 502/503 bodies and the zero-downtime switch.
 */
import { createHash } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as net from "node:net"
import { it as effectIt } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope } from "effect"
import { TestClock } from "effect/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DeploymentProxy, deploymentUrl, makeDeploymentProxy } from "../../server/deployments/local/proxy.ts"

/** An Effect test, on the test clock. */
const effect = effectIt.effect

interface Target {
  readonly server: http.Server
  readonly port: number
  readonly id: string
}

/** Bytes a replica's /big answer has handed to its socket so far. */
let bigWritten = 0

/** A replica: echoes who it is, the path and headers; /slow waits; /sse streams; /big sends 64 MiB; /upload hashes the body; WebSocket echo. */
const startTarget = async (id: string): Promise<Target> => {
  const server = http.createServer((req, res) => {
    const url = req.url ?? "/"
    if (url.startsWith("/slow")) {
      setTimeout(() => {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({ id, path: url }))
      }, 400)
      return
    }
    if (url.startsWith("/sse")) {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      let n = 0
      const timer = setInterval(() => {
        res.write(`data: ${n}\n\n`)
        if (++n === 5) {
          clearInterval(timer)
          res.end()
        }
      }, 100)
      return
    }
    if (url.startsWith("/big")) {
      // 64 MiB in 64 KiB chunks, honouring back-pressure.
      res.writeHead(200, { "content-type": "application/octet-stream" })
      bigWritten = 0
      let left = 1024
      const chunk = Buffer.alloc(65536, 9)
      const more = () => {
        while (left > 0) {
          left--
          bigWritten += chunk.length
          if (!res.write(chunk)) return void res.once("drain", more)
        }
        res.end()
      }
      more()
      return
    }
    if (url.startsWith("/upload")) {
      const hash = createHash("sha256")
      let bytes = 0
      req.on("data", (c: Buffer) => {
        bytes += c.length
        hash.update(c)
      })
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({ id, bytes, sha256: hash.digest("hex") }))
      })
      return
    }
    req.resume()
    res.writeHead(200, { "content-type": "application/json", "proxy-authenticate": "Basic", "x-replica": id })
    res.end(JSON.stringify({ id, path: url, headers: req.headers }))
  })
  server.on("upgrade", (req, socket: net.Socket) => {
    const key = req.headers["sec-websocket-key"] as string
    const accept = createHash("sha1").update(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64")
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`)
    socket.on("data", (frame: Buffer) => {
      // Small masked text frames only (what the test sends): echo "<id>:<text>" unmasked.
      const opcode = frame[0]! & 0x0f
      if (opcode === 0x8) {
        socket.end(Buffer.from([0x88, 0]))
        return
      }
      const len = frame[1]! & 0x7f
      const mask = frame.subarray(2, 6)
      const payload = Buffer.from(frame.subarray(6, 6 + len).map((b, i) => b ^ mask[i % 4]!))
      const out = Buffer.from(`${id}:${payload.toString()}|${req.url}`)
      socket.write(Buffer.concat([Buffer.from([0x81, out.length]), out]))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { server, port: (server.address() as AddressInfo).port, id }
}

const stop = (server: http.Server | net.Server) =>
  new Promise<void>((resolve) => {
    ;(server as http.Server).closeAllConnections?.()
    server.close(() => resolve())
  })

/** A port nothing listens on. */
const deadPort = async (): Promise<number> => {
  const s = net.createServer()
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r))
  const port = (s.address() as AddressInfo).port
  await new Promise<void>((r) => s.close(() => r()))
  return port
}

let a: Target
let b: Target
let c: Target
let proxy: DeploymentProxy["Service"]
/** The proxy's scope: closing it closes its connections to the replicas. */
const scope = Scope.makeUnsafe()
let front: http.Server
let base: string
const publicUrl = "http://slipway.test:8080"

const get = async (path: string, init?: RequestInit) => {
  const r = await fetch(base + path, init)
  return { status: r.status, body: (await r.json()) as any, headers: r.headers }
}

beforeAll(async () => {
  ;[a, b, c] = await Promise.all([startTarget("a"), startTarget("b"), startTarget("c")])
  proxy = Effect.runSync(Scope.provide(scope)(makeDeploymentProxy({ publicUrl, connectTimeoutMs: 1000 })))
  front = http.createServer((req, res) => {
    if (!proxy.handle(req, res)) {
      res.writeHead(404, { "content-type": "application/json" })
      res.end(JSON.stringify({ detail: "Not Found" }))
    }
  })
  front.on("upgrade", (req, socket, head) => {
    if (!proxy.handleUpgrade(req, socket, head)) socket.destroy()
  })
  await new Promise<void>((r) => front.listen(0, "127.0.0.1", r))
  base = `http://127.0.0.1:${(front.address() as AddressInfo).port}`
})

afterAll(async () => {
  Effect.runSync(Scope.close(scope, Exit.void))
  await Promise.all([stop(front), stop(a.server), stop(b.server), stop(c.server)])
})

describe("deploymentUrl", () => {
  it("defaults to {public}/d/{name} like core's gitrepo rule, and keeps a custom_url", () => {
    expect(deploymentUrl("http://h:8080/", "agent")).toBe("http://h:8080/d/agent")
    expect(deploymentUrl("http://h:8080", "agent", "https://agent.example.com")).toBe("https://agent.example.com")
  })
})

describe("deployment proxy", () => {
  it("routes {public}/d/{name} by path, strips the prefix, round robins and sets X-Forwarded-*", async () => {
    Effect.runSync(proxy.setRoute("dep-rr", { name: "rr", url: deploymentUrl(publicUrl, "rr") }))
    Effect.runSync(proxy.setTargets("dep-rr", [
      { host: "127.0.0.1", port: a.port },
      { host: "127.0.0.1", port: b.port }
    ]))
    const ids: string[] = []
    for (let i = 0; i < 4; i++) {
      const r = await get("/d/rr/threads?limit=2", { headers: { "x-custom": "kept" } })
      expect(r.status).toBe(200)
      expect(r.body.path).toBe("/threads?limit=2")
      expect(r.body.headers["x-custom"]).toBe("kept")
      expect(r.body.headers["x-forwarded-for"]).toBe("127.0.0.1")
      expect(r.body.headers["x-forwarded-proto"]).toBe("http")
      expect(r.body.headers["x-forwarded-prefix"]).toBe("/d/rr")
      expect(r.body.headers["x-forwarded-host"]).toMatch(/^127\.0\.0\.1:\d+$/)
      ids.push(r.body.id)
    }
    expect(ids.sort()).toEqual(["a", "a", "b", "b"])
    const root = await get("/d/rr")
    expect(root.body.path).toBe("/")
    // Another deployment's prefix is not this one's.
    expect((await get("/d/rrx/ok")).status).toBe(404)
  })

  it("strips hop-by-hop headers both ways, including those named in Connection", async () => {
    Effect.runSync(proxy.setRoute("dep-hop", { name: "hop", url: deploymentUrl(publicUrl, "hop") }))
    Effect.runSync(proxy.setTargets("dep-hop", [{ host: "127.0.0.1", port: a.port }]))
    const body = await new Promise<any>((resolve, reject) => {
      const req = http.request(
        `${base}/d/hop/x`,
        { headers: { connection: "keep-alive, x-private", "x-private": "secret", "proxy-authorization": "Basic eA==", te: "trailers" } },
        (res) => {
          expect(res.headers["proxy-authenticate"]).toBeUndefined()
          expect(res.headers["x-replica"]).toBe("a")
          let text = ""
          res.on("data", (d) => (text += d))
          res.on("end", () => resolve(JSON.parse(text)))
        }
      )
      req.on("error", reject)
      req.end()
    })
    expect(body.headers["x-private"]).toBeUndefined()
    expect(body.headers["proxy-authorization"]).toBeUndefined()
    expect(body.headers["te"]).toBeUndefined()
  })

  it("matches a custom_url outside the public base on Host and path", async () => {
    Effect.runSync(proxy.setRoute("dep-custom", { name: "custom", url: "http://agent.example.test/api" }))
    Effect.runSync(proxy.setTargets("dep-custom", [{ host: "127.0.0.1", port: c.port }]))
    const hit = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      http
        .get(`${base}/api/ok`, { headers: { host: "agent.example.test" } }, (res) => {
          let t = ""
          res.on("data", (d) => (t += d))
          res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(t) }))
        })
        .on("error", reject)
    })
    expect(hit.status).toBe(200)
    expect(hit.body).toMatchObject({ id: "c", path: "/ok" })
    // Same path, other Host: not this deployment.
    expect((await get("/api/ok")).status).toBe(404)
  })

  it("answers 503 with a detail when the deployment has no targets", async () => {
    Effect.runSync(proxy.setRoute("dep-empty", { name: "empty", url: deploymentUrl(publicUrl, "empty") }))
    const r = await get("/d/empty/ok")
    expect(r.status).toBe(503)
    expect(r.body).toEqual({ detail: "Deployment empty has no active revision" })
    Effect.runSync(proxy.setTargets("dep-empty", []))
    expect((await get("/d/empty/ok", { method: "POST", body: "x" })).status).toBe(503)
  })

  it("tries the next replica once when one refuses (GET and POST with a body), 502 when all do", async () => {
    const dead1 = await deadPort()
    const dead2 = await deadPort()
    Effect.runSync(proxy.setRoute("dep-retry", { name: "retry", url: deploymentUrl(publicUrl, "retry") }))
    Effect.runSync(proxy.setTargets("dep-retry", [
      { host: "127.0.0.1", port: dead1 },
      { host: "127.0.0.1", port: b.port }
    ]))
    for (let i = 0; i < 4; i++) {
      const r = await get("/d/retry/ok")
      expect(r.status).toBe(200)
      expect(r.body.id).toBe("b")
    }
    const payload = Buffer.alloc(300_000, 7)
    for (let i = 0; i < 2; i++) {
      const r = await get("/d/retry/upload", { method: "POST", body: payload })
      expect(r.status).toBe(200)
      expect(r.body.bytes).toBe(payload.length)
      expect(r.body.sha256).toBe(createHash("sha256").update(payload).digest("hex"))
    }
    Effect.runSync(proxy.setTargets("dep-retry", [
      { host: "127.0.0.1", port: dead1 },
      { host: "127.0.0.1", port: dead2 }
    ]))
    const r = await get("/d/retry/ok")
    expect(r.status).toBe(502)
    expect(r.body.detail).toMatch(/^Deployment retry: replica 127\.0\.0\.1:\d+ failed \(ECONNREFUSED\)$/)
  })

  it("skips a replica a health monitor marked down, until it is marked up", async () => {
    Effect.runSync(proxy.setRoute("dep-mark", { name: "mark", url: deploymentUrl(publicUrl, "mark") }))
    const targets = [
      { host: "127.0.0.1", port: a.port },
      { host: "127.0.0.1", port: b.port }
    ]
    Effect.runSync(proxy.setTargets("dep-mark", targets))
    Effect.runSync(proxy.markDown(targets[0]!))
    const ids: string[] = []
    for (let i = 0; i < 4; i++) ids.push((await get("/d/mark/ok")).body.id)
    expect(ids).toEqual(["b", "b", "b", "b"])
    Effect.runSync(proxy.markUp(targets[0]!))
    for (let i = 0; i < 2; i++) ids.push((await get("/d/mark/ok")).body.id)
    expect(ids.slice(4).sort()).toEqual(["a", "b"])
  })

  it("streams a large chunked request body and an SSE response as it is produced", async () => {
    Effect.runSync(proxy.setRoute("dep-stream", { name: "stream", url: deploymentUrl(publicUrl, "stream") }))
    Effect.runSync(proxy.setTargets("dep-stream", [{ host: "127.0.0.1", port: a.port }]))
    const hash = createHash("sha256")
    let sent = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 8 * 1024 * 1024) return controller.close()
        const chunk = Buffer.alloc(64 * 1024, sent % 251)
        hash.update(chunk)
        sent += chunk.length
        controller.enqueue(chunk)
      }
    })
    const up = await fetch(`${base}/d/stream/upload`, { method: "POST", body, duplex: "half" } as RequestInit)
    expect(up.status).toBe(200)
    expect(await up.json()).toEqual({ id: "a", bytes: sent, sha256: hash.digest("hex") })

    const started = Date.now()
    const sse = await fetch(`${base}/d/stream/sse`)
    expect(sse.headers.get("content-type")).toBe("text/event-stream")
    const reader = sse.body!.getReader()
    const first = await reader.read()
    const firstAt = Date.now() - started
    expect(new TextDecoder().decode(first.value)).toBe("data: 0\n\n")
    // The whole stream takes ~500 ms; the first event arrives long before it ends.
    expect(firstAt).toBeLessThan(400)
    let rest = ""
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      rest += new TextDecoder().decode(value)
    }
    expect(rest).toBe("data: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n")
  })

  it("proxies WebSocket upgrades to the replicas, round robin, with the prefix stripped", async () => {
    Effect.runSync(proxy.setRoute("dep-ws", { name: "ws", url: deploymentUrl(publicUrl, "ws") }))
    Effect.runSync(proxy.setTargets("dep-ws", [
      { host: "127.0.0.1", port: a.port },
      { host: "127.0.0.1", port: b.port }
    ]))
    const echo = (text: string) =>
      new Promise<string>((resolve, reject) => {
        const ws = new WebSocket(`${base.replace("http", "ws")}/d/ws/stream?x=1`)
        ws.onopen = () => ws.send(text)
        ws.onmessage = (e) => {
          resolve(String(e.data))
          ws.close()
        }
        ws.onerror = () => reject(new Error("websocket error"))
      })
    const answers = [await echo("hi"), await echo("hi")]
    expect(answers.sort()).toEqual(["a:hi|/stream?x=1", "b:hi|/stream?x=1"])
    // Closed WebSockets no longer count as in flight.
    expect(await Effect.runPromise(proxy.drain([{ host: "127.0.0.1", port: a.port }, { host: "127.0.0.1", port: b.port }], 3000))).toBe(true)

    Effect.runSync(proxy.setRoute("dep-ws-empty", { name: "wsempty", url: deploymentUrl(publicUrl, "wsempty") }))
    const refused = await new Promise<string>((resolve) => {
      const s = net.connect((front.address() as AddressInfo).port, "127.0.0.1", () => {
        s.write("GET /d/wsempty/ HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
      })
      let t = ""
      s.on("data", (d) => (t += d))
      s.on("close", () => resolve(t))
    })
    expect(refused).toMatch(/^HTTP\/1\.1 503 /)
    expect(refused).toContain('{"detail":"Deployment wsempty has no active revision"}')
  })

  it("switches targets atomically: in-flight requests finish on the old replica, new ones go to the new set, none fail", async () => {
    Effect.runSync(proxy.setRoute("dep-switch", { name: "switch", url: deploymentUrl(publicUrl, "switch") }))
    Effect.runSync(proxy.setTargets("dep-switch", [{ host: "127.0.0.1", port: a.port }]))
    const inFlight = get("/d/switch/slow")
    await new Promise((r) => setTimeout(r, 100))
    // Load running across the switch.
    let stopLoad = false
    const seen: string[] = []
    const failures: number[] = []
    const load = (async () => {
      while (!stopLoad) {
        const r = await get("/d/switch/ok")
        if (r.status !== 200) failures.push(r.status)
        else seen.push(r.body.id)
      }
    })()
    await new Promise((r) => setTimeout(r, 100))
    Effect.runSync(proxy.setTargets("dep-switch", [
      { host: "127.0.0.1", port: b.port },
      { host: "127.0.0.1", port: c.port }
    ]))
    const afterSwitch = seen.length
    await new Promise((r) => setTimeout(r, 150))
    stopLoad = true
    await load
    const old = await inFlight
    expect(old.status).toBe(200)
    expect(old.body.id).toBe("a")
    expect(failures).toEqual([])
    // Every request that started after the switch went to b or c (the one straddling it may be a).
    const later = seen.slice(afterSwitch + 1)
    expect(later.length).toBeGreaterThan(2)
    expect(later.every((id) => id === "b" || id === "c")).toBe(true)
    expect(Effect.runSync(proxy.inFlight({ host: "127.0.0.1", port: a.port }))).toBe(0)
    expect(Effect.runSync(proxy.targets("dep-switch"))).toEqual([
      { host: "127.0.0.1", port: b.port },
      { host: "127.0.0.1", port: c.port }
    ])
  })

  it("drain waits for the requests in flight on replicas switched away from", async () => {
    Effect.runSync(proxy.setRoute("dep-drain", { name: "drain", url: deploymentUrl(publicUrl, "drain") }))
    const old = { host: "127.0.0.1", port: a.port }
    Effect.runSync(proxy.setTargets("dep-drain", [old]))
    const slow = get("/d/drain/slow")
    await new Promise((r) => setTimeout(r, 100))
    expect(Effect.runSync(proxy.inFlight(old))).toBe(1)
    Effect.runSync(proxy.setTargets("dep-drain", [{ host: "127.0.0.1", port: b.port }]))
    expect(await Effect.runPromise(proxy.drain([old], 50))).toBe(false)
    const started = Date.now()
    expect(await Effect.runPromise(proxy.drain([old], 3000))).toBe(true)
    expect(Date.now() - started).toBeGreaterThan(100)
    expect((await slow).body.id).toBe("a")
    expect(Effect.runSync(proxy.inFlight(old))).toBe(0)
  })

  effect("drain gives up when its time on the Clock has passed, whatever real time did", () =>
    Effect.gen(function* () {
      yield* proxy.setRoute("dep-drain-clock", { name: "drain-clock", url: deploymentUrl(publicUrl, "drain-clock") })
      const old = { host: "127.0.0.1", port: a.port }
      yield* proxy.setTargets("dep-drain-clock", [old])
      const slow = get("/d/drain-clock/slow")
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 100)))
      expect(yield* proxy.inFlight(old)).toBe(1)
      yield* proxy.setTargets("dep-drain-clock", [{ host: "127.0.0.1", port: b.port }])
      const draining = yield* Effect.forkChild(proxy.drain([old], 1000))
      yield* TestClock.adjust(999)
      expect(draining.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(1)
      expect(yield* Fiber.join(draining)).toBe(false)
      // Once the request has ended, a drain answers at once.
      yield* Effect.promise(() => slow)
      expect(yield* proxy.drain([old], 1000)).toBe(true)
    })
  )

  it("routes by the longest prefix among many deployments, a Host's own route before a path-only one", async () => {
    const withHost = (path: string, host: string) =>
      new Promise<{ status: number; body: any }>((resolve, reject) => {
        http
          .get(`${base}${path}`, { headers: { host } }, (res) => {
            let t = ""
            res.on("data", (d) => (t += d))
            res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(t) }))
          })
          .on("error", reject)
      })
    // Many other deployments, on the public base and on their own hosts: the index is by prefix.
    for (let i = 0; i < 500; i++) {
      Effect.runSync(proxy.setRoute(`filler-${i}`, { name: `filler-${i}`, url: i % 2 === 0 ? deploymentUrl(publicUrl, `filler-${i}`) : `http://filler-${i}.example.test/x` }))
    }
    Effect.runSync(proxy.setRoute("dep-long", { name: "long", url: `${publicUrl}/d/team/agent` }))
    Effect.runSync(proxy.setRoute("dep-short", { name: "short", url: `${publicUrl}/d/team` }))
    Effect.runSync(proxy.setRoute("dep-host", { name: "host", url: "http://team.example.test/d/team" }))
    Effect.runSync(proxy.setRoute("dep-root", { name: "root", url: "http://root.example.test" }))
    Effect.runSync(proxy.setTargets("dep-long", [{ host: "127.0.0.1", port: a.port }]))
    Effect.runSync(proxy.setTargets("dep-short", [{ host: "127.0.0.1", port: b.port }]))
    Effect.runSync(proxy.setTargets("dep-host", [{ host: "127.0.0.1", port: c.port }]))
    Effect.runSync(proxy.setTargets("dep-root", [{ host: "127.0.0.1", port: a.port }]))
    expect((await get("/d/team/agent/ok?x=1")).body).toMatchObject({ id: "a", path: "/ok?x=1" })
    expect((await get("/d/team/agent")).body).toMatchObject({ id: "a", path: "/" })
    expect((await get("/d/team/agentx")).body).toMatchObject({ id: "b", path: "/agentx" })
    expect((await get("/d/team/")).body).toMatchObject({ id: "b", path: "/" })
    expect((await get("/d/team?q=1")).body).toMatchObject({ id: "b", path: "/?q=1" })
    // Same prefix: the route of the request's Host wins; a longer path-only prefix still beats it.
    expect((await withHost("/d/team/x", "team.example.test")).body).toMatchObject({ id: "c", path: "/x" })
    expect((await withHost("/d/team/x", "TEAM.example.test:80")).body).toMatchObject({ id: "c", path: "/x" })
    expect((await withHost("/d/team/agent/x", "team.example.test")).body).toMatchObject({ id: "a", path: "/x" })
    expect((await withHost("/anything/at/all", "root.example.test")).body).toMatchObject({ id: "a", path: "/anything/at/all" })
    expect((await withHost("/d/team/x", "other.example.test")).body).toMatchObject({ id: "b", path: "/x" })
    // Slipway's own paths and unknown ones are left alone.
    expect((await get("/v2/deployments")).status).toBe(404)
    expect((await get("/d/filler-1/ok")).status).toBe(404)
    expect((await get("/d/filler-2/ok")).status).toBe(503)
    // A removed route gives its requests to the next longest prefix; a changed URL moves it.
    Effect.runSync(proxy.remove("dep-long"))
    expect((await get("/d/team/agent/ok")).body).toMatchObject({ id: "b", path: "/agent/ok" })
    Effect.runSync(proxy.setRoute("dep-short", { name: "short", url: `${publicUrl}/d/squad` }))
    expect((await get("/d/squad/ok")).body).toMatchObject({ id: "b", path: "/ok" })
    expect((await get("/d/team/ok")).status).toBe(404)
    for (const key of ["dep-short", "dep-host", "dep-root", ...Array.from({ length: 500 }, (_, i) => `filler-${i}`)]) Effect.runSync(proxy.remove(key))
    expect((await withHost("/anything", "root.example.test")).status).toBe(404)
  })

  it("appends to X-Forwarded-For, keeps a client's X-Forwarded-Host, replaces X-Forwarded-Prefix, answers Expect: 100-continue", async () => {
    Effect.runSync(proxy.setRoute("dep-xf", { name: "xf", url: deploymentUrl(publicUrl, "xf") }))
    Effect.runSync(proxy.setTargets("dep-xf", [{ host: "127.0.0.1", port: a.port }]))
    const r = await get("/d/xf/h", { headers: { "x-forwarded-for": "10.0.0.1", "x-forwarded-host": "public.example", "x-forwarded-prefix": "/evil" } })
    expect(r.body.headers["x-forwarded-for"]).toBe("10.0.0.1,127.0.0.1")
    expect(r.body.headers["x-forwarded-host"]).toBe("public.example")
    expect(r.body.headers["x-forwarded-prefix"]).toBe("/d/xf")
    const payload = Buffer.alloc(100_000, 3)
    const answer = await new Promise<{ status: number; body: any; continued: boolean }>((resolve, reject) => {
      let continued = false
      const req = http.request(`${base}/d/xf/upload`, { method: "POST", headers: { expect: "100-continue", "content-length": payload.length } }, (res) => {
        let t = ""
        res.on("data", (d) => (t += d))
        res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(t), continued }))
      })
      req.on("continue", () => {
        continued = true
        req.end(payload)
      })
      req.on("error", reject)
    })
    expect(answer.continued).toBe(true)
    expect(answer.status).toBe(200)
    expect(answer.body.bytes).toBe(payload.length)
  })

  it("dials a target's unix socket when it has one (a box's port bridge), keeping host:port as its name", async () => {
    const dir = mkdtempSync(join(tmpdir(), "proxy-sock-"))
    const sock = join(dir, "replica.sock")
    const unix = http.createServer((req, res) => {
      req.resume()
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ id: "unix", path: req.url }))
    })
    await new Promise<void>((r) => unix.listen(sock, r))
    try {
      // Nothing listens on the port: only the socket can answer.
      const target = { host: "127.0.0.1", port: await deadPort(), socketPath: sock }
      Effect.runSync(proxy.setRoute("dep-unix", { name: "unix", url: deploymentUrl(publicUrl, "unix") }))
      Effect.runSync(proxy.setTargets("dep-unix", [target]))
      expect(Effect.runSync(proxy.targets("dep-unix"))).toEqual([target])
      for (let i = 0; i < 3; i++) expect((await get("/d/unix/ok?i=1")).body).toEqual({ id: "unix", path: "/ok?i=1" })
      expect(() => Effect.runSync(proxy.setTargets("dep-unix", [{ ...target, socketPath: "relative.sock" }]))).toThrow(/invalid socketPath/)
      // The socket gone: a 502 naming the replica by host:port.
      await stop(unix)
      const r = await get("/d/unix/ok")
      expect(r.status).toBe(502)
      expect(r.body.detail).toBe(`Deployment unix: replica 127.0.0.1:${target.port} failed (ENOENT)`)
      Effect.runSync(proxy.remove("dep-unix"))
    } finally {
      await stop(unix)
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("passes back-pressure on: a client that stops reading stops the replica, then gets every byte", async () => {
    Effect.runSync(proxy.setRoute("dep-big", { name: "big", url: deploymentUrl(publicUrl, "big") }))
    Effect.runSync(proxy.setTargets("dep-big", [{ host: "127.0.0.1", port: b.port }]))
    const total = 1024 * 65536
    const { received, aheadWhileStalled } = await new Promise<{ received: number; aheadWhileStalled: number }>((resolve, reject) => {
      http
        .get(`${base}/d/big/big`, (res) => {
          let bytes = 0
          res.once("data", (c: Buffer) => {
            bytes += c.length
            // The client stops reading for a while: the socket buffers fill, then the proxy must stop reading from the replica.
            res.pause()
            setTimeout(() => {
              const ahead = bigWritten
              res.on("data", (d: Buffer) => (bytes += d.length))
              res.on("end", () => resolve({ received: bytes, aheadWhileStalled: ahead }))
              res.resume()
            }, 700)
          })
          res.on("error", reject)
        })
        .on("error", reject)
    })
    expect(received).toBe(total)
    // Without back-pressure the replica would have written all 64 MiB into the proxy by then;
    // with it, only what the sockets' buffers hold between them.
    expect(aheadWhileStalled).toBeLessThan(total / 2)
    Effect.runSync(proxy.remove("dep-big"))
  })

  it("a client that goes away ends the request to the replica", async () => {
    let closed = 0
    const hang = http.createServer((req, res) => {
      res.on("close", () => closed++)
      res.writeHead(200, { "content-type": "text/plain" })
      res.write("started\n")
      // Never ends on its own.
    })
    await new Promise<void>((r) => hang.listen(0, "127.0.0.1", r))
    try {
      const target = { host: "127.0.0.1", port: (hang.address() as AddressInfo).port }
      Effect.runSync(proxy.setRoute("dep-hang", { name: "hang", url: deploymentUrl(publicUrl, "hang") }))
      Effect.runSync(proxy.setTargets("dep-hang", [target]))
      await new Promise<void>((resolve, reject) => {
        const req = http.get(`${base}/d/hang/stream`, (res) => {
          res.once("data", () => {
            expect(Effect.runSync(proxy.inFlight(target))).toBe(1)
            req.destroy()
            resolve()
          })
        })
        req.on("error", () => undefined)
        setTimeout(() => reject(new Error("no first chunk")), 5000)
      })
      const deadline = Date.now() + 5000
      while ((closed === 0 || Effect.runSync(proxy.inFlight(target)) > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
      expect(closed).toBe(1)
      expect(Effect.runSync(proxy.inFlight(target))).toBe(0)
      Effect.runSync(proxy.remove("dep-hang"))
    } finally {
      await stop(hang)
    }
  })

  it("rejects bad targets and bad URLs with a clear error, and forgets removed deployments", async () => {
    expect(() => Effect.runSync(proxy.setTargets("x", [{ host: "127.0.0.1", port: 0 }]))).toThrow(/invalid target/)
    expect(() => Effect.runSync(proxy.setRoute("x", { name: "x", url: "not a url" }))).toThrow(/not an absolute URL/)
    expect(() => Effect.runSync(proxy.setRoute("x", { name: "x", url: "ftp://h/x" }))).toThrow(/http or https/)
    // Never over Slipway's own API on the public host.
    expect(() => Effect.runSync(proxy.setRoute("x", { name: "x", url: publicUrl }))).toThrow(/would take Slipway's own path \//)
    expect(() => Effect.runSync(proxy.setRoute("x", { name: "x", url: `${publicUrl}/v2/deployments` }))).toThrow(/own path \/v2/)
    expect(() => Effect.runSync(proxy.setRoute("x", { name: "x", url: `${publicUrl}/health` }))).toThrow(/own path \/health/)
    expect(() => Effect.runSync(proxy.setRoute("x", { name: "x", url: `${publicUrl}/v2x` }))).not.toThrow()
    Effect.runSync(proxy.remove("x"))
    Effect.runSync(proxy.setRoute("dep-gone", { name: "gone", url: deploymentUrl(publicUrl, "gone") }))
    Effect.runSync(proxy.setTargets("dep-gone", [{ host: "127.0.0.1", port: a.port }]))
    expect((await get("/d/gone/ok")).status).toBe(200)
    Effect.runSync(proxy.remove("dep-gone"))
    expect((await get("/d/gone/ok")).status).toBe(404)
  })
})
