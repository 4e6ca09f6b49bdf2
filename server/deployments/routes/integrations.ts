/** `/v1/integrations/gitrepo`: the tenant's git-host integrations, and the push webhook they sign. */
import { Effect, Result } from "effect"
import { Api, Conflict, decodeWithIssues, PushEvent, revisionForPush, type StoredDeployment, Unauthorized, ValidationError } from "../../../core/index.ts"
import { implement, now, ServerEnv } from "../../module.ts"
import { ownerKey } from "../admin.ts"
import type { DeploymentWrites } from "../writes.ts"
import { verifySignature } from "../webhook.ts"

/** How long a delivery id is remembered (GitHub lets a delivery be redelivered for a few days). */
export const WEBHOOK_DELIVERY_TTL_MS = 7 * 24 * 60 * 60 * 1000

/** GitHub's delivery ids are uuids; anything id-like of sane length is accepted. */
const deliveryPattern = /^[A-Za-z0-9._-]{1,128}$/

export const integrationRoutes = (writes: DeploymentWrites) =>
  Effect.gen(function* () {
    const { publicUrl } = yield* ServerEnv
    const { transaction, deploymentStore, revisionStore, integrationStore, box, storedOf, writeNewRevision, announce } = writes
    const decodePush = decodeWithIssues(PushEvent, ["body"], { excess: "ignore" })
    const installUrl = `${publicUrl}/docs#getGitIntegrations`

    return [
      implement(Api.getGitIntegrations, (_input, { auth }) =>
        Effect.map(integrationStore.integrations(auth.tenantId), (integrations) => ({
          integrations: integrations.map(({ id, provider, owner, installed_at }) => ({ id, provider, owner, installed_at })),
          install_url: installUrl
        }))
      ),

      implement(Api.gitPushWebhook, Effect.fnUntraced(function* ({ body }, { headers, rawBody }) {
        const signature = headers["x-hub-signature-256"]
        if (typeof signature !== "string" || signature === "") return yield* new Unauthorized({ message: "Missing X-Hub-Signature-256 header" })
        const payload = body as Record<string, any>
        const owner: unknown =
          payload.repository?.owner?.login ?? payload.repository?.owner?.name ?? payload.repository?.full_name?.split?.("/")[0] ?? payload.organization?.login
        const candidates = typeof owner === "string" ? yield* integrationStore.integrationsByOwner("github", ownerKey(owner)) : []
        const integration = candidates.find((candidate) => verifySignature(box.open(candidate.webhook_secret), rawBody, signature))
        if (!integration) return yield* new Unauthorized({ message: "Invalid webhook signature" })
        // The signature covers the body only: the delivery id refuses a redelivery of the same
        // request, and the commit check below refuses a replayed push under any delivery id.
        const deliveryId = headers["x-github-delivery"]
        if (typeof deliveryId !== "string" || !deliveryPattern.test(deliveryId)) {
          return yield* ValidationError.single(["header", "x-github-delivery"], "Field required: the delivery's unique id (GitHub sends it with every delivery)", "missing")
        }
        const event = headers["x-github-event"]
        if (event !== "push" && event !== "ping") return yield* ValidationError.single(["header", "x-github-event"], "Input should be 'push' or 'ping'", "literal_error")
        const push = event === "push" ? yield* Effect.fromResult(Result.mapError(decodePush(body), (issues) => new ValidationError({ issues }))) : undefined
        const tenantId = integration.tenant_id
        const receivedAt = now()
        const expiresAt = new Date(Date.parse(receivedAt) + WEBHOOK_DELIVERY_TTL_MS).toISOString()
        const created = yield* transaction(
          Effect.gen(function* () {
            if (!(yield* integrationStore.rememberDelivery(integration.id, deliveryId, receivedAt, expiresAt))) {
              return yield* new Conflict({ message: `Delivery ${deliveryId} was already received` })
            }
            if (!push) return []
            const branch = push.ref.startsWith("refs/heads/") ? push.ref.slice("refs/heads/".length) : push.ref
            const targets = yield* deploymentStore.pushTargets(tenantId, integration.id, push.ref, branch)
            return yield* Effect.forEach(targets, (deployment) =>
              Effect.gen(function* () {
                // The deployment's secrets travel sealed: no need to open them to copy them.
                const stored: StoredDeployment = storedOf({ ...deployment, secrets: [] })
                const next = revisionForPush(stored, push)
                if (!next) return []
                // A commit this deployment already built for this ref is never built again: a
                // replayed old push cannot pin the deployment back to an old commit.
                const ref = next.source_revision_config.repo_ref
                if (typeof ref === "string" && (yield* revisionStore.commitBuilt(tenantId, deployment.id, push.after, ref))) return []
                // A push queues behind a build under way (only revisions not started are superseded).
                const written = yield* writeNewRevision(
                  {
                    deployment,
                    sourceConfig: stored.source_config,
                    sourceRevisionConfig: next.source_revision_config,
                    secrets: deployment.secrets,
                    imageVersion: deployment.image_version
                  },
                  { queue: true }
                )
                return [written]
              })
            )
          })
        )
        const writtenAll = created.flat()
        yield* Effect.forEach(writtenAll, announce, { discard: true })
        return { revision_ids: writtenAll.map((written) => written.revision.id) }
      }))
    ]
  })
