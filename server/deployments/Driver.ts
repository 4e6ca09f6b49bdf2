/**
 * The deployment runtime's seam. A driver only does the work (`apply`, `stop`, `serve`,
 * `teardown`) and reports what it observes on the `DeploymentObservations` channel; the
 * controller (`controller.ts`) consumes the channel, checks each observation against the core's
 * state machine and persists it. Drivers: `simulated` (a timer, `drivers/simulated.ts`), `local`
 * (images run under bubblewrap, `drivers/local.ts`) and later `kubernetes`; `SLIPWAY_RUNTIME`
 * selects one.
 */
import { Context, Data, Deferred, Effect, Layer, Queue } from "effect"
import type { RevisionStatus, Secret, Source, SourceConfig, SourceRevisionConfig } from "../../core/index.ts"

/** A revision to roll out, from the state it is in now. */
export interface RevisionWork {
  readonly tenantId: string
  readonly deploymentId: string
  readonly deploymentName: string
  readonly revisionId: string
  readonly source: Source
  readonly status: RevisionStatus
  readonly sourceConfig: SourceConfig
  readonly sourceRevisionConfig: SourceRevisionConfig
  /** Opens the secrets the revision runs with (plaintext: never log them); throws when they cannot be opened. */
  readonly secrets: () => ReadonlyArray<Secret>
  /** When it entered `status` (ISO 8601). */
  readonly since: string
}

/**
 * A transition the driver saw a revision make. `from === to` reports progress within a state:
 * only `message` (the revision's `status_message`) changes.
 */
export interface Observation {
  readonly tenantId: string
  readonly deploymentId: string
  readonly revisionId: string
  readonly from: RevisionStatus
  readonly to: RevisionStatus
  readonly message: string | null
  /** The commit the revision's build checked out: recorded as its `repo_commit_sha` with the move. */
  readonly commitSha?: string | undefined
}

/**
 * What a driver saw of a deployment's database and cache (a runtime that provisions them):
 * the deployment is `AWAITING_DATABASE` until they are `ready`.
 */
export interface DatabaseObservation {
  readonly _tag: "Database"
  readonly tenantId: string
  readonly deploymentId: string
  readonly ready: boolean
}

/** A batch of observations on the channel, and where the controller answers when the driver waits for it. */
export interface ObservationReport {
  readonly observations: ReadonlyArray<Observation | DatabaseObservation>
  /** Completed by the controller with, per observation, whether it was applied; undefined: nobody waits. */
  readonly applied: Deferred.Deferred<ReadonlyArray<boolean>> | undefined
}

/**
 * The channel from a driver to the controller (one queue). The controller persists what it
 * takes in one transaction; where the driver must know whether an observation was applied (false:
 * the revision had moved on, e.g. superseded meanwhile), it `report`s and waits for the answer.
 */
export class DeploymentObservations extends Context.Service<
  DeploymentObservations,
  {
    /** Sends a batch and waits for the controller's answer, per observation. */
    readonly report: (observations: ReadonlyArray<Observation | DatabaseObservation>) => Effect.Effect<ReadonlyArray<boolean>>
    /** Sends a batch without waiting (progress within a state, a database that became ready). */
    readonly tell: (observations: ReadonlyArray<Observation | DatabaseObservation>) => Effect.Effect<void>
    /** The controller's side: every report waiting, at least one (waits for one). */
    readonly take: Effect.Effect<ReadonlyArray<ObservationReport>>
  }
>()("slipway/DeploymentObservations") {}

export const DeploymentObservationsLive = Layer.effect(
  DeploymentObservations,
  Effect.gen(function* () {
    const queue = yield* Effect.acquireRelease(Queue.unbounded<ObservationReport>(), Queue.shutdown)
    return DeploymentObservations.of({
      report: (observations) =>
        Effect.flatMap(Deferred.make<ReadonlyArray<boolean>>(), (applied) => Effect.andThen(Queue.offer(queue, { observations, applied }), Deferred.await(applied))),
      tell: (observations) => Effect.asVoid(Queue.offer(queue, { observations, applied: undefined })),
      take: Queue.takeAll(queue)
    })
  })
)

export class DeploymentDriver extends Context.Service<
  DeploymentDriver,
  {
    readonly name: string
    /** Rolls a revision out from its current state (a new revision, or one resumed after a restart). */
    readonly apply: (work: RevisionWork) => Effect.Effect<void>
    /** Stops a revision's rollout and whatever it runs. */
    readonly stop: (revisionId: string) => Effect.Effect<void>
    /**
     * Makes DEPLOYED revisions serve again without a new revision or a state change: at start
     * the active revision of every deployment (`restore: true`: the driver may also remove what
     * it runs for any other revision, before the unfinished ones are applied), and a redeployed
     * revision (`restore: false`). Completes once the work is under way.
     */
    readonly serve: (active: ReadonlyArray<RevisionWork>, options: { readonly restore: boolean }) => Effect.Effect<void>
    /**
     * Completes once the deployment's URL routes new requests to this revision's replicas (at
     * once when it already does, or for a driver that serves nothing); fails with why it will not
     * (its run failed or was stopped first, or nothing runs it). What a redeploy waits for.
     */
    readonly awaitServing: (work: RevisionWork) => Effect.Effect<void, ServeError>
    /** Removes everything a deployment runs; completes once it is gone. */
    readonly teardown: (tenantId: string, deploymentId: string, since: string) => Effect.Effect<void>
    /**
     * Another replica serves the deployment now (several replicas): what this one runs of its
     * active revision finishes its requests and stops, in the background; its data (the
     * database, the logs) stays. Unfinished revisions are not touched (their leases decide).
     */
    readonly release: (deploymentId: string) => Effect.Effect<void>
  }
>()("slipway/DeploymentDriver") {}

/** A revision the driver was asked to serve does not (`awaitServing`), and why. */
export class ServeError extends Data.TaggedError("ServeError")<{ readonly message: string }> {}
