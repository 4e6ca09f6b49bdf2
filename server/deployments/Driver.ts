/**
 * The deployment runtime's seam. A driver only does the work (`apply`, `stop`, `teardown`) and
 * reports what it observes; the controller (`controller.ts`) checks each observation against the
 * core's state machine and persists it. Drivers: `simulated` (a timer, `drivers/simulated.ts`),
 * `local` (images run under bubblewrap) and later `kubernetes`; `SLIPWAY_RUNTIME` selects one.
 */
import { Context, type Effect } from "effect"
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

/**
 * Where a driver reports: the controller persists a batch in one transaction and answers, per
 * observation, whether it was applied (false: the revision had moved on, e.g. superseded).
 */
export type ObservationSink = (batch: ReadonlyArray<Observation | DatabaseObservation>) => Effect.Effect<ReadonlyArray<boolean>>

export class DeploymentDriver extends Context.Service<
  DeploymentDriver,
  {
    readonly name: string
    /** Registers where observations go; called once by the controller before any work. */
    readonly observe: (sink: ObservationSink) => Effect.Effect<void>
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
    /** Removes everything a deployment runs; completes once it is gone. */
    readonly teardown: (tenantId: string, deploymentId: string, since: string) => Effect.Effect<void>
  }
>()("slipway/DeploymentDriver") {}

