/**
 * Schema of the deployment control plane (migration ids 100–199). Every table carries
 * `tenant_id`; every statement in repository.ts filters by it.
 *
 * A deployment row keeps the `source_revision_config` of its latest revision (denormalised) so
 * the read path is one row without a join. Spec objects are stored as JSON text; the columns the
 * list filters and the push webhook match on are generated from that JSON.
 */
// @ts-nocheck

import type { Migration } from "../db/migrations.ts"

export const deploymentMigrations: ReadonlyArray<Migration> = [
  {
    id: "100_deployments",
    sql: `
      CREATE TABLE deployments (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        name TEXT NOT NULL,
        source TEXT NOT NULL,
        source_config TEXT NOT NULL,
        source_revision_config TEXT NOT NULL,
        secrets TEXT NOT NULL,
        image_version TEXT,
        status TEXT NOT NULL,
        latest_revision_id TEXT,
        active_revision_id TEXT,
        revision_seq INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deployment_type TEXT GENERATED ALWAYS AS (json_extract(source_config, '$.deployment_type')) VIRTUAL,
        repo_url TEXT GENERATED ALWAYS AS (json_extract(source_config, '$.repo_url')) VIRTUAL,
        build_on_push INTEGER GENERATED ALWAYS AS (json_extract(source_config, '$.build_on_push')) VIRTUAL,
        repo_ref TEXT GENERATED ALWAYS AS (json_extract(source_revision_config, '$.repo_ref')) VIRTUAL,
        UNIQUE (tenant_id, name)
      );
      CREATE INDEX deployments_by_tenant_created ON deployments(tenant_id, created_at DESC, id);
      CREATE INDEX deployments_by_status ON deployments(status) WHERE status = 'AWAITING_DELETE';

      CREATE TABLE revisions (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        deployment_id TEXT NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        source TEXT NOT NULL,
        status TEXT NOT NULL,
        status_message TEXT,
        source_revision_config TEXT NOT NULL,
        secrets TEXT NOT NULL,
        deployed_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (deployment_id, seq)
      );
      CREATE INDEX revisions_by_deployment ON revisions(tenant_id, deployment_id, seq DESC);
      CREATE INDEX revisions_in_progress ON revisions(status)
        WHERE status NOT IN ('DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED', 'UNKNOWN');

      CREATE TABLE tracing_projects (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        name TEXT NOT NULL,
        deployment_id TEXT,
        created_at TEXT NOT NULL,
        UNIQUE (tenant_id, name)
      );

      CREATE TABLE listeners (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        compute_type TEXT NOT NULL,
        compute_config TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX listeners_by_tenant ON listeners(tenant_id, created_at, id);

      CREATE TABLE integrations (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        provider TEXT NOT NULL,
        owner TEXT NOT NULL,
        owner_key TEXT NOT NULL,
        webhook_secret TEXT NOT NULL,
        installed_at TEXT NOT NULL,
        UNIQUE (tenant_id, provider, owner_key)
      );
      CREATE INDEX integrations_by_owner ON integrations(provider, owner_key);
    `
  },
  {
    // A rollout supersedes the deployment's unfinished revisions: find them without walking its
    // whole history (a deployment patched often has thousands of finished revisions).
    id: "101_unfinished_revisions_by_deployment",
    sql: `
      DROP INDEX revisions_in_progress;
      CREATE INDEX revisions_unfinished ON revisions(tenant_id, deployment_id, seq)
        WHERE status NOT IN ('DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED', 'UNKNOWN');
    `
  }
]
