/**
 * The deployment `Driver` conformance suite: what every driver must do, run against each one.
 * A driver reports transitions on the `DeploymentObservations` channel; this suite plays the
 * controller, taking every report and answering each observation as applied (or not, to show the
 * driver lets a superseded revision go).
 */
import { randomUUID } from "node:crypto"
import { expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Exit, type Scope } from "effect"
import type { RevisionStatus } from "../../core/index.ts"
import { DeploymentDriver, DeploymentObservations, type Observation, type RevisionWork } from "../../server/deployments/Driver.ts"

export interface DriverSuiteOptions {
  /** Lets time pass (TestClock for the simulated driver, real time for a real one). */
  readonly advance: (millis: number) => Effect.Effect<void>
  /** An image (or config) the driver brings to DEPLOYED. */
  readonly healthyImage: string
  /** An image the driver fails with DEPLOY_FAILED or BUILD_FAILED. */
  readonly failingImage: string
  /** Enough time for a revision to finish. */
  readonly settleMs: number
}

const work = (image: string, sinceMs: number, status: RevisionStatus = "CREATING"): RevisionWork => ({
  tenantId: randomUUID(),
  deploymentId: randomUUID(),
  deploymentName: `suite-${randomUUID().slice(0, 8)}`,
  revisionId: randomUUID(),
  source: "external_container",
  status,
  sourceConfig: {},
  sourceRevisionConfig: { image_uri: image },
  secrets: () => [],
  since: new Date(sinceMs).toISOString()
})

/** Plays the controller (until the scope closes): records observations and answers `applied(observation)`. */
const recording = (applied: (observation: Observation) => boolean = () => true) =>
  Effect.gen(function* () {
    const driver = yield* DeploymentDriver
    const channel = yield* DeploymentObservations
    const seen: Array<Observation> = []
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.gen(function* () {
          for (const report of yield* channel.take) {
            // A driver that provisions databases also reports them; this suite looks at revisions.
            seen.push(...report.observations.filter((item): item is Observation => !("_tag" in item)))
            if (report.applied) yield* Deferred.succeed(report.applied, report.observations.map((item) => ("_tag" in item ? true : applied(item))))
          }
        })
      )
    )
    return { driver, seen }
  })

const path = (seen: ReadonlyArray<Observation>, revisionId: string): Array<RevisionStatus> => [
  ...seen.filter((observation) => observation.revisionId === revisionId).slice(0, 1).map((observation) => observation.from),
  ...seen.filter((observation) => observation.revisionId === revisionId).map((observation) => observation.to)
]

/** What a test of the suite needs: the driver, its channel, a scope (closed when the test ends). */
export type SuiteServices = DeploymentDriver | DeploymentObservations | Scope.Scope

