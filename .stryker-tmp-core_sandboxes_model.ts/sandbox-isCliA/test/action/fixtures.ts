/** Parsed inputs of an external_container run, as the action's tests start from. */
// @ts-nocheck

import type { Inputs } from "../../action/inputs.ts"

export const externalInputs = (overrides: Partial<Inputs> = {}): Inputs => ({
  apiUrl: "https://slipway.example.com",
  apiKey: "slw_key",
  tenantId: undefined,
  name: "web",
  source: "external_container",
  imageUri: "registry/app:2",
  repoUrl: undefined,
  repoRef: undefined,
  graphConfigPath: undefined,
  integrationId: undefined,
  listenerId: undefined,
  k8sNamespace: undefined,
  buildOnPush: undefined,
  secrets: undefined,
  resourceSpec: undefined,
  redeployRevisionId: undefined,
  wait: true,
  timeoutMs: 900_000,
  pollIntervalMs: 5000,
  ...overrides
})
