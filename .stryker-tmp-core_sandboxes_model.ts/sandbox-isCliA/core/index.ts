/**
 * slipway: the pure domain core. Schemas, rules and state machines of the deployment control
 * plane and the sandbox area, the API description, and the typed client. No I/O here except the
 * client's HTTP calls, which go through the injected fetch.
 */
// @ts-nocheck

export * from "./api/index.ts"
export * from "./client/index.ts"
export * from "./sandboxes/index.ts"
export * from "./deployments/index.ts"
