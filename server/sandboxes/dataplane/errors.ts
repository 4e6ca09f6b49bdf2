/**
 * The dataplane's one error shape, `{"detail": {"error": "<Type>", "message": "..."}}`, with the
 * statuses the official clients map (see docs/dataplane.md).
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { BoxUnavailable } from "./box.ts"

export class DataplaneError extends Error {
  readonly status: number
  readonly type: string
  readonly headers: Readonly<Record<string, string>>
  /** More fields of the answer's `detail`, beside `error` and `message` (a failed box's `status_message`). */
  readonly fields: Readonly<Record<string, unknown>>
  constructor(status: number, type: string, message: string, headers: Readonly<Record<string, string>> = {}, fields: Readonly<Record<string, unknown>> = {}) {
    super(message)
    this.status = status
    this.type = type
    this.headers = headers
    this.fields = fields
  }
}

/** Known failures keep their answer; a box that cannot run anything is 503 ServiceUnavailable (retryable); the rest is 500. */
export const asDataplaneError = (error: unknown): DataplaneError =>
  error instanceof DataplaneError
    ? error
    : error instanceof BoxUnavailable
      ? new DataplaneError(503, "ServiceUnavailable", error.message)
      : new DataplaneError(500, "InternalError", "The dataplane failed to handle the request")

/** The answer for a box that failed: not retryable (400 NotReady, as the clients map it), with why it failed and how to go on. */
export const failedBox = (name: string, statusMessage: string | null) =>
  new DataplaneError(
    400,
    "NotReady",
    `Sandbox ${name} failed: ${statusMessage ?? "unknown error"}. It is not restarted on its own: start it (POST /v2/sandboxes/boxes/${name}/start) or create it again once the cause is fixed`,
    {},
    { status: "failed", status_message: statusMessage }
  )

export const badRequest = (message: string) => new DataplaneError(400, "InvalidRequest", message)
export const unprocessable = (message: string) => new DataplaneError(422, "ValidationError", message)
export const fileNotFound = (path: string) => new DataplaneError(404, "FileNotFound", `File not found: ${path}`)

export const errorBody = (type: string, message: string, fields: Readonly<Record<string, unknown>> = {}) => JSON.stringify({ detail: { error: type, message, ...fields } })

/** Answers `error` unless the answer has started; then the connection is cut (a truncated body must not look whole). */
export const sendError = (request: IncomingMessage, response: ServerResponse, error: unknown): void => {
  const known = asDataplaneError(error)
  if (response.headersSent) {
    response.destroy()
    return
  }
  const body = request.method === "HEAD" ? "" : errorBody(known.type, known.message, known.fields)
  response.writeHead(known.status, {
    ...known.headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body)
  })
  response.end(body)
}

export const sendJson = (response: ServerResponse, status: number, value: unknown): void => {
  const body = JSON.stringify(value)
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  response.end(body)
}

/** Reads a JSON request body of at most `maxBytes`; bad or oversized input is a 4xx, never a crash. */
export const readJsonBody = async (request: IncomingMessage, maxBytes: number): Promise<unknown> => {
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
  if (type !== "" && type !== "application/json" && !type.endsWith("+json")) {
    throw new DataplaneError(415, "InvalidRequest", `Expected a JSON body (content-type application/json), got '${type}'`)
  }
  // Plain 'data'/'end' listeners: an async iterator costs a promise and a stream wrapper per request.
  const chunks = await new Promise<Array<Buffer>>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      chunks.push(chunk)
      if (size > maxBytes) {
        cleanup()
        reject(new DataplaneError(413, "InvalidRequest", `Request body is larger than ${maxBytes} bytes`))
      }
    }
    const onEnd = () => {
      cleanup()
      resolve(chunks)
    }
    const onError = (error: Error) => {
      cleanup()
      reject(error)
    }
    const onClose = () => {
      cleanup()
      reject(new DataplaneError(400, "InvalidRequest", "The request was aborted before its body ended"))
    }
    const cleanup = () => {
      request.off("data", onData)
      request.off("end", onEnd)
      request.off("error", onError)
      request.off("close", onClose)
    }
    if (request.readableEnded) return resolve(chunks)
    request.on("data", onData)
    request.on("end", onEnd)
    request.on("error", onError)
    request.on("close", onClose)
  })
  const text = Buffer.concat(chunks).toString("utf8")
  if (text.trim() === "") throw unprocessable("Request body is empty; expected a JSON object")
  try {
    return JSON.parse(text)
  } catch (cause) {
    throw badRequest(`Request body is not valid JSON: ${(cause as Error).message}`)
  }
}
