/**
 * Deep pages without a linear skip. SQLite can only skip `offset` rows one by one, so a page at
 * offset 90,000 walks 90,000 index entries. This keeps, per tenant and table, the `seq` found at
 * every STRIDE-th position; a deep page then starts its skip at the nearest checkpoint and walks
 * fewer than STRIDE entries.
 *
 * The checkpoints belong to one database state: any commit, by this connection
 * (`total_changes()`) or another process (`PRAGMA data_version`), drops them. They are found
 * again lazily, only as deep as a page asks, each one by an `OFFSET STRIDE - 1` skip from the
 * one before inside SQLite: the first deep page after a write walks what a plain OFFSET would
 * have walked, never more, and the pages after it walk less than STRIDE.
 */
// @ts-nocheck

import type { Db } from "../db/database.ts"

export const STRIDE = 1024

/** Pages this shallow skip from the start of the list: no checkpoints, so no snapshot to share with them. */
export const isShallow = (offset: number): boolean => offset < 4 * STRIDE

export interface PageStart {
  /** Smallest `seq` the skip starts from. */
  readonly from: number
  /** Rows still to skip from there. */
  readonly offset: number
}

export const makeOffsetIndex = (db: Db, table: string) => {
  const dataVersion = db.prepare("PRAGMA data_version").pluck()
  const ownChanges = db.prepare("SELECT total_changes()").pluck()
  const firstSeq = db.prepare(`SELECT seq FROM ${table} WHERE tenant_id = ? ORDER BY seq LIMIT 1`).pluck()
  const strideAfter = db.prepare(`SELECT seq FROM ${table} WHERE tenant_id = ? AND seq > ? ORDER BY seq LIMIT 1 OFFSET ${STRIDE - 1}`).pluck()
  let version = ""
  /** Per tenant: the `seq` at positions 0, STRIDE, 2 * STRIDE, ... as far as pages have asked. */
  const checkpoints = new Map<string, Array<number>>()

  const currentVersion = () => `${dataVersion.get()}:${ownChanges.get()}`

  /** The checkpoints up to `index`, or all there are when the list is shorter. */
  const checkpointsTo = (tenantId: string, index: number): ReadonlyArray<number> => {
    let seqs = checkpoints.get(tenantId)
    if (!seqs) {
      const first = firstSeq.get(tenantId) as number | undefined
      seqs = first === undefined ? [] : [Number(first)]
      checkpoints.set(tenantId, seqs)
    }
    while (seqs.length > 0 && seqs.length <= index) {
      const next = strideAfter.get(tenantId, seqs[seqs.length - 1]) as number | undefined
      if (next === undefined) break
      seqs.push(Number(next))
    }
    return seqs
  }

  /** Call inside the read transaction of the page query, so both see the same state. */
  const locate = (tenantId: string, offset: number): PageStart => {
    // Shallow pages skip little: no need to look at (or find) the checkpoints.
    if (isShallow(offset)) return { from: 0, offset }
    const now = currentVersion()
    if (now !== version) {
      checkpoints.clear()
      version = now
    }
    const index = Math.floor(offset / STRIDE)
    const seqs = checkpointsTo(tenantId, index)
    // Fewer checkpoints than asked for: the list has no row at position `seqs.length * STRIDE`,
    // so the page is past its end; start after the last possible row and it comes back empty.
    if (index >= seqs.length) return { from: Number.MAX_SAFE_INTEGER, offset: 0 }
    return { from: seqs[index]!, offset: offset - index * STRIDE }
  }

  return { locate }
}
