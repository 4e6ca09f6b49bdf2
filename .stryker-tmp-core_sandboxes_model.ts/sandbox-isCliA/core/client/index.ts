/** The typed HTTP client of the Slipway API: `makeClient`, the `SlipwayClient` service and `waitForRevision`. */
// @ts-nocheck

export * from "./client.ts"
export * from "./errors.ts"
export type { Fetch } from "./http.ts"
export { defaultRetryPolicy, type RetryPolicy } from "./retry.ts"
export * from "./service.ts"
export * from "./wait.ts"
