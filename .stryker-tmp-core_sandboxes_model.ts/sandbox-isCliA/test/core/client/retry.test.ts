// @ts-nocheck
import { describe, expect, it } from "vitest"
import { NotFound, QuotaExceeded, ServerError } from "../../../core/api/errors.ts"
import { TransportError } from "../../../core/client/errors.ts"
import { backoffMs, defaultRetryPolicy, isRetryable, nextDelayMs, parseRetryAfter } from "../../../core/client/retry.ts"

const network = new TransportError({ reason: "network", method: "GET", url: "u", message: "refused" })
const serverError = (status: number) => ({ error: new ServerError({ status, message: "x" }), status })

describe("retry policy", () => {
  it("retries network errors only for idempotent methods", () => {
    expect(["GET", "PUT", "DELETE"].every((method) => isRetryable(method as "GET", { error: network }))).toBe(true)
    expect(isRetryable("POST", { error: network })).toBe(false)
    expect(isRetryable("PATCH", { error: network })).toBe(false)
  })

  it("retries 429 and 503 for every method, other 5xx only for idempotent ones, never 4xx", () => {
    expect(isRetryable("POST", serverError(429))).toBe(true)
    expect(isRetryable("PATCH", serverError(503))).toBe(true)
    expect(isRetryable("POST", serverError(502))).toBe(false)
    expect(isRetryable("GET", serverError(502))).toBe(true)
    expect(isRetryable("GET", { error: new NotFound({ message: "x" }), status: 404 })).toBe(false)
  })

  it("never retries a quota 429", () => {
    expect(isRetryable("GET", { error: new QuotaExceeded({ limit: "1Gi", usage: "1Gi", requested: "1Gi" }), status: 429 })).toBe(false)
  })

  it("doubles the backoff up to the cap, with jitter taking off at most its fraction", () => {
    const policy = { ...defaultRetryPolicy, baseDelayMs: 100, maxDelayMs: 1_000, jitter: 0.5 }
    expect([1, 2, 3, 4, 5].map((attempt) => backoffMs(policy, attempt, () => 0))).toEqual([100, 200, 400, 800, 1_000])
    expect(backoffMs(policy, 2, () => 1)).toBe(100)
    expect(backoffMs(policy, 2, () => 0.5)).toBe(150)
  })

  it("gives up after maxAttempts and prefers Retry-After to the backoff", () => {
    const policy = { ...defaultRetryPolicy, maxAttempts: 3 }
    expect(nextDelayMs("GET", policy, 2, { ...serverError(503), retryAfterMs: 1_234 })).toBe(1_234)
    expect(nextDelayMs("GET", policy, 3, serverError(503))).toBeUndefined()
    expect(nextDelayMs("GET", policy, 1, { ...serverError(503), retryAfterMs: policy.maxRetryAfterMs + 1 })).toBeUndefined()
  })

  it("parses Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("2025-01-01T00:00:00Z")
    expect(parseRetryAfter("3", now)).toBe(3_000)
    expect(parseRetryAfter("Wed, 01 Jan 2025 00:00:05 GMT", now)).toBe(5_000)
    expect(parseRetryAfter("Tue, 31 Dec 2024 23:00:00 GMT", now)).toBe(0)
    expect(parseRetryAfter(null, now)).toBeUndefined()
    expect(parseRetryAfter("soon", now)).toBeUndefined()
  })
})
