/**
 * slipway: the pure domain core. Schemas, rules and state machines of the deployment control
 * plane and the sandbox area, the API description, and the typed client. No I/O here except the
 * client's HTTP calls, which go through the injected fetch.
 */
// First: fails the import with a clear message under a Node.js too old for the library.
import "./nodeVersion.ts"
export * from "./api/index.ts"
export * from "./client/index.ts"
export * from "./sandboxes/index.ts"
export * from "./deployments/index.ts"
export * from "./builds/index.ts"
