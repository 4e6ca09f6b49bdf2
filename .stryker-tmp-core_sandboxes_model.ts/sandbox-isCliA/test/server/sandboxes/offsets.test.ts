/**
 * The deep-page checkpoints (server/sandboxes/offsets.ts) on a real SQLite file: every start they
 * give leaves a skip shorter than STRIDE, and the page read from it is the one a plain OFFSET
 * walk finds, before and after writes by this connection or another one.
 */
// @ts-nocheck

import Database from "better-sqlite3"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeKeyStore } from "../../../server/auth/keys.ts"
import { closeDatabase, type Db, openDatabase } from "../../../server/db/database.ts"
import { allMigrations } from "../../../server/index.ts"
import { makeOffsetIndex, STRIDE } from "../../../server/sandboxes/offsets.ts"
import { tempDatabasePath } from "../../support/server.ts"
import { seedTemplates } from "./helpers.ts"

const COUNT = 10_000
const tenant = randomUUID()
const neighbour = randomUUID()
const database = tempDatabasePath("offsets")
let db: Db

const insertTemplates = (tenantId: string, prefix: string, count: number) =>
  seedTemplates(db, tenantId, count, (index) => `${prefix}-${String(index).padStart(5, "0")}`)

beforeAll(() => {
  db = openDatabase(database.path, allMigrations())
  const keys = makeKeyStore(db)
  const organization = randomUUID()
  keys.ensureTenant(tenant, organization)
  keys.ensureTenant(neighbour, organization)
  // Interleaved with another tenant's rows, so positions and seqs differ.
  for (let round = 0; round < 4; round++) {
    insertTemplates(tenant, `t${round}`, COUNT / 4)
    insertTemplates(neighbour, `n${round}`, 777)
  }
})
afterAll(() => {
  closeDatabase(db)
  database.remove()
})

const plainPage = (offset: number, limit = 3): Array<string> =>
  db.prepare("SELECT name FROM sandbox_templates WHERE tenant_id = ? ORDER BY seq LIMIT ? OFFSET ?").pluck().all(tenant, limit, offset) as Array<string>

/** The page the server's list query reads from a checkpoint start. */
const pageFrom = (start: { from: number; offset: number }, limit = 3): Array<string> =>
  db
    .prepare(
      `SELECT name FROM sandbox_templates WHERE tenant_id = @tenant
         AND seq >= (SELECT seq FROM sandbox_templates WHERE tenant_id = @tenant AND seq >= @from ORDER BY seq LIMIT 1 OFFSET @offset)
       ORDER BY seq LIMIT @limit`
    )
    .pluck()
    .all({ tenant, from: start.from, offset: start.offset, limit }) as Array<string>

const offsets = [0, 4095, 4096, 5119, 5120, 6000, 8191, 8192, COUNT - 3, COUNT - 1, COUNT, COUNT + 5, 10 * COUNT]

describe("deep-page checkpoints", () => {
  it("start every deep page less than STRIDE rows before it, on the page a plain OFFSET finds", () => {
    const index = makeOffsetIndex(db, "sandbox_templates")
    for (const offset of offsets) {
      const start = index.locate(tenant, offset)
      if (offset >= 4 * STRIDE) expect(start.offset, `offset ${offset}`).toBeLessThan(STRIDE)
      expect(pageFrom(start), `offset ${offset}`).toEqual(plainPage(offset))
    }
  })

  it("follow deletes and inserts by this connection and by another process", () => {
    const index = makeOffsetIndex(db, "sandbox_templates")
    const before = pageFrom(index.locate(tenant, 6000))
    expect(before).toEqual(plainPage(6000))

    db.prepare("DELETE FROM sandbox_templates WHERE tenant_id = ? AND name = ?").run(tenant, "t0-00010")
    expect(pageFrom(index.locate(tenant, 6000))).toEqual(plainPage(6000))
    expect(pageFrom(index.locate(tenant, 6000))[0]).not.toBe(before[0])

    const other = new Database(database.path)
    other.prepare("DELETE FROM sandbox_templates WHERE tenant_id = ? AND name IN ('t0-00011', 't0-00012')").run(tenant)
    other.close()
    for (const offset of offsets) expect(pageFrom(index.locate(tenant, offset)), `offset ${offset}`).toEqual(plainPage(offset))

    insertTemplates(tenant, "late", 2 * STRIDE)
    for (const offset of [...offsets, COUNT + STRIDE, COUNT + 2 * STRIDE - 4]) {
      const start = index.locate(tenant, offset)
      if (offset >= 4 * STRIDE) expect(start.offset, `offset ${offset}`).toBeLessThan(STRIDE)
      expect(pageFrom(start), `offset ${offset}`).toEqual(plainPage(offset))
    }
  })

  it("answer an empty page for a tenant without rows", () => {
    const index = makeOffsetIndex(db, "sandbox_templates")
    const start = index.locate(randomUUID(), 90_000)
    expect(pageFrom(start)).toEqual([])
  })
})
