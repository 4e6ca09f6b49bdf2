/**
 * The deployment runtime's controller: the one place that turns what a driver observes into
 * persisted state. It checks every reported transition against the core's state machine
 * (`canAdvance`), writes a driver's batch in one transaction (a revision moves only if it is
 * still in the state the driver saw, so a revision superseded meanwhile, by this process or
 * another, is simply not moved), activates a revision that reaches DEPLOYED, and finishes
 * deletions once the driver has torn a deployment down (removing its images from the registry
 * and its uploaded tarballs). Nothing is kept only in memory: at start
 * it hands the driver every unfinished revision and pending delete recorded in the store.
 *
 * The driver reports on the `DeploymentObservations` channel; one fiber of the controller takes
 * whatever is waiting, persists it in one transaction and answers the reports that wait. Which
 * revisions this process drives is `RevisionLeases`' business (PostgreSQL: leases shared between
 * replicas; SQLite: one replica that holds everything). Background work (the channel, the lease
 * rounds, deletes) runs in the controller's `FiberSet`, interrupted when its layer closes.
 *
 * With several replicas (docs/replicas.md) each deployment's active revision is served by one
 * replica (`ClusterStore`): this controller serves those its replica owns (at start, those a
 * previous process on its data directory served and those nobody serves), becomes the owner of
 * what its driver deploys or redeploys, gives up (`driver.release`) what another replica took,
 * takes over the deployments of replicas whose lease expired, and routes the URLs of the
 * deployments others serve to them (`DeploymentProxy.setRemote`).
 */
import { Clock, Context, Deferred, Effect, FiberMap, FiberSet, Layer, Option, Schedule, Semaphore } from "effect"
import { activate, canAdvance, databaseReadyOf, deploymentStatus, isTerminal, type Secret } from "../../core/index.ts"
import { ServerEnv } from "../module.ts"
import { DeploymentStore, type DeploymentRecord } from "../store/DeploymentStore.ts"
import { type RevisionRecord, RevisionStore } from "../store/RevisionStore.ts"
import { RevisionLeases } from "../store/RevisionLeases.ts"
import type { StoreError } from "../store/StoreError.ts"
import { Transactions } from "../store/Transactions.ts"
import { type DatabaseObservation, DeploymentDriver, DeploymentObservations, type Observation, type RevisionWork, ServeError } from "./Driver.ts"
import { makeSecretBox } from "../secrets/secrets.ts"
import { Metrics } from "../metrics.ts"
import { Registry } from "../registry/Registry.ts"
import { SourceUploads } from "../uploads/SourceUploads.ts"
import { Replicas } from "../replicas/Replicas.ts"
import { ClusterStore, type DeploymentRef } from "../store/ClusterStore.ts"
import { DeploymentProxy, deploymentUrl } from "./local/proxy.ts"

export class DeploymentController extends Context.Service<
  DeploymentController,
  {
    /** A revision was committed in its first state: roll it out. `secrets` are sealed, as stored. */
    readonly revisionCreated: (deployment: DeploymentRecord, revision: RevisionRecord, secrets: ReadonlyArray<Secret>) => Effect.Effect<void>
    /** The caller's transaction superseded these revisions (SKIPPED or INTERRUPTED): stop their work. */
    readonly revisionsStopped: (revisionIds: ReadonlyArray<string>) => Effect.Effect<void>
    /**
     * A redeploy made this (once DEPLOYED) revision the active one: have it serve again. Completes
     * once the deployment's URL routes to it; fails with why it will not.
     */
    readonly revisionActivated: (tenantId: string, deploymentId: string, revisionId: string) => Effect.Effect<void, ServeError>
    /** The deployment was marked AWAITING_DELETE: tear it down, then remove it. */
    readonly deleteRequested: (tenantId: string, deploymentId: string, since: string) => Effect.Effect<void>
    /**
     * Several replicas: reads which deployments other replicas serve and routes their URLs
     * there (done every third of the lease; also when a URL matches nothing here).
     */
    readonly refreshRoutes: Effect.Effect<void>
  }
