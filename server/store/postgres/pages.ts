/**
 * Deep list pages on Postgres without an `OFFSET 90000` walk (the Postgres counterpart of
 * server/sandboxes/offsets.ts). The API pages by offset (the spec's `offset`/`limit`), so a
 * keyset cursor is not available to clients; instead each replica keeps, per tenant and table,
 * the `seq` at every STRIDE-th position ("checkpoints"), and a deep page starts its skip at the
 * nearest one: it walks fewer than STRIDE index entries.
 *
 * Checkpoints belong to one state of the list. On SQLite `PRAGMA data_version` says when another
 * process wrote; Postgres has no such counter, so migration 301 keeps one: `list_versions` holds
 * a version per (tenant, table) that a statement trigger bumps on every INSERT and DELETE of that tenant's
 * rows (renames and resizes do not move positions). A page reads the version and its rows in one
 * REPEATABLE READ snapshot; a version other than the cached one drops that tenant's checkpoints,
 * whichever replica wrote. The bump serializes inserts and deletes of one tenant's rows of one
 * table on the version row until commit: creation of sandbox resources, already serialized by
 * their name and quota checks.
 */
import { Effect } from "effect"
import type { PgClientShape, PgError, Sql } from "./client.ts"

export const STRIDE = 1024

/** Pages this shallow skip from the start: no checkpoints needed. */
export const isShallow = (offset: number): boolean => offset < 4 * STRIDE

/** The tables paged by `seq` (sandbox area). */
export const SEQ_TABLES = ["sandbox_volumes", "sandbox_templates", "sandbox_pools", "sandboxes"] as const
export type SeqTable = (typeof SEQ_TABLES)[number]

export const listVersionsMigration = {
  id: "301_list_versions",
  sql: `
    CREATE TABLE list_versions (
      tenant_id text NOT NULL,
      table_name text NOT NULL,
      version bigint NOT NULL,
      PRIMARY KEY (tenant_id, table_name)
    );
    -- Statement-level, over the transition table: one bump per tenant per statement, however
    -- many rows it wrote (a row-level bump would rewrite the version row once per row).
    CREATE FUNCTION bump_list_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO list_versions (tenant_id, table_name, version)
        SELECT DISTINCT tenant_id, TG_TABLE_NAME, 1 FROM changed_rows
        ON CONFLICT (tenant_id, table_name) DO UPDATE SET version = list_versions.version + 1;
      RETURN NULL;
    END $$;
    ${SEQ_TABLES.flatMap((table) => [
      `CREATE TRIGGER ${table}_inserted AFTER INSERT ON ${table} REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_list_version();`,
      `CREATE TRIGGER ${table}_deleted AFTER DELETE ON ${table} REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_list_version();`
    ]).join("\n    ")}
  `
}

/**
 * The WHERE/ORDER of a page query over `table` aliased `alias`: $1 tenant, $2 limit, $3 the
 * checkpoint `seq` to start from, $4 the rows still to skip from there.
 */
export const pageWhere = (table: SeqTable, alias: string): string =>
  `${alias}.tenant_id = $1 AND ${alias}.seq >= (SELECT seq FROM ${table} WHERE tenant_id = $1 AND seq >= $3 ORDER BY seq LIMIT 1 OFFSET $4)
   ORDER BY ${alias}.seq LIMIT $2`

export interface PageStart {
  readonly from: bigint
  readonly offset: number
}

export const makePager = (table: SeqTable) => {
  const firstSql = `SELECT seq FROM ${table} WHERE tenant_id = $1 ORDER BY seq LIMIT 1`
  const strideSql = `SELECT seq FROM ${table} WHERE tenant_id = $1 AND seq > $2 ORDER BY seq LIMIT 1 OFFSET ${STRIDE - 1}`
  const versionSql = "SELECT version FROM list_versions WHERE tenant_id = $1 AND table_name = $2"
  /** Per tenant: the version the checkpoints belong to and the `seq` at positions 0, STRIDE, 2 * STRIDE ... */
  const cache = new Map<string, { version: bigint; seqs: Array<bigint> }>()

  /** Where the page at `offset` starts; run inside the page's snapshot. */
  const locate = (sql: Sql, tenantId: string, offset: number): Effect.Effect<PageStart, PgError> =>
    Effect.gen(function* () {
      if (isShallow(offset)) return { from: 0n, offset }
      const version = (yield* sql.one<{ version: bigint }>(versionSql, [tenantId, table]))?.version ?? 0n
      let entry = cache.get(tenantId)
      if (!entry || entry.version !== version) {
        const first = yield* sql.one<{ seq: bigint }>(firstSql, [tenantId])
        entry = { version, seqs: first ? [first.seq] : [] }
        cache.set(tenantId, entry)
      }
      const index = Math.floor(offset / STRIDE)
      const seqs = entry.seqs
      while (seqs.length > 0 && seqs.length <= index) {
        const next = yield* sql.one<{ seq: bigint }>(strideSql, [tenantId, seqs[seqs.length - 1]!.toString()])
        if (!next) break
        seqs.push(next.seq)
      }
      // Past the end of the list: start after any possible row.
      if (index >= seqs.length) return { from: 2n ** 62n, offset: 0 }
      return { from: seqs[index]!, offset: offset - index * STRIDE }
    })

  /**
   * The rows of `query` (a SELECT ending in `pageWhere(table, alias)`) at `offset`: shallow pages
   * are one statement; deep ones read checkpoints and rows in one read-only snapshot.
   */
  const page = <R extends object>(client: PgClientShape, query: string, tenantId: string, limit: number, offset: number): Effect.Effect<Array<R>, PgError> => {
    const read = (sql: Sql) =>
      Effect.flatMap(locate(sql, tenantId, offset), (start) => sql.query<R>(query, [tenantId, limit, start.from.toString(), start.offset]))
    return isShallow(offset) ? read(client) : client.transaction(read, { isolation: "repeatable read", readOnly: true })
  }

  return { locate, page }
}

