/**
 * Schema of the sandbox area (migration ids 200–299). Every table carries `tenant_id` and every
 * name is unique per tenant within its kind, except volume names, which the spec makes unique
 * within the organization (migration 220). Rows point at each other by id, never by name, so
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
import type { Migration } from "./database.ts"

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
  },
  {
    // The box lifecycle gained `stopped` and `deleting` (core/sandboxes/lifecycle.ts). SQLite
    // cannot alter a CHECK constraint: the table is rebuilt (nothing references it).
    id: "210_sandbox_lifecycle",
    sql: `
      CREATE TABLE sandboxes_next (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        name TEXT NOT NULL,
        template_id TEXT NOT NULL REFERENCES sandbox_templates(id),
        pool_id TEXT REFERENCES sandbox_pools(id),
        status TEXT NOT NULL CHECK (status IN ('provisioning', 'ready', 'failed', 'stopped', 'deleting')),
        status_message TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      INSERT INTO sandboxes_next SELECT seq, id, tenant_id, name, template_id, pool_id, status, status_message, created_at, updated_at FROM sandboxes;
      DROP TABLE sandboxes;
      ALTER TABLE sandboxes_next RENAME TO sandboxes;
      CREATE UNIQUE INDEX sandboxes_name ON sandboxes(tenant_id, name);
      CREATE INDEX sandboxes_by_tenant ON sandboxes(tenant_id);
      CREATE INDEX sandboxes_by_template ON sandboxes(template_id);
      CREATE INDEX sandboxes_by_pool ON sandboxes(pool_id);
    `
  },
  {
    // The spec: a volume's name is unique within the organization, not only within the tenant.
    // Volumes that already share a name across tenants of one organization keep the oldest's
    // name; the others get their id's first 8 characters appended (still a DNS label: at most
    // 54 + 1 + 8 characters). Templates mount volumes by id, so nothing breaks.
    id: "220_volume_names_per_organization",
    sql: `
      UPDATE sandbox_volumes SET name = substr(name, 1, 54) || '-' || substr(id, 1, 8)
      WHERE EXISTS (
        SELECT 1 FROM sandbox_volumes older
        WHERE older.organization_id = sandbox_volumes.organization_id AND older.name = sandbox_volumes.name AND older.seq < sandbox_volumes.seq
      );
      DROP INDEX sandbox_volumes_name;
      CREATE UNIQUE INDEX sandbox_volumes_name_in_organization ON sandbox_volumes(organization_id, name);
    `
  },
  {
    // The current sandbox model (docs/sandboxes.md, "Snapshots"): snapshots (an image reference
    // plus a filesystem capacity, built through the image store), and boxes made from one (or
    // from the default image) with their own resources instead of a template, plus their
    // retention (ttl_seconds, idle_ttl_seconds, delete_after_stop_seconds, stopped_at).
    // template_id becomes nullable: SQLite cannot drop a NOT NULL, so the table is rebuilt
    // (nothing references it).
    id: "230_sandbox_snapshots",
    sql: `
      CREATE TABLE sandbox_snapshots (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        name TEXT NOT NULL,
        docker_image TEXT NOT NULL,
        image_digest TEXT,
        fs_capacity_bytes INTEGER NOT NULL CHECK (fs_capacity_bytes > 0),
        status TEXT NOT NULL CHECK (status IN ('building', 'ready', 'failed')),
        status_message TEXT,
        -- The box a captured snapshot was made from (no reference: the box may be deleted since).
        source_sandbox_id TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX sandbox_snapshots_name ON sandbox_snapshots(tenant_id, name);
      CREATE INDEX sandbox_snapshots_by_tenant ON sandbox_snapshots(tenant_id);
      CREATE INDEX sandbox_snapshots_building ON sandbox_snapshots(status) WHERE status = 'building';

      CREATE TABLE sandboxes_next (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        name TEXT NOT NULL,
        template_id TEXT REFERENCES sandbox_templates(id),
        pool_id TEXT REFERENCES sandbox_pools(id),
        status TEXT NOT NULL CHECK (status IN ('provisioning', 'ready', 'failed', 'stopped', 'deleting')),
        status_message TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        snapshot_id TEXT REFERENCES sandbox_snapshots(id),
        image TEXT,
        vcpus INTEGER,
        mem_bytes INTEGER,
        fs_capacity_bytes INTEGER,
        ttl_seconds INTEGER,
        idle_ttl_seconds INTEGER,
        delete_after_stop_seconds INTEGER,
        stopped_at TEXT,
        -- A box is made from a template or from an image (a snapshot's or the default), never both.
        CHECK ((template_id IS NULL) = (image IS NOT NULL))
      );
      INSERT INTO sandboxes_next (seq, id, tenant_id, name, template_id, pool_id, status, status_message, created_at, updated_at)
        SELECT seq, id, tenant_id, name, template_id, pool_id, status, status_message, created_at, updated_at FROM sandboxes;
      DROP TABLE sandboxes;
      ALTER TABLE sandboxes_next RENAME TO sandboxes;
      CREATE UNIQUE INDEX sandboxes_name ON sandboxes(tenant_id, name);
      CREATE INDEX sandboxes_by_tenant ON sandboxes(tenant_id);
      CREATE INDEX sandboxes_by_template ON sandboxes(template_id);
      CREATE INDEX sandboxes_by_pool ON sandboxes(pool_id);
      CREATE INDEX sandboxes_by_snapshot ON sandboxes(snapshot_id);
      -- The controller's retention sweep reads only the boxes that have a retention setting.
      CREATE INDEX sandboxes_with_retention ON sandboxes(seq)
        WHERE ttl_seconds > 0 OR idle_ttl_seconds > 0 OR delete_after_stop_seconds > 0;
    `
  },
  {
    // Private image registries (credentials sealed with the secrets key; the password column
    // never holds plaintext) and the ports of boxes shared by service URLs. A grant names its
    // box by id without a foreign key: a rebuild of the sandboxes table must not touch it, and
    // a token is only honoured while its box exists under the token's tenant.
    id: "240_sandbox_registries",
    sql: `
      CREATE TABLE sandbox_registries (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        name TEXT NOT NULL,
        url TEXT NOT NULL,
        username TEXT NOT NULL,
        password_sealed TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX sandbox_registries_name ON sandbox_registries(tenant_id, name);

      CREATE TABLE sandbox_service_grants (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        sandbox_id TEXT NOT NULL,
        port INTEGER NOT NULL CHECK (port BETWEEN 1 AND 65535),
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX sandbox_service_grants_port ON sandbox_service_grants(sandbox_id, port);
    `
  }
]
