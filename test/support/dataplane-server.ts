/**
 * Mounts the dataplane on a real node:http server the way the lead wires it: `/sandboxes/{id}/...`
 * with `X-Api-Key` checked before the dataplane sees the request (HTTP and WebSocket upgrades).
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { WebSocket } from "ws"
import { makeDataplaneProtocol, rejectUpgrade, sendError, DataplaneError, type BoxExec, type DataplaneProtocol, type DataplaneOptions } from "../../server/sandboxes/dataplane/protocol.ts"

export interface DataplaneServer {
  readonly url: string
  /** `apiEndpoint` for the official clients' SandboxClient (only `GET /boxes/{name}` is served). */
  readonly apiEndpoint: string
  /** `dataplane_url` of a box. */
  readonly boxUrl: (id: string) => string
  readonly apiKey: string
  readonly dataplane: DataplaneProtocol
  readonly logs: Array<string>
  readonly close: () => Promise<void>
}

const PREFIX = /^\/sandboxes\/([A-Za-z0-9_-]+)(\/.*)?$/
/** Stand-in for the control plane's one lookup the clients need to get a Sandbox object: `GET /v2/sandboxes/boxes/{name}`. */
const LOOKUP = /^\/v2\/sandboxes\/boxes\/([A-Za-z0-9_-]+)$/

export const startDataplaneServer = async (boxes: Record<string, BoxExec>, options: DataplaneOptions = {}): Promise<DataplaneServer> => {
  const apiKey = "test-key-" + Math.random().toString(36).slice(2)
  const logs: Array<string> = []
  const dataplane = makeDataplaneProtocol({ log: (m) => logs.push(m), ...options })
  let url = ""
  const route = (url: string | undefined) => {
    const target = url ?? "/"
    const q = target.indexOf("?")
    const match = PREFIX.exec(q === -1 ? target : target.slice(0, q))
    if (!match) return undefined
    const box = boxes[match[1]!]
    return box ? { box, id: match[1]!, subpath: (match[2] ?? "/") + (q === -1 ? "" : target.slice(q)) } : undefined
  }
  const server: Server = createServer((request, response) => {
    const lookup = LOOKUP.exec(request.url ?? "")
    if (lookup && request.method === "GET") {
      if (request.headers["x-api-key"] !== apiKey) return sendError(request, response, new DataplaneError(401, "Unauthorized", "Missing or invalid X-Api-Key"))
      if (!boxes[lookup[1]!]) return sendError(request, response, new DataplaneError(404, "NotFound", "No such sandbox"))
      const body = JSON.stringify({ id: lookup[1], name: lookup[1], status: "ready", dataplane_url: `${url}/sandboxes/${lookup[1]}` })
      response.writeHead(200, { "content-type": "application/json" })
      return void response.end(body)
    }
    const found = route(request.url)
    if (!found) return sendError(request, response, new DataplaneError(404, "NotFound", "No such sandbox"))
    if (request.headers["x-api-key"] !== apiKey) return sendError(request, response, new DataplaneError(401, "Unauthorized", "Missing or invalid X-Api-Key"))
    void dataplane.handle(request, response, found.box, found.subpath, found.id)
  })
  server.on("upgrade", (request, socket, head) => {
    const found = route(request.url)
    if (!found) return rejectUpgrade(socket, 404, "NotFound", "No such sandbox")
    if (request.headers["x-api-key"] !== apiKey) return rejectUpgrade(socket, 401, "Unauthorized", "Missing or invalid X-Api-Key")
    dataplane.upgrade(request, socket, head, found.box, found.subpath, found.id)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    apiEndpoint: `${url}/v2/sandboxes`,
    boxUrl: (id) => `${url}/sandboxes/${id}`,
    apiKey,
    dataplane,
    logs,
    close: async () => {
      await dataplane.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

export type Frame = { readonly type: string; readonly [key: string]: unknown }

/** A raw protocol client: sends frames, records every frame and the close code. */
export interface FrameSocket {
  readonly ws: WebSocket
  readonly frames: Array<Frame>
  readonly send: (frame: Record<string, unknown>) => void
  /** Resolves with the first recorded frame (from index `from`) matching, or fails after `ms`. */
  readonly waitFor: (predicate: (frame: Frame) => boolean, ms?: number, from?: number) => Promise<Frame>
  readonly closed: Promise<{ code: number; reason: string }>
  readonly close: () => Promise<void>
}

export const openFrameSocket = async (boxUrl: string, apiKey: string): Promise<FrameSocket> => {
  const ws = new WebSocket(boxUrl.replace(/^http/, "ws") + "/execute/ws", { headers: { "X-Api-Key": apiKey } })
  const frames: Array<Frame> = []
  const waiters = new Set<() => void>()
  ws.on("message", (data) => {
    frames.push(JSON.parse(data.toString()))
    for (const waiter of [...waiters]) waiter()
  })
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on("close", (code, reason) => {
      resolve({ code, reason: reason.toString() })
      for (const waiter of [...waiters]) waiter()
    })
  )
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve())
    ws.once("error", reject)
    ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)))
  })
  const waitFor: FrameSocket["waitFor"] = (predicate, ms = 10_000, from = 0) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const found = frames.slice(from).find(predicate)
        if (found) {
          cleanup()
          resolve(found)
        } else if (ws.readyState === WebSocket.CLOSED) {
          cleanup()
          reject(new Error(`socket closed without the awaited frame; frames: ${JSON.stringify(frames)}`))
        }
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(new Error(`timed out waiting for a frame; frames: ${JSON.stringify(frames)}`))
      }, ms)
      const cleanup = () => {
        clearTimeout(timer)
        waiters.delete(check)
      }
      waiters.add(check)
      check()
    })
  return {
    ws,
    frames,
    send: (frame) => ws.send(JSON.stringify(frame)),
    waitFor,
    closed,
    close: async () => {
      if (ws.readyState !== WebSocket.CLOSED) {
        ws.close()
        await closed
      }
    }
  }
}

/** Concatenates a stream's data frames, checking each frame starts where the previous ended (UTF-8 bytes). */
export const streamText = (frames: ReadonlyArray<Frame>, stream: "stdout" | "stderr", from = 0): string => {
  let expected: number | undefined
  let text = ""
  for (const frame of frames) {
    if (frame.type !== stream) continue
    const offset = frame.offset as number
    if (expected !== undefined && offset !== expected) throw new Error(`${stream} offset ${offset}, expected ${expected}`)
    if (expected === undefined && offset < from) throw new Error(`${stream} starts at ${offset} before ${from}`)
    expected = offset + Buffer.byteLength(frame.data as string, "utf8")
    text += frame.data as string
  }
  return text
}
