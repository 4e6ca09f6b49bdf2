/** The PostgreSQL backend: every store over one database (DATABASE_URL=postgres://...), shared by several replicas. */
import { Layer } from "effect"
import { PostgresDeploymentStore, PostgresIntegrationStore, PostgresListenerStore, PostgresRevisionStore } from "./deploymentStores.ts"
import { PostgresKeyStore } from "./KeyStore.ts"
import { PostgresDatabaseLive, type PostgresOptions, PostgresTransactions } from "./PostgresDatabase.ts"
import { type LeaseOptions, PostgresRevisionLeases } from "./RevisionLeases.ts"
import {
  PostgresPoolStore,
  PostgresQuotaStore,
  PostgresRegistryStore,
  PostgresSandboxStore,
  PostgresServiceGrantStore,
  PostgresSnapshotStore,
  PostgresTemplateStore,
  PostgresSandboxVolumeStore
} from "./sandboxStores.ts"

export { isPostgresUrl } from "./client.ts"
export { PostgresDatabase, PostgresDatabaseLive, type PostgresOptions } from "./PostgresDatabase.ts"

/** Every store, and the revision leases that share the runtime's work between replicas. */
export const PostgresStores = ({ leaseMs, ...options }: PostgresOptions & LeaseOptions) =>
  Layer.mergeAll(
    PostgresTransactions,
    PostgresKeyStore,
    PostgresDeploymentStore,
    PostgresRevisionStore,
    PostgresListenerStore,
    PostgresIntegrationStore,
    PostgresSandboxStore,
    PostgresSandboxVolumeStore,
    PostgresTemplateStore,
    PostgresPoolStore,
    PostgresSnapshotStore,
    PostgresQuotaStore,
    PostgresRegistryStore,
    PostgresServiceGrantStore,
    PostgresRevisionLeases(leaseMs === undefined ? {} : { leaseMs })
  ).pipe(Layer.provideMerge(PostgresDatabaseLive(options)))
