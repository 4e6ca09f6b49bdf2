/**
 * A gitrepo deployment is bound to one git-host integration (`source_config.integration_id`):
 * only pushes signed by that integration's secret build it. At creation the integration must be
 * one of the tenant's, and its owner must own the repository (the owner segment of `repo_url`,
 * compared case-insensitively as GitHub logins are): a tenant cannot bind another owner's
 * repository to its integration, nor its deployment to another tenant's integration.
 */
import { Effect } from "effect"
import { type SourceConfig, ValidationIssue } from "../../core/index.ts"
import type { IntegrationStore } from "../store/IntegrationStore.ts"
import { ownerKey } from "./admin.ts"
import { repoKey } from "./webhook.ts"

/** `https://github.com/Acme/agent.git`, `git@github.com:acme/agent`, `ssh://git@github.com/acme/agent` → `acme`. */
export const repoOwner = (repoUrl: string): string | undefined => {
  const segments = repoKey(repoUrl).split("/")
  // host/owner/repo (a host with a path prefix, e.g. GitHub Enterprise under /git, keeps owner second to last).
  return segments.length >= 3 ? segments[segments.length - 2] : undefined
}

export const integrationIssues = Effect.fnUntraced(function* (
  integrationStore: IntegrationStore["Service"],
  tenantId: string,
  config: SourceConfig | null | undefined
) {
  const integrationId = config?.integration_id
  if (typeof integrationId !== "string") return []
  const integration = yield* integrationStore.integration(tenantId, integrationId.toLowerCase())
  if (!integration) {
    return [
      new ValidationIssue({
        loc: ["body", "source_config", "integration_id"],
        msg: `Integration ${integrationId} not found: it must be one of this tenant's integrations (GET /v1/integrations/gitrepo/install)`,
        type: "value_error"
      })
    ]
  }
  const repoUrl = config?.repo_url
  if (typeof repoUrl !== "string") return []
  const owner = repoOwner(repoUrl)
  if (owner !== undefined && ownerKey(owner) === integration.owner_key) return []
  return [
    new ValidationIssue({
      loc: ["body", "source_config", "repo_url"],
      msg: `repo_url must be a repository of ${integration.owner}, the owner of integration ${integration.id}${owner === undefined ? "" : ` (its owner is ${owner})`}`,
      type: "value_error"
    })
  ]
})
