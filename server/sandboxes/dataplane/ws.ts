/**
 * `GET /execute/ws`: the streaming command protocol over the `ws` package (noServer mode; the
 * caller owns the HTTP server and its `upgrade` event).
 */
import { STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import type { IncomingMessage } from "node:http"
import { WebSocket, WebSocketServer, type RawData } from "ws"
import { framesOf, type CommandRegistry, type CommandSession, type Listener } from "./commands.ts"
import { BoxUnavailable } from "./box.ts"
import { asDataplaneError, DataplaneError, errorBody } from "./errors.ts"
import { commandSpec, decodeOrThrow, ExecuteFrame, InputFrame, ReconnectFrame, seconds } from "./requests.ts"

export interface WsLimits {
  /** Largest frame a client may send, in bytes (default 1 MiB). */
  readonly maxClientFrameBytes: number
  /** Unsent bytes queued for one slow client before it is told to reconnect (close 1001) and resume from its offsets (default 8 MiB). */
  readonly maxBufferedBytes: number
  /** Time a new socket has to send `execute` or `reconnect` (default 30 s). */
  readonly firstFrameMs: number
  /** Server keepalive ping interval; a client silent for two intervals is dropped (default 30 s). */
  readonly pingIntervalMs: number
  readonly maxFrameBytes: number
  readonly maxSeconds: number
}

/** Refuses an upgrade with a status and the dataplane's JSON error body (which the clients surface). */
export const rejectUpgrade = (socket: Duplex, status: number, type: string, message: string, fields: Readonly<Record<string, unknown>> = {}): void => {
  const body = errorBody(type, message, fields)
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  )
}

/** Sockets opened only to say why a command cannot run. */
const refusals = new WebSocketServer({ noServer: true, perMessageDeflate: false })

/**
 * Refuses a command socket with the protocol's `error` frame: the handshake completes, the
 * client's first frame (its `execute`) is answered with the error, the socket closes. A
 * WebSocket client shows that frame's text, where an HTTP refusal reaches it only as a status
 * code; for a box that failed, its text says why.
 */
export const refuseInFrame = (request: IncomingMessage, socket: Duplex, head: Buffer, error: DataplaneError, waitMs = 30_000): void =>
  refusals.handleUpgrade(request, socket, head, (ws) => {
    ws.on("error", () => undefined)
    const timer = setTimeout(() => ws.terminate(), waitMs)
    ws.once("close", () => clearTimeout(timer))
    ws.once("message", () => ws.send(JSON.stringify({ type: "error", error_type: error.type, error: error.message, ...error.fields }), () => ws.close(1000)))
  })

const decodeExecute = decodeOrThrow(ExecuteFrame, "execute")
const decodeReconnect = decodeOrThrow(ReconnectFrame, "reconnect")
const decodeInput = decodeOrThrow(InputFrame, "input")

/** The error types the clients tell apart; anything else is a generic CommandError. */
const protocolErrorType = (type: string) => (["CommandTimeout", "CommandNotFound", "SessionExpired"].includes(type) ? type : "CommandError")

const offsetOf = (value: number | null | undefined) => (value === undefined || value === null || value < 0 ? 0 : Math.floor(value))

