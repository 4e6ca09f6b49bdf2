/**
 * The organization's storage quota: `organizations.storage_quota` when set (by the key tool's
 * `quota` command), otherwise the configured default (SLIPWAY_STORAGE_QUOTA). Read from the
 * database on every check, so a change applies to the next request without a restart.
 */
// @ts-nocheck

import { Result } from "effect"
import { formatQuantity, parseQuantity, type Quantity, toBytes } from "../../core/sandboxes/quantity.ts"
import type { SandboxRepository } from "./repository.ts"

/** A quota as written by an operator: a non-negative whole number of bytes; answers its canonical form. */
export const parseQuota = (text: string): Result.Result<{ readonly quantity: Quantity; readonly bytes: bigint; readonly canonical: string }, string> =>
  Result.flatMap(parseQuantity(text.trim()), (quantity) =>
    quantity.coefficient < 0n
      ? Result.fail(`Invalid quantity '${text}': must not be negative`)
      : Result.map(toBytes(quantity), (bytes) => ({ quantity, bytes, canonical: formatQuantity(quantity) }))
  )

export interface EffectiveQuota {
  readonly quantity: Quantity
  readonly bytes: bigint
  readonly canonical: string
  readonly source: "organization" | "default"
}

export const effectiveQuota = (repository: SandboxRepository, organizationId: string, defaultQuota: string): EffectiveQuota => {
  const override = repository.organizationQuota(organizationId)
  if (override != null) {
    const parsed = parseQuota(override)
    // Only the admin command writes the column and it validates; a hand-edited bad value fails loudly.
    if (Result.isFailure(parsed)) throw new Error(`organizations.storage_quota of ${organizationId} is invalid: ${parsed.failure}`)
    return { ...parsed.success, source: "organization" }
  }
  const parsed = parseQuota(defaultQuota)
  if (Result.isFailure(parsed)) throw new Error(`SLIPWAY_STORAGE_QUOTA is invalid: ${parsed.failure}`)
  return { ...parsed.success, source: "default" }
}
