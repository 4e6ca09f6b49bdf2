/**
 * Fault injection for tests, by substituting a service (`startServer({ substitute })`): each
 * Layer here wraps the server's own service of the same tag and changes what it does for the
 * inputs a test marks. Production code has no such hooks.
 *
 * - `markedDeploymentFailures`: a revision whose `image_uri` (external_container) or
 *   `graph_config_path` / `repo_ref` (gitrepo) contains `fail-create`, `fail-build` or
 *   `fail-deploy` fails at that step: CREATING becomes CREATE_FAILED; BUILDING becomes
 *   BUILD_FAILED (external_container has no build state: there QUEUED does); DEPLOYING becomes
 *   DEPLOY_FAILED. One whose image contains `fail-serve` deploys, but cannot be served again
 *   (a redeploy's `awaitServing` fails).
 * - `markedSandboxFailures`: a box whose template image contains `fail-start` fails to start (its
 *   image cannot be pulled: the kind `ImagePull`), one whose image contains `never-ready` stays
 *   provisioning; a snapshot whose image contains `fail-pull` fails to pull.
 * - `heldQuotaDecisions(ms)`: every quota decision (reading the organization's usage, inside the
 *   create or resize transaction) is held open `ms` before it goes on, so a race test shows that
 *   the transaction, not luck, keeps the quota.
 */
import { Context, Deferred, Effect, Layer, Queue } from "effect"
import { boxFailure, type RevisionStatus, type Source, type SourceRevisionConfig } from "../../core/index.ts"
import { type DatabaseObservation, DeploymentDriver, DeploymentObservations, type Observation, ServeError } from "../../server/deployments/Driver.ts"
import { ImageError, SandboxDriver, SandboxObservations } from "../../server/sandboxes/Driver.ts"
import { QuotaStore } from "../../server/store/QuotaStore.ts"

interface Failure {
  readonly marker: string
  /** The state the revision is in when it fails. */
  readonly at: RevisionStatus
  readonly becomes: RevisionStatus
  readonly message: string
}

const failuresOf = (source: Source): ReadonlyArray<Failure> => [
  { marker: "fail-create", at: "CREATING", becomes: "CREATE_FAILED", message: "Revision could not be created (fail-create marker)" },
  {
    marker: "fail-build",
    at: source === "gitrepo" ? "BUILDING" : "QUEUED",
    becomes: "BUILD_FAILED",
    message: source === "gitrepo" ? "Build failed (fail-build marker)" : "Image could not be prepared (fail-build marker)"
  },
  { marker: "fail-deploy", at: "DEPLOYING", becomes: "DEPLOY_FAILED", message: "Deploy failed (fail-deploy marker)" }
]

const markedFields = (source: Source, config: SourceRevisionConfig): ReadonlyArray<string | null | undefined> =>
  source === "external_container" ? [config.image_uri] : [config.graph_config_path, config.repo_ref]

/** The failure a revision's config asks for, if any (the first marker found wins). */
export const markedFailure = (source: Source, config: SourceRevisionConfig): Failure | undefined =>
  failuresOf(source).find((failure) => markedFields(source, config).some((field) => field?.includes(failure.marker) === true))

/**
 * The server's deployment driver and its observation channel, except that a marked revision's
 * step out of the failing state reaches the controller as the failure instead: the driver's
 * `apply` records the mark, the channel's `take` (the controller's side) rewrites the
 * observation. The controller then refuses the driver's later steps of it, which ends it in the
 * driver.
 */
export const markedDeploymentFailures = Layer.effectContext(
  Effect.gen(function* () {
    const driver = yield* DeploymentDriver
    const channel = yield* DeploymentObservations
    const marked = new Map<string, Failure>()
    const failed = (observation: Observation | DatabaseObservation): Observation | DatabaseObservation => {
      if ("_tag" in observation) return observation
      const failure = marked.get(observation.revisionId)
      if (failure === undefined || observation.from !== failure.at) return observation
      marked.delete(observation.revisionId)
      return { ...observation, to: failure.becomes, message: failure.message }
    }
    return Context.make(
      DeploymentDriver,
      DeploymentDriver.of({
        ...driver,
        apply: (work) =>
          Effect.suspend(() => {
            const failure = markedFailure(work.source, work.sourceRevisionConfig)
            if (failure) marked.set(work.revisionId, failure)
            return driver.apply(work)
          }),
        stop: (revisionId) => Effect.suspend(() => (marked.delete(revisionId), driver.stop(revisionId))),
        awaitServing: (work) =>
          markedFields(work.source, work.sourceRevisionConfig).some((field) => field?.includes("fail-serve") === true)
            ? Effect.fail(new ServeError({ message: "replica exited (exit code 1) before it was healthy (fail-serve marker)" }))
            : driver.awaitServing(work)
      })
    ).pipe(
      Context.add(
        DeploymentObservations,
        DeploymentObservations.of({
          ...channel,
          take: Effect.map(channel.take, (reports) => reports.map((report) => ({ ...report, observations: report.observations.map(failed) })))
        })
      )
    )
  })
)

/**
 * The server's sandbox driver, except for boxes and snapshots whose image carries a marker: a
 * marked box's start reports it `Failed` on the `SandboxObservations` queue (and waits until the
 * controller applied that, as the simulated driver's start does), a marked snapshot's pull fails.
 */
export const markedSandboxFailures = Layer.effect(
  SandboxDriver,
  Effect.gen(function* () {
    const driver = yield* SandboxDriver
    const observations = yield* SandboxObservations
    return SandboxDriver.of({
      ...driver,
      start: (work) =>
        work.template.image.includes("fail-start")
          ? Effect.flatMap(Deferred.make<void>(), (applied) =>
              Queue.offer(observations, {
                sandboxId: work.sandboxId,
                event: { _tag: "Failed", message: boxFailure("ImagePull", `pull ${work.template.image}: manifest unknown (fail-start marker)`) },
                applied
              }).pipe(Effect.andThen(Deferred.await(applied)))
            )
          : work.template.image.includes("never-ready")
            ? Effect.void
            : driver.start(work),
      prepareImage: (image, registryAuth) =>
        image.includes("fail-pull")
          ? Effect.fail(new ImageError({ message: `image ${image} could not be pulled (fail-pull marker)` }))
          : driver.prepareImage(image, registryAuth)
    })
  })
)

/** Both drivers' marked failures: what the control-plane suites run with (`startTestServer`). */
export const markedFailures = Layer.mergeAll(markedDeploymentFailures, markedSandboxFailures)

/**
 * The server's quota store, except that reading an organization's usage then blocks the
 * process `ms`, between the quota check's read and its write. It blocks rather than sleeps: the SQLite store's transaction relies on the work
 * inside it running within one turn of the event loop (as the server's own store calls do).
 */
export const heldQuotaDecisions = (ms: number) =>
  Layer.effect(
    QuotaStore,
    Effect.map(QuotaStore, (store) =>
      QuotaStore.of({
        ...store,
        organizationUsage: (organizationId) =>
          Effect.tap(store.organizationUsage(organizationId), () => Effect.sync(() => void Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)))
      })
    )
  )
