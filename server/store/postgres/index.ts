/** The PostgreSQL backend: every store over one database (DATABASE_URL=postgres://...), shared by several replicas. */
import { Layer } from "effect"
import { PostgresDeploymentStore } from "./DeploymentStore.ts"
import { PostgresKeyStore } from "./KeyStore.ts"
import { PostgresDatabaseLive, type PostgresOptions } from "./PostgresDatabase.ts"
import { PostgresSandboxStore } from "./SandboxStore.ts"

export { isPostgresUrl } from "./client.ts"
export { PostgresDatabase, PostgresDatabaseLive, type PostgresOptions } from "./PostgresDatabase.ts"

export const PostgresStores = (options: PostgresOptions) =>
  Layer.mergeAll(PostgresDeploymentStore, PostgresSandboxStore, PostgresKeyStore).pipe(Layer.provideMerge(PostgresDatabaseLive(options)))
