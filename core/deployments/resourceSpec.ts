/**
 * The resource spec's defaults (spec 2.5) and the ordering rules between its fields. Pure, so the
 * runtime renders exactly what the property tests check: explicit values always win, and every
 * unset limit is twice its (effective) request.
 */
import type { PathIssue } from "../api/validation.ts"

/**
 * Unset fields and where their default comes from, in the order they must be applied:
 * `queue_cpu` is derived before `queue_cpu_limit`, which doubles the effective `queue_cpu`.
 */
export const derivations = [
  { field: "cpu_limit", from: "cpu", factor: 2 },
  { field: "memory_limit_mb", from: "memory_mb", factor: 2 },
  { field: "queue_min_scale", from: "min_scale", factor: 1 },
  { field: "queue_max_scale", from: "max_scale", factor: 1 },
  { field: "queue_cpu", from: "cpu", factor: 1 },
  { field: "queue_cpu_limit", from: "queue_cpu", factor: 2 },
  { field: "queue_memory_mb", from: "memory_mb", factor: 1 },
  { field: "queue_memory_limit_mb", from: "queue_memory_mb", factor: 2 },
  { field: "db_cpu_limit", from: "db_cpu", factor: 2 },
  { field: "db_memory_limit_mb", from: "db_memory_mb", factor: 2 }
] as const

const isSet = (value: unknown): value is number => typeof value === "number"

/**
 * The spec with every derivable default filled in. Fields whose source is unset stay unset:
 * the runtime applies its own platform defaults there, not us.
 */
export const effectiveResourceSpec = <S extends ResourceQuantities>(spec: S | null | undefined): S & ResourceQuantities => {
  const effective: Record<string, unknown> = { ...spec }
  for (const { field, from, factor } of derivations) {
    const source = effective[from]
    if (!isSet(effective[field]) && isSet(source)) effective[field] = source * factor
  }
  return effective as S
}

/** Two fields where the first may not exceed the second. */
const orderedPairs = [
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
  ["db_memory_mb", "db_memory_limit_mb"],
  ["redis_cpu", "redis_cpu_limit"],
  ["redis_memory_mb", "redis_memory_limit_mb"]
] as const

/**
 * The numeric fields of the resource spec these rules read (model.ts checks that its
 * `ResourceSpec` has each of them).
 */
export type QuantityField = (typeof orderedPairs)[number][number] | (typeof derivations)[number]["field" | "from"]

/** The part of a resource spec these rules read: any `ResourceSpec` is one. */
export type ResourceQuantities = { readonly [K in QuantityField]?: number | null | undefined }

const describe = (spec: ResourceQuantities, field: QuantityField, value: number): string => {
  if (isSet(spec[field])) return `${field} (${value})`
  // An unset field with an effective value was derived, so its derivation exists.
  const origin = derivations.find((derivation) => derivation.field === field)!
  return `${field} (${value}, defaulted from ${origin.from})`
}

/**
 * min ≤ max for each scale pair and request ≤ limit for each resource, checked on the effective
 * values so an explicit `queue_cpu_limit` below an inherited `queue_cpu` is caught too. A pair is
 * reported only when the caller set one of its fields (otherwise the pair it inherits from already
 * reports it), at the upper field when that one was set, else at the lower one.
 */
export const resourceSpecIssues = (spec: ResourceQuantities): Array<PathIssue> => {
  const effective = effectiveResourceSpec(spec)
  return orderedPairs.flatMap(([lower, upper]): Array<PathIssue> => {
    const low = effective[lower]
    const high = effective[upper]
    if (!isSet(low) || !isSet(high) || low <= high) return []
    if (!isSet(spec[lower]) && !isSet(spec[upper])) return []
    return [
      {
        path: [isSet(spec[upper]) ? upper : lower],
        message: `${describe(spec, upper, high)} must be greater than or equal to ${describe(spec, lower, low)}`
      }
    ]
  })
}