// ---------------------------------------------------------------------------------------------
// Deployments and revisions: lists in descending order of a key that is not `seq`.

/**
 * Migration 302: the versions of the deployment lists (per tenant, `deployments`) and of each
 * deployment's revision list (`revisions:<deployment id>`), bumped by statement triggers like
 * those of 301. A new deployment shifts every position of its tenant's list (newest first); a
 * new revision only those of its deployment's list, so concurrent PATCHes of different
 * deployments never meet on a version row. Deployment creates and deletes of one tenant do: of
 * two concurrent ones, the second runs again (SERIALIZABLE), as creates of sandbox resources.
 */
export const deploymentListVersionsMigration = {
  id: "302_deployment_list_versions",
  sql: `
    CREATE TRIGGER deployments_inserted AFTER INSERT ON deployments REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_list_version();
    CREATE TRIGGER deployments_deleted AFTER DELETE ON deployments REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_list_version();
    CREATE FUNCTION bump_revision_list_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO list_versions (tenant_id, table_name, version)
        SELECT DISTINCT tenant_id, 'revisions:' || deployment_id, 1 FROM changed_rows
        ON CONFLICT (tenant_id, table_name) DO UPDATE SET version = list_versions.version + 1;
      RETURN NULL;
    END $$;
    CREATE TRIGGER revisions_inserted AFTER INSERT ON revisions REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_revision_list_version();
    CREATE TRIGGER revisions_deleted AFTER DELETE ON revisions REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_revision_list_version();
  `
}

/** Where a deep page starts: the key of the checkpoint row at or before it, and the rows to skip from there; no key: past the end. */
export interface KeyStart<K> {
  readonly from: K | undefined
  readonly skip: number
}

/**
 * Checkpoints of lists ordered by a key `K` (a row's position is fixed by its key): per list,
 * the key at positions 0, STRIDE, 2 * STRIDE ..., found lazily (`first`, then `after`: the key
 * STRIDE - 1 rows past the one given, one `OFFSET 1023` walk each) and dropped when the list's
 * `list_versions` row moved. At most `maxLists` lists are kept (the oldest go first).
 */
export const makeKeyCheckpoints = <K>(spec: {
  readonly first: (sql: Sql, scope: ReadonlyArray<unknown>) => Effect.Effect<K | undefined, PgError>
  readonly after: (sql: Sql, scope: ReadonlyArray<unknown>, key: K) => Effect.Effect<K | undefined, PgError>
  readonly maxLists?: number
}) => {
  const versionSql = "SELECT version FROM list_versions WHERE tenant_id = $1 AND table_name = $2"
  const cache = new Map<string, { version: bigint; keys: Array<K> }>()
  const maxLists = spec.maxLists ?? 4096

  /** Where the page at `offset` of the list `name` of `tenantId` starts; run inside the page's snapshot. */
  const locate = (sql: Sql, tenantId: string, name: string, scope: ReadonlyArray<unknown>, offset: number): Effect.Effect<KeyStart<K>, PgError> =>
    Effect.gen(function* () {
      const version = (yield* sql.one<{ version: bigint }>(versionSql, [tenantId, name]))?.version ?? 0n
      const id = `${tenantId}\u0000${name}`
      let entry = cache.get(id)
      if (!entry || entry.version !== version) {
        const first = yield* spec.first(sql, scope)
        entry = { version, keys: first === undefined ? [] : [first] }
        cache.delete(id)
        if (cache.size >= maxLists) cache.delete(cache.keys().next().value!)
        cache.set(id, entry)
      }
      const index = Math.floor(offset / STRIDE)
      const keys = entry.keys
      while (keys.length > 0 && keys.length <= index) {
        const next = yield* spec.after(sql, scope, keys[keys.length - 1]!)
        if (next === undefined) break
        keys.push(next)
      }
      if (index >= keys.length) return { from: undefined, skip: 0 }
      return { from: keys[index]!, skip: offset - index * STRIDE }
    })

  /**
   * The start of the page at `offset` from the checkpoints already known, and the version they
   * belong to; undefined when they do not reach that deep yet. The caller reads the rows and
   * the list's version in ONE statement (one snapshot) and keeps the rows only when the version
   * is still this one: a warm deep page is then one statement, no transaction around it.
   */
  const known = (tenantId: string, name: string, offset: number): { readonly version: bigint; readonly start: KeyStart<K> } | undefined => {
    const entry = cache.get(`${tenantId}\u0000${name}`)
    const index = Math.floor(offset / STRIDE)
    if (entry === undefined || index >= entry.keys.length) return undefined
    return { version: entry.version, start: { from: entry.keys[index]!, skip: offset - index * STRIDE } }
  }

  return { locate, known }
}

/**
 * Runs a deep page's reads in one snapshot: the caller's transaction when there is one, else a
 * REPEATABLE READ READ ONLY transaction (the checkpoints' version and the rows of one state).
 */
export const inSnapshot = <A>(client: PgClientShape, current: Sql | undefined, read: (sql: Sql) => Effect.Effect<A, PgError>): Effect.Effect<A, PgError> =>
  current ? read(current) : client.transaction(read, { isolation: "repeatable read", readOnly: true })
