/**
 * Requests and answers of handlers that are served outside the API table (the registry's token
 * endpoint, the source upload URL), independent of the HTTP framework that mounts them. Header
 * names are lower case, as Node gives them.
 */
import { type ApiError, toErrorResponse } from "../../core/index.ts"

export interface NeutralRequest {
  readonly method: string
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  /** The query string's parameters; a parameter given more than once keeps every value. */
  readonly query: URLSearchParams
}

export interface NeutralResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  /** Encoded as JSON. */
  readonly body: unknown
}

/** The first value of a header. */
export const header = (request: NeutralRequest, name: string): string | undefined => {
  const value = request.headers[name.toLowerCase()]
  return typeof value === "string" ? value : value?.[0]
}

export const jsonResponse = (status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): NeutralResponse => ({
  status,
  headers: { "content-type": "application/json", "cache-control": "no-store", ...headers },
  body
})

/** A core error as the API answers it (the one error mapper). */
export const errorResponse = (error: ApiError, headers: Readonly<Record<string, string>> = {}): NeutralResponse => {
  const { status, body } = toErrorResponse(error)
  return jsonResponse(status, body, headers)
}
