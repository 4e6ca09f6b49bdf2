/**
 * Endpoints of the real LangSmith control plane that the spec does not have (docs/real-api.md):
 * its GitHub integration listings and the bulk delete. The bulk delete runs the single delete's
 * own handler for each id.
 */
import { createHash } from "node:crypto"
import { Effect } from "effect"
import { Api, NotFound, normalizeRepo, numericIdOf } from "../../../core/index.ts"
import type { Route } from "../../http/app.ts"
import { implement } from "../../module.ts"
import type { DeploymentWrites } from "../writes.ts"

/** A stable positive integer (below 2^48) naming a repository, for the real API's integer repository id. */
const repositoryNumber = (normalized: string): number => Number.parseInt(createHash("sha256").update(normalized).digest("hex").slice(0, 12), 16)

export const realApiRoutes = ({ deploymentStore, integrationStore }: DeploymentWrites, spec: ReadonlyArray<Route>) =>
  Effect.sync(() => {
    const deleteOne = spec.find((route) => route.endpoint === Api.deleteDeployment)
    if (!deleteOne) throw new Error("realApiRoutes: the deleteDeployment route is missing")

    return [
      implement(Api.listGithubIntegrations, (_input, { auth }) =>
        Effect.map(integrationStore.integrations(auth.tenantId), (integrations) =>
          integrations.filter((integration) => integration.provider === "github").map(({ id, owner }) => ({ id, installation_id: numericIdOf(id), name: owner }))
        )
      ),

      implement(Api.listGithubRepositories, Effect.fnUntraced(function* ({ params }, { auth }) {
        const id = params.integration_id.toLowerCase()
        if (!(yield* integrationStore.integration(auth.tenantId, id))) return yield* new NotFound({ message: `Integration ID ${params.integration_id} not found.` })
        const seen = new Map<string, { repo_url: string; repo_ref: string | null }>()
        for (const row of yield* integrationStore.repositoriesOfIntegration(auth.tenantId, id)) {
          const key = normalizeRepo(row.repo_url)
          if (!seen.has(key)) seen.set(key, row)
        }
        return [...seen].map(([normalized, row]) => {
          const [host = "", owner = "", ...rest] = normalized.split("/")
          const branch = row.repo_ref && !row.repo_ref.startsWith("refs/") ? row.repo_ref : "main"
          return {
            host_integration_id: id,
            id: repositoryNumber(normalized),
            name: rest.join("/"),
            owner,
            url: `https://${host}/${owner}/${rest.join("/")}`,
            default_branch: branch
          }
        })
      })),

      implement(Api.deleteDeployments, Effect.fnUntraced(function* ({ query }, context) {
        const ids = [...new Set(query.deployment_ids.map((id) => id.toLowerCase()))]
        const found = yield* Effect.forEach(ids, (id) => deploymentStore.deployment(context.auth.tenantId, id))
        const missing = ids.filter((_, index) => found[index] === undefined)
        if (missing.length > 0) return yield* new NotFound({ message: `Deployment ID ${missing.join(", ")} not found.` })
        for (const id of ids) {
          const outcome = deleteOne.handler({ params: { deployment_id: id }, query: { delete_tracing_project: query.delete_tracing_project }, body: undefined }, context)
          // Deleted meanwhile by another request: it is gone either way.
          yield* Effect.catchTag(outcome, "NotFound", () => Effect.void)
        }
        return { deleted: ids }
      }))
    ]
  })
