/** The whole HTTP API as one table of endpoint descriptions, keyed by operation name. */
// @ts-nocheck

import { deploymentEndpoints } from "./deployments.ts"
import { sandboxEndpoints } from "./sandboxes.ts"
import { systemEndpoints } from "./system.ts"

export const Api = { ...systemEndpoints, ...deploymentEndpoints, ...sandboxEndpoints } as const
export type Api = typeof Api

export * from "./common.ts"
export * from "./endpoint.ts"
export * from "./errors.ts"
export * from "./validation.ts"
export * from "./openapi.ts"
export { deploymentEndpoints, sandboxEndpoints, systemEndpoints }
