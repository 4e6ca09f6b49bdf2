/** Every request ≤ limit and min ≤ max rule on its own (mutation testing found three unpinned). */
import { describe, expect, it } from "vitest"
import { derivations, effectiveResourceSpec, resourceSpecIssues, type ResourceSpec } from "../../../core/deployments/index.ts"

const pairs: Array<[lower: keyof ResourceSpec, upper: keyof ResourceSpec]> = [
  ["min_scale", "max_scale"],
  ["queue_min_scale", "queue_max_scale"],
  ["orchestrator_min_scale", "orchestrator_max_scale"],
  ["cpu", "cpu_limit"],
  ["memory_mb", "memory_limit_mb"],
  ["queue_cpu", "queue_cpu_limit"],
  ["queue_memory_mb", "queue_memory_limit_mb"],
  ["orchestrator_cpu", "orchestrator_cpu_limit"],
  ["orchestrator_memory_mb", "orchestrator_memory_limit_mb"],
  ["executor_cpu", "executor_cpu_limit"],
  ["executor_memory_mb", "executor_memory_limit_mb"],
  ["db_cpu", "db_cpu_limit"],
  ["db_memory_mb", "db_memory_limit_mb"]
]

describe("resourceSpecIssues: each pair on its own", () => {
  it.each(pairs)("%s above %s is reported at the upper field, with both values", (lower, upper) => {
    expect(resourceSpecIssues({ [lower]: 3, [upper]: 2 })).toStrictEqual([{ path: [upper], message: `${upper} (2) must be greater than or equal to ${lower} (3)` }])
  })

  it.each(pairs)("%s equal to or below %s is fine", (lower, upper) => {
    expect(resourceSpecIssues({ [lower]: 2, [upper]: 2 })).toStrictEqual([])
    expect(resourceSpecIssues({ [lower]: 1, [upper]: 2 })).toStrictEqual([])
  })

  it("an explicit request above an explicit limit of the queue is reported at the limit, naming where the request came from", () => {
    expect(resourceSpecIssues({ memory_mb: 4, queue_memory_limit_mb: 3 })).toStrictEqual([
      { path: ["queue_memory_limit_mb"], message: "queue_memory_limit_mb (3) must be greater than or equal to queue_memory_mb (4, defaulted from memory_mb)" }
    ])
  })

  it("a derived pair is not reported when neither of its fields was set", () => {
    // queue_cpu (4) and queue_cpu_limit (2) are both inherited: only cpu_limit is reported.
    expect(resourceSpecIssues({ cpu: 4, cpu_limit: 2 }).map(({ path }) => path)).toStrictEqual([["cpu_limit"]])
  })

  it("a lower field set alone above an inherited upper one is reported at the lower field", () => {
    expect(resourceSpecIssues({ memory_mb: 2, queue_memory_mb: 5 })).toStrictEqual([])
    expect(resourceSpecIssues({ memory_limit_mb: 2, queue_memory_mb: 5, memory_mb: 1 })).toStrictEqual([])
    expect(resourceSpecIssues({ max_scale: 1, queue_min_scale: 2 })).toStrictEqual([
      { path: ["queue_min_scale"], message: "queue_max_scale (1, defaulted from max_scale) must be greater than or equal to queue_min_scale (2)" }
    ])
  })

  it("null counts as unset on both sides", () => {
    expect(resourceSpecIssues({ cpu: 3, cpu_limit: null, queue_cpu: null })).toStrictEqual([])
    expect(resourceSpecIssues({ min_scale: null, max_scale: 0 })).toStrictEqual([])
  })
})

describe("effectiveResourceSpec: each derivation on its own", () => {
  it.each(derivations.map((d) => [d.field, d.from, d.factor] as const))("%s defaults to %s × %s", (field, from, factor) => {
    expect(effectiveResourceSpec({ [from]: 3 })[field]).toBe(3 * factor)
  })

  it("does not mutate its input", () => {
    const spec: ResourceSpec = { cpu: 1 }
    effectiveResourceSpec(spec)
    expect(spec).toStrictEqual({ cpu: 1 })
  })
})
