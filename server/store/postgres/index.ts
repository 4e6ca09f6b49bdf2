/** The PostgreSQL backend: every store over one database (DATABASE_URL=postgres://...), shared by several replicas. */
import { Layer } from "effect"
import { PostgresClusterStore } from "./ClusterStore.ts"
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
export const PostgresStores = ({ leaseMs, owner, ...options }: PostgresOptions & LeaseOptions) =>
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
    PostgresClusterStore,
    PostgresRevisionLeases({ ...(leaseMs === undefined ? {} : { leaseMs }), ...(owner === undefined ? {} : { owner }) })
  ).pipe(Layer.provideMerge(PostgresDatabaseLive(options)))
