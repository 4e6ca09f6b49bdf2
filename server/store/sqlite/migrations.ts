/**
 * Versioned schema migrations, applied in id order at start, each in its own transaction.
 * Ids are sorted as strings: 001–099 core (tenancy, keys), 100–199 control plane, 200–299
 * sandbox area, `replicas-*` what replicas share. Never edit a migration that has shipped: add a new one.
 */
import { deploymentMigrations } from "./deploymentMigrations.ts"
import type { Migration } from "./database.ts"
import { sandboxMigrations } from "./sandboxMigrations.ts"

export const coreMigrations: ReadonlyArray<Migration> = [
  {
    id: "001_tenancy_and_keys",
    sql: `
      CREATE TABLE organizations (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        storage_quota TEXT,
        created_at TEXT NOT NULL
      );
      CREATE TABLE tenants (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        name TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX tenants_by_organization ON tenants(organization_id);
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        default_tenant_id TEXT NOT NULL REFERENCES tenants(id),
        key_hash TEXT NOT NULL UNIQUE,
        key_prefix TEXT NOT NULL,
        description TEXT,
        created_at TEXT NOT NULL,
        revoked_at TEXT
      );
    `
  }
]

/**
 * What replicas share (`replicas-*`, docs/replicas.md): on SQLite one process is the only
 * replica, so only the values every replica must agree on (the secrets key's check value).
 */
export const replicaMigrations: ReadonlyArray<Migration> = [
  {
    id: "replicas-1_cluster_settings",
    sql: `
      CREATE TABLE cluster_settings (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
    `
  }
]

/** Every migration of the SQLite backend, in the order they apply. */
export const sqliteMigrations: ReadonlyArray<Migration> = [...coreMigrations, ...deploymentMigrations, ...sandboxMigrations, ...replicaMigrations]
