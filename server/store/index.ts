/**
 * The stores for a configuration: PostgreSQL when DATABASE_URL is set (several replicas on one
 * database), else the embedded SQLite file. Both provide DeploymentStore, SandboxStore and KeyStore.
 */
import { Layer } from "effect"
import type { ServerConfig } from "../config.ts"
import type { DeploymentStore } from "./DeploymentStore.ts"
import type { KeyStore } from "./KeyStore.ts"
import { PostgresStores } from "./postgres/index.ts"
import type { RevisionLeases } from "./RevisionLeases.ts"
import type { SandboxStore } from "./SandboxStore.ts"
import { SqliteStores } from "./sqlite/index.ts"
import type { StoreError } from "./StoreError.ts"

export type Stores = DeploymentStore | SandboxStore | KeyStore | RevisionLeases

/** The stores and the `RevisionLeases` of the backend (PostgreSQL: shared by replicas; SQLite: one replica holds all). */
export const storesFor = (config: Pick<ServerConfig, "databasePath" | "databaseUrl"> & Partial<Pick<ServerConfig, "leaseMs">>): Layer.Layer<Stores, StoreError> =>
  config.databaseUrl !== undefined
    ? (PostgresStores({ url: config.databaseUrl, ...(config.leaseMs === undefined ? {} : { leaseMs: config.leaseMs }) }) as Layer.Layer<Stores, StoreError>)
    : (SqliteStores({ path: config.databasePath }) as Layer.Layer<Stores, StoreError>)

/** Where the data lives, for logs (a URL without its password). */
export const describeDatabase = (config: Pick<ServerConfig, "databasePath" | "databaseUrl">): string =>
  config.databaseUrl !== undefined ? config.databaseUrl.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@") : config.databasePath
