/** Bodies and polling shared by the control-plane HTTP tests. */
// @ts-nocheck

import { eventually, type TestServer } from "../../support/server.ts"

let counter = 0
export const uniqueName = (prefix = "dep") => `${prefix}-${process.pid}-${Date.now().toString(36)}-${(counter++).toString(36)}`

export const containerBody = (name = uniqueName(), overrides: Record<string, unknown> = {}) => ({
  name,
  source: "external_container",
  source_config: { resource_spec: { min_scale: 1, max_scale: 2, cpu: 1, memory_mb: 512 } },
  source_revision_config: { image_uri: "registry.example.com/agent:1.0.0" },
  secrets: [{ name: "OPENAI_API_KEY", value: "sk-test-123" }],
  ...overrides
})

export const gitrepoBody = (name = uniqueName(), overrides: Record<string, unknown> = {}) => ({
  name,
  source: "gitrepo",
  source_config: { repo_url: "https://github.com/acme/agent", deployment_type: "dev", build_on_push: true },
  source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json" },
  ...overrides
})

type Requester = TestServer["request"]

/** Polls a revision until `done(status)` holds; answers the revision. */
export const waitForRevision = (request: Requester, deploymentId: string, revisionId: string, done: (status: string) => boolean, timeoutMs = 10_000) =>
  eventually(async () => {
    const response = await request("GET", `/v2/deployments/${deploymentId}/revisions/${revisionId}`)
    if (response.status !== 200) throw new Error(`revision poll answered ${response.status}: ${JSON.stringify(response.body)}`)
    return done(response.body.status) ? response.body : undefined
  }, timeoutMs)

export const terminal = (status: string) => !["CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING"].includes(status)