>()("slipway/DeploymentController") {}

const retryWhileBusy = <A>(effect: Effect.Effect<A, StoreError>) =>
  Effect.retry(effect, { while: (error) => error.busy, schedule: Schedule.spaced("50 millis"), times: 100 })

export const makeDeploymentController = Effect.gen(function* () {
  const deploymentStore = yield* DeploymentStore
  const revisionStore = yield* RevisionStore
  const { transaction } = yield* Transactions
  const driver = yield* DeploymentDriver
  const channel = yield* DeploymentObservations
  const registry = yield* Registry
  const uploads = yield* SourceUploads
  const { log, config } = yield* ServerEnv
  const box = makeSecretBox(config.secretsKey, config.previousSecretsKeys)
  const background = yield* FiberSet.make()
  // Each replica drives only the revisions it leased (SQLite: the one replica leases them all).
  const leases = yield* RevisionLeases
  const metrics = Option.getOrUndefined(yield* Effect.serviceOption(Metrics))
  /** Revisions this replica leased and handed to its driver. */
  const held = new Set<string>()
  // Several replicas: each active revision is served by one of them (`ClusterStore`); the
  // others route its URL there. One replica (SQLite): this one serves them all.
  const replicas = yield* Replicas
  const cluster = yield* ClusterStore
  const proxy = Option.getOrUndefined(yield* Effect.serviceOption(DeploymentProxy))
  const me = replicas.self.id
  const { publicUrl } = yield* ServerEnv
  /** Deployments whose active revision this replica serves (several replicas), with their tenant. */
  const serving = new Map<string, string>()

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

  /** The database of a deployment became ready (or not): its status follows (core's rule). */
  const persistDatabase = Effect.fnUntraced(function* (observation: DatabaseObservation, nowIso: string) {
    const { tenantId, deploymentId, ready } = observation
    const deployment = yield* deploymentStore.deployment(tenantId, deploymentId)
    if (!deployment || deployment.status === "AWAITING_DELETE") return false
    const status = deploymentStatus({
      activeRevisionId: deployment.active_revision_id,
      maxScale: deployment.source_config.resource_spec?.max_scale,
      deleting: false,
      databaseReady: ready
    })
    if (status === deployment.status) return true
    return yield* deploymentStore.setDeploymentStatus(tenantId, deploymentId, status, nowIso)
  })

  /** One observation, inside the batch's transaction; answers whether it moved the revision. */
  const persist = Effect.fnUntraced(function* (observation: Observation | DatabaseObservation, nowIso: string) {
    if ("_tag" in observation) return yield* persistDatabase(observation, nowIso)
    const { tenantId, deploymentId, revisionId, from, to, message, commitSha } = observation
    const revision = yield* revisionStore.revision(tenantId, deploymentId, revisionId)
    if (!revision || revision.status !== from) return false
    if (from === to) {
      // Progress within a state: only the status message changes.
      if (isTerminal(from) || revision.status_message === message) return !isTerminal(from)
      return yield* revisionStore.advanceRevision(tenantId, revisionId, from, to, message, null, nowIso)
    }
    if (!canAdvance(from, to, revision.source)) {
      log.error("driver reported an impossible transition", { revision_id: revisionId, from, to, driver: driver.name })
      return false
    }
    const deployed = to === "DEPLOYED"
    const moved = yield* revisionStore.advanceRevision(tenantId, revisionId, from, to, message, deployed ? nowIso : null, nowIso)
    if (moved && commitSha !== undefined) yield* revisionStore.recordCommit(tenantId, revisionId, commitSha)
    if (moved && deployed) {
      const deployment = yield* deploymentStore.deployment(tenantId, deploymentId)
      if (deployment && deployment.status !== "AWAITING_DELETE") {
        // This replica's driver deployed it, so this replica serves it from now on.
        if (replicas.shared) yield* cluster.serveDeployment(tenantId, deploymentId, me)
        const { active_revision_id } = activate(revisionId)
        const status = deploymentStatus({
          activeRevisionId: active_revision_id,
          maxScale: deployment.source_config.resource_spec?.max_scale,
          deleting: false,
          databaseReady: databaseReadyOf(deployment) || undefined
        })
        yield* deploymentStore.setDeploymentState(tenantId, deploymentId, status, active_revision_id, nowIso)
      }
    }
    return moved
  })

  /** Persists a batch in one transaction; answers, per observation, whether it was applied. */
  const persistBatch = (batch: ReadonlyArray<Observation | DatabaseObservation>) =>
    retryWhileBusy(
      transaction(
        Effect.suspend(() => {
          const nowIso = new Date().toISOString()
          return Effect.forEach(batch, (observation) => persist(observation, nowIso))
        })
      )
    ).pipe(
      Effect.tap((applied) => (applied.length > 0 ? Effect.sync(() => log.debug("revisions advanced", { revisions: applied.length })) : Effect.void)),
      // Committed: count the status changes (not progress messages within a state).
      Effect.tap((applied) =>
        metrics
          ? Effect.sync(() =>
              batch.forEach((observation, index) => {
                if (applied[index] && !("_tag" in observation) && observation.from !== observation.to) metrics.revisionTransition(observation.from, observation.to)
              })
            )
          : Effect.void
      ),
      Effect.catch((error) =>
        Effect.sync(() => {
          // Nothing moved; a restart resumes these revisions from the store.
          log.error("runtime step failed", { error: error.message })
          return batch.map(() => false)
        })
      ),
      // The driver drops what was not applied; give those leases up too, so the next claim (by
      // any replica) resumes them from their stored state instead of renewing an idle lease.
      // A revision that reached a final state is no longer held (nothing renews it).
      Effect.tap((applied) => {
        const dropped: Array<string> = []
        batch.forEach((observation, index) => {
          if ("_tag" in observation) return
          if (!applied[index]) dropped.push(observation.revisionId)
          else if (isTerminal(observation.to)) held.delete(observation.revisionId)
        })
        for (const id of dropped) held.delete(id)
        // A revision deployed here: this replica serves its deployment; the others route to it
        // (and the one that served it before lets it go) as soon as they hear.
        let deployedHere = false
        batch.forEach((observation, index) => {
          if ("_tag" in observation || !applied[index] || observation.to !== "DEPLOYED" || observation.from === "DEPLOYED") return
          if (replicas.shared) serving.set(observation.deploymentId, observation.tenantId)
          deployedHere = true
        })
        return Effect.andThen(
          dropped.length > 0 ? Effect.ignore(leases.release(dropped)) : Effect.void,
          deployedHere && replicas.shared ? replicas.nudgeAll("deployments") : Effect.void
        )
      })
    )

  /** Takes every report waiting, persists them in one transaction, answers those that wait. */
  const consume = Effect.gen(function* () {
    const reports = yield* channel.take
    const batch = reports.flatMap((report) => report.observations)
    // Even a defect answers every report (nothing applied): no driver waits forever.
    const applied = yield* persistBatch(batch).pipe(
      Effect.catchDefect((defect) => Effect.sync(() => (log.error("runtime step failed", { error: String(defect) }), batch.map(() => false))))
    )
    let offset = 0
    for (const report of reports) {
      const mine = applied.slice(offset, (offset += report.observations.length))
      if (report.applied) yield* Deferred.succeed(report.applied, mine)
    }
  })
  // Running before the driver gets any work: what it reports from the start is taken.
  yield* FiberSet.run(background, Effect.forever(consume))

  const finishDelete = (tenantId: string, deploymentId: string, since: string) =>
    Effect.gen(function* () {
      serving.delete(deploymentId)
      yield* driver.teardown(tenantId, deploymentId, since)
      // What `langgraph deploy` pushed and uploaded goes with it (the registry's blobs at its next garbage collection).
      yield* registry.removeRepository(tenantId, deploymentId).pipe(
        Effect.catch((error) => Effect.sync(() => log.error("deployment images could not be removed from the registry", { deployment_id: deploymentId, error: error.message })))
      )
      yield* uploads.removeDeployment(tenantId, deploymentId)
      yield* retryWhileBusy(
        transaction(
          Effect.gen(function* () {
            const deployment = yield* deploymentStore.deployment(tenantId, deploymentId)
            if (deployment?.status === "AWAITING_DELETE") yield* deploymentStore.deleteDeployment(tenantId, deploymentId)
          })
        )
      )
    }).pipe(Effect.catch((error) => Effect.sync(() => log.error("deployment delete failed", { deployment_id: deploymentId, error: error.message }))))

  /** The work of a stored revision, with the secrets it was created with. */
  const storedWork = Effect.fnUntraced(function* (tenantId: string, deploymentId: string, revisionId: string) {
    const deployment = yield* deploymentStore.deployment(tenantId, deploymentId)
    const revision = deployment && (yield* revisionStore.revision(tenantId, deploymentId, revisionId))
    if (!deployment || !revision) return undefined
    const secrets = (yield* revisionStore.revisionSecrets(tenantId, revisionId)) ?? deployment.secrets
    return workOf(deployment, revision, secrets)
  })

  /** Hands revisions (as stored) to the driver, reading each deployment once, each with its own secrets. */
  const resume = Effect.fnUntraced(function* (revisions: ReadonlyArray<RevisionRecord>) {
    const deployments = new Map<string, DeploymentRecord | undefined>()
    for (const revision of revisions) {
      const key = `${revision.tenant_id}/${revision.deployment_id}`
      if (!deployments.has(key)) deployments.set(key, yield* deploymentStore.deployment(revision.tenant_id, revision.deployment_id))
      const deployment = deployments.get(key)
      if (!deployment) continue
      const secrets = (yield* revisionStore.revisionSecrets(revision.tenant_id, revision.id)) ?? deployment.secrets
      yield* driver.apply(workOf(deployment, revision, secrets))
    }
  })

  const startedAt = yield* Clock.currentTimeMillis

  /** The active revisions of these deployments (those that have one), as work for the driver. */
  const activeWorkOf = Effect.fnUntraced(function* (refs: ReadonlyArray<DeploymentRef> | undefined) {
    const wanted = refs && new Set(refs.map((ref) => ref.deployment_id))
    const work: Array<RevisionWork> = []
    for (const item of yield* revisionStore.activeRevisions()) {
      if (wanted && !wanted.has(item.deployment_id)) continue
      const one = yield* storedWork(item.tenant_id, item.deployment_id, item.revision_id)
      if (one) work.push(one)
    }
    return work
  })

  // The active revision of every deployment this replica serves runs again (a driver that runs
  // something brings it back or re-attaches), before unfinished revisions are resumed. Several
  // replicas: the deployments it served before (a previous process on its data directory), and
  // those nobody serves or whose replica stopped answering.
  let mineAtStart: ReadonlyArray<DeploymentRef> | undefined
  if (replicas.shared) {
    yield* Effect.orDie(cluster.claimDeployments(me, 100_000))
    mineAtStart = yield* Effect.orDie(cluster.deploymentsOf(me))
    for (const ref of mineAtStart) serving.set(ref.deployment_id, ref.tenant_id)
  }
  yield* driver.serve(yield* Effect.orDie(activeWorkOf(mineAtStart)), { restore: true })

  // Resume what a previous process left unfinished (or was killed in the middle of).
  const unfinished = yield* Effect.orDie(leases.claim(10_000))
  for (const revision of unfinished) held.add(revision.id)
  yield* Effect.orDie(resume(unfinished))
  const pending = yield* Effect.orDie(deploymentStore.pendingDeletes())
  /** A delete under way, by deployment id: asking again while it runs does nothing. */
  const deletes = yield* FiberMap.make<string>()
  const runDelete = (tenantId: string, deploymentId: string, since: string) =>
    Effect.asVoid(FiberMap.run(deletes, deploymentId, finishDelete(tenantId, deploymentId, since), { onlyIfMissing: true }))
  for (const item of pending) yield* runDelete(item.tenant_id, item.id, item.updated_at)
  if (unfinished.length + pending.length > 0) log.info("runtime resumed", { revisions: unfinished.length, deletes: pending.length, driver: driver.name })

  /** Routes the URLs of deployments other replicas serve to them; forgets routes of deployments served nowhere else any more. */
  const routesLock = yield* Semaphore.make(1)
  const refreshRoutes = routesLock.withPermits(1)(
    Effect.gen(function* () {
      // Only where requests can be forwarded (the local runtime requires the shared secret; the simulated one serves no URL).
      if (!replicas.shared || proxy === undefined || replicas.forwarder === undefined) return
      const remote = yield* cluster.remoteDeployments(me)
      const before = yield* proxy.remotes
      const now = new Set<string>()
      for (const item of remote) {
        if (serving.has(item.deployment_id)) continue
        now.add(item.deployment_id)
        const current = before.get(item.deployment_id)
        if (current?.id === item.replica.id && current.url === item.replica.internal_url) continue
        yield* proxy
          .setRemote(item.deployment_id, { name: item.name, url: deploymentUrl(publicUrl, item.name, item.custom_url) }, { id: item.replica.id, url: item.replica.internal_url })
          .pipe(Effect.catch((error) => Effect.sync(() => log.warn("deployment URL not routed", { deployment_id: item.deployment_id, error: error.message }))))
      }
      // Deleted, or served here now (the driver set its targets): not forwarded any more.
      for (const key of before.keys()) if (!now.has(key) && !serving.has(key)) yield* proxy.remove(key)
    })
  ).pipe(Effect.catch((error) => Effect.sync(() => log.warn("deployment routes not refreshed", { error: error.message }))))

  /**
   * Several replicas: this replica serves what the store says it serves. Deployments it lost (a
   * newer revision deployed elsewhere, a redeploy elsewhere, a delete) are routed away and
   * released (or torn down when deleted); those of replicas that stopped answering are claimed
   * and served here, with no new revision.
   */
  const ownership = Effect.gen(function* () {
    if (!replicas.shared) return
    const mine = new Map((yield* cluster.deploymentsOf(me)).map((ref) => [ref.deployment_id, ref.tenant_id]))
    const lost = [...serving].filter(([id]) => !mine.has(id))
    for (const [id] of lost) serving.delete(id)
    const claimed = yield* cluster.claimDeployments(me, 64)
    for (const ref of claimed) mine.set(ref.deployment_id, ref.tenant_id)
    const gained = [...mine].filter(([id]) => !serving.has(id)).map(([deployment_id, tenant_id]) => ({ deployment_id, tenant_id }))
    for (const ref of gained) serving.set(ref.deployment_id, ref.tenant_id)
    // Where the others are first: requests for what this replica lost go to its new replica.
    yield* refreshRoutes
    for (const [id, tenantId] of lost) {
      const deployment = yield* deploymentStore.deployment(tenantId, id)
      if (deployment === undefined || deployment.status === "AWAITING_DELETE") yield* runDelete(tenantId, id, deployment?.updated_at ?? new Date().toISOString())
      else yield* driver.release(id)
    }
    if (gained.length > 0) {
      const work = yield* activeWorkOf(gained)
      yield* driver.serve(work, { restore: false })
      log.info("deployments taken over", { deployments: work.length, replica: me })
      yield* replicas.nudgeAll("deployments")
    }
  })

  // Every third of a lease: renew ours (a revision taken over meanwhile is stopped here), then
  // claim what nobody holds: new revisions of any replica, and those of replicas that died.
  // Deletes a dead replica left are finished by whoever sees them a lease later.
  const every = Math.max(50, Math.floor(leases.leaseMs / 3))
  const round = Effect.gen(function* () {
    yield* ownership
    const mine = [...held]
    const kept = new Set(yield* leases.renew(mine))
    for (const id of mine) {
      if (kept.has(id)) continue
      held.delete(id)
      yield* driver.stop(id)
    }
    const claimed = yield* leases.claim(512)
    for (const revision of claimed) held.add(revision.id)
    yield* Effect.onError(resume(claimed), () =>
      Effect.suspend(() => {
        // Not handed to the driver: let the next round (of any replica) claim them again.
        for (const revision of claimed) held.delete(revision.id)
        return Effect.ignore(leases.release(claimed.map((revision) => revision.id)))
      })
    )
    if (claimed.length > 0) log.info("revisions claimed", { revisions: claimed.length, owner: leases.owner })
    const nowMs = yield* Clock.currentTimeMillis
    const staleBefore = new Date(nowMs - leases.leaseMs).toISOString()
    if (nowMs - startedAt > leases.leaseMs) {
      for (const item of yield* deploymentStore.pendingDeletes()) if (item.updated_at < staleBefore) yield* runDelete(item.tenant_id, item.id, item.updated_at)
    }
  }).pipe(Effect.catch((error) => Effect.sync(() => log.warn("lease round failed", { error: error.message }))))
  yield* FiberSet.run(background, round.pipe(Effect.delay(every), Effect.repeat(Schedule.spaced(every))))
  if (replicas.shared) {
    yield* refreshRoutes
    // Another replica deployed, redeployed or took over a deployment: look now, not at the next round.
    yield* replicas.listen("deployments", Effect.andThen(Effect.ignore(ownership), refreshRoutes))
  }
  // On shutdown, give the leases and the deployments served here up so another replica takes them at once.
  yield* Effect.addFinalizer(() =>
    Effect.andThen(
      Effect.ignore(leases.release([...held])),
      replicas.shared ? Effect.andThen(Effect.ignore(cluster.releaseDeployments(me, [...serving.keys()])), replicas.nudgeAll("deployments")) : Effect.void
    )
  )

  return DeploymentController.of({
    revisionCreated: (deployment, revision, secrets) =>
      Effect.flatMap(
        Effect.orElseSucceed(leases.claimOne(revision.tenant_id, revision.id), () => false),
        (mine) => (mine ? (held.add(revision.id), driver.apply(workOf(deployment, revision, secrets))) : Effect.void)
      ),
    revisionsStopped: (revisionIds) => Effect.forEach(revisionIds, (id) => (held.delete(id), driver.stop(id)), { discard: true }),
    revisionActivated: (tenantId, deploymentId, revisionId) =>
      storedWork(tenantId, deploymentId, revisionId).pipe(
        // A redeploy runs on the replica that received it: it serves the deployment from now on.
        Effect.tap((work) =>
          work && replicas.shared
            ? Effect.andThen(cluster.serveDeployment(tenantId, deploymentId, me), Effect.sync(() => void serving.set(deploymentId, tenantId)))
            : Effect.void
        ),
        Effect.mapError((error) => new ServeError({ message: `its record could not be read or written: ${error.message}` })),
        Effect.flatMap((work) =>
          work
            ? Effect.andThen(
                driver.serve([work], { restore: false }),
                Effect.andThen(replicas.shared ? replicas.nudgeAll("deployments") : Effect.void, driver.awaitServing(work))
              )
            : Effect.void
        ),
        Effect.tapError((error) => Effect.sync(() => log.warn("redeployed revision does not serve", { revision_id: revisionId, error: error.message })))
      ),
    deleteRequested: (tenantId, deploymentId, since) =>
      // Served by another replica: it tears down what it runs when it hears (now, if it answers).
      Effect.andThen(runDelete(tenantId, deploymentId, since), replicas.shared && !serving.has(deploymentId) ? replicas.nudgeAll("deployments") : Effect.void),
    refreshRoutes
  })
})

export const DeploymentControllerLive = Layer.effect(DeploymentController, makeDeploymentController)
