/**
 * What the deployment handlers write with: the stores and the controller, the secret box, and
 * the revision write that PATCH, new revisions and pushes have in common. Built once per server.
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import {
  type BadRequest,
  Conflict,
  databaseReadyOf,
  deploymentStatus,
  type Secret,
  type SourceConfig,
  type SourceRevisionConfig,
  type StoredDeployment,
  ValidationError
} from "../../core/index.ts"
import { now, ServerEnv } from "../module.ts"
import { repositoryOf } from "../registry/access.ts"
import { Registry } from "../registry/Registry.ts"
import { SourceUploads } from "../uploads/SourceUploads.ts"
import { type ChangedDeployment, DeploymentStore, type DeploymentRecord } from "../store/DeploymentStore.ts"
import { IntegrationStore } from "../store/IntegrationStore.ts"
import { ListenerStore } from "../store/ListenerStore.ts"
import { type NewRevision, RevisionStore } from "../store/RevisionStore.ts"
import type { StoreError } from "../store/StoreError.ts"
import { Transactions } from "../store/Transactions.ts"
import { DeploymentController } from "./controller.ts"
import { makeSecretBox } from "../secrets/secrets.ts"
import { deploymentNotFound } from "./wire.ts"

const maxScaleOf = (config: SourceConfig): number | null | undefined => config.resource_spec?.max_scale

export interface NewRevisionWrite {
  readonly deployment: DeploymentRecord
  readonly sourceConfig: SourceConfig
  readonly sourceRevisionConfig: SourceRevisionConfig
  /** Sealed, as stored. */
  readonly secrets: ReadonlyArray<Secret>
  readonly imageVersion: string | null
}

/** A new revision and the deployment pointing at it, as `DeploymentStore.addRevision` and `changeDeployment` write them. */
export interface NewRevisionChange {
  readonly deployment: DeploymentRecord
  readonly revision: NewRevision
}

