/**
 * What `langgraph deploy` asks for before it PATCHes a deployment with what it built or packed
 * (docs/registry.md): `POST …/push-token` (internal_docker: credentials for the server's registry)
 * and `POST …/upload-url` (internal_source: a signed URL for the source tarball). Another source
 * is a 400 whose message is the one the CLI matches (deploy.py: "only available for
 * 'internal_docker' source deployments").
 */
import { Effect } from "effect"
import { Api, BadRequest, realSourceNames, ServerError, type Source } from "../../../core/index.ts"
import { implement } from "../../module.ts"
import type { DeploymentRecord } from "../../store/DeploymentStore.ts"
import type { DeploymentWrites } from "../writes.ts"

/** The 400 for a deployment of another source, in the words the langgraph CLI matches. */
const onlyFor = (what: string, source: Source, deployment: DeploymentRecord) =>
  new BadRequest({
    message: `${what} only available for '${source}' source deployments: deployment ${deployment.id} has source '${realSourceNames[deployment.source]}'`
  })

export const sourceRoutes = ({ mustGetDeployment, deletingConflict, registry, uploads }: DeploymentWrites) =>
  Effect.sync(() => {
    const deploymentOf = Effect.fnUntraced(function* (tenantId: string, deploymentId: string, source: Source, what: string) {
      const deployment = yield* mustGetDeployment(tenantId, deploymentId)
      const deleting = deletingConflict(deployment)
      if (deleting) return yield* deleting
      if (deployment.source !== source) return yield* onlyFor(what, source, deployment)
      return deployment
    })

    return [
      implement(Api.createPushToken, Effect.fnUntraced(function* ({ params }, { auth }) {
        const deployment = yield* deploymentOf(auth.tenantId, params.deployment_id, "internal_docker", "Push tokens are")
        return yield* registry.pushToken(deployment.tenant_id, deployment.id).pipe(Effect.mapError((error) => new ServerError({ status: 503, message: error.message })))
      })),

      implement(Api.createUploadUrl, Effect.fnUntraced(function* ({ params }, { auth }) {
        const deployment = yield* deploymentOf(auth.tenantId, params.deployment_id, "internal_source", "Upload URLs are")
        return yield* uploads.uploadUrl(deployment.tenant_id, deployment.id)
      }))
    ]
  })
