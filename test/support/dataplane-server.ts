/**
 * Mounts the dataplane on a real node:http server the way the lead wires it: `/sandboxes/{id}/...`
 * with `X-Api-Key` checked before the dataplane sees the request (HTTP and WebSocket upgrades).
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { makeDataplane, rejectUpgrade, sendError, DataplaneError, type BoxExec, type Dataplane, type DataplaneOptions } from "../../server/sandboxes/dataplane/index.ts"

export interface DataplaneServer {
  readonly url: string
  /** `dataplane_url` of a box. */
  readonly boxUrl: (id: string) => string
  readonly apiKey: string
  readonly dataplane: Dataplane
  readonly logs: Array<string>
  readonly close: () => Promise<void>
}

const PREFIX = /^\/sandboxes\/([A-Za-z0-9_-]+)(\/.*)?$/

export const startDataplaneServer = async (boxes: Record<string, BoxExec>, options: DataplaneOptions = {}): Promise<DataplaneServer> => {
  const apiKey = "test-key-" + Math.random().toString(36).slice(2)
  const logs: Array<string> = []
  const dataplane = makeDataplane({ log: (m) => logs.push(m), ...options })
  const route = (url: string | undefined) => {
    const target = url ?? "/"
    const q = target.indexOf("?")
    const match = PREFIX.exec(q === -1 ? target : target.slice(0, q))
    if (!match) return undefined
    const box = boxes[match[1]!]
    return box ? { box, id: match[1]!, subpath: (match[2] ?? "/") + (q === -1 ? "" : target.slice(q)) } : undefined
  }
  const server: Server = createServer((request, response) => {
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
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
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
