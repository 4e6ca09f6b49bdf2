/**
 * The SQLite backends of the deployment area's stores (`DeploymentStore`, `RevisionStore`,
 * `ListenerStore`, `IntegrationStore`): the repository's prepared statements, rows to records
 * and back. Every call is synchronous SQLite work in `op` (it completes within its fiber's first
 * poll); `changeDeployment` is one synchronous block with no effect step between its statements.
 */
import { Effect, Layer, Result } from "effect"
import { Conflict, isPending, type RevisionStatus, type Secret, supersededMessage, supersededStatus } from "../../../core/index.ts"
import { type AddRevisionOptions, type ChangedDeployment, type DeploymentChange, type DeploymentRecord, DeploymentStore } from "../DeploymentStore.ts"
import { IntegrationStore } from "../IntegrationStore.ts"
import { ListenerStore } from "../ListenerStore.ts"
import { type NewRevision, RevisionStore } from "../RevisionStore.ts"
import { toDeploymentRecord, toDeploymentRow, toListenerRecord, toListenerRow, toRevisionRecord, toRevisionRow } from "../rows.ts"
import { type Db, immediate, sqliteTransactional } from "./database.ts"
import { type DeploymentRepository, deploymentRepositoryOf } from "./deploymentRepository.ts"
import { op, opNaming } from "./errors.ts"
import { sqlPage } from "../page.ts"
import { onSqlite } from "./SqliteDatabase.ts"

const jsonList = (values: ReadonlyArray<string> | null) => (values === null ? null : JSON.stringify(values))

/** Synchronous work in one transaction, or in the caller's (joined, as `transaction` does). */
const atomically = <A>(db: Db, work: () => A): A => (db.inTransaction ? work() : immediate(db)(work))

/** Moves the deployment's unfinished revisions (only those not started, with `pendingOnly`) to their superseded state; answers their ids. */
const supersedeUnfinished = (repo: DeploymentRepository, tenantId: string, deploymentId: string, now: string, pendingOnly = false): Array<string> => {
  const stopped: Array<string> = []
  for (const { id, status } of repo.unfinishedRevisions(tenantId, deploymentId)) {
    if (pendingOnly && !isPending(status as RevisionStatus)) continue
    repo.setRevisionStatus(tenantId, id, supersededStatus(status as RevisionStatus), supersededMessage, null, now)
    stopped.push(id)
  }
  return stopped
}

export const makeSqliteDeploymentStore = (db: Db): DeploymentStore["Service"] => {
  const repo = deploymentRepositoryOf(db)
  const transaction = sqliteTransactional(db)
  const addRevision = (deployment: DeploymentRecord, revision: NewRevision, options?: AddRevisionOptions): Array<string> => {
    const stopped = supersedeUnfinished(repo, revision.tenant_id, revision.deployment_id, revision.created_at, options?.queue === true)
    repo.insertRevision(toRevisionRow(revision))
    repo.updateDeployment(toDeploymentRow(deployment))
    return stopped
  }
  const none: ReadonlyArray<string> = []
  /** The whole read-decide-write in one synchronous transaction: no effect runs between its statements. */
  const changeDeployment = <C extends DeploymentChange, E>(tenantId: string, id: string, decide: (current: DeploymentRecord) => Result.Result<C, E>) =>
    atomically(db, (): Result.Result<ChangedDeployment<C> | undefined, E> => {
      const row = repo.deployment(tenantId, id)
      if (row === undefined) return Result.succeed(undefined)
      const decided = decide(toDeploymentRecord(row))
      if (Result.isFailure(decided)) return Result.fail(decided.failure)
      const change = decided.success
      if (change.revision === undefined) {
        repo.updateDeployment(toDeploymentRow(change.deployment))
        return Result.succeed({ ...change, stopped: none })
      }
      return Result.succeed({ ...change, stopped: addRevision(change.deployment, change.revision) })
    })

  return {
    deployment: (tenantId, id) =>
      op(() => {
        const row = repo.deployment(tenantId, id)
        return row && toDeploymentRecord(row)
      }),
    createDeployment: (deployment, revision, tracingProjectId) =>
      transaction(
        // UNIQUE (tenant_id, name) decides, also between processes sharing the file.
        opNaming(
          () => new Conflict({ message: `A deployment named '${deployment.name}' already exists` }),
          () => {
            repo.insertDeployment(toDeploymentRow(deployment))
            if (revision) repo.insertRevision(toRevisionRow(revision))
            repo.upsertTracingProject(tracingProjectId, deployment.tenant_id, deployment.name, deployment.id, deployment.created_at)
          },
          "deployments.name"
        )
      ),
    changeDeployment: (tenantId, id, decide) => Effect.flatMap(op(() => changeDeployment(tenantId, id, decide)), Effect.fromResult),
    addRevision: (deployment, revision, options) => op(() => atomically(db, () => addRevision(deployment, revision, options))),
    setDeploymentState: (tenantId, id, status, activeRevisionId, now) => op(() => repo.setDeploymentState(tenantId, id, status, activeRevisionId, now)),
    setDeploymentStatus: (tenantId, id, status, now) => op(() => repo.setDeploymentStatus(tenantId, id, status, now)),
    deleteDeployment: (tenantId, id) => op(() => repo.deleteDeployment(tenantId, id)),
    listDeployments: (tenantId, filter, requested) =>
      op(() => {
        const page = sqlPage(requested)
        return repo
          .listDeployments(
            tenantId,
            {
              nameContains: filter.nameContains,
              statuses: jsonList(filter.statuses),
              imageVersion: filter.imageVersion,
              deploymentType: filter.deploymentType,
              ids: jsonList(filter.ids)
            },
            page.limit,
            page.offset
          )
          .map(toDeploymentRecord)
      }),
    pushTargets: (tenantId, integrationId, ref, branch) => op(() => repo.pushTargets(tenantId, integrationId, ref, branch).map(toDeploymentRecord)),
    pendingDeletes: () => op(() => repo.pendingDeletes()),
    listTracingProjects: (tenantId, name, page) => op(() => repo.listTracingProjects(tenantId, name, page.limit, sqlPage(page).offset)),
    deleteTracingProjects: (tenantId, deploymentId) => op(() => repo.deleteTracingProjects(tenantId, deploymentId)),
    resealSecrets: (reseal) => op(() => repo.resealSecrets(reseal))
  }
}

