/**
 * The deployment runtime's controller: the one place that turns what a driver observes into
 * persisted state. It checks every reported transition against the core's state machine
 * (`canAdvance`), writes a driver's batch in one transaction (a revision moves only if it is
 * still in the state the driver saw, so a revision superseded meanwhile, by this process or
 * another, is simply not moved), activates a revision that reaches DEPLOYED, and finishes
 * deletions once the driver has torn a deployment down. Nothing is kept only in memory: at start
 * it hands the driver every unfinished revision and pending delete recorded in the store.
 */
import { Context, Effect, FiberSet, Layer, Schedule } from "effect"
import { activate, canAdvance, deploymentStatus, type Secret } from "../../core/index.ts"
import { ServerEnv } from "../module.ts"
import { DeploymentStore, type DeploymentRecord, type RevisionRecord } from "../store/DeploymentStore.ts"
import type { StoreError } from "../store/StoreError.ts"
import { DeploymentDriver, type Observation, type RevisionWork } from "./Driver.ts"
import { makeSecretBox } from "./secrets.ts"

export class DeploymentController extends Context.Service<
  DeploymentController,
  {
    /** A revision was committed in its first state: roll it out. `secrets` are sealed, as stored. */
    readonly revisionCreated: (deployment: DeploymentRecord, revision: RevisionRecord, secrets: ReadonlyArray<Secret>) => Effect.Effect<void>
    /** The caller's transaction superseded these revisions (SKIPPED or INTERRUPTED): stop their work. */
    readonly revisionsStopped: (revisionIds: ReadonlyArray<string>) => Effect.Effect<void>
    /** The deployment was marked AWAITING_DELETE: tear it down, then remove it. */
    readonly deleteRequested: (tenantId: string, deploymentId: string, since: string) => Effect.Effect<void>
  }
>()("slipway/DeploymentController") {}

const retryWhileBusy = <A>(effect: Effect.Effect<A, StoreError>) =>
  Effect.retry(effect, { while: (error) => error.busy, schedule: Schedule.spaced("50 millis"), times: 100 })

export const makeDeploymentController = Effect.gen(function* () {
  const store = yield* DeploymentStore
  const driver = yield* DeploymentDriver
  const { log, config } = yield* ServerEnv
  const box = makeSecretBox(config.secretsKey, config.previousSecretsKeys)
  const background = yield* FiberSet.make()

  const openSecrets = (sealed: ReadonlyArray<Secret>) => sealed.map(({ name, value }) => ({ name, value: box.open(value) }))

  const workOf = (deployment: DeploymentRecord, revision: RevisionRecord, secrets: ReadonlyArray<Secret>): RevisionWork => ({
    tenantId: revision.tenant_id,
    deploymentId: revision.deployment_id,
    deploymentName: deployment.name,
    revisionId: revision.id,
    source: revision.source,
    status: revision.status,
    sourceConfig: deployment.source_config,
    sourceRevisionConfig: revision.source_revision_config,
    secrets: () => openSecrets(secrets),
    since: revision.updated_at
  })

  /** One observation, inside the batch's transaction; answers whether it moved the revision. */
  const persist = (observation: Observation, nowIso: string) =>
    Effect.gen(function* () {
      const { tenantId, deploymentId, revisionId, from, to, message } = observation
      const revision = yield* store.revision(tenantId, deploymentId, revisionId)
      if (!revision || revision.status !== from) return false
      if (!canAdvance(from, to, revision.source)) {
        log.error("driver reported an impossible transition", { revision_id: revisionId, from, to, driver: driver.name })
        return false
      }
      const deployed = to === "DEPLOYED"
      const moved = yield* store.advanceRevision(tenantId, revisionId, from, to, message, deployed ? nowIso : null, nowIso)
      if (moved && deployed) {
        const deployment = yield* store.deployment(tenantId, deploymentId)
        if (deployment && deployment.status !== "AWAITING_DELETE") {
          const { active_revision_id } = activate(revisionId)
          const status = deploymentStatus({
            activeRevisionId: active_revision_id,
            maxScale: deployment.source_config.resource_spec?.max_scale,
            deleting: false
          })
          yield* store.setDeploymentState(tenantId, deploymentId, status, active_revision_id, nowIso)
        }
      }
      return moved
    })

  yield* driver.observe((batch) =>
    retryWhileBusy(
      store.transaction(
        Effect.suspend(() => {
          const nowIso = new Date().toISOString()
          return Effect.forEach(batch, (observation) => persist(observation, nowIso))
        })
      )
    ).pipe(
      Effect.tap((applied) => (applied.length > 0 ? Effect.sync(() => log.debug("revisions advanced", { revisions: applied.length })) : Effect.void)),
      Effect.catch((error) =>
        Effect.sync(() => {
          // Nothing moved; a restart resumes these revisions from the store.
          log.error("runtime step failed", { error: error.message })
          return batch.map(() => false)
        })
      )
    )
  )

  const finishDelete = (tenantId: string, deploymentId: string, since: string) =>
    Effect.gen(function* () {
      yield* driver.teardown(tenantId, deploymentId, since)
      yield* retryWhileBusy(
        store.transaction(
          Effect.gen(function* () {
            const deployment = yield* store.deployment(tenantId, deploymentId)
            if (deployment?.status === "AWAITING_DELETE") yield* store.deleteDeployment(tenantId, deploymentId)
          })
        )
      )
    }).pipe(Effect.catch((error) => Effect.sync(() => log.error("deployment delete failed", { deployment_id: deploymentId, error: error.message }))))

  // Resume what a previous process left unfinished (or was killed in the middle of).
  const unfinished = yield* Effect.orDie(store.inProgressRevisions())
  const deployments = new Map<string, DeploymentRecord | undefined>()
  for (const revision of unfinished) {
    const key = `${revision.tenant_id}/${revision.deployment_id}`
    if (!deployments.has(key)) deployments.set(key, yield* Effect.orDie(store.deployment(revision.tenant_id, revision.deployment_id)))
    const deployment = deployments.get(key)
    if (deployment) yield* driver.apply(workOf(deployment, revision, deployment.secrets))
  }
  const pending = yield* Effect.orDie(store.pendingDeletes())
  for (const item of pending) yield* FiberSet.run(background, finishDelete(item.tenant_id, item.id, item.updated_at))
  if (unfinished.length + pending.length > 0) log.info("runtime resumed", { revisions: unfinished.length, deletes: pending.length, driver: driver.name })

  return DeploymentController.of({
    revisionCreated: (deployment, revision, secrets) => driver.apply(workOf(deployment, revision, secrets)),
    revisionsStopped: (revisionIds) => Effect.forEach(revisionIds, (id) => driver.stop(id), { discard: true }),
    deleteRequested: (tenantId, deploymentId, since) => Effect.asVoid(FiberSet.run(background, finishDelete(tenantId, deploymentId, since)))
  })
})

export const DeploymentControllerLive = Layer.effect(DeploymentController, makeDeploymentController)
