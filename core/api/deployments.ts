/** Endpoints of the deployment control plane (deployments, revisions, listeners, integrations). */
export const deploymentEndpoints = {} as const
