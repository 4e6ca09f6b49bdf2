/** The SQLite backend: every store over one file (the embedded default). */
import { Layer } from "effect"
import { SqliteDeploymentStore } from "./DeploymentStore.ts"
import { SqliteKeyStore } from "./KeyStore.ts"
import { SqliteRevisionLeases } from "./RevisionLeases.ts"
import { SqliteSandboxStore } from "./SandboxStore.ts"
import { SqliteDatabaseLive, type SqliteOptions } from "./SqliteDatabase.ts"

export { SqliteDatabase, SqliteDatabaseLive, type SqliteOptions } from "./SqliteDatabase.ts"

export const SqliteStores = (options: SqliteOptions) =>
  SqliteRevisionLeases.pipe(Layer.provideMerge(Layer.mergeAll(SqliteDeploymentStore, SqliteSandboxStore, SqliteKeyStore)), Layer.provideMerge(SqliteDatabaseLive(options)))
