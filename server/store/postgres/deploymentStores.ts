/**
 * The PostgreSQL backends of the deployment area's stores (`DeploymentStore`, `RevisionStore`,
 * `ListenerStore`, `IntegrationStore`): the SQLite statements in Postgres, rows to records and
 * back (rows.ts).
 */
import { Effect, Layer, Result } from "effect"
import { Conflict, isPending, type RevisionStatus, type Secret, supersededMessage, supersededStatus } from "../../../core/index.ts"
import { type AddRevisionOptions, type ChangedDeployment, type DeploymentChange, type DeploymentRecord, DeploymentStore, type TracingProjectRecord } from "../DeploymentStore.ts"
import { type IntegrationRecord, IntegrationStore } from "../IntegrationStore.ts"
import { ListenerStore } from "../ListenerStore.ts"
import { type NewRevision, RevisionStore } from "../RevisionStore.ts"
import {
  columns,
  type DeploymentRow,
  finalRevisionStatusList as FINAL,
  type ListenerRow,
  type RevisionView as RevisionRow,
  toDeploymentRecord,
  toDeploymentRow,
  toListenerRecord,
  toListenerRow,
  toRevisionRecord,
  toRevisionRow
} from "../rows.ts"
import { sqlPage } from "../page.ts"
import { StoreError } from "../StoreError.ts"
import type { PgError, Sql } from "./client.ts"
import { inSnapshot, isShallow, makeKeyCheckpoints, STRIDE } from "./pages.ts"
import { CurrentTransaction, onPostgres, type PgStoreKit, toStoreError } from "./PostgresDatabase.ts"

const deploymentColumns = columns.deployment
const revisionViewColumns = columns.revisionView
const listenerColumns = columns.listener
const integrationColumns = columns.integration

/** What a change may write, in the order of `updateDeploymentSql`'s $3.. (after tenant_id and id). */
const changeableParams = (d: DeploymentRecord) => {
  const row = toDeploymentRow(d)
  return [row.source_config, row.source_revision_config, row.secrets, row.image_version, row.status, row.latest_revision_id, row.active_revision_id, row.revision_seq, row.updated_at]
}

const insertDeploymentSql = `INSERT INTO deployments (tenant_id, id, source_config, source_revision_config, secrets, image_version, status,
    latest_revision_id, active_revision_id, revision_seq, updated_at, name, source, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`
const updateDeploymentSql = `UPDATE deployments SET source_config = $3, source_revision_config = $4, secrets = $5, image_version = $6, status = $7,
    latest_revision_id = $8, active_revision_id = $9, revision_seq = $10, updated_at = $11
  WHERE tenant_id = $1 AND id = $2`
