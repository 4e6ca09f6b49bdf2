/**
 * The stores for a configuration: PostgreSQL when DATABASE_URL is set (several replicas on one
 * database), else the embedded SQLite file. Both provide every store of `Stores`, each its own
 * service (one aggregate each), the transactions they share, `RevisionLeases` (PostgreSQL:
 * shared between replicas; SQLite: the one process holds every revision) and `ClusterStore` (which
 * replica runs what; `replicaId` is this replica's id, the revision leases' owner).
 */
import type { Layer } from "effect"
import type { ServerConfig } from "../config.ts"
import type { ClusterStore } from "./ClusterStore.ts"
import type { DeploymentStore } from "./DeploymentStore.ts"
import type { IntegrationStore } from "./IntegrationStore.ts"
import type { KeyStore } from "./KeyStore.ts"
import type { ListenerStore } from "./ListenerStore.ts"
import type { PoolStore } from "./PoolStore.ts"
import { PostgresStores } from "./postgres/index.ts"
import type { QuotaStore } from "./QuotaStore.ts"
import type { RegistryStore } from "./RegistryStore.ts"
import type { RevisionLeases } from "./RevisionLeases.ts"
import type { RevisionStore } from "./RevisionStore.ts"
import type { SandboxStore } from "./SandboxStore.ts"
import type { ServiceGrantStore } from "./ServiceGrantStore.ts"
import type { SnapshotStore } from "./SnapshotStore.ts"
import { SqliteStores } from "./sqlite/index.ts"
import type { StoreError } from "./StoreError.ts"
import type { TemplateStore } from "./TemplateStore.ts"
import type { Transactions } from "./Transactions.ts"
import type { SandboxVolumeStore } from "./SandboxVolumeStore.ts"

/** The deployment area's stores, and the backend's revision leases. */
export type DeploymentStores = DeploymentStore | RevisionStore | ListenerStore | IntegrationStore | RevisionLeases
/** The sandbox area's stores. */
export type SandboxStores = SandboxStore | SandboxVolumeStore | TemplateStore | PoolStore | SnapshotStore | QuotaStore | RegistryStore | ServiceGrantStore
/** Every store a backend provides, and its transactions. */
export type Stores = Transactions | KeyStore | DeploymentStores | SandboxStores | ClusterStore

/** The stores and the `RevisionLeases` of the backend (PostgreSQL: shared by replicas; SQLite: one replica holds all). */
export const storesFor = (
  config: Pick<ServerConfig, "databasePath" | "databaseUrl"> & Partial<Pick<ServerConfig, "leaseMs">>,
  replicaId?: string
): Layer.Layer<Stores, StoreError> =>
  config.databaseUrl !== undefined
    ? PostgresStores({ url: config.databaseUrl, ...(config.leaseMs === undefined ? {} : { leaseMs: config.leaseMs }), ...(replicaId === undefined ? {} : { owner: replicaId }) })
    : SqliteStores({ path: config.databasePath })

/** Where the data lives, for logs (a URL without its password). */
export const describeDatabase = (config: Pick<ServerConfig, "databasePath" | "databaseUrl">): string =>
  config.databaseUrl !== undefined ? config.databaseUrl.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@") : config.databasePath
