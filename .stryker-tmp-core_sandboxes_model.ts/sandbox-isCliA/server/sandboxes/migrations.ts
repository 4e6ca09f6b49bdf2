/**
 * Schema of the sandbox area (migration ids 200–299). Every table carries `tenant_id` and every
 * name is unique per tenant within its kind. Rows point at each other by id, never by name, so
 * a rename never breaks a reference (a template's mounts follow a renamed volume, a sandbox
 * follows a renamed template).
 *
 * Each table has an `INTEGER PRIMARY KEY seq` (a stable rowid VACUUM keeps) and an index on
 * `tenant_id`, which SQLite extends with the rowid: lists read `(tenant_id, seq)` in order
 * from that index alone, so skipping a deep offset walks a narrow index, not the table.
 *
 * Quantities are stored twice: the exact integer (bytes, millicores) for arithmetic and the
 * canonical text for answers.
 */
// @ts-nocheck

import type { Migration } from "../db/migrations.ts"

export const sandboxMigrations: ReadonlyArray<Migration> = [
  {
    id: "200_sandbox_area",
    sql: `
      CREATE TABLE sandbox_volumes (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        name TEXT NOT NULL,
        size_bytes INTEGER NOT NULL CHECK (size_bytes > 0),
        size TEXT NOT NULL,
        storage_class TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX sandbox_volumes_name ON sandbox_volumes(tenant_id, name);
      CREATE INDEX sandbox_volumes_by_tenant ON sandbox_volumes(tenant_id);
      -- Covers the quota sum: usage of an organization is read from this index alone.
      CREATE INDEX sandbox_volumes_usage ON sandbox_volumes(organization_id, size_bytes);

      CREATE TABLE sandbox_templates (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        name TEXT NOT NULL,
        image TEXT NOT NULL,
        cpu_millicores INTEGER NOT NULL,
        cpu TEXT NOT NULL,
        memory_bytes INTEGER NOT NULL,
        memory TEXT NOT NULL,
        storage_bytes INTEGER,
        storage TEXT,
        proxy_config TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX sandbox_templates_name ON sandbox_templates(tenant_id, name);
      CREATE INDEX sandbox_templates_by_tenant ON sandbox_templates(tenant_id);

      CREATE TABLE sandbox_template_mounts (
        template_id TEXT NOT NULL REFERENCES sandbox_templates(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        volume_id TEXT NOT NULL REFERENCES sandbox_volumes(id),
        mount_path TEXT NOT NULL,
        PRIMARY KEY (template_id, position)
      );
      CREATE INDEX sandbox_template_mounts_by_volume ON sandbox_template_mounts(volume_id);

      CREATE TABLE sandbox_pools (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        name TEXT NOT NULL,
        template_id TEXT NOT NULL REFERENCES sandbox_templates(id),
        replicas INTEGER NOT NULL CHECK (replicas >= 0),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX sandbox_pools_name ON sandbox_pools(tenant_id, name);
      CREATE INDEX sandbox_pools_by_tenant ON sandbox_pools(tenant_id);
      CREATE INDEX sandbox_pools_by_template ON sandbox_pools(template_id);

      CREATE TABLE sandboxes (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        name TEXT NOT NULL,
        template_id TEXT NOT NULL REFERENCES sandbox_templates(id),
        pool_id TEXT REFERENCES sandbox_pools(id),
        status TEXT NOT NULL CHECK (status IN ('provisioning', 'ready', 'failed')),
        status_message TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX sandboxes_name ON sandboxes(tenant_id, name);
      CREATE INDEX sandboxes_by_tenant ON sandboxes(tenant_id);
      CREATE INDEX sandboxes_by_template ON sandboxes(template_id);
      CREATE INDEX sandboxes_by_pool ON sandboxes(pool_id);
    `
  }
]