export const makeSqliteRevisionStore = (db: Db): RevisionStore["Service"] => {
  const repo = deploymentRepositoryOf(db)
  return {
    revision: (tenantId, deploymentId, id) =>
      op(() => {
        const row = repo.revision(tenantId, deploymentId, id)
        return row && toRevisionRecord(row)
      }),
    listRevisions: (tenantId, deploymentId, statuses, page) =>
      op(() => repo.listRevisions(tenantId, deploymentId, jsonList(statuses), page.limit, sqlPage(page).offset).map(toRevisionRecord)),
    supersedeUnfinished: (tenantId, deploymentId, now) => op(() => atomically(db, () => supersedeUnfinished(repo, tenantId, deploymentId, now))),
    advanceRevision: (tenantId, id, from, to, message, deployedAt, now) => op(() => repo.advanceRevision(tenantId, id, from, to, message, deployedAt, now)),
    inProgressRevisions: () => op(() => repo.inProgressRevisions().map(toRevisionRecord)),
    revisionSecrets: (tenantId, id) =>
      op(() => {
        const text = repo.revisionSecrets(tenantId, id)
        return text === undefined ? undefined : (JSON.parse(text) as Array<Secret>)
      }),
    activeRevisions: () => op(() => repo.activeRevisions()),
    recordCommit: (tenantId, id, commitSha) => op(() => repo.recordCommit(tenantId, id, commitSha)),
    commitBuilt: (tenantId, deploymentId, commitSha, repoRef) => op(() => repo.commitBuilt(tenantId, deploymentId, commitSha, repoRef))
  }
}

export const makeSqliteListenerStore = (db: Db): ListenerStore["Service"] => {
  const repo = deploymentRepositoryOf(db)
  return {
    listener: (tenantId, id) =>
      op(() => {
        const row = repo.listener(tenantId, id)
        return row && toListenerRecord(row)
      }),
    insertListener: (listener) =>
      // UNIQUE (tenant_id, compute_id): the real API's 409.
      opNaming(
        () => new Conflict({ message: `Listener for tenant ${listener.tenant_id} and compute ID '${listener.compute_id}' already exists` }),
        () => repo.insertListener(toListenerRow(listener)),
        "compute_id"
      ),
    updateListener: (listener) => op(() => repo.updateListener(toListenerRow(listener))),
    deleteListener: (tenantId, id) => op(() => repo.deleteListener(tenantId, id)),
    listListeners: (tenantId, page) => op(() => repo.listListeners(tenantId, page.limit, sqlPage(page).offset).map(toListenerRecord)),
    listenerUsers: (tenantId, id) => op(() => repo.listenerUsers(tenantId, id))
  }
}

export const makeSqliteIntegrationStore = (db: Db): IntegrationStore["Service"] => {
  const repo = deploymentRepositoryOf(db)
  return {
    insertIntegration: (integration) => op(() => repo.insertIntegration(integration)),
    integrations: (tenantId) => op(() => repo.integrations(tenantId)),
    integration: (tenantId, id) => op(() => repo.integration(tenantId, id)),
    setReadToken: (tenantId, id, sealed) => op(() => repo.setReadToken(tenantId, id, sealed)),
    readToken: (tenantId, id) => op(() => repo.readToken(tenantId, id)),
    integrationsByOwner: (provider, ownerKey) => op(() => repo.integrationsByOwner(provider, ownerKey)),
    integrationByOwner: (tenantId, provider, ownerKey) => op(() => repo.integrationByOwner(tenantId, provider, ownerKey)),
    repositoriesOfIntegration: (tenantId, integrationId) => op(() => repo.repositoriesOfIntegration(tenantId, integrationId)),
    deleteIntegration: (tenantId, id) => op(() => repo.deleteIntegration(tenantId, id)),
    rememberDelivery: (integrationId, deliveryId, receivedAt, expiresAt) => op(() => repo.rememberDelivery(integrationId, deliveryId, receivedAt, expiresAt)),
    resealWebhookSecrets: (reseal) => op(() => repo.resealWebhookSecrets(reseal))
  }
}

export const SqliteDeploymentStore = Layer.effect(DeploymentStore, onSqlite(makeSqliteDeploymentStore))
export const SqliteRevisionStore = Layer.effect(RevisionStore, onSqlite(makeSqliteRevisionStore))
export const SqliteListenerStore = Layer.effect(ListenerStore, onSqlite(makeSqliteListenerStore))
export const SqliteIntegrationStore = Layer.effect(IntegrationStore, onSqlite(makeSqliteIntegrationStore))