const insertRevisionSql = `INSERT INTO revisions (id, tenant_id, deployment_id, seq, source, status, status_message, source_revision_config, secrets, deployed_at, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

/** The read path's statements, also run by the bench's raw-driver floor (bench/postgres-floor.ts). */
export const deploymentByIdSql = `SELECT ${deploymentColumns} FROM deployments WHERE tenant_id = $1 AND id = $2`

export const revisionByIdSql = `SELECT ${revisionViewColumns} FROM revisions WHERE tenant_id = $1 AND deployment_id = $2 AND id = $3`

export const listDeploymentsSql = `SELECT ${deploymentColumns} FROM deployments
  WHERE tenant_id = $1
    AND ($2::text IS NULL OR strpos(name, lower($2::text)) > 0)
    AND ($3::text[] IS NULL OR status = ANY($3::text[]))
    AND ($4::text IS NULL OR image_version = $4::text)
    AND ($5::text IS NULL OR deployment_type = $5::text)
    AND ($6::text[] IS NULL OR id = ANY($6::text[]))
  ORDER BY created_at DESC, id DESC
  LIMIT $7 OFFSET $8`

/**
 * Deep pages (offset >= 4 * STRIDE) of the unfiltered lists start from a checkpoint (pages.ts):
 * the key of the row at the nearest multiple of STRIDE at or before the offset, and skip fewer
 * than STRIDE rows from there. A filtered list keeps the plain OFFSET: its filters (a substring
 * of the name, a status, an image version...) have no index, so it reads the tenant's rows
 * whatever the offset, and a status or image version changes with every revision, which no
 * checkpoint could follow without a version bump on every update.
 * `created_at` keys travel as Postgres text (`::text`): exact to the microsecond.
 */
const deploymentOrder = "ORDER BY created_at DESC, id DESC"
const deepDeploymentsSql = `SELECT ${deploymentColumns} FROM deployments
  WHERE tenant_id = $1 AND (created_at, id) <= ($2::timestamptz, $3::text) ${deploymentOrder} LIMIT $4 OFFSET $5`
/** The same page with its list's version, read in the same statement (the warm path, see `known` in pages.ts). */
const deepDeploymentsVersionedSql = `SELECT ${deploymentColumns},
    (SELECT version FROM list_versions WHERE tenant_id = $1 AND table_name = 'deployments') AS list_version
  FROM deployments
  WHERE tenant_id = $1 AND (created_at, id) <= ($2::timestamptz, $3::text) ${deploymentOrder} LIMIT $4 OFFSET $5`
const firstDeploymentKeySql = `SELECT created_at::text AS at, id FROM deployments WHERE tenant_id = $1 ${deploymentOrder} LIMIT 1`
const strideDeploymentKeySql = `SELECT created_at::text AS at, id FROM deployments
  WHERE tenant_id = $1 AND (created_at, id) < ($2::timestamptz, $3::text) ${deploymentOrder} LIMIT 1 OFFSET ${STRIDE - 1}`
const revisionOrder = "ORDER BY seq DESC"
const listRevisionsSql = `SELECT ${revisionViewColumns} FROM revisions
  WHERE tenant_id = $1 AND deployment_id = $2 AND ($3::text[] IS NULL OR status = ANY($3::text[]))
  ${revisionOrder} LIMIT $4 OFFSET $5`
const deepRevisionsSql = `SELECT ${revisionViewColumns} FROM revisions
  WHERE tenant_id = $1 AND deployment_id = $2 AND seq <= $3 ${revisionOrder} LIMIT $4 OFFSET $5`
const deepRevisionsVersionedSql = `SELECT ${revisionViewColumns},
    (SELECT version FROM list_versions WHERE tenant_id = $1 AND table_name = 'revisions:' || $2) AS list_version
  FROM revisions
  WHERE tenant_id = $1 AND deployment_id = $2 AND seq <= $3 ${revisionOrder} LIMIT $4 OFFSET $5`
const firstRevisionKeySql = `SELECT seq FROM revisions WHERE tenant_id = $1 AND deployment_id = $2 ${revisionOrder} LIMIT 1`
const strideRevisionKeySql = `SELECT seq FROM revisions WHERE tenant_id = $1 AND deployment_id = $2 AND seq < $3 ${revisionOrder} LIMIT 1 OFFSET ${STRIDE - 1}`

type DeploymentKey = { readonly at: string; readonly id: string }

/** The statements of deep pages, for tests that read their plans. */
export const deepListSql = {
  deployments: deepDeploymentsSql,
  revisions: deepRevisionsSql,
  deploymentsVersioned: deepDeploymentsVersionedSql,
  revisionsVersioned: deepRevisionsVersionedSql
}

/**
 * A deep page. Warm (checkpoints known that deep, outside a transaction): one statement that
 * also reads the list's version, kept when the version is the checkpoints' one. Otherwise, or
 * when the version moved or the page came back empty (no row to carry the version): the
 * version, the checkpoints and the rows in one snapshot (the caller's transaction, or a
 * read-only one).
 */
const deepPage = <R extends object, A>(
  { query, client }: PgStoreKit,
  warm: { readonly version: bigint; readonly sql: string; readonly params: ReadonlyArray<unknown> } | undefined,
  toRecord: (row: R) => A,
  read: (sql: Sql) => Effect.Effect<Array<A>, PgError>
): Effect.Effect<Array<A>, StoreError> =>
  Effect.withFiber((fiber) => {
    const current = fiber.getRef(CurrentTransaction)
    const cold = Effect.mapError(inSnapshot(client, current, read), toStoreError)
    if (warm === undefined || current !== undefined) return cold
    return Effect.flatMap(query<R & { list_version: bigint | null }>(warm.sql, warm.params), (rows) =>
      rows.length > 0 && (rows[0]!.list_version ?? 0n) === warm.version ? Effect.succeed(rows.map(toRecord)) : cold
    )
  })

/** Moves the deployment's unfinished revisions (only those not started, with `pendingOnly`) to their superseded state (in the caller's transaction, or one); answers their ids. */
const supersedeUnfinished = ({ query, execute, transaction }: PgStoreKit, tenantId: string, deploymentId: string, now: string, pendingOnly = false) =>
  transaction(
    Effect.flatMap(
      query<{ id: string; status: RevisionStatus }>(
        `SELECT id, status FROM revisions WHERE tenant_id = $1 AND deployment_id = $2 AND status NOT IN (${FINAL}) ORDER BY seq`,
        [tenantId, deploymentId]
      ),
      (unfinished) =>
        Effect.forEach(pendingOnly ? unfinished.filter(({ status }) => isPending(status)) : unfinished, ({ id, status }) =>
          Effect.as(
            execute("UPDATE revisions SET status = $1, status_message = $2, updated_at = $3 WHERE tenant_id = $4 AND id = $5", [
              supersededStatus(status),
              supersededMessage,
              now,
              tenantId,
              id
            ]),
            id
          )
        )
    )
  )

export const makePostgresDeploymentStore = (kit: PgStoreKit): DeploymentStore["Service"] => {
  const { query, oneMap, queryMap, execute, executeNaming, transaction } = kit
  const deploymentPages = makeKeyCheckpoints<DeploymentKey>({
    first: (sql, [tenantId]) => sql.one<DeploymentKey>(firstDeploymentKeySql, [tenantId]),
    after: (sql, [tenantId], key) => sql.one<DeploymentKey>(strideDeploymentKeySql, [tenantId, key.at, key.id])
  })
  const insertRevision = (revision: NewRevision) => {
    const row = toRevisionRow(revision)
    return execute(insertRevisionSql, [
      row.id,
      row.tenant_id,
      row.deployment_id,
      row.seq,
      row.source,
      row.status,
      row.status_message,
      row.source_revision_config,
      row.secrets,
      row.deployed_at,
      row.created_at,
      row.updated_at
    ])
  }
  const updateDeployment = (d: DeploymentRecord) => Effect.map(execute(updateDeploymentSql, [d.tenant_id, d.id, ...changeableParams(d)]), (n) => n > 0)
  const deploymentById = (tenantId: string, id: string) => oneMap(deploymentByIdSql, [tenantId, id], toDeploymentRecord)
  const addRevision = (deployment: DeploymentRecord, revision: NewRevision, options?: AddRevisionOptions) =>
    transaction(
      Effect.gen(function* () {
        const stopped = yield* supersedeUnfinished(kit, revision.tenant_id, revision.deployment_id, revision.created_at, options?.queue === true)
        yield* insertRevision(revision)
        yield* updateDeployment(deployment)
        return stopped
      })
    )
  const changeDeployment = <C extends DeploymentChange, E>(
    tenantId: string,
    id: string,
    decide: (current: DeploymentRecord) => Result.Result<C, E>
  ): Effect.Effect<ChangedDeployment<C> | undefined, E | StoreError> =>
    transaction(
      Effect.flatMap(deploymentById(tenantId, id), (current): Effect.Effect<ChangedDeployment<C> | undefined, E | StoreError> => {
        if (current === undefined) return Effect.succeed(undefined)
        const decided = decide(current)
        if (Result.isFailure(decided)) return Effect.fail(decided.failure)
        const change = decided.success
        return change.revision === undefined
          ? Effect.as(updateDeployment(change.deployment), { ...change, stopped: [] })
          : Effect.map(addRevision(change.deployment, change.revision), (stopped) => ({ ...change, stopped }))
      })
    )
  return {
    deployment: deploymentById,
    createDeployment: (deployment, revision, tracingProjectId) =>
      transaction(
        Effect.gen(function* () {
          // UNIQUE (tenant_id, name) decides, also between replicas.
          yield* executeNaming(insertDeploymentSql, [deployment.tenant_id, deployment.id, ...changeableParams(deployment), deployment.name, deployment.source, deployment.created_at], () => new Conflict({ message: `A deployment named '${deployment.name}' already exists` }))
          if (revision) yield* insertRevision(revision)
          yield* execute(
            `INSERT INTO tracing_projects (id, tenant_id, name, deployment_id, created_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (tenant_id, name) DO UPDATE SET deployment_id = excluded.deployment_id`,
            [tracingProjectId, deployment.tenant_id, deployment.name, deployment.id, deployment.created_at]
          )
        })
      ),
    changeDeployment,
    addRevision,
    setDeploymentState: (tenantId, id, status, activeRevisionId, now) =>
      Effect.map(
        execute("UPDATE deployments SET status = $1, active_revision_id = $2, updated_at = $3 WHERE tenant_id = $4 AND id = $5", [status, activeRevisionId, now, tenantId, id]),
        (n) => n > 0
      ),
    setDeploymentStatus: (tenantId, id, status, now) =>
      Effect.map(execute("UPDATE deployments SET status = $1, updated_at = $2 WHERE tenant_id = $3 AND id = $4", [status, now, tenantId, id]), (n) => n > 0),
    deleteDeployment: (tenantId, id) => Effect.map(execute("DELETE FROM deployments WHERE tenant_id = $1 AND id = $2", [tenantId, id]), (n) => n > 0),
    listDeployments: (tenantId, filter, page) => {
      const unfiltered = filter.nameContains === null && filter.statuses === null && filter.imageVersion === null && filter.deploymentType === null && filter.ids === null
      if (unfiltered && !isShallow(page.offset)) {
        const offset = sqlPage(page).offset
        const known = deploymentPages.known(tenantId, "deployments", offset)
        const warm = known?.start.from && {
          version: known.version,
          sql: deepDeploymentsVersionedSql,
          params: [tenantId, known.start.from.at, known.start.from.id, page.limit, known.start.skip]
        }
        return deepPage(kit, warm, toDeploymentRecord, (sql) =>
          Effect.flatMap(deploymentPages.locate(sql, tenantId, "deployments", [tenantId], offset), ({ from, skip }) =>
            from === undefined
              ? Effect.succeed([])
              : Effect.map(sql.query<DeploymentRow>(deepDeploymentsSql, [tenantId, from.at, from.id, page.limit, skip]), (rows) => rows.map(toDeploymentRecord))
          )
        )
      }
      return queryMap(listDeploymentsSql, [
          tenantId,
          filter.nameContains,
          filter.statuses,
          filter.imageVersion,
          filter.deploymentType,
          filter.ids,
          page.limit,
          sqlPage(page).offset
        ], toDeploymentRecord)
    },
    pushTargets: (tenantId, integrationId, ref, branch) =>
      Effect.map(
        query<DeploymentRow>(
          `SELECT ${deploymentColumns} FROM deployments
           WHERE tenant_id = $1 AND lower(integration_id) = lower($2) AND source = 'gitrepo' AND build_on_push AND status <> 'AWAITING_DELETE'
             AND repo_ref IN ($3, $4)`,
          [tenantId, integrationId, ref, branch]
        ),
        (rows) => rows.map(toDeploymentRecord)
      ),
    pendingDeletes: () => query<{ tenant_id: string; id: string; updated_at: string }>("SELECT tenant_id, id, updated_at FROM deployments WHERE status = 'AWAITING_DELETE'"),
    listTracingProjects: (tenantId, name, page) =>
      query<TracingProjectRecord>(
        `SELECT id, tenant_id, name, deployment_id, created_at FROM tracing_projects
         WHERE tenant_id = $1 AND ($2::text IS NULL OR name = $2::text) ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`,
        [tenantId, name, page.limit, sqlPage(page).offset]
      ),
    deleteTracingProjects: (tenantId, deploymentId) =>
      execute("DELETE FROM tracing_projects WHERE tenant_id = $1 AND deployment_id = $2", [tenantId, deploymentId]),
    resealSecrets: (reseal) =>
      transaction(
        Effect.gen(function* () {
          let values = 0
          for (const table of ["deployments", "revisions"] as const) {
            for (const row of yield* query<{ id: string; secrets: string }>(`SELECT id, secrets FROM ${table} ORDER BY id`)) {
              const secrets = JSON.parse(row.secrets) as Array<{ name: string; value: string }>
              values += secrets.length
              const resealed = yield* Effect.forEach(secrets, ({ name, value }) => Effect.map(resealing(reseal, value), (sealed) => ({ name, value: sealed })))
              yield* execute(`UPDATE ${table} SET secrets = $1 WHERE id = $2`, [JSON.stringify(resealed), row.id])
            }
          }
          return values
        })
      )
  }
}

/** `reseal(stored)`, a throw as the StoreError that rolls the rotation back. */
const resealing = (reseal: (stored: string) => string, stored: string) =>
  Effect.try({
    try: () => reseal(stored),
    catch: (cause) => new StoreError({ message: `Resealing a stored secret failed: ${cause instanceof Error ? cause.message : String(cause)}`, busy: false, cause })
  })

export const makePostgresRevisionStore = (kit: PgStoreKit): RevisionStore["Service"] => {
  const { query, one, oneMap, queryMap, execute } = kit
  const revisionPages = makeKeyCheckpoints<number>({
    first: (sql, scope) => Effect.map(sql.one<{ seq: number }>(firstRevisionKeySql, scope), (row) => row?.seq),
    after: (sql, scope, seq) => Effect.map(sql.one<{ seq: number }>(strideRevisionKeySql, [...scope, seq]), (row) => row?.seq)
  })
  return {
    revision: (tenantId, deploymentId, id) =>
      oneMap(revisionByIdSql, [tenantId, deploymentId, id], (row: RevisionRow) => toRevisionRecord(row)),
    listRevisions: (tenantId, deploymentId, statuses, page) => {
      if (statuses === null && !isShallow(page.offset)) {
        const offset = sqlPage(page).offset
        const known = revisionPages.known(tenantId, `revisions:${deploymentId}`, offset)
        const warm = known?.start.from !== undefined ? { version: known.version, sql: deepRevisionsVersionedSql, params: [tenantId, deploymentId, known.start.from, page.limit, known.start.skip] } : undefined
        return deepPage(kit, warm, toRevisionRecord, (sql) =>
          Effect.flatMap(revisionPages.locate(sql, tenantId, `revisions:${deploymentId}`, [tenantId, deploymentId], offset), ({ from, skip }) =>
            from === undefined
              ? Effect.succeed([])
              : Effect.map(sql.query<RevisionRow>(deepRevisionsSql, [tenantId, deploymentId, from, page.limit, skip]), (rows) => rows.map(toRevisionRecord))
          )
        )
      }
      return queryMap(listRevisionsSql, [tenantId, deploymentId, statuses, page.limit, sqlPage(page).offset], toRevisionRecord)
    },
    supersedeUnfinished: (tenantId, deploymentId, now) => supersedeUnfinished(kit, tenantId, deploymentId, now),
    advanceRevision: (tenantId, id, from, to, message, deployedAt, now) =>
      Effect.map(
        execute(
          `UPDATE revisions SET status = $1, status_message = $2, deployed_at = coalesce(deployed_at, $3::timestamptz), updated_at = $4
           WHERE tenant_id = $5 AND id = $6 AND status = $7`,
          [to, message, deployedAt, now, tenantId, id, from]
        ),
        (n) => n > 0
      ),
    inProgressRevisions: () =>
      Effect.map(query<RevisionRow>(`SELECT ${revisionViewColumns} FROM revisions WHERE status NOT IN (${FINAL}) ORDER BY updated_at, seq`), (rows) =>
        rows.map(toRevisionRecord)
      ),
    revisionSecrets: (tenantId, id) =>
      Effect.map(query<{ secrets: string | Array<Secret> }>("SELECT secrets FROM revisions WHERE tenant_id = $1 AND id = $2", [tenantId, id]), (rows) => {
        const stored = rows[0]?.secrets
        return stored === undefined ? undefined : typeof stored === "string" ? (JSON.parse(stored) as Array<Secret>) : stored
      }),
    activeRevisions: () =>
      query<{ tenant_id: string; deployment_id: string; revision_id: string }>(
        "SELECT tenant_id, id AS deployment_id, active_revision_id AS revision_id FROM deployments WHERE active_revision_id IS NOT NULL AND status != 'AWAITING_DELETE'"
      ),
    recordCommit: (tenantId, id, commitSha) =>
      Effect.map(
        execute(
          "UPDATE revisions SET source_revision_config = (source_revision_config::jsonb || jsonb_build_object('repo_commit_sha', $1::text))::json WHERE tenant_id = $2 AND id = $3",
          [commitSha, tenantId, id]
        ),
        (n) => n > 0
      ),
    commitBuilt: (tenantId, deploymentId, commitSha, repoRef) =>
      Effect.map(
        one("SELECT 1 AS built FROM revisions WHERE tenant_id = $1 AND deployment_id = $2 AND repo_commit_sha = $3 AND repo_ref = $4 LIMIT 1", [
          tenantId,
          deploymentId,
          commitSha,
          repoRef
        ]),
        (row) => row !== undefined
      ),
  }
}

export const makePostgresListenerStore = ({ query, one, execute, executeNaming }: PgStoreKit): ListenerStore["Service"] => ({
    listener: (tenantId, id) =>
      Effect.map(one<ListenerRow>(`SELECT ${listenerColumns} FROM listeners WHERE tenant_id = $1 AND id = $2`, [tenantId, id]), (row) => row && toListenerRecord(row)),
    insertListener: (listener) => {
      const l = toListenerRow(listener)
      return Effect.asVoid(
        // UNIQUE (tenant_id, compute_id): the real API's 409, also between replicas.
        executeNaming(
          `INSERT INTO listeners (${listenerColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [l.id, l.tenant_id, l.compute_type, l.compute_id, l.version, l.compute_config, l.created_at, l.updated_at],
          () => new Conflict({ message: `Listener for tenant ${l.tenant_id} and compute ID '${l.compute_id}' already exists` })
        )
      )
    },
    updateListener: (listener) => {
      const l = toListenerRow(listener)
      return Effect.map(
        execute("UPDATE listeners SET compute_type = $3, version = $4, compute_config = $5, updated_at = $6 WHERE tenant_id = $1 AND id = $2", [
          l.tenant_id,
          l.id,
          l.compute_type,
          l.version,
          l.compute_config,
          l.updated_at
        ]),
        (n) => n > 0
      )
    },
    deleteListener: (tenantId, id) => Effect.map(execute("DELETE FROM listeners WHERE tenant_id = $1 AND id = $2", [tenantId, id]), (n) => n > 0),
    listListeners: (tenantId, page) =>
      Effect.map(
        query<ListenerRow>(`SELECT ${listenerColumns} FROM listeners WHERE tenant_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`, [tenantId, page.limit, sqlPage(page).offset]),
        (rows) => rows.map(toListenerRecord)
      ),
    listenerUsers: (tenantId, id) =>
      query<{ name: string; namespace: string | null }>(
        `SELECT name, source_config -> 'listener_config' ->> 'k8s_namespace' AS namespace FROM deployments
         WHERE tenant_id = $1 AND listener_id = $2 ORDER BY name`,
        [tenantId, id]
      )
})

