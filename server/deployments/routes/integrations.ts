/** `/v1/integrations/gitrepo`: the tenant's git-host integrations, and the push webhook they sign. */
import { Effect, Result } from "effect"
import { Api, decodeWithIssues, PushEvent, revisionForPush, type StoredDeployment, Unauthorized, ValidationError } from "../../../core/index.ts"
import { implement, ServerEnv } from "../../module.ts"
import { ownerKey } from "../admin.ts"
import type { DeploymentWrites } from "../shared.ts"
import { verifySignature } from "../webhook.ts"

export const integrationRoutes = (writes: DeploymentWrites) =>
  Effect.gen(function* () {
    const { publicUrl } = yield* ServerEnv
    const { store, box, storedOf, writeNewRevision, announce } = writes
    const decodePush = decodeWithIssues(PushEvent, ["body"], { excess: "ignore" })
    const installUrl = `${publicUrl}/docs#getGitIntegrations`

    return [
      implement(Api.getGitIntegrations, (_input, { auth }) =>
        Effect.map(store.integrations(auth.tenantId), (integrations) => ({
          integrations: integrations.map(({ id, provider, owner, installed_at }) => ({ id, provider, owner, installed_at })),
          install_url: installUrl
        }))
      ),

      implement(Api.gitPushWebhook, ({ body }, { headers, rawBody }) =>
        Effect.gen(function* () {
          const signature = headers["x-hub-signature-256"]
          if (typeof signature !== "string" || signature === "") return yield* new Unauthorized({ message: "Missing X-Hub-Signature-256 header" })
          const payload = body as Record<string, any>
          const owner: unknown =
            payload.repository?.owner?.login ?? payload.repository?.owner?.name ?? payload.repository?.full_name?.split?.("/")[0] ?? payload.organization?.login
          const candidates = typeof owner === "string" ? yield* store.integrationsByOwner("github", ownerKey(owner)) : []
          const integration = candidates.find((candidate) => verifySignature(box.open(candidate.webhook_secret), rawBody, signature))
          if (!integration) return yield* new Unauthorized({ message: "Invalid webhook signature" })
          const event = headers["x-github-event"]
          if (event === "ping") return { revision_ids: [] }
          if (event !== "push") return yield* ValidationError.single(["header", "x-github-event"], "Input should be 'push' or 'ping'", "literal_error")
          const push = yield* Effect.fromResult(Result.mapError(decodePush(body), (issues) => new ValidationError({ issues })))
          const tenantId = integration.tenant_id
          const branch = push.ref.startsWith("refs/heads/") ? push.ref.slice("refs/heads/".length) : push.ref
          const created = yield* store.transaction(
            Effect.flatMap(store.pushTargets(tenantId, push.ref, branch), (targets) =>
              Effect.forEach(targets, (deployment) => {
                // The deployment's secrets travel sealed: no need to open them to copy them.
                const stored: StoredDeployment = storedOf({ ...deployment, secrets: [] })
                const next = revisionForPush(stored, push)
                if (!next) return Effect.succeed([])
                return Effect.map(
                  writeNewRevision({
                    deployment,
                    sourceConfig: stored.source_config,
                    sourceRevisionConfig: next.source_revision_config,
                    secrets: deployment.secrets,
                    imageVersion: deployment.image_version
                  }),
                  (written) => [written]
                )
              })
            )
          )
          const writtenAll = created.flat()
          yield* Effect.forEach(writtenAll, announce, { discard: true })
          return { revision_ids: writtenAll.map((written) => written.revision.id) }
        })
      )
    ]
  })
