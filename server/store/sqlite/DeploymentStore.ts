/** The SQLite backend of `DeploymentStore`: the repository's prepared statements, rows to records and back. */
import { Effect, Layer, Result } from "effect"
import { Conflict, type RevisionStatus, type Secret, supersededMessage, supersededStatus } from "../../../core/index.ts"
import {
  type ChangedDeployment,
  type DeploymentChange,
  type DeploymentRecord,
  DeploymentStore,
  type IntegrationRecord,
  type NewRevision
} from "../DeploymentStore.ts"
import { type Db, immediate, sqliteTransactional } from "./database.ts"
import { toDeploymentRecord, toDeploymentRow, toListenerRecord, toListenerRow, toRevisionRecord, toRevisionRow } from "../rows.ts"
import { makeDeploymentRepository } from "./deploymentRepository.ts"
import type { StoreError } from "../StoreError.ts"
import { isUniqueViolation, op, toStoreError } from "./errors.ts"
import { sqlPage } from "./page.ts"
import { SqliteDatabase } from "./SqliteDatabase.ts"

const jsonList = (values: ReadonlyArray<string> | null) => (values === null ? null : JSON.stringify(values))

export const makeSqliteDeploymentStore = (db: Db): DeploymentStore["Service"] => {
  const repo = makeDeploymentRepository(db)
  const transaction = sqliteTransactional(db)
  const inTransaction = immediate(db)
  /** Synchronous work in one transaction, or in the caller's (joined, as `transaction` does). */
  const atomically = <A>(work: () => A): A => (db.inTransaction ? work() : inTransaction(work))

  const supersedeUnfinished = (tenantId: string, deploymentId: string, now: string): Array<string> => {
    const stopped: Array<string> = []
    for (const { id, status } of repo.unfinishedRevisions(tenantId, deploymentId)) {
      repo.setRevisionStatus(tenantId, id, supersededStatus(status as RevisionStatus), supersededMessage, null, now)
      stopped.push(id)
    }
    return stopped
  }
  const addRevision = (deployment: DeploymentRecord, revision: NewRevision): Array<string> => {
    const stopped = supersedeUnfinished(revision.tenant_id, revision.deployment_id, revision.created_at)
    repo.insertRevision(toRevisionRow(revision))
    repo.updateDeployment(toDeploymentRow(deployment))
    return stopped
  }
  const none: ReadonlyArray<string> = []
  /** The whole read-decide-write in one synchronous transaction: no effect runs between its statements. */
  const changeDeployment = <C extends DeploymentChange, E>(tenantId: string, id: string, decide: (current: DeploymentRecord) => Result.Result<C, E>) =>
    atomically((): Result.Result<ChangedDeployment<C> | undefined, E> => {
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
    transaction,
    deployment: (tenantId, id) =>
      op(() => {
        const row = repo.deployment(tenantId, id)
        return row && toDeploymentRecord(row)
      }),
    createDeployment: (deployment, revision, tracingProjectId) =>
      transaction(
        Effect.suspend((): Effect.Effect<void, Conflict | StoreError> => {
          try {
            repo.insertDeployment(toDeploymentRow(deployment))
            repo.insertRevision(toRevisionRow(revision))
            repo.upsertTracingProject(tracingProjectId, deployment.tenant_id, deployment.name, deployment.id, deployment.created_at)
            return Effect.void
          } catch (error) {
            // UNIQUE (tenant_id, name) decides, also between processes sharing the file.
            if (isUniqueViolation(error, "deployments.name")) {
              return Effect.fail(new Conflict({ message: `A deployment named '${deployment.name}' already exists` }))
            }
            return Effect.fail(toStoreError(error))
          }
        })
      ),
    updateDeployment: (deployment) => op(() => repo.updateDeployment(toDeploymentRow(deployment))),
    changeDeployment: (tenantId, id, decide) => Effect.flatMap(op(() => changeDeployment(tenantId, id, decide)), Effect.fromResult),
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
    commitBuilt: (tenantId, deploymentId, commitSha, repoRef) => op(() => repo.commitBuilt(tenantId, deploymentId, commitSha, repoRef)),
    pendingDeletes: () => op(() => repo.pendingDeletes()),

    revision: (tenantId, deploymentId, id) =>
      op(() => {
        const row = repo.revision(tenantId, deploymentId, id)
        return row && toRevisionRecord(row)
      }),
    insertRevision: (revision) => op(() => repo.insertRevision(toRevisionRow(revision))),
    addRevision: (deployment, revision) => op(() => atomically(() => addRevision(deployment, revision))),
    supersedeUnfinished: (tenantId, deploymentId, now) => op(() => atomically(() => supersedeUnfinished(tenantId, deploymentId, now))),
    listRevisions: (tenantId, deploymentId, statuses, page) =>
      op(() => repo.listRevisions(tenantId, deploymentId, jsonList(statuses), page.limit, sqlPage(page).offset).map(toRevisionRecord)),
    unfinishedRevisions: (tenantId, deploymentId) =>
      op(() => repo.unfinishedRevisions(tenantId, deploymentId) as Array<{ id: string; status: RevisionStatus }>),
    setRevisionStatus: (tenantId, id, status, message, deployedAt, now) => op(() => repo.setRevisionStatus(tenantId, id, status, message, deployedAt, now)),
    advanceRevision: (tenantId, id, from, to, message, deployedAt, now) =>
      op(() => repo.advanceRevision(tenantId, id, from, to, message, deployedAt, now)),
    inProgressRevisions: () => op(() => repo.inProgressRevisions().map(toRevisionRecord)),
    revisionSecrets: (tenantId, id) =>
      op(() => {
        const text = repo.revisionSecrets(tenantId, id)
        return text === undefined ? undefined : (JSON.parse(text) as Array<Secret>)
      }),
    activeRevisions: () => op(() => repo.activeRevisions()),

    listTracingProjects: (tenantId, name, page) => op(() => repo.listTracingProjects(tenantId, name, page.limit, sqlPage(page).offset)),
    deleteTracingProjects: (tenantId, deploymentId) => op(() => repo.deleteTracingProjects(tenantId, deploymentId)),

    listener: (tenantId, id) =>
      op(() => {
        const row = repo.listener(tenantId, id)
        return row && toListenerRecord(row)
      }),
    insertListener: (listener) =>
      Effect.suspend((): Effect.Effect<void, Conflict | StoreError> => {
        try {
          repo.insertListener(toListenerRow(listener))
          return Effect.void
        } catch (error) {
          // UNIQUE (tenant_id, compute_id): the real API's 409.
          if (isUniqueViolation(error, "compute_id")) {
            return Effect.fail(new Conflict({ message: `Listener for tenant ${listener.tenant_id} and compute ID '${listener.compute_id}' already exists` }))
          }
          return Effect.fail(toStoreError(error))
        }
      }),
    updateListener: (listener) => op(() => repo.updateListener(toListenerRow(listener))),
    deleteListener: (tenantId, id) => op(() => repo.deleteListener(tenantId, id)),
    listListeners: (tenantId, page) => op(() => repo.listListeners(tenantId, page.limit, sqlPage(page).offset).map(toListenerRecord)),
    listenerUsers: (tenantId, id) => op(() => repo.listenerUsers(tenantId, id)),

    insertIntegration: (integration: IntegrationRecord) => op(() => repo.insertIntegration(integration)),
    integrations: (tenantId) => op(() => repo.integrations(tenantId)),
    integration: (tenantId, id) => op(() => repo.integration(tenantId, id)),
    integrationsByOwner: (provider, ownerKey) => op(() => repo.integrationsByOwner(provider, ownerKey)),
    integrationByOwner: (tenantId, provider, ownerKey) => op(() => repo.integrationByOwner(tenantId, provider, ownerKey)),
    repositoriesOfIntegration: (tenantId, integrationId) => op(() => repo.repositoriesOfIntegration(tenantId, integrationId)),
    deleteIntegration: (tenantId, id) => op(() => repo.deleteIntegration(tenantId, id)),
    rememberDelivery: (integrationId, deliveryId, receivedAt, expiresAt) => op(() => repo.rememberDelivery(integrationId, deliveryId, receivedAt, expiresAt)),
    pruneDeliveries: (now) => op(() => repo.pruneDeliveries(now)),
    resealSecrets: (reseal) => op(() => repo.resealSecrets(reseal))
  }
}

/** `DeploymentStore` over the server's SQLite file. */
export const SqliteDeploymentStore = Layer.effect(
  DeploymentStore,
  Effect.gen(function* () {
    const { db } = yield* SqliteDatabase
    return makeSqliteDeploymentStore(db)
  })
)
