/**
 * The sandbox dataplane: the HTTP and WebSocket protocol the official LangSmith sandbox clients
 * speak to a box's `dataplane_url` (docs/dataplane.md). Transport only: the caller routes
 * `{public}/sandboxes/{box}/...` here after authenticating the request and finding the box.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Duplex } from "node:stream"
import { WebSocketServer } from "ws"
import { BoxUnavailable, type BoxExec, type BoxCommand } from "./box.ts"
import { CommandRegistry, type CommandLimits, type SessionEvent } from "./commands.ts"
import { DataplaneError, readJsonBody, sendError, sendJson } from "./errors.ts"
import { download, glob, grep, upload, type FileLimits } from "./files.ts"
import { commandSpec, decodeOrThrow, HttpExecuteBody } from "./requests.ts"
import { rejectUpgrade, serveExecuteSocket, type WsLimits } from "./ws.ts"

export { BOX_HOME, BOX_TOOLS, type BoxExec, type BoxCommand, type ExecOptions } from "./box.ts"
export { DataplaneError, errorBody, failedBox, sendError } from "./errors.ts"
export { rejectUpgrade } from "./ws.ts"

export interface DataplaneLimits extends CommandLimits, FileLimits, WsLimits {
  /** Output kept per stream for one HTTP `POST /execute` answer (default 16 MiB; the rest is dropped). */
  readonly httpOutputBytes: number
}

export const defaultLimits: DataplaneLimits = {
  ringBytes: 1 << 20,
  maxSessions: 64,
  maxFrameBytes: 64 << 10,
  maxExpiredIds: 1024,
  maxSeconds: 86_400,
  drainGraceMs: 500,
  maxUploadBytes: 1 << 30,
  searchDefaultLimit: 1000,
  searchMaxLimit: 10_000,
  searchMaxEntries: 200_000,
  searchDeadlineMs: 20_000,
  grepMaxLineChars: 2000,
  maxJsonBytes: 1 << 20,
  maxClientFrameBytes: 1 << 20,
  maxBufferedBytes: 8 << 20,
  firstFrameMs: 30_000,
  pingIntervalMs: 30_000,
  httpOutputBytes: 16 << 20
}

export interface DataplaneProtocol {
  /**
   * Serves one dataplane HTTP request for an authorised box. `subpath` is the request target after
   * `/sandboxes/{box}`, query string included (e.g. `/download?path=%2Ftmp%2Fx`). `boxKey`
   * identifies the box across requests (its id): commands live per key.
   */
  readonly handle: (request: IncomingMessage, response: ServerResponse, box: BoxExec, subpath: string, boxKey: string) => Promise<void>
  /** Serves an HTTP upgrade (`/execute/ws`) for an authorised box; anything else is refused with 404. */
  readonly upgrade: (request: IncomingMessage, socket: Duplex, head: Buffer, box: BoxExec, subpath: string, boxKey: string) => void
  /** Kills the box's commands and forgets them; call when the box stops or is deleted. */
  readonly closeBox: (boxKey: string) => Promise<void>
  /** Kills every command and closes every socket. */
  readonly close: () => Promise<void>
}

export interface DataplaneOptions {
  readonly log?: (message: string) => void
  readonly limits?: Partial<DataplaneLimits>
}

const ROUTES: Record<string, ReadonlyArray<string>> = {
  "/execute": ["POST"],
  "/execute/ws": ["GET"],
  "/upload": ["POST"],
  "/download": ["GET", "HEAD"],
  "/glob": ["POST"],
  "/grep": ["POST"]
}