export const makeDeploymentWrites = Effect.gen(function* () {
  const { transaction } = yield* Transactions
  const deploymentStore = yield* DeploymentStore
  const revisionStore = yield* RevisionStore
  const listenerStore = yield* ListenerStore
  const integrationStore = yield* IntegrationStore
  const controller = yield* DeploymentController
  const { config } = yield* ServerEnv
  const box = makeSecretBox(config.secretsKey, config.previousSecretsKeys)

  const sealSecrets = (secrets: ReadonlyArray<Secret>): ReadonlyArray<Secret> => secrets.map(({ name, value }) => ({ name, value: box.seal(value) }))

  /**
   * The deployment as the core's rules see it, secrets opened. A request that sends no secrets
   * keeps the stored (sealed) ones as they are and the rules only carry them along: `sentSecrets`
   * false spares opening them (an AES-GCM decryption per secret on every PATCH).
   */
  const storedOf = (record: DeploymentRecord, sentSecrets = true): StoredDeployment => ({
    name: record.name,
    source: record.source,
    source_config: record.source_config,
    source_revision_config: record.source_revision_config,
    secrets: sentSecrets ? record.secrets.map(({ name, value }) => ({ name, value: box.open(value) })) : record.secrets,
    image_version: record.image_version
  })

  const mustGetDeployment = (tenantId: string, id: string) =>
    Effect.flatMap(deploymentStore.deployment(tenantId, id), (record) => (record ? Effect.succeed(record) : Effect.fail(deploymentNotFound(id))))

  /** A deployment being deleted takes no change (409). */
  const deletingConflict = (record: DeploymentRecord): Conflict | undefined =>
    record.status === "AWAITING_DELETE" ? new Conflict({ message: `Deployment ${record.id} is being deleted` }) : undefined

  const registry = yield* Registry
  const uploads = yield* SourceUploads

  /**
   * An internal_docker deployment deploys only what was pushed to its own repository of the
   * server's registry (the `registry_url` of its push token): another image is a 422 at `image_uri`.
   */
  const foreignImage = (deployment: DeploymentRecord, config: SourceRevisionConfig | null | undefined): ValidationError | undefined => {
    const image = config?.image_uri
    if (deployment.source !== "internal_docker" || image == null || registry.isDeploymentImage(image, deployment.tenant_id, deployment.id)) return undefined
    const message = registry.enabled
      ? `image_uri must name an image pushed to this deployment's repository, ${registry.host}/${repositoryOf(deployment.tenant_id, deployment.id)} ` +
        "(the registry_url of POST /v2/deployments/{id}/push-token), e.g. <registry_url>/<name>@sha256:<digest>"
      : "image_uri cannot be deployed: this server runs no registry, so an internal_docker deployment has nothing to pull (SLIPWAY_REGISTRY)"
    return ValidationError.single(["body", "source_revision_config", "image_uri"], message)
  }

  /** An internal_source deployment builds only a tarball uploaded to its own upload URL: 400 unless the path names one that exists. */
  const checkTarball = (tenantId: string, deploymentId: string, config: SourceRevisionConfig | null | undefined): Effect.Effect<void, BadRequest | StoreError> => {
    const path = config?.source_tarball_path
    if (path == null) return Effect.void
    return Effect.flatMap(deploymentStore.deployment(tenantId, deploymentId), (deployment) =>
      // Another source is told by the rules that the field is not its own; an unknown deployment is the caller's 404.
      deployment?.source === "internal_source" ? Effect.asVoid(uploads.open(tenantId, deploymentId, path)) : Effect.void
    )
  }

  /** The deployment's next revision (CREATING) and the deployment pointing at it. */
  const newRevision = ({ deployment, sourceConfig, sourceRevisionConfig, secrets, imageVersion }: NewRevisionWrite): NewRevisionChange => {
    const at = now()
    const revision: NewRevision = {
      id: randomUUID(),
      tenant_id: deployment.tenant_id,
      deployment_id: deployment.id,
      seq: deployment.revision_seq + 1,
      source: deployment.source,
      status: "CREATING",
      status_message: null,
      source_revision_config: sourceRevisionConfig,
      secrets,
      deployed_at: null,
      created_at: at,
      updated_at: at
    }
    const updated: DeploymentRecord = {
      ...deployment,
      source_config: sourceConfig,
      source_revision_config: sourceRevisionConfig,
      secrets,
      image_version: imageVersion,
      status: deploymentStatus({ activeRevisionId: deployment.active_revision_id, maxScale: maxScaleOf(sourceConfig), deleting: false, databaseReady: databaseReadyOf(deployment) }),
      latest_revision_id: revision.id,
      revision_seq: revision.seq,
      updated_at: at
    }
    return { deployment: updated, revision }
  }

  /**
   * Inside a transaction: supersedes unfinished revisions, adds the next one and points the
   * deployment at it. With `queue` (a push) only the revisions not started yet are superseded: a
   * build under way goes on, and the new revision is built after it (docs/deployments.md).
   */
  const writeNewRevision = (write: NewRevisionWrite, options?: { readonly queue?: boolean }): Effect.Effect<ChangedDeployment<NewRevisionChange>, StoreError> => {
    const change = newRevision(write)
    return Effect.map(deploymentStore.addRevision(change.deployment, change.revision, options), (stopped) => ({ ...change, stopped }))
  }

  /** After the commit: the controller stops what a new revision superseded and rolls it out. */
  const announce = (written: ChangedDeployment): Effect.Effect<void> =>
    written.revision === undefined
      ? controller.revisionsStopped(written.stopped)
      : Effect.andThen(controller.revisionsStopped(written.stopped), controller.revisionCreated(written.deployment, written.revision, written.revision.secrets))

  return {
    transaction,
    deploymentStore,
    revisionStore,
    listenerStore,
    integrationStore,
    controller,
    registry,
    uploads,
    box,
    sealSecrets,
    storedOf,
    mustGetDeployment,
    deletingConflict,
    foreignImage,
    checkTarball,
    newRevision,
    writeNewRevision,
    announce,
    maxScaleOf
  }
})

export type DeploymentWrites = Effect.Success<typeof makeDeploymentWrites>
