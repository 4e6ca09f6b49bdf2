/**
 * The page a statement is given, on either backend. OFFSET is a 64-bit integer (SQLite's and
 * Postgres's bigint), and a JavaScript number past 2^53 is not even exact: an offset the API
 * accepted (any size) would be a binding error, a 500. No table holds 2^53 rows, so any larger
 * offset reads the same empty page as 2^53 - 1 does.
 */
import type { Page } from "../../core/index.ts"

export const MAX_SQL_OFFSET = Number.MAX_SAFE_INTEGER

export const sqlPage = (page: Page): Page => {
  const offset = Number.isFinite(page.offset) ? Math.min(Math.max(0, Math.trunc(page.offset)), MAX_SQL_OFFSET) : MAX_SQL_OFFSET
  return offset === page.offset ? page : { limit: page.limit, offset }
}
