/** The PostgreSQL backend: every store over one database (DATABASE_URL=postgres://...), shared by several replicas. */
import { Layer } from "effect"
import { PostgresDeploymentStore } from "./DeploymentStore.ts"
import { PostgresKeyStore } from "./KeyStore.ts"
import { PostgresDatabaseLive, type PostgresOptions } from "./PostgresDatabase.ts"
import { type LeaseOptions, PostgresRevisionLeases } from "./RevisionLeases.ts"
import { PostgresSandboxStore } from "./SandboxStore.ts"

export { isPostgresUrl } from "./client.ts"
export { PostgresDatabase, PostgresDatabaseLive, type PostgresOptions } from "./PostgresDatabase.ts"

/** Every store, and the revision leases that share the runtime's work between replicas. */
export const PostgresStores = ({ leaseMs, ...options }: PostgresOptions & LeaseOptions) =>
  Layer.mergeAll(PostgresDeploymentStore, PostgresSandboxStore, PostgresKeyStore, PostgresRevisionLeases(leaseMs === undefined ? {} : { leaseMs })).pipe(
    Layer.provideMerge(PostgresDatabaseLive(options))
  )