export const makeDataplaneProtocol = (options: DataplaneOptions = {}): DataplaneProtocol => {
  const log = options.log ?? ((message: string) => console.error(message))
  const limits: DataplaneLimits = { ...defaultLimits, ...options.limits }
  const registries = new Map<string, CommandRegistry>()
  const wss = new WebSocketServer({ noServer: true, maxPayload: limits.maxClientFrameBytes, perMessageDeflate: false })
  const decodeExecute = decodeOrThrow(HttpExecuteBody, "body")
  /** File operations' processes per box, so closing a box or the dataplane leaves none behind. */
  const tools = new Map<string, Set<BoxCommand>>()

  const track = (boxKey: string, process: BoxCommand): BoxCommand => {
    let live = tools.get(boxKey)
    if (!live) tools.set(boxKey, (live = new Set()))
    const set = live
    set.add(process)
    void process.exited.finally(() => {
      set.delete(process)
      if (set.size === 0 && tools.get(boxKey) === set) tools.delete(boxKey)
    })
    return process
  }

  const trackedBox = (box: BoxExec, boxKey: string): BoxExec => ({
    exec: (argv, execOptions) => track(boxKey, box.exec(argv, execOptions)),
    ...(box.execInto ? { execInto: (argv, sink, execOptions) => track(boxKey, box.execInto!(argv, sink, execOptions)) } : {})
  })

  const registryFor = (box: BoxExec, boxKey: string): CommandRegistry => {
    let registry = registries.get(boxKey)
    if (!registry) {
      registry = new CommandRegistry(box, limits)
      registries.set(boxKey, registry)
    }
    registry.useBox(box)
    return registry
  }

  const execute = async (request: IncomingMessage, response: ServerResponse, registry: CommandRegistry) => {
    const body = decodeExecute(await readJsonBody(request, limits.maxJsonBytes))
    const spec = commandSpec(body)
    const timeout = body.timeout ?? 60
    const { session } = registry.start({
      spec,
      timeoutSeconds: timeout > 0 ? Math.min(timeout, limits.maxSeconds) : undefined,
      ttlSeconds: 0,
      killOnDisconnect: true,
      closeStdin: true
    })
    const out = { stdout: [] as Array<Buffer>, stderr: [] as Array<Buffer>, stdoutBytes: 0, stderrBytes: 0 }
    const final = await new Promise<SessionEvent>((resolve) => {
      const detach = session.attach((event) => {
        if (event.type === "stdout" || event.type === "stderr") {
          const key = `${event.type}Bytes` as const
          if (out[key] + event.chunk.data.length <= limits.httpOutputBytes) {
            out[event.type].push(event.chunk.data)
            out[key] += event.chunk.data.length
          }
        } else resolve(event)
      })
      response.on("close", () => {
        if (!response.writableFinished) detach() // client gone: kill_on_disconnect kills the command
      })
    })
    if (final.type === "error") throw new DataplaneError(final.errorType === "CommandTimeout" ? 408 : 400, final.errorType, final.message)
    if (final.type !== "exit") return
    sendJson(response, 200, {
      stdout: Buffer.concat(out.stdout).toString("utf8"),
      stderr: Buffer.concat(out.stderr).toString("utf8"),
      exit_code: final.exitCode
    })
  }

  const handle: DataplaneProtocol["handle"] = async (request, response, box, subpath, boxKey) => {
    try {
      const method = request.method ?? "GET"
      // The hot path (every exec) skips URL parsing: `/execute` has no query string to read.
      if (subpath === "/execute" && method === "POST") return await execute(request, response, registryFor(box, boxKey))
      const url = new URL(subpath.startsWith("/") ? subpath : `/${subpath}`, "http://dataplane.invalid")
      const route = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, "") : url.pathname
      const methods = ROUTES[route]
      if (!methods) throw new DataplaneError(404, "NotFound", `No dataplane endpoint ${method} ${route}`)
      if (!methods.includes(method)) throw new DataplaneError(405, "MethodNotAllowed", `${route} accepts ${methods.join(", ")}`, { allow: methods.join(", ") })
      switch (route) {
        case "/execute":
          return await execute(request, response, registryFor(box, boxKey))
        case "/execute/ws":
          throw new DataplaneError(426, "UpgradeRequired", "/execute/ws is a WebSocket endpoint", { upgrade: "websocket" })
        case "/upload":
          return await upload(trackedBox(box, boxKey), request, response, url.searchParams.get("path"), limits)
        case "/download":
          return await download(trackedBox(box, boxKey), request, response, url.searchParams.get("path"))
        case "/glob":
          return await glob(trackedBox(box, boxKey), request, response, limits)
        case "/grep":
          return await grep(trackedBox(box, boxKey), request, response, limits)
      }
    } catch (error) {
      if (!(error instanceof DataplaneError) && !(error instanceof BoxUnavailable)) log(`dataplane: ${request.method} ${subpath} failed: ${(error as Error)?.stack ?? String(error)}`)
      // Drain an unread body so the error answer reaches the client rather than a reset connection.
      if (!request.readableEnded) request.resume()
      sendError(request, response, error)
    }
  }

  const upgrade: DataplaneProtocol["upgrade"] = (request, socket, head, box, subpath, boxKey) => {
    const path = new URL(subpath.startsWith("/") ? subpath : `/${subpath}`, "http://dataplane.invalid").pathname.replace(/\/+$/, "")
    if (path !== "/execute/ws") return rejectUpgrade(socket, 404, "NotFound", `No WebSocket endpoint at ${path}`)
    const registry = registryFor(box, boxKey)
    wss.handleUpgrade(request, socket, head, (ws) => serveExecuteSocket(ws, registry, limits, log))
  }

  const closeBox: DataplaneProtocol["closeBox"] = async (boxKey) => {
    const registry = registries.get(boxKey)
    registries.delete(boxKey)
    const live = [...(tools.get(boxKey) ?? [])]
    for (const process of live) process.kill("SIGKILL")
    let timer: NodeJS.Timeout | undefined
    await Promise.all([
      registry?.close(),
      Promise.race([Promise.all(live.map((p) => p.exited)), new Promise((resolve) => (timer = setTimeout(resolve, 2000)))])
    ])
    clearTimeout(timer)
  }

  const close: DataplaneProtocol["close"] = async () => {
    await Promise.all([...new Set([...registries.keys(), ...tools.keys()])].map(closeBox))
    for (const client of wss.clients) client.close(1001, "dataplane shutting down")
    const stragglers = setTimeout(() => {
      for (const client of wss.clients) client.terminate()
    }, 1000)
    await new Promise<void>((resolve) => wss.close(() => resolve()))
    clearTimeout(stragglers)
  }

  return { handle, upgrade, closeBox, close }
}
