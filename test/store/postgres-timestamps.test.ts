/**
 * `isoFromTimestamptz` rewrites Postgres's UTC timestamp text to ISO 8601 by string operations
 * (the read path's fast path): it must answer exactly what parsing into a `Date` answers, for
 * every form Postgres writes, and leave the forms a `Date` cannot hold as they are.
 */
import { describe, expect, it } from "vitest"
import pg from "pg"
import { isoFromTimestamptz } from "../../server/store/postgres/client.ts"

const viaDate = (text: string) => {
  const parsed = (pg.types.getTypeParser(1184) as (text: string) => Date | number)(text)
  return parsed instanceof Date && !Number.isNaN(parsed.getTime()) ? parsed.toISOString() : text
}

describe("isoFromTimestamptz", () => {
  it("answers what a Date answers, for every fraction length, and other offsets", () => {
    const texts: Array<string> = []
    for (const date of ["2026-11-23", "1999-12-31", "1000-01-01", "9999-12-31", "2024-02-29"]) {
      for (const time of ["00:00:00", "15:34:39", "23:59:59"]) {
        for (const fraction of ["", ".1", ".12", ".123", ".1234", ".12345", ".123456", ".000001", ".999999", ".05"]) {
          for (const offset of ["+00", "+02", "-05:30", "+00:00"]) texts.push(`${date} ${time}${fraction}${offset}`)
        }
      }
    }
    for (const text of texts) expect(isoFromTimestamptz(text), text).toBe(viaDate(text))
    expect(isoFromTimestamptz("2026-11-23 15:34:39.1+00")).toBe("2026-11-23T15:34:39.100Z")
  })

  it("leaves what a Date cannot hold as Postgres wrote it", () => {
    for (const text of ["infinity", "-infinity"]) expect(isoFromTimestamptz(text)).toBe(text)
    expect(isoFromTimestamptz("0044-03-15 12:00:00+00 BC")).toBe(viaDate("0044-03-15 12:00:00+00 BC"))
  })
})
