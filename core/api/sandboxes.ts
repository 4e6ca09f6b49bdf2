/** Endpoints of the sandbox area under /v2/sandboxes. */
export const sandboxEndpoints = {} as const
