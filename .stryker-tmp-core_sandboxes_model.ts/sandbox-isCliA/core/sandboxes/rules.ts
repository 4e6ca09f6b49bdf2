/**
 * Decisions of the sandbox area that span resources (quota, in-use checks, pool scaling),
 * as pure functions: the server reads the facts inside its transaction, asks here, and
 * applies the answer. Failures are the tagged errors of core/api/errors.ts, so the one error
 * mapper turns them into the spec's bodies.
 */
// @ts-nocheck

import { Result } from "effect"
import { QuotaExceeded, ResizeError, ResourceInUse, SandboxValidationError, TemplateNotFound, ValidationError } from "../api/errors.ts"
import { add, compare, formatQuantity, isZero, subtract } from "./quantity.ts"
import type { Quantity } from "./quantity.ts"

/** The success of a check that has nothing to return. */
const pass: Result.Result<void, never> = Result.succeed(undefined)

/** "1 sandbox", "2 sandboxes", "1 pool", "3 pools". */
export const countOf = (count: number, singular: string, plural = `${singular}s`): string => `${count} ${count === 1 ? singular : plural}`

// ---------------------------------------------------------------------------------------------
// Storage quota and volume sizes

/**
 * Fails when adding `increase` to the organization's current usage would pass its quota.
 * The error carries canonical texts so its message reads like the spec's
 * ("limit 100Gi, current usage 95Gi, requested increase 10Gi").
 */
export const checkQuota = (increase: Quantity, orgUsage: Quantity, quota: Quantity): Result.Result<void, QuotaExceeded> =>
  compare(add(orgUsage, increase), quota) > 0
    ? Result.fail(new QuotaExceeded({ limit: formatQuantity(quota), usage: formatQuantity(orgUsage), requested: formatQuantity(increase) }))
    : pass

/** A new volume of `size` is an increase of its whole size. */
export const checkVolumeCreate = (size: Quantity, orgUsage: Quantity, quota: Quantity): Result.Result<void, QuotaExceeded> =>
  checkQuota(size, orgUsage, quota)

export interface VolumeResize {
  /** The size to store (the requested one). */
  readonly size: Quantity
  /** How much the organization's usage grows; zero when the size is unchanged. */
  readonly increase: Quantity
}

/**
 * A volume may only grow (a filesystem cannot be shrunk under its data), and growth counts
 * against the quota. `orgUsage` is the organization's usage including this volume's current
 * size; an unchanged size always succeeds, even when the organization is already over quota.
 */
export const planVolumeResize = (
  volume: { readonly name: string; readonly size: Quantity },
  requested: Quantity,
  orgUsage: Quantity,
  quota: Quantity
): Result.Result<VolumeResize, ResizeError | QuotaExceeded> => {
  if (compare(requested, volume.size) < 0) {
    return Result.fail(new ResizeError({ message: `cannot shrink volume ${volume.name} from ${formatQuantity(volume.size)} to ${formatQuantity(requested)}` }))
  }
  const increase = subtract(requested, volume.size)
  if (isZero(increase)) return Result.succeed({ size: requested, increase })
  return Result.map(checkQuota(increase, orgUsage, quota), () => ({ size: requested, increase }))
}

// ---------------------------------------------------------------------------------------------
// Storage classes

export const defaultStorageClass = "standard"

/**
 * The class a new volume gets: the requested one when the server allows it, otherwise a 422
 * at `body.storage_class` listing the allowed ones. Omitted → "standard", or the first allowed
 * class when an operator removed "standard" (so omitting it never fails).
 */
export const resolveStorageClass = (requested: string | undefined, allowed: ReadonlyArray<string>): Result.Result<string, ValidationError> => {
  if (requested === undefined) return Result.succeed(allowed.includes(defaultStorageClass) || allowed.length === 0 ? defaultStorageClass : allowed[0]!)
  if (allowed.includes(requested)) return Result.succeed(requested)
  const quoted = allowed.map((name) => `'${name}'`)
  const expected = quoted.length <= 1 ? (quoted[0] ?? "a configured storage class") : `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}`
  return Result.fail(ValidationError.single(["body", "storage_class"], `Input should be ${expected}`, "enum"))
}

