/** The local driver's schedules on the test clock: health checks (fast, then slower) and restarts after a crash (growing, capped). */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Schedule } from "effect"
import { TestClock } from "effect/testing"
import { HEALTH_SCHEDULE, RESTART_SCHEDULE } from "../../server/deployments/drivers/local.ts"

/** The times (on the test clock) at which an effect repeated on `schedule` runs, over `millis`. */
const runTimes = (schedule: Schedule.Schedule<unknown, unknown>, millis: number) =>
  Effect.gen(function* () {
    const times: Array<number> = []
    const fiber = yield* Effect.forkChild(Effect.repeat(Effect.flatMap(Clock.currentTimeMillis, (t) => Effect.sync(() => times.push(t))), schedule))
    yield* TestClock.adjust(millis)
    yield* Fiber.interrupt(fiber)
    return times
  })

const gaps = (times: ReadonlyArray<number>) => times.slice(1).map((t, i) => t - times[i]!)

describe("local driver schedules", () => {
  it.effect("health: every 50 ms for the first 2 s, then every 200 ms", () =>
    Effect.gen(function* () {
      const times = yield* runTimes(HEALTH_SCHEDULE, 4000)
      const early = gaps(times.filter((t) => t <= 2000))
      const late = gaps(times.filter((t) => t >= 2200))
      expect(early.length).toBeGreaterThanOrEqual(39)
      expect(early.every((gap) => gap === 50)).toBe(true)
      expect(late.length).toBeGreaterThanOrEqual(8)
      expect(late.every((gap) => gap === 200)).toBe(true)
    })
  )

  it.effect("restarts: 0.5 s, doubling, at most 30 s", () =>
    Effect.gen(function* () {
      const times = yield* runTimes(RESTART_SCHEDULE, 150_000)
      expect(gaps(times).slice(0, 9)).toEqual([500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000])
    })
  )
})
