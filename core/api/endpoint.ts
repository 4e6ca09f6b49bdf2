/**
 * The API is described once, as data: each endpoint names its method, path, and the schemas
 * of its path parameters, query, body and success. The server implements these descriptions,
 * the OpenAPI document is generated from them, and the typed client calls them, so the three
 * cannot drift apart.
 */
import type { Result, Schema } from "effect"
import type { ApiError } from "./errors.ts"

export type Method = "GET" | "POST" | "PATCH" | "PUT" | "DELETE"

/** Which server a client talks to: Slipway (every endpoint) or the real LangSmith control plane (docs/real-api.md). */
export type Dialect = "slipway" | "langsmith"

/** How the real LangSmith control plane offers an endpoint (same method, path and wire shapes, modulo the name aliases). */
export interface LangSmithEndpoint {
  /**
   * Rewrites the caller's body (spec names) into what is sent: the real API's names, and toward
   * the real API only the fields it has. A failure is reported without sending anything.
   */
  readonly body?: (body: unknown, dialect: Dialect) => Result.Result<unknown, ApiError>
}

/** Which error style and pagination bounds apply: control plane (string detail) or sandbox (`{error, message}`). */
export type Area = "control" | "sandbox" | "system"

export interface Endpoint<
  P extends Schema.Top | undefined = Schema.Top | undefined,
  Q extends Schema.Top | undefined = Schema.Top | undefined,
  B extends Schema.Top | undefined = Schema.Top | undefined,
  S extends Schema.Top | undefined = Schema.Top | undefined
> {
  /** Unique operation id, also the client method name. */
  readonly name: string
  readonly method: Method
  /** OpenAPI-style template: `/v2/deployments/{deployment_id}`. */
  readonly path: string
  readonly area: Area
  readonly summary: string
  /** Longer text for the OpenAPI operation (default: the summary, plus what the generator adds). */
  readonly description?: string | undefined
  readonly tag: string
  /** Success status; 204 answers no body. */
  readonly status: 200 | 201 | 202 | 204
  /** False only for /health, /openapi.json, /docs. */
  readonly auth: boolean
  readonly params: P
  readonly query: Q
  readonly body: B
  /** An empty request body stands for `{}` (every field's default) instead of a 422 "Field required". */
  readonly bodyOptional?: boolean | undefined
  readonly success: S
  /** Documented error statuses, for the OpenAPI document. */
  readonly errors: ReadonlyArray<number>
  /** Query keys that may repeat (`?id=a&id=b`), as FastAPI list parameters do; decoded from an array of strings. */
  readonly queryArrays?: ReadonlyArray<string> | undefined
  /** Present when the real LangSmith control plane has this endpoint too. */
  readonly langsmith?: LangSmithEndpoint | undefined
}

type Field<S> = S extends Schema.Top ? S : undefined

export interface EndpointSpec {
  readonly name: string
  readonly method: Method
  readonly path: string
  readonly area: Area
  readonly summary: string
  readonly description?: string
  readonly tag: string
  readonly status?: 200 | 201 | 202 | 204
  readonly auth?: boolean
  readonly params?: Schema.Top
  readonly query?: Schema.Top
  readonly body?: Schema.Top
  readonly bodyOptional?: boolean
  readonly success?: Schema.Top
  readonly errors?: ReadonlyArray<number>
  readonly queryArrays?: ReadonlyArray<string>
  readonly langsmith?: LangSmithEndpoint
}

export const endpoint = <const E extends EndpointSpec>(
  spec: E
): Endpoint<Field<E["params"]>, Field<E["query"]>, Field<E["body"]>, Field<E["success"]>> =>
  ({
    status: 200,
    auth: true,
    errors: [],
    ...spec,
    params: spec.params,
    query: spec.query,
    body: spec.body,
    success: spec.success
  }) as any

type EncodedOf<S> = S extends Schema.Top ? S["Encoded"] : never
type TypeOf<S> = S extends Schema.Top ? S["Type"] : never

/**
 * Query values travel as text, so where the encoded form is a string (`limit` is `"20"` on the
 * wire) a number or boolean is accepted too: callers write `{ limit: 20 }`.
 */
type QueryInput<T> = { readonly [K in keyof T]?: T[K] | (T[K] extends string | undefined ? number | boolean : never) }

/** What a caller passes: the encoded (JSON) form of params, query and body. */
export type EndpointInput<E extends Endpoint> = (E["params"] extends Schema.Top ? { readonly params: EncodedOf<E["params"]> } : {}) &
  (E["query"] extends Schema.Top ? { readonly query?: QueryInput<EncodedOf<E["query"]>> } : {}) &
  (E["body"] extends Schema.Top ? { readonly body: EncodedOf<E["body"]> } : {})

/** What a server handler receives: decoded params, query and body. */
export type DecodedInput<E extends Endpoint> = {
  readonly params: E["params"] extends Schema.Top ? TypeOf<E["params"]> : {}
  readonly query: E["query"] extends Schema.Top ? TypeOf<E["query"]> : {}
  readonly body: E["body"] extends Schema.Top ? TypeOf<E["body"]> : undefined
}

/** What a server handler answers (JSON form) and what a client receives (decoded form). */
export type SuccessEncoded<E extends Endpoint> = E["success"] extends Schema.Top ? EncodedOf<E["success"]> : void
export type SuccessType<E extends Endpoint> = E["success"] extends Schema.Top ? TypeOf<E["success"]> : void

/** Fills `{name}` placeholders of a path template. */
export const renderPath = (template: string, params: Record<string, unknown> | undefined): string =>
  template.replace(/\{(\w+)\}/g, (_, key: string) => encodeURIComponent(String(params?.[key] ?? "")))
