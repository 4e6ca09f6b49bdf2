/** The whole HTTP API as one table of endpoint descriptions, keyed by operation name. */
import { deploymentEndpoints } from "./deployments.ts"
import { logEndpoints } from "./logs.ts"
import { sandboxAccessEndpoints } from "./sandboxAccess.ts"
import { sandboxEndpoints } from "./sandboxes.ts"
import { snapshotEndpoints } from "./snapshots.ts"
import { systemEndpoints } from "./system.ts"

export const Api = { ...systemEndpoints, ...deploymentEndpoints, ...logEndpoints, ...sandboxEndpoints, ...sandboxAccessEndpoints, ...snapshotEndpoints } as const
export type Api = typeof Api

export * from "./common.ts"
export * from "./endpoint.ts"
export * from "./errors.ts"
export * from "./validation.ts"
export * from "./openapi.ts"
export * from "./logs.ts"
export { deploymentEndpoints, logEndpoints, sandboxAccessEndpoints, sandboxEndpoints, snapshotEndpoints, systemEndpoints }
