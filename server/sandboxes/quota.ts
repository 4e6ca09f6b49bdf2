/**
 * The organization's storage quota: `organizations.storage_quota` when set (by the key tool's
 * `quota` command), otherwise the configured default (SLIPWAY_STORAGE_QUOTA). Read from the
 * database on every check, so a change applies to the next request without a restart.
 */
import { Result } from "effect"
import { formatQuantity, parseQuantity, type Quantity, toBytes } from "../../core/sandboxes/quantity.ts"

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

/**
 * Quotas read on every volume write are a handful of texts (one per organization that has one,
 * and the default): each is parsed once. The answer is immutable, so sharing it is safe; the
 * cache is dropped whole if it ever grows large.
 */
const parsedQuotas = new Map<string, EffectiveQuota>()
const maxCachedQuotas = 1024

/** `override` is the organization's own quota as stored (null or undefined: none). */
export const effectiveQuota = (override: string | null | undefined, defaultQuota: string): EffectiveQuota => {
  const key = override != null ? `o${override}` : `d${defaultQuota}`
  const cached = parsedQuotas.get(key)
  if (cached !== undefined) return cached
  const quota = parseEffectiveQuota(override, defaultQuota)
  if (parsedQuotas.size >= maxCachedQuotas) parsedQuotas.clear()
  parsedQuotas.set(key, quota)
  return quota
}

const parseEffectiveQuota = (override: string | null | undefined, defaultQuota: string): EffectiveQuota => {
  if (override != null) {
    const parsed = parseQuota(override)
    // Only the admin command writes the column and it validates; a hand-edited bad value fails loudly.
    if (Result.isFailure(parsed)) throw new Error(`an organization's storage_quota is invalid: ${parsed.failure}`)
    return { ...parsed.success, source: "organization" }
  }
  const parsed = parseQuota(defaultQuota)
  if (Result.isFailure(parsed)) throw new Error(`SLIPWAY_STORAGE_QUOTA is invalid: ${parsed.failure}`)
  return { ...parsed.success, source: "default" }
}
