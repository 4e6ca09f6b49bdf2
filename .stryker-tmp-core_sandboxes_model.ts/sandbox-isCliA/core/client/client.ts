/**
 * The typed client, derived from an endpoint table: one method per endpoint, whose input and
 * success types come from the endpoint's schemas, so client and server cannot drift apart.
 */
// @ts-nocheck

import { Effect } from "effect"
import type { Endpoint, EndpointInput, SuccessType } from "../api/endpoint.ts"
import type { ClientError } from "./errors.ts"
import { attempt, type Connection, type Fetch, prepareRequest, type RequestInput } from "./http.ts"
import { type AttemptFailure, defaultRetryPolicy, nextDelayMs, type RetryPolicy } from "./retry.ts"

export interface ClientOptions {
  /** Where the API is served, e.g. `https://slipway.example.com` (a path prefix is kept). */
  readonly baseUrl: string
  /** Sent as `X-Api-Key` on authenticated endpoints. */
  readonly apiKey?: string | undefined
  /** Sent as `X-Tenant-Id`; without it the server uses the key's default tenant. */
  readonly tenantId?: string | undefined
  readonly userAgent?: string | undefined
  /** Per attempt, covering the answer's body too. Default 30 s. */
  readonly timeoutMs?: number | undefined
  /** Overrides of the default retry policy (4 attempts, 250 ms doubling to 8 s, half jitter). */
  readonly retry?: Partial<RetryPolicy> | undefined
  /** Defaults to `globalThis.fetch`; injected so the core does no hard-wired I/O. */
  readonly fetch?: Fetch | undefined
}

export const defaultUserAgent = "slipway-client/0.1.0"
export const defaultTimeoutMs = 30_000

/** A table of endpoint descriptions keyed by operation name, like `Api`. */
export type EndpointTable = { readonly [name: string]: Endpoint }

/** The method for one endpoint; the input may be omitted when nothing in it is required. */
export type ClientMethod<E extends Endpoint> = {} extends EndpointInput<E>
  ? (input?: EndpointInput<E>) => Effect.Effect<SuccessType<E>, ClientError>
  : (input: EndpointInput<E>) => Effect.Effect<SuccessType<E>, ClientError>

export type Client<T extends EndpointTable> = { readonly [K in keyof T]: ClientMethod<T[K]> }

const connectionOf = (options: ClientOptions): Connection => ({
  baseUrl: options.baseUrl,
  apiKey: options.apiKey,
  tenantId: options.tenantId,
  userAgent: options.userAgent ?? defaultUserAgent,
  timeoutMs: options.timeoutMs ?? defaultTimeoutMs,
  // Looked up per call rather than captured, so a fetch installed later (or mocked) is used.
  fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init))
})

/** Runs attempts until one succeeds or the policy says to stop, then surfaces the last error. */
const withRetries = <A>(run: Effect.Effect<A, AttemptFailure>, endpoint: Endpoint, policy: RetryPolicy): Effect.Effect<A, ClientError> => {
  const loop = (attemptNumber: number): Effect.Effect<A, ClientError> =>
    run.pipe(
      Effect.catch((failure: AttemptFailure) => {
        const delay = nextDelayMs(endpoint.method, policy, attemptNumber, failure)
        return delay === undefined ? Effect.fail(failure.error) : Effect.sleep(delay).pipe(Effect.andThen(loop(attemptNumber + 1)))
      })
    )
  return loop(1)
}

const callEndpoint = <A>(endpoint: Endpoint, connection: Connection, policy: RetryPolicy) => (input: RequestInput = {}): Effect.Effect<A, ClientError> =>
  Effect.suspend(() => {
    const request = prepareRequest(endpoint, input, connection)
    return withRetries(attempt<A>(endpoint, request, connection), endpoint, policy)
  })

/**
 * `makeClient(Api, { baseUrl, apiKey })` → an object with one method per endpoint, e.g.
 * `client.getDeployment({ params: { deployment_id } })`. Methods are lazy Effects: nothing is
 * sent until the Effect runs, and running it again sends the request again.
 */
export const makeClient = <const T extends EndpointTable>(api: T, options: ClientOptions): Client<T> => {
  const connection = connectionOf(options)
  const policy: RetryPolicy = { ...defaultRetryPolicy, ...options.retry }
  const client: Record<string, (input?: RequestInput) => Effect.Effect<unknown, ClientError>> = {}
  for (const [name, endpoint] of Object.entries(api)) client[name] = callEndpoint(endpoint, connection, policy)
  return client as unknown as Client<T>
}
