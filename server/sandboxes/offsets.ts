/**
 * Deep pages without a linear skip. SQLite can only skip `offset` rows one by one, so a page at
 * offset 90,000 walks 90,000 index entries. This keeps, per tenant and table, the `seq` found at
 * every STRIDE-th position; a deep page then starts its skip at the nearest checkpoint and walks
 * at most STRIDE entries. The checkpoints belong to one database state: any commit, by this
 * connection (`total_changes()`) or another process (`PRAGMA data_version`), drops them, and
 * they are rebuilt on the next deep page by one walk of the index (what the skip cost anyway).
 */
import type { Db } from "../db/database.ts"

export const STRIDE = 1024

export interface PageStart {
  /** Smallest `seq` the skip starts from. */
  readonly from: number
  /** Rows still to skip from there. */
  readonly offset: number
}

export const makeOffsetIndex = (db: Db, table: string) => {
  const dataVersion = db.prepare("PRAGMA data_version").pluck()
  const ownChanges = db.prepare("SELECT total_changes()").pluck()
  const tenantSeqs = db.prepare(`SELECT seq FROM ${table} WHERE tenant_id = ? ORDER BY seq`).pluck()
  let version = ""
  const checkpoints = new Map<string, ReadonlyArray<number>>()

  const currentVersion = () => `${dataVersion.get()}:${ownChanges.get()}`

  const build = (tenantId: string): ReadonlyArray<number> => {
    const seqs: Array<number> = []
    let position = 0
    for (const seq of tenantSeqs.iterate(tenantId) as Iterable<number>) {
      if (position % STRIDE === 0) seqs.push(Number(seq))
      position++
    }
    checkpoints.set(tenantId, seqs)
    return seqs
  }

  /** Call inside the read transaction of the page query, so both see the same state. */
  const locate = (tenantId: string, offset: number): PageStart => {
    // Shallow pages skip little: no need to look at (or build) the checkpoints.
    if (offset < 4 * STRIDE) return { from: 0, offset }
    const now = currentVersion()
    if (now !== version) {
      checkpoints.clear()
      version = now
    }
    const seqs = checkpoints.get(tenantId) ?? build(tenantId)
    const index = Math.floor(offset / STRIDE)
    // Past the end: start after the last row, so the page comes back empty.
    if (index >= seqs.length) return { from: Number.MAX_SAFE_INTEGER, offset: 0 }
    return { from: seqs[index]!, offset: offset - index * STRIDE }
  }

  return { locate }
}