export const makePostgresIntegrationStore = ({ query, one, execute, transaction }: PgStoreKit): IntegrationStore["Service"] => ({
    insertIntegration: (i: IntegrationRecord) =>
      Effect.asVoid(
        execute(`INSERT INTO integrations (${integrationColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
          i.id,
          i.tenant_id,
          i.provider,
          i.owner,
          i.owner_key,
          i.webhook_secret,
          i.installed_at
        ])
      ),
    integrations: (tenantId) =>
      query<IntegrationRecord>(`SELECT ${integrationColumns} FROM integrations WHERE tenant_id = $1 ORDER BY installed_at, id`, [tenantId]),
    integration: (tenantId, id) => one<IntegrationRecord>(`SELECT ${integrationColumns} FROM integrations WHERE tenant_id = $1 AND id = $2`, [tenantId, id]),
    integrationsByOwner: (provider, ownerKey) =>
      query<IntegrationRecord>(`SELECT ${integrationColumns} FROM integrations WHERE provider = $1 AND owner_key = $2 ORDER BY installed_at, id`, [provider, ownerKey]),
    integrationByOwner: (tenantId, provider, ownerKey) =>
      one<IntegrationRecord>(`SELECT ${integrationColumns} FROM integrations WHERE tenant_id = $1 AND provider = $2 AND owner_key = $3`, [tenantId, provider, ownerKey]),
    repositoriesOfIntegration: (tenantId, integrationId) =>
      query<{ repo_url: string; repo_ref: string | null }>(
        `SELECT repo_url, repo_ref FROM deployments
         WHERE tenant_id = $1 AND lower(source_config ->> 'integration_id') = $2 AND repo_url IS NOT NULL
         ORDER BY created_at, id`,
        [tenantId, integrationId.toLowerCase()]
      ),
    setReadToken: (tenantId, id, sealed) =>
      Effect.map(execute("UPDATE integrations SET read_token = $1 WHERE tenant_id = $2 AND id = $3", [sealed, tenantId, id]), (n) => n > 0),
    readToken: (tenantId, id) =>
      Effect.map(one<{ read_token: string | null }>("SELECT read_token FROM integrations WHERE tenant_id = $1 AND id = $2", [tenantId, id]), (row) => row?.read_token ?? undefined),
    deleteIntegration: (tenantId, id) =>
      // webhook_deliveries go with it (ON DELETE CASCADE).
      Effect.map(execute("DELETE FROM integrations WHERE tenant_id = $1 AND id = $2", [tenantId, id]), (n) => n > 0),
    rememberDelivery: Effect.fnUntraced(function* (integrationId, deliveryId, receivedAt, expiresAt) {
      // One statement decides, also between replicas: a new id is inserted, an expired entry
      // of the same id is replaced, an unexpired one is left as it is (no row written: false).
      const written = yield* execute(
        `INSERT INTO webhook_deliveries (integration_id, delivery_id, received_at, expires_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (integration_id, delivery_id) DO UPDATE SET received_at = excluded.received_at, expires_at = excluded.expires_at
         WHERE webhook_deliveries.expires_at <= excluded.received_at`,
        [integrationId, deliveryId, receivedAt, expiresAt]
      )
      yield* execute("DELETE FROM webhook_deliveries WHERE expires_at <= $1", [receivedAt])
      return written === 1
    }),
  resealWebhookSecrets: (reseal) =>
    transaction(
      Effect.gen(function* () {
        const rows = yield* query<{ id: string; webhook_secret: string }>("SELECT id, webhook_secret FROM integrations ORDER BY id")
        for (const row of rows) yield* execute("UPDATE integrations SET webhook_secret = $1 WHERE id = $2", [yield* resealing(reseal, row.webhook_secret), row.id])
        const tokens = yield* query<{ id: string; read_token: string }>("SELECT id, read_token FROM integrations WHERE read_token IS NOT NULL ORDER BY id")
        for (const row of tokens) yield* execute("UPDATE integrations SET read_token = $1 WHERE id = $2", [yield* resealing(reseal, row.read_token), row.id])
        return rows.length + tokens.length
      })
    )
})

export const PostgresDeploymentStore = Layer.effect(DeploymentStore, onPostgres(makePostgresDeploymentStore))
export const PostgresRevisionStore = Layer.effect(RevisionStore, onPostgres(makePostgresRevisionStore))
export const PostgresListenerStore = Layer.effect(ListenerStore, onPostgres(makePostgresListenerStore))
export const PostgresIntegrationStore = Layer.effect(IntegrationStore, onPostgres(makePostgresIntegrationStore))
