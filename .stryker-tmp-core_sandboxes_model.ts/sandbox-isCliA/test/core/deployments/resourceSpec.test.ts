// @ts-nocheck
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { effectiveResourceSpec, resourceSpecIssues, type ResourceSpec } from "../../../core/deployments/index.ts"

describe("effectiveResourceSpec: the defaults of spec 2.5", () => {
  it("derives every default from cpu, memory, scales and db requests", () => {
    expect(effectiveResourceSpec({ min_scale: 1, max_scale: 4, cpu: 2, memory_mb: 1024, db_cpu: 0.5, db_memory_mb: 256 })).toStrictEqual({
      min_scale: 1,
      max_scale: 4,
      cpu: 2,
      memory_mb: 1024,
      db_cpu: 0.5,
      db_memory_mb: 256,
      cpu_limit: 4,
      memory_limit_mb: 2048,
      queue_min_scale: 1,
      queue_max_scale: 4,
      queue_cpu: 2,
      queue_cpu_limit: 4,
      queue_memory_mb: 1024,
      queue_memory_limit_mb: 2048,
      db_cpu_limit: 1,
      db_memory_limit_mb: 512
    })
  })

  it("doubles the effective queue request, explicit or inherited", () => {
    const spec = effectiveResourceSpec({ cpu: 1, queue_cpu: 3, memory_mb: 100, queue_memory_mb: 300 })
    expect(spec.queue_cpu_limit).toBe(6)
    expect(spec.queue_memory_limit_mb).toBe(600)
  })

  it("keeps explicit values, even ones differing from the default", () => {
    const spec = effectiveResourceSpec({ cpu: 1, cpu_limit: 1, queue_min_scale: 0, min_scale: 2 })
    expect(spec.cpu_limit).toBe(1)
    expect(spec.queue_min_scale).toBe(0)
  })

  it("treats null like absent and leaves fields without a source unset", () => {
    const spec = effectiveResourceSpec({ cpu: null, cpu_limit: null, memory_mb: 10 })
    expect(spec.cpu_limit).toBeNull()
    expect(spec.queue_cpu).toBeUndefined()
    expect(spec.memory_limit_mb).toBe(20)
    expect(effectiveResourceSpec(null)).toStrictEqual({})
    expect(effectiveResourceSpec(undefined)).toStrictEqual({})
  })

  it("does not touch the do-not-use fields", () => {
    expect(effectiveResourceSpec({ orchestrator_cpu: 1, executor_memory_mb: 5 })).toStrictEqual({ orchestrator_cpu: 1, executor_memory_mb: 5 })
  })
})

/** Every field the defaults read or write (spec 2.5). */
const allFields = [
  "min_scale",
  "max_scale",
  "cpu",
  "cpu_limit",
  "memory_mb",
  "memory_limit_mb",
  "queue_min_scale",
  "queue_max_scale",
  "queue_cpu",
  "queue_cpu_limit",
  "queue_memory_mb",
  "queue_memory_limit_mb",
  "db_cpu",
  "db_cpu_limit",
  "db_memory_mb",
  "db_memory_limit_mb"
]

/** Any mix of set, null and absent numeric fields that the defaults read or write. */
const arbitrarySpec: fc.Arbitrary<ResourceSpec> = fc.record(
  Object.fromEntries(allFields.map((field) => [field, fc.oneof(fc.integer({ min: 0, max: 10_000 }), fc.constant(null))])),
  { requiredKeys: [] }
) as fc.Arbitrary<ResourceSpec>

/** Each limit and the request it doubles, written from spec 2.5 rather than read from the code under test. */
const requestOf: Record<string, string> = {
  cpu_limit: "cpu",
  memory_limit_mb: "memory_mb",
  queue_cpu_limit: "queue_cpu",
  queue_memory_limit_mb: "queue_memory_mb",
  db_cpu_limit: "db_cpu",
  db_memory_limit_mb: "db_memory_mb"
}

