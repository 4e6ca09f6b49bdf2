/**
 * A scripted HTTP server for client tests: records every request and answers each with what the
 * test's handler returns (status, JSON or raw body, headers, a delay, or a dropped connection).
 */
// @ts-nocheck

import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface RecordedRequest {
  readonly method: string
  /** Path and query, as sent. */
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

export interface Reply {
  readonly status?: number
  /** Sent as JSON. */
  readonly json?: unknown
  /** Sent verbatim (wins over `json`). */
  readonly raw?: string
  readonly headers?: Record<string, string>
  /** Wait this long before answering. */
  readonly delayMs?: number
  /** Drop the connection without answering. */
  readonly destroy?: boolean
}

/** `index` counts requests from 0. */
export type Handler = (request: RecordedRequest, index: number) => Reply

export interface FakeServer {
  readonly baseUrl: string
  readonly requests: Array<RecordedRequest>
  readonly close: () => Promise<void>
}

const readBody = (request: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    request.on("error", reject)
  })

const answer = (response: ServerResponse, reply: Reply): void => {
  if (reply.destroy) {
    response.socket?.destroy()
    return
  }
  const body = reply.raw ?? (reply.json === undefined ? "" : JSON.stringify(reply.json))
  const headers = { ...(reply.json !== undefined && reply.raw === undefined ? { "content-type": "application/json" } : {}), ...reply.headers }
  response.writeHead(reply.status ?? 200, headers)
  response.end(body)
}

export const startFakeServer = async (handler: Handler): Promise<FakeServer> => {
  const requests: Array<RecordedRequest> = []
  const server = createServer(async (request, response) => {
    const recorded: RecordedRequest = { method: request.method ?? "", url: request.url ?? "", headers: request.headers, body: await readBody(request) }
    const reply = handler(recorded, requests.length)
    requests.push(recorded)
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs))
    answer(response, reply)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