export const deploymentDriverSuite = (name: string, provide: <A, E>(effect: Effect.Effect<A, E, SuiteServices>) => Effect.Effect<A, E>, options: DriverSuiteOptions) => {
  it.effect(`${name}: reports a revision's transitions, each from the state it left, ending at DEPLOYED`, () =>
    provide(
      Effect.gen(function* () {
        const { driver, seen } = yield* recording()
        const revision = work(options.healthyImage, yield* Clock.currentTimeMillis)
        yield* driver.apply(revision)
        yield* options.advance(options.settleMs)
        const statuses = path(seen, revision.revisionId)
        expect(statuses[0]).toBe("CREATING")
        expect(statuses[statuses.length - 1]).toBe("DEPLOYED")
        const mine = seen.filter((observation) => observation.revisionId === revision.revisionId)
        mine.forEach((observation, index) => index > 0 && expect(observation.from).toBe(mine[index - 1]!.to))
      })
    )
  )

  it.effect(`${name}: reports a failing image as a failure with a reason`, () =>
    provide(
      Effect.gen(function* () {
        const { driver, seen } = yield* recording()
        const revision = work(options.failingImage, yield* Clock.currentTimeMillis)
        yield* driver.apply(revision)
        yield* options.advance(options.settleMs)
        const last = seen.filter((observation) => observation.revisionId === revision.revisionId).at(-1)
        expect(last?.to).toMatch(/_FAILED$/)
        expect(last?.message).toBeTruthy()
      })
    )
  )

  it.effect(`${name}: reports nothing more for a stopped revision, or one the controller did not apply`, () =>
    provide(
      Effect.gen(function* () {
        const rejected = new Set<string>()
        const { driver, seen } = yield* recording((observation) => !rejected.has(observation.revisionId))
        const stopped = work(options.healthyImage, yield* Clock.currentTimeMillis)
        const superseded = work(options.healthyImage, yield* Clock.currentTimeMillis)
        rejected.add(superseded.revisionId)
        yield* driver.apply(stopped)
        yield* driver.stop(stopped.revisionId)
        yield* driver.apply(superseded)
        yield* options.advance(options.settleMs)
        expect(seen.filter((observation) => observation.revisionId === stopped.revisionId)).toEqual([])
        expect(seen.filter((observation) => observation.revisionId === superseded.revisionId).length).toBeLessThanOrEqual(1)
      })
    )
  )

  it.effect(`${name}: resumes a revision from the state it was left in`, () =>
    provide(
      Effect.gen(function* () {
        const { driver, seen } = yield* recording()
        const revision = work(options.healthyImage, yield* Clock.currentTimeMillis, "AWAITING_DEPLOY")
        yield* driver.apply(revision)
        yield* options.advance(options.settleMs)
        const statuses = path(seen, revision.revisionId)
        expect(statuses[0]).toBe("AWAITING_DEPLOY")
        expect(statuses).not.toContain("QUEUED")
        expect(statuses[statuses.length - 1]).toBe("DEPLOYED")
      })
    )
  )

  it.effect(`${name}: serves a DEPLOYED revision again without reporting a transition`, () =>
    provide(
      Effect.gen(function* () {
        const { driver, seen } = yield* recording()
        const revision = work(options.healthyImage, yield* Clock.currentTimeMillis, "DEPLOYED")
        yield* driver.serve([revision], { restore: false })
        yield* options.advance(options.settleMs)
        expect(seen.filter((observation) => observation.revisionId === revision.revisionId)).toEqual([])
      })
    )
  )

  it.effect(`${name}: awaitServing completes once the revision served again is what the URL routes to`, () =>
    provide(
      Effect.gen(function* () {
        const { driver, seen } = yield* recording()
        const revision = work(options.healthyImage, yield* Clock.currentTimeMillis, "DEPLOYED")
        yield* driver.serve([revision], { restore: false })
        const waiting = yield* Effect.forkChild(driver.awaitServing(revision))
        yield* options.advance(options.settleMs)
        const exit = waiting.pollUnsafe()
        expect(exit !== undefined && Exit.isSuccess(exit), String(exit)).toBe(true)
        // Asked again once it serves: at once, and nothing was started twice or reported.
        expect(Exit.isSuccess(yield* Effect.exit(driver.awaitServing(revision)))).toBe(true)
        expect(seen.filter((observation) => observation.revisionId === revision.revisionId)).toEqual([])
      })
    )
  )

  it.effect(`${name}: tears a deployment down`, () =>
    provide(
      Effect.gen(function* () {
        const { driver } = yield* recording()
        const revision = work(options.healthyImage, yield* Clock.currentTimeMillis)
        yield* driver.apply(revision)
        yield* options.advance(options.settleMs)
        const since = new Date(yield* Clock.currentTimeMillis).toISOString()
        const done = yield* Effect.forkChild(driver.teardown(revision.tenantId, revision.deploymentId, since))
        yield* options.advance(options.settleMs)
        expect(done.pollUnsafe()).toBeDefined()
      })
    )
  )
}
