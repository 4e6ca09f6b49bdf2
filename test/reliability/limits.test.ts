/**
 * What an unauthenticated caller can make the server hold: headers trickled byte by byte are cut
 * by SLIPWAY_HEADERS_TIMEOUT_MS, connections beyond SLIPWAY_MAX_CONNECTIONS are refused, and the
 * push webhook (no API key, its signature checked over the whole body) reads at most
 * SLIPWAY_UNAUTHENTICATED_MAX_BODY before answering 413. Memory stays bounded throughout.
 */
import { readFileSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { type ChildServer, spawnServer, tempDatabasePath } from "../support/server.ts"
import { rawHttp, sleep, stopChild, WEBHOOK_PATH } from "./support.ts"

let child: ChildServer | undefined
let database: ReturnType<typeof tempDatabasePath> | undefined
const sockets: Array<Socket> = []
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy()
  await stopChild(child)
  child = undefined
  database?.remove()
  database = undefined
})

const rssMiB = (pid: number): number => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((entry) => entry.startsWith("VmRSS:"))!
  return Number(/(\d+)/.exec(line)![1]) / 1024
}

const open = (url: string): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url)
    const socket = connect(Number(port), hostname, () => resolve(socket))
    socket.on("error", () => {})
    socket.once("error", reject)
    sockets.push(socket)
  })

/** Resolves with how long the socket stayed open (ms), once the server closes it. */
const closedAfter = (socket: Socket, since: number) =>
  new Promise<number>((resolve) => socket.on("close", () => resolve(performance.now() - since)))

describe("unauthenticated work is bounded", () => {
  it("a client trickling its headers (slowloris) is cut off by the headers timeout", async () => {
    database = tempDatabasePath("slipway-limits")
    child = await spawnServer({ databasePath: database.path, env: { SLIPWAY_HEADERS_TIMEOUT_MS: "1000" } })
    const socket = await open(child.url)
    const started = performance.now()
    const closed = closedAfter(socket, started)
    socket.write("GET /health HTTP/1.1\r\nHost: slipway\r\n")
    let sent = 0
    const trickle = setInterval(() => {
      if (!socket.destroyed) socket.write(`X-Slow-${sent++}: a\r\n`)
    }, 200)
    const ms = await Promise.race([closed, sleep(8_000).then(() => Number.POSITIVE_INFINITY)])
    clearInterval(trickle)
    expect(ms).toBeGreaterThanOrEqual(900)
    expect(ms).toBeLessThan(4_000)
    // The server is fine for everyone else.
    expect((await fetch(`${child.url}/health`)).status).toBe(200)
  })

  it("refuses connections past the cap, answers 413 to oversized unsigned webhook bodies, and keeps memory bounded", async () => {
    database = tempDatabasePath("slipway-limits")
    child = await spawnServer({
      databasePath: database.path,
      env: { SLIPWAY_MAX_CONNECTIONS: "40", SLIPWAY_REQUEST_TIMEOUT_MS: "20000", SLIPWAY_HEADERS_TIMEOUT_MS: "10000" }
    })
    const server = child
    const before = rssMiB(server.process.pid!)

    // An unsigned push body over the unauthenticated limit is refused before it is read.
    const big = Buffer.alloc(300 * 1024, "a")
    const refused = await rawHttp(server.url, "POST", WEBHOOK_PATH, big, { "content-type": "application/json", "x-github-event": "push" })
    expect(refused.status).toBe(413)

    // 200 clients each start a webhook request announcing 1 MB, send 200 KiB and stall.
    const chunk = Buffer.alloc(200 * 1024, "b")
    const stalled: Array<{ socket: Socket; closed: Promise<number> }> = []
    for (let i = 0; i < 200; i++) {
      const socket = await open(server.url).catch(() => undefined)
      if (!socket) continue
      const closed = closedAfter(socket, performance.now())
      socket.write(`POST ${WEBHOOK_PATH} HTTP/1.1\r\nHost: slipway\r\nContent-Type: application/json\r\nX-Hub-Signature-256: sha256=${"0".repeat(64)}\r\nContent-Length: 1000000\r\n\r\n`)
      socket.write(chunk)
      stalled.push({ socket, closed })
    }
    await sleep(1_500)
    const closedCount = stalled.filter(({ socket }) => socket.destroyed || socket.readableEnded).length
    // Everything past the cap was dropped at once.
    expect(closedCount).toBeGreaterThanOrEqual(150)
    const after = rssMiB(server.process.pid!)
    expect(after - before, `RSS ${before.toFixed(0)} → ${after.toFixed(0)} MiB`).toBeLessThan(80)

    for (const { socket } of stalled) socket.destroy()
    await sleep(200)
    expect((await fetch(`${server.url}/health`)).status).toBe(200)
  })
})
