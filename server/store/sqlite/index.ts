/** The SQLite backend: every store over one file (the embedded default). */
import { Layer } from "effect"
import { SqliteClusterStore } from "./ClusterStore.ts"
import { SqliteDeploymentStore, SqliteIntegrationStore, SqliteListenerStore, SqliteRevisionStore } from "./deploymentStores.ts"
import { SqliteKeyStore } from "./KeyStore.ts"
import { SqliteRevisionLeases } from "./RevisionLeases.ts"
import {
  SqlitePoolStore,
  SqliteQuotaStore,
  SqliteRegistryStore,
  SqliteSandboxStore,
  SqliteServiceGrantStore,
  SqliteSnapshotStore,
  SqliteTemplateStore,
  SqliteSandboxVolumeStore
} from "./sandboxStores.ts"
import { SqliteDatabaseLive, type SqliteOptions, SqliteTransactions } from "./SqliteDatabase.ts"

export { SqliteDatabase, SqliteDatabaseLive, type SqliteOptions } from "./SqliteDatabase.ts"

/** Every store, and the one-replica revision leases (built on the revision store). */
export const SqliteStores = (options: SqliteOptions) =>
  SqliteRevisionLeases.pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        SqliteTransactions,
        SqliteKeyStore,
        SqliteDeploymentStore,
        SqliteRevisionStore,
        SqliteListenerStore,
        SqliteIntegrationStore,
        SqliteSandboxStore,
        SqliteSandboxVolumeStore,
        SqliteTemplateStore,
        SqlitePoolStore,
        SqliteSnapshotStore,
        SqliteQuotaStore,
        SqliteRegistryStore,
        SqliteServiceGrantStore,
        SqliteClusterStore
      )
    ),
    Layer.provideMerge(SqliteDatabaseLive(options))
  )
