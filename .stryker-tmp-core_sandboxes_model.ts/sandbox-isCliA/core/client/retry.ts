/**
 * When the client retries a request, and how long it waits before doing so.
 *
 * Retried: network failures and timeouts, 5xx, and 429 (rate limiting), with exponential
 * backoff and jitter, honouring `Retry-After`. Never retried: other 4xx (the same request will
 * be refused again) and a 429 that decoded to QuotaExceeded (the storage quota does not free up
 * by waiting; it is a business answer, not back-pressure).
 *
 * Non-idempotent methods (POST, PATCH) are retried only on 429 and 503, the two answers that
 * say the server did not act on the request. After a lost connection, a timeout or another
 * 5xx the server may already have created the deployment or revision, and sending the POST
 * again could create a duplicate; the caller, who knows the domain, decides instead.
 */
// @ts-nocheck

import type { Method } from "../api/endpoint.ts"
import type { ClientError } from "./errors.ts"

export interface RetryPolicy {
  /** Total attempts including the first; 1 disables retries. */
  readonly maxAttempts: number
  /** Delay before the first retry; doubles on each further retry. */
  readonly baseDelayMs: number
  /** Upper bound of the computed backoff. */
  readonly maxDelayMs: number
  /**
   * Fraction of the backoff that is randomised (0 = none, 1 = full jitter), so that many
   * clients failing together do not retry in lockstep.
   */
  readonly jitter: number
  /**
   * A `Retry-After` longer than this is not waited for: the error is surfaced instead of
   * blocking the caller (e.g. a CI job) for as long as the server asks.
   */
  readonly maxRetryAfterMs: number
}

export const defaultRetryPolicy: RetryPolicy = {
  maxAttempts: 4,
  baseDelayMs: 250,
  maxDelayMs: 8_000,
  jitter: 0.5,
  maxRetryAfterMs: 60_000
}

const idempotentMethods: ReadonlySet<Method> = new Set(["GET", "PUT", "DELETE"])
/** Answers that mean the request was not processed, so repeating it is safe for any method. */
const notProcessedStatuses: ReadonlySet<number> = new Set([429, 503])

/** One failed attempt: the error plus what the answer said about retrying. */
export interface AttemptFailure {
  readonly error: ClientError
  /** HTTP status when the server answered. */
  readonly status?: number
  /** Parsed `Retry-After`, in ms, when the answer carried one. */
  readonly retryAfterMs?: number
}

/** Whether this failure may be retried, ignoring how many attempts are left. */
export const isRetryable = (method: Method, failure: AttemptFailure): boolean => {
  const { error, status } = failure
  if (error._tag === "TransportError") return idempotentMethods.has(method)
  if (error._tag === "QuotaExceeded" || error._tag === "DecodeError" || status === undefined) return false
  if (notProcessedStatuses.has(status)) return true
  return status >= 500 && idempotentMethods.has(method)
}

/** Exponential backoff for the retry following attempt `attempt` (1-based), with jitter. */
export const backoffMs = (policy: RetryPolicy, attempt: number, random: () => number = Math.random): number => {
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1))
  return Math.round(exponential * (1 - policy.jitter * random()))
}

/**
 * How long to wait before the next attempt, or undefined to give up and surface the error.
 * `attempt` is the number of the attempt that just failed (1-based).
 */
export const nextDelayMs = (method: Method, policy: RetryPolicy, attempt: number, failure: AttemptFailure): number | undefined => {
  if (attempt >= policy.maxAttempts || !isRetryable(method, failure)) return undefined
  if (failure.retryAfterMs !== undefined) {
    return failure.retryAfterMs <= policy.maxRetryAfterMs ? failure.retryAfterMs : undefined
  }
  return backoffMs(policy, attempt)
}

/** `Retry-After` is either delay-seconds or an HTTP date (RFC 9110 §10.2.3). */
export const parseRetryAfter = (value: string | null, now: number = Date.now()): number | undefined => {
  if (value === null || value.trim() === "") return undefined
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text) * 1000
  const date = Date.parse(text)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}
