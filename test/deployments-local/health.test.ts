/** Health checks against real HTTP and TCP servers on loopback; waiting for health on the test clock. */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as net from "node:net"
import { it as effectIt } from "@effect/vitest"
import { Effect, Exit, Fiber, Schedule } from "effect"
import { TestClock } from "effect/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { checkHealth, checkTcp, type HealthResult, pollHealth, waitHealthy } from "../../server/deployments/local/health.ts"

const run = Effect.runPromise

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
    expect(await run(checkHealth(t(webPort)))).toMatchObject({ healthy: true, via: "http", status: 200 })
    expect(await run(checkHealth(t(webPort), { path: "/healthz", mode: "http" }))).toMatchObject({ healthy: true, via: "http", status: 204 })
  })

  it("is unhealthy on 5xx and 401 in every HTTP mode", async () => {
    readyAfter = Infinity
    expect(await run(checkHealth(t(webPort)))).toMatchObject({ healthy: false, status: 503, detail: "GET /ok answered 503" })
    expect(await run(checkHealth(t(webPort), { path: "/private" }))).toMatchObject({ healthy: false, status: 401 })
    readyAfter = 0
  })

  it("auto falls back to TCP on 404 or a server that does not speak HTTP; http mode does not", async () => {
    expect(await run(checkHealth(t(webPort), { path: "/missing" }))).toMatchObject({ healthy: true, via: "tcp", status: 404 })
    expect(await run(checkHealth(t(webPort), { path: "/missing", mode: "http" }))).toMatchObject({ healthy: false, via: "http", status: 404 })
    expect(await run(checkHealth(t(rawPort)))).toMatchObject({ healthy: true, via: "tcp" })
    expect(await run(checkHealth(t(rawPort), { mode: "http" }))).toMatchObject({ healthy: false, via: "http" })
    const quiet = await run(checkHealth(t(silentPort), { attemptTimeoutMs: 300 }))
    expect(quiet).toMatchObject({ healthy: true, via: "tcp" })
    expect(quiet.detail).toMatch(/no HTTP answer within 300 ms/)
  })

  it("is unhealthy when the connection is refused, in every mode", async () => {
    for (const mode of ["auto", "http", "tcp"] as const) {
      const r = await run(checkHealth(t(deadPort), { mode }))
      expect(r.healthy).toBe(false)
      expect(r.detail).toMatch(/ECONNREFUSED/)
    }
    expect(await run(checkTcp(t(rawPort)))).toMatchObject({ healthy: true, via: "tcp" })
  })

  it("rejects a bad target or path with a clear error", async () => {
    await expect(run(checkHealth({ host: "127.0.0.1", port: 70000 }))).rejects.toThrow(/invalid target/)
    await expect(run(checkHealth(t(webPort), { path: "ok" }))).rejects.toThrow(/path must start with/)
  })
})

describe("waitHealthy", () => {
  it("polls on its schedule until healthy and reports every attempt", async () => {
    okCalls = 0
    readyAfter = 3
    const attempts: boolean[] = []
    const r = await run(waitHealthy(t(webPort), { schedule: Schedule.spaced(20), timeoutMs: 5000, onAttempt: (a) => Effect.sync(() => attempts.push(a.healthy)) }))
    expect(r).toMatchObject({ healthy: true, status: 200 })
    expect(attempts).toEqual([false, false, false, true])
    readyAfter = 0
  })

  effectIt.effect("fails with HealthTimeoutError carrying the last result once its time on the Clock has passed", () =>
    Effect.gen(function* () {
      readyAfter = Infinity
      const waiting = yield* Effect.forkChild(waitHealthy(t(webPort), { schedule: Schedule.spaced(50), timeoutMs: 400 }))
      // The first attempt (real I/O) answers 503; the test clock has not moved.
      yield* TestClock.withLive(Effect.sleep(200))
      expect(waiting.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(400)
      const exit = yield* Fiber.await(waiting)
      readyAfter = 0
      expect(Exit.isFailure(exit)).toBe(true)
      const error = Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail") : undefined
      expect(error?._tag === "Fail" && error.error).toMatchObject({ _tag: "HealthTimeoutError", last: { healthy: false, status: 503 } })
      expect(error?._tag === "Fail" && error.error.message).toMatch(/not healthy after 400 ms: GET \/ok answered 503/)
    })
  )

  effectIt.effect("tries again on the schedule's delays, counted on the Clock", () =>
    Effect.gen(function* () {
      let attempts = 0
      const unhealthy: HealthResult = { healthy: false, via: "tcp", ms: 0, detail: "not yet" }
      const check = Effect.sync(() => (attempts++, unhealthy))
      const waiting = yield* Effect.forkChild(pollHealth("a replica", check, { schedule: Schedule.spaced(100), timeoutMs: 1000 }))
      yield* Effect.yieldNow
      expect(attempts).toBe(1)
      yield* TestClock.adjust(99)
      expect(attempts).toBe(1)
      yield* TestClock.adjust(1)
      expect(attempts).toBe(2)
      yield* TestClock.adjust(900)
      expect((yield* Effect.flip(Fiber.join(waiting))).message).toBe("a replica not healthy after 1000 ms: not yet")
    })
  )

  effectIt.effect("stops when interrupted", () =>
    Effect.gen(function* () {
      const waiting = yield* Effect.forkChild(waitHealthy(t(deadPort), { schedule: Schedule.spaced(50), timeoutMs: 10_000 }))
      yield* TestClock.adjust(120)
      yield* Fiber.interrupt(waiting)
      expect(Exit.hasInterrupts(yield* Fiber.await(waiting))).toBe(true)
    })
  )
})
