/**
 * Deploying: one way to create, update, roll back and wait for a deployment, shared by the GitHub
 * Action (action/) and the `slipway deploy` CLI (cli/). Inputs are parsed from named values
 * (`parseInputs`), planned against the deployment the API shows (`plan`, pure), then applied and
 * waited for through the typed client (`run`).
 *
 * Not re-exported from core/index.ts: it uses node:crypto (HMAC of the secrets) and yaml.
 */
export * from "./errors.ts"
export * from "./inputs.ts"
export * from "./logs.ts"
export * from "./plan.ts"
export * from "./run.ts"
