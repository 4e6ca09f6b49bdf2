/**
 * Schema of the deployment control plane (migration ids 100–199). Every table carries
 * `tenant_id`; every statement in repository.ts filters by it.
 *
 * A deployment row keeps the `source_revision_config` of its latest revision (denormalised) so
 * the read path is one row without a join. Spec objects are stored as JSON text; the columns the
 * list filters and the push webhook match on are generated from that JSON.
 */
import type { Migration } from "./database.ts"

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
  },
  {
    // The real API's listener fields (docs/real-api.md): compute_id, the user's name for the
    // compute (unique per tenant; existing listeners get their own id) and version.
    id: "102_listener_compute_id",
    sql: `
      ALTER TABLE listeners ADD COLUMN compute_id TEXT;
      ALTER TABLE listeners ADD COLUMN version TEXT;
      UPDATE listeners SET compute_id = id WHERE compute_id IS NULL;
      CREATE UNIQUE INDEX listeners_compute_id ON listeners(tenant_id, compute_id);
    `
  },
  {
    // Push webhooks: deliveries already received (a redelivered or replayed X-GitHub-Delivery is
    // refused) until they expire; the commit and ref each revision built (a replayed push of a
    // commit already built makes no new revision); and the integration a deployment is bound to
    // (a push only touches the deployments of the integration that signed it).
    id: "103_webhook_replay_and_integration_binding",
    sql: `
      CREATE TABLE webhook_deliveries (
        integration_id TEXT NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
        delivery_id TEXT NOT NULL,
        received_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        PRIMARY KEY (integration_id, delivery_id)
      );
      CREATE INDEX webhook_deliveries_by_expiry ON webhook_deliveries(expires_at);

      ALTER TABLE revisions ADD COLUMN repo_ref TEXT GENERATED ALWAYS AS (json_extract(source_revision_config, '$.repo_ref')) VIRTUAL;
      ALTER TABLE revisions ADD COLUMN repo_commit_sha TEXT GENERATED ALWAYS AS (json_extract(source_revision_config, '$.repo_commit_sha')) VIRTUAL;
      CREATE INDEX revisions_by_commit ON revisions(deployment_id, repo_commit_sha) WHERE repo_commit_sha IS NOT NULL;

      ALTER TABLE deployments ADD COLUMN integration_id TEXT GENERATED ALWAYS AS (json_extract(source_config, '$.integration_id')) VIRTUAL;
    `
  },
  {
    // Builds: an integration may hold a read token (sealed) for its private repositories.
    id: "builds-integration-read-token",
    sql: `ALTER TABLE integrations ADD COLUMN read_token TEXT;`
  }
]