// ---------------------------------------------------------------------------------------------
// Deleting what is still used

/** A template used by sandboxes or pools cannot go: they would lose what they are built from. */
export const checkTemplateDeletable = (name: string, sandboxCount: number, poolCount: number): Result.Result<void, ResourceInUse> => {
  const users = [
    ...(sandboxCount > 0 ? [countOf(sandboxCount, "sandbox", "sandboxes")] : []),
    ...(poolCount > 0 ? [countOf(poolCount, "pool")] : [])
  ]
  return users.length === 0 ? pass : Result.fail(new ResourceInUse({ message: `template ${name} is used by ${users.join(" and ")}` }))
}

/** A volume mounted by a template cannot go: sandboxes built from it would fail to start. */
export const checkVolumeDeletable = (name: string, mountingTemplates: ReadonlyArray<string>): Result.Result<void, ResourceInUse> =>
  mountingTemplates.length === 0
    ? pass
    : Result.fail(
        new ResourceInUse({
          message: `volume ${name} is mounted by ${countOf(mountingTemplates.length, "template")} (${mountingTemplates.join(", ")})`
        })
      )

// ---------------------------------------------------------------------------------------------
// Templates referenced by boxes, pools and templates

export interface TemplateVolumes {
  readonly volume_mounts: ReadonlyArray<{ readonly volume_name: string }>
}

/** A sandbox needs an existing template; an unknown one is a 400 `TemplateNotFound`. */
export const checkBoxTemplate = <T>(templateName: string, template: T | undefined): Result.Result<T, TemplateNotFound> =>
  template === undefined ? Result.fail(new TemplateNotFound({ message: `template ${templateName} not found` })) : Result.succeed(template)

/**
 * A pool needs an existing template that mounts no volumes: a volume attaches to one sandbox,
 * and a pool makes many identical sandboxes from the template.
 */
export const checkPoolTemplate = <T extends TemplateVolumes>(
  templateName: string,
  template: T | undefined
): Result.Result<T, TemplateNotFound | SandboxValidationError> =>
  Result.flatMap(checkBoxTemplate(templateName, template), (found) =>
    found.volume_mounts.length === 0
      ? Result.succeed(found)
      : Result.fail(
          new SandboxValidationError({
            message: `template ${templateName} mounts volumes (${found.volume_mounts.map((mount) => mount.volume_name).join(", ")}) and cannot be used by a pool: a volume attaches to a single sandbox`
          })
        )
  )

/** A template may only mount volumes that exist; the first missing one is named. */
export const checkTemplateVolumes = (
  mounts: ReadonlyArray<{ readonly volume_name: string }>,
  existingVolumes: ReadonlyArray<string>
): Result.Result<void, SandboxValidationError> => {
  const missing = mounts.find((mount) => !existingVolumes.includes(mount.volume_name))
  return missing === undefined ? pass : Result.fail(new SandboxValidationError({ message: `volume ${missing.volume_name} not found` }))
}

// ---------------------------------------------------------------------------------------------
// Pools

export interface PoolScalePlan {
  /** How many sandboxes to create. */
  readonly create: number
  /** Which sandboxes to delete, newest first. */
  readonly remove: ReadonlyArray<string>
}

/**
 * Brings a pool to `replicas` sandboxes. `currentBoxNames` lists the pool's sandboxes oldest
 * first; scaling down removes the newest, since the oldest are the likeliest to be warm and in use.
 */
export const planPoolScale = (currentBoxNames: ReadonlyArray<string>, replicas: number): PoolScalePlan => ({
  create: Math.max(0, replicas - currentBoxNames.length),
  remove: currentBoxNames.slice(Math.max(0, replicas)).reverse()
})

/** The sandboxes deleted together with a pool: exactly those it created. */
export const planPoolDeletion = <B extends { readonly pool_name: string | null }>(pool: { readonly name: string }, boxes: ReadonlyArray<B>): ReadonlyArray<B> =>
  boxes.filter((box) => box.pool_name === pool.name)