export const serveExecuteSocket = (
  ws: WebSocket,
  registry: CommandRegistry,
  limits: WsLimits,
  log: (message: string) => void
): void => {
  let session: CommandSession | undefined
  let detach: (() => void) | undefined
  let alive = true

  const send = (frame: Record<string, unknown>) => {
    if (ws.readyState !== WebSocket.OPEN) return
    ws.send(JSON.stringify(frame))
    if (ws.bufferedAmount > limits.maxBufferedBytes) {
      // The client reads slower than the command writes: it reconnects at once and resumes from its offsets.
      detach?.()
      ws.close(1001, "client too slow; reconnect to resume")
    }
  }
  const fail = (type: string, message: string) => {
    send({ type: "error", error_type: protocolErrorType(type), error: message })
    ws.close(1000)
  }
  /** The connection's socket (ws keeps it as `_socket`). */
  const socket = (ws as unknown as { _socket?: Duplex })._socket
  const listener: Listener = (event) => {
    const final = event.type === "exit" || event.type === "error"
    // The `exit` (or `error`) frame and the close frame leave in one write: one syscall and one
    // wake-up of the client instead of two. Only there: corking output would hold a replay's
    // megabytes in the process (the slow-client check counts them) instead of the socket.
    if (final) socket?.cork()
    try {
      for (const frame of framesOf(event, limits.maxFrameBytes)) send(frame)
      if (final) ws.close(1000)
    } finally {
      if (final) socket?.uncork()
    }
  }

  const firstFrame = setTimeout(() => fail("CommandError", "Expected an 'execute' or 'reconnect' frame"), limits.firstFrameMs)
  const ping = setInterval(() => {
    if (!alive) return ws.terminate()
    alive = false
    ws.ping()
  }, limits.pingIntervalMs)
  ws.on("pong", () => (alive = true))
  ws.on("ping", () => (alive = true))

  const attach = (target: CommandSession, stdoutOffset: number, stderrOffset: number) => {
    clearTimeout(firstFrame)
    session = target
    // `started` carries the pid, which the box's exec helper reports a moment after the start.
    void target.started.then(() => {
      if (session !== target) return
      // Gone meanwhile: attach and leave at once, so the session's idle timeout / kill_on_disconnect apply as on any disconnect.
      if (ws.readyState !== WebSocket.OPEN) return target.attach(() => undefined, stdoutOffset, stderrOffset)()
      send({ type: "started", command_id: target.id, pid: target.pid })
      detach = target.attach(listener, stdoutOffset, stderrOffset)
    })
  }

  const onFrame = (frame: { type?: unknown }) => {
    if (session === undefined) {
      if (frame.type === "execute") {
        const execute = decodeExecute(frame)
        if (execute.pty) throw new DataplaneError(400, "CommandError", "PTY mode is not supported by this dataplane")
        const spec = commandSpec(execute)
        const timeout = execute.timeout_seconds ?? 60
        const { session: target } = registry.start({
          spec,
          commandId: execute.command_id ?? undefined,
          timeoutSeconds: timeout > 0 ? Math.min(timeout, limits.maxSeconds) : undefined,
          idleTimeoutSeconds: seconds(execute.idle_timeout_seconds, 300, limits.maxSeconds),
          ttlSeconds: seconds(execute.ttl_seconds, 600, limits.maxSeconds),
          killOnDisconnect: execute.kill_on_disconnect ?? false,
          closeStdin: execute.close_stdin ?? false
        })
        return attach(target, 0, 0)
      }
      if (frame.type === "reconnect") {
        const reconnect = decodeReconnect(frame)
        return attach(registry.find(reconnect.command_id), offsetOf(reconnect.stdout_offset), offsetOf(reconnect.stderr_offset))
      }
      throw new DataplaneError(400, "CommandError", "The first frame must be 'execute' or 'reconnect'")
    }
    switch (frame.type) {
      case "input":
        return session.write(decodeInput(frame).data)
      case "close_stdin":
        return session.closeStdin()
      case "kill":
        return session.kill("kill")
      default:
        log(`dataplane: ignored a '${String(frame.type)}' frame on command ${session.id}`)
    }
  }

  ws.on("message", (data: RawData) => {
    let frame: unknown
    try {
      frame = JSON.parse(data.toString())
    } catch {
      return fail("CommandError", "Frames must be JSON text")
    }
    if (typeof frame !== "object" || frame === null || Array.isArray(frame)) return fail("CommandError", "Frames must be JSON objects")
    try {
      onFrame(frame)
    } catch (error) {
      if (error instanceof DataplaneError || error instanceof BoxUnavailable) {
        const known = asDataplaneError(error)
        return fail(known.type, known.message)
      }
      log(`dataplane: websocket frame failed: ${(error as Error).stack ?? String(error)}`)
      fail("CommandError", "The dataplane failed to handle the frame")
    }
  })
  ws.on("error", (error) => log(`dataplane: websocket error: ${error.message}`))
  ws.on("close", () => {
    clearTimeout(firstFrame)
    clearInterval(ping)
    detach?.()
  })
}
