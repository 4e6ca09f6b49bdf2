/**
 * The `simulated` deployment driver: nothing runs; each revision walks the core's happy path,
 * spending `stepMs` in every state (SLIPWAY_REVISION_STEP_MS). It is what the server uses where
 * no real runtime is available, and what tests use to exercise the control plane quickly.
 *
 * One fiber serves every revision: it sleeps (on the Effect clock, so tests drive it with
 * `TestClock`) until the earliest step is due, then reports every due step in one batch (at most
 * `batch`, so a restart with tens of thousands of resumed revisions lets requests in between
 * slices). What the controller reports as not applied (superseded meanwhile) is dropped.
 * A new revision wakes the fiber only when it is due before the fiber's next wake-up: each wake
 * scans every tracked revision, and with revisions parked for long steps that scan (and the
 * sleep it re-arms) was paid by every request that creates a revision.
 */
import { Clock, Effect, Latch, Layer } from "effect"
import { nextStatus, type RevisionStatus, type Source } from "../../../core/index.ts"
import { millisOf } from "../../module.ts"
import { DeploymentDriver, DeploymentObservations, type Observation } from "../Driver.ts"

/** The simulated step after `status`: the next state of the happy path, or null when the revision is done. */
export const simulatedStep = (status: RevisionStatus, source: Source): { readonly status: RevisionStatus; readonly message: string | null } | null => {
  const next = nextStatus(status, source)
  return next === null ? null : { status: next, message: next === "DEPLOYED" ? "Deployed" : null }
}

/** Steps applied per report at most; see the module comment. */
export const DEFAULT_BATCH = 512

/**
 * What the fiber keeps of a revision: its ids and source, not the whole work (its
 * configs and secrets). Revisions can stay here for a long time (the bench parks thousands for an
 * hour), and everything kept is copied out of V8's young generation and later marked again.
 */
interface Tracked {
  readonly tenantId: string
  readonly deploymentId: string
  readonly revisionId: string
  readonly source: Source
  status: RevisionStatus
  due: number
}

export interface SimulatedOptions {
  /** Time spent in each revision state. */
  readonly stepMs: number
  readonly batch?: number
}

export const makeSimulatedDriver = ({ stepMs, batch = DEFAULT_BATCH }: SimulatedOptions) =>
  Effect.gen(function* () {
    const tracked = new Map<string, Tracked>()
    const wake = Latch.makeUnsafe(false)
    /** When the fiber, asleep, wakes up by itself; -Infinity while it is awake (it scans again before sleeping). */
    let sleepingUntil = -Infinity
    const channel = yield* DeploymentObservations

    const dueNow = (nowMs: number): Array<Tracked> => {
      const due: Array<Tracked> = []
      for (const item of tracked.values()) if (item.due <= nowMs && due.push(item) >= batch) break
      return due
    }
    const earliest = (): number => {
      let next = Infinity
      for (const item of tracked.values()) if (item.due < next) next = item.due
      return next
    }

    const tick = Effect.gen(function* () {
      const nowMs = yield* Clock.currentTimeMillis
      const due = dueNow(nowMs)
      if (due.length === 0) {
        const next = earliest()
        Latch.closeUnsafe(wake)
        sleepingUntil = next
        if (next === Infinity) yield* wake.await
        else yield* Effect.raceFirst(Effect.sleep(next - nowMs), wake.await)
        sleepingUntil = -Infinity
        return
      }
      const steps: Array<{ readonly item: Tracked; readonly observation: Observation | null }> = due.map((item) => {
        const step = simulatedStep(item.status, item.source)
        return {
          item,
          observation: step && {
            tenantId: item.tenantId,
            deploymentId: item.deploymentId,
            revisionId: item.revisionId,
            from: item.status,
            to: step.status,
            message: step.message
          }
        }
      })
      const observations = steps.flatMap((step) => (step.observation ? [step.observation] : []))
      const applied = observations.length > 0 ? yield* channel.report(observations) : []
      let index = 0
      for (const { item, observation } of steps) {
        if (!observation || !applied[index++]) {
          tracked.delete(item.revisionId)
          continue
        }
        if (simulatedStep(observation.to, item.source) === null) tracked.delete(item.revisionId)
        else {
          item.status = observation.to
          item.due = nowMs + stepMs
        }
      }
      // Let waiting requests in before the next slice.
      yield* Effect.yieldNow
    })

    yield* Effect.forkScoped(Effect.forever(tick))

    return DeploymentDriver.of({
      name: "simulated",
      apply: (work) =>
        Effect.sync(() => {
          const due = millisOf(work.since) + stepMs
          const { tenantId, deploymentId, revisionId, source, status } = work
          tracked.set(revisionId, { tenantId, deploymentId, revisionId, source, status, due })
          // Due no earlier than the fiber's own wake-up: it finds this revision then.
          if (due < sleepingUntil) Latch.openUnsafe(wake)
        }),
      stop: (revisionId) => Effect.sync(() => void tracked.delete(revisionId)),
      // Nothing runs: a DEPLOYED revision serves nothing to bring back.
      serve: () => Effect.void,
      awaitServing: () => Effect.void,
      teardown: (_tenantId, _deploymentId, since) =>
        Effect.flatMap(Clock.currentTimeMillis, (nowMs) => Effect.sleep(Math.max(0, Date.parse(since) + stepMs - nowMs))),
      release: () => Effect.void
    })
  })

export const SimulatedDeploymentDriver = (options: SimulatedOptions) => Layer.effect(DeploymentDriver, makeSimulatedDriver(options))