describe("effectiveResourceSpec properties", () => {
  it("never overrides an explicit value", () => {
    fc.assert(
      fc.property(arbitrarySpec, (spec) => {
        const effective = effectiveResourceSpec(spec)
        for (const [field, value] of Object.entries(spec)) if (typeof value === "number") expect(effective[field as keyof ResourceSpec]).toBe(value)
      })
    )
  })

  it("sets every unset limit to exactly twice its effective request", () => {
    fc.assert(
      fc.property(arbitrarySpec, (spec) => {
        const effective = effectiveResourceSpec(spec) as Record<string, unknown>
        for (const [limit, request] of Object.entries(requestOf)) {
          if (typeof spec[limit as keyof ResourceSpec] === "number") continue
          const effectiveRequest = effective[request]
          if (typeof effectiveRequest === "number") expect(effective[limit]).toBe(2 * effectiveRequest)
          else expect(typeof effective[limit]).not.toBe("number")
        }
      })
    )
  })

  it("inherits unset queue scales and requests from the main deployment", () => {
    fc.assert(
      fc.property(arbitrarySpec, (spec) => {
        const effective = effectiveResourceSpec(spec) as Record<string, unknown>
        const inherited = { queue_min_scale: "min_scale", queue_max_scale: "max_scale", queue_cpu: "cpu", queue_memory_mb: "memory_mb" }
        for (const [field, from] of Object.entries(inherited)) {
          if (typeof spec[field as keyof ResourceSpec] !== "number" && typeof spec[from as keyof ResourceSpec] === "number") {
            expect(effective[field]).toBe(spec[from as keyof ResourceSpec])
          }
        }
      })
    )
  })

  it("is idempotent: applying the defaults twice changes nothing", () => {
    fc.assert(
      fc.property(arbitrarySpec, (spec) => {
        expect(effectiveResourceSpec(effectiveResourceSpec(spec))).toStrictEqual(effectiveResourceSpec(spec))
      })
    )
  })

  it("never produces an ordering issue from defaults alone when only requests are set", () => {
    const requestsOnly = fc.record(
      { cpu: fc.integer({ min: 1, max: 64 }), memory_mb: fc.integer({ min: 1, max: 65_536 }), db_cpu: fc.integer({ min: 1, max: 8 }), db_memory_mb: fc.integer({ min: 1, max: 8192 }) },
      { requiredKeys: [] }
    )
    fc.assert(
      fc.property(requestsOnly, (spec) => {
        expect(resourceSpecIssues(spec)).toStrictEqual([])
      })
    )
  })
})

describe("resourceSpecIssues: ordering rules", () => {
  it.each([
    [{ min_scale: 2, max_scale: 1 }, "max_scale"],
    [{ queue_min_scale: 5, queue_max_scale: 4 }, "queue_max_scale"],
    [{ orchestrator_min_scale: 2, orchestrator_max_scale: 1 }, "orchestrator_max_scale"],
    [{ cpu: 4, cpu_limit: 2 }, "cpu_limit"],
    [{ memory_mb: 4, memory_limit_mb: 2 }, "memory_limit_mb"],
    [{ queue_cpu: 4, queue_cpu_limit: 2 }, "queue_cpu_limit"],
    [{ queue_memory_mb: 4, queue_memory_limit_mb: 2 }, "queue_memory_limit_mb"],
    [{ executor_cpu: 4, executor_cpu_limit: 2 }, "executor_cpu_limit"],
    [{ db_cpu: 1.5, db_cpu_limit: 1 }, "db_cpu_limit"],
    [{ db_memory_mb: 4, db_memory_limit_mb: 2 }, "db_memory_limit_mb"]
  ] as Array<[ResourceSpec, string]>)("reports %j at %s", (spec, field) => {
    expect(resourceSpecIssues(spec).map(({ path }) => path)).toStrictEqual([[field]])
  })

  it("accepts equal bounds", () => {
    expect(resourceSpecIssues({ min_scale: 2, max_scale: 2, cpu: 2, cpu_limit: 2 })).toStrictEqual([])
  })

  it("catches an explicit queue limit below an inherited queue request", () => {
    expect(resourceSpecIssues({ cpu: 4, queue_cpu_limit: 2 })).toStrictEqual([
      { path: ["queue_cpu_limit"], message: "queue_cpu_limit (2) must be greater than or equal to queue_cpu (4, defaulted from cpu)" }
    ])
  })

  it("catches an explicit queue minimum above an inherited queue maximum, at the minimum", () => {
    expect(resourceSpecIssues({ max_scale: 3, queue_min_scale: 5 })).toStrictEqual([
      { path: ["queue_min_scale"], message: "queue_max_scale (3, defaulted from max_scale) must be greater than or equal to queue_min_scale (5)" }
    ])
  })

  it("reports an inverted min/max once, not again for the queue pair that inherits it", () => {
    expect(resourceSpecIssues({ min_scale: 3, max_scale: 1 }).map(({ path }) => path)).toStrictEqual([["max_scale"]])
  })
})
