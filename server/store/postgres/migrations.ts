/**
 * The PostgreSQL schema: every table of the SQLite backend (server/db/migrations.ts,
 * server/deployments/migrations.ts, server/sandboxes/migrations.ts) with the same columns,
 * constraints and indexes, in Postgres types:
 * - timestamps are `timestamptz` (the client reads them back as the same ISO 8601 UTC text with
 *   milliseconds the SQLite rows hold);
 * - spec documents are `json`, not `jsonb`: answers echo them, and `json` keeps the text as
 *   written (jsonb reorders keys), so an answer is byte-for-byte the one SQLite gives; the
 *   columns lists filter on are generated from them as in SQLite;
 * - exact quantities are `bigint`; sandbox rows keep a `seq` (identity) for list order;
 * - ids stay `text`: a tenant id comes from a header, and a malformed one must answer 404/403
 *   as on SQLite, not fail a cast;
 * - ids and names are `COLLATE "C"`: byte order, as SQLite's BINARY, whatever the database's
 *   locale, so lists sort the same on both backends.
 *
 * Ids mirror the SQLite migrations (001 core, 100 control plane, 200 sandboxes); 300+ are the
 * multi-replica additions (runtime claims), `replicas-*` the ownership of workloads between
 * replicas. Never edit a shipped migration: add one.
 *
 * `migrate` applies them under `pg_advisory_lock`, so several replicas starting at once on an
 * empty database queue on the lock; each one that gets it reads what is applied while holding
 * it and applies only the rest (each migration in its own transaction with its record).
 */
import { Effect } from "effect"
import { connect, makeSql, type PgClientShape, type PgError } from "./client.ts"
import { deploymentListVersionsMigration, listVersionsMigration } from "./pages.ts"

export interface PgMigration {
  readonly id: string
  readonly sql: string
}

/** Final revision statuses as the migrations were applied with (the queries derive theirs from the core: `finalRevisionStatusList` in rows.ts). */
const finalList = "'DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED', 'UNKNOWN'"

export const postgresMigrations: ReadonlyArray<PgMigration> = [
  {
    id: "001_tenancy_and_keys",
    sql: `
      CREATE TABLE organizations (
        id text COLLATE "C" PRIMARY KEY,
        name text COLLATE "C" NOT NULL,
        storage_quota text,
        created_at timestamptz NOT NULL
      );
      CREATE TABLE tenants (
        id text COLLATE "C" PRIMARY KEY,
        organization_id text NOT NULL REFERENCES organizations(id),
        name text COLLATE "C" NOT NULL,
        created_at timestamptz NOT NULL
      );
      CREATE INDEX tenants_by_organization ON tenants(organization_id);
      CREATE TABLE api_keys (
        id text COLLATE "C" PRIMARY KEY,
        organization_id text NOT NULL REFERENCES organizations(id),
        default_tenant_id text NOT NULL REFERENCES tenants(id),
        key_hash text NOT NULL UNIQUE,
        key_prefix text NOT NULL,
        description text,
        created_at timestamptz NOT NULL,
        revoked_at timestamptz
      );
    `
  },
  {
    id: "100_deployments",
    sql: `
      CREATE TABLE deployments (
        id text COLLATE "C" PRIMARY KEY,
        tenant_id text NOT NULL REFERENCES tenants(id),
        name text COLLATE "C" NOT NULL,
        source text NOT NULL,
        source_config json NOT NULL,
        source_revision_config json NOT NULL,
        secrets json NOT NULL,
        image_version text,
        status text NOT NULL,
        latest_revision_id text,
        active_revision_id text,
        revision_seq integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        deployment_type text GENERATED ALWAYS AS (source_config ->> 'deployment_type') STORED,
        repo_url text GENERATED ALWAYS AS (source_config ->> 'repo_url') STORED,
        build_on_push boolean GENERATED ALWAYS AS ((source_config ->> 'build_on_push')::boolean) STORED,
        repo_ref text GENERATED ALWAYS AS (source_revision_config ->> 'repo_ref') STORED,
        listener_id text GENERATED ALWAYS AS (source_config ->> 'listener_id') STORED,
        CONSTRAINT deployments_name UNIQUE (tenant_id, name)
      );
      CREATE INDEX deployments_by_tenant_created ON deployments(tenant_id, created_at DESC, id DESC);
      CREATE INDEX deployments_by_status ON deployments(status) WHERE status = 'AWAITING_DELETE';
      CREATE INDEX deployments_by_listener ON deployments(tenant_id, listener_id) WHERE listener_id IS NOT NULL;

      CREATE TABLE revisions (
        id text COLLATE "C" PRIMARY KEY,
        tenant_id text NOT NULL REFERENCES tenants(id),
        deployment_id text NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
        seq integer NOT NULL,
        source text NOT NULL,
        status text NOT NULL,
        status_message text,
        source_revision_config json NOT NULL,
        secrets json NOT NULL,
        deployed_at timestamptz,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT revisions_seq UNIQUE (deployment_id, seq)
      );
      CREATE INDEX revisions_by_deployment ON revisions(tenant_id, deployment_id, seq DESC);
      CREATE INDEX revisions_unfinished ON revisions(tenant_id, deployment_id, seq) WHERE status NOT IN (${finalList});

      CREATE TABLE tracing_projects (
        id text COLLATE "C" PRIMARY KEY,
        tenant_id text NOT NULL REFERENCES tenants(id),
        name text COLLATE "C" NOT NULL,
        deployment_id text,
        created_at timestamptz NOT NULL,
        CONSTRAINT tracing_projects_name UNIQUE (tenant_id, name)
      );
      CREATE INDEX tracing_projects_by_tenant ON tracing_projects(tenant_id, created_at DESC, id DESC);

      CREATE TABLE listeners (
        id text COLLATE "C" PRIMARY KEY,
        tenant_id text NOT NULL REFERENCES tenants(id),
        compute_type text NOT NULL,
        compute_config json NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );
      CREATE INDEX listeners_by_tenant ON listeners(tenant_id, created_at, id);

      CREATE TABLE integrations (
        id text COLLATE "C" PRIMARY KEY,
        tenant_id text NOT NULL REFERENCES tenants(id),
        provider text NOT NULL,
        owner text NOT NULL,
        owner_key text NOT NULL,
        webhook_secret text NOT NULL,
        installed_at timestamptz NOT NULL,
        CONSTRAINT integrations_owner UNIQUE (tenant_id, provider, owner_key)
      );
      CREATE INDEX integrations_by_owner ON integrations(provider, owner_key);
    `
  },
  {
    id: "200_sandbox_area",
    sql: `
      CREATE TABLE sandbox_volumes (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text COLLATE "C" NOT NULL UNIQUE,
        tenant_id text NOT NULL REFERENCES tenants(id),
        organization_id text NOT NULL REFERENCES organizations(id),
        name text COLLATE "C" NOT NULL,
        size_bytes bigint NOT NULL CHECK (size_bytes > 0),
        size text NOT NULL,
        storage_class text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );
      CREATE UNIQUE INDEX sandbox_volumes_name ON sandbox_volumes(tenant_id, name);
      CREATE INDEX sandbox_volumes_by_tenant ON sandbox_volumes(tenant_id, seq);
      -- Covers the quota sum: an organization's usage is read from this index alone.
      CREATE INDEX sandbox_volumes_usage ON sandbox_volumes(organization_id, size_bytes);

      CREATE TABLE sandbox_templates (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text COLLATE "C" NOT NULL UNIQUE,
        tenant_id text NOT NULL REFERENCES tenants(id),
        name text COLLATE "C" NOT NULL,
        image text NOT NULL,
        cpu_millicores bigint NOT NULL,
        cpu text NOT NULL,
        memory_bytes bigint NOT NULL,
        memory text NOT NULL,
        storage_bytes bigint,
        storage text,
        proxy_config json,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );
      CREATE UNIQUE INDEX sandbox_templates_name ON sandbox_templates(tenant_id, name);
      CREATE INDEX sandbox_templates_by_tenant ON sandbox_templates(tenant_id, seq);

      CREATE TABLE sandbox_template_mounts (
        template_id text NOT NULL REFERENCES sandbox_templates(id) ON DELETE CASCADE,
        position integer NOT NULL,
        volume_id text NOT NULL REFERENCES sandbox_volumes(id),
        mount_path text NOT NULL,
        PRIMARY KEY (template_id, position)
      );
      CREATE INDEX sandbox_template_mounts_by_volume ON sandbox_template_mounts(volume_id);

      CREATE TABLE sandbox_pools (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text COLLATE "C" NOT NULL UNIQUE,
        tenant_id text NOT NULL REFERENCES tenants(id),
        name text COLLATE "C" NOT NULL,
        template_id text NOT NULL REFERENCES sandbox_templates(id),
        replicas integer NOT NULL CHECK (replicas >= 0),
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );
      CREATE UNIQUE INDEX sandbox_pools_name ON sandbox_pools(tenant_id, name);
      CREATE INDEX sandbox_pools_by_tenant ON sandbox_pools(tenant_id, seq);
      CREATE INDEX sandbox_pools_by_template ON sandbox_pools(template_id);

      CREATE TABLE sandboxes (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text COLLATE "C" NOT NULL UNIQUE,
        tenant_id text NOT NULL REFERENCES tenants(id),
        name text COLLATE "C" NOT NULL,
        template_id text NOT NULL REFERENCES sandbox_templates(id),
        pool_id text REFERENCES sandbox_pools(id),
        status text NOT NULL CHECK (status IN ('provisioning', 'ready', 'failed')),
        status_message text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );
      CREATE UNIQUE INDEX sandboxes_name ON sandboxes(tenant_id, name);
      CREATE INDEX sandboxes_by_tenant ON sandboxes(tenant_id, seq);
      CREATE INDEX sandboxes_by_template ON sandboxes(template_id);
      CREATE INDEX sandboxes_by_pool ON sandboxes(pool_id);
    `
  },
  {
    // The real API's listener fields (docs/real-api.md): compute_id (unique per tenant; existing
    // listeners get their own id) and version. Mirrors SQLite's 102.
    id: "102_listener_compute_id",
    sql: `
      ALTER TABLE listeners ADD COLUMN compute_id text COLLATE "C", ADD COLUMN version text;
      UPDATE listeners SET compute_id = id WHERE compute_id IS NULL;
      CREATE UNIQUE INDEX listeners_compute_id ON listeners(tenant_id, compute_id);
    `
  },
  {
    // Push webhooks (mirrors SQLite's 103): deliveries already received (a redelivered or
    // replayed X-GitHub-Delivery is refused) until they expire; the commit and ref each revision
    // built (a replayed push of a commit already built makes no new revision); and the
    // integration a deployment is bound to (a push only touches the deployments of the
    // integration that signed it). Generated columns as SQLite's, STORED (Postgres has no
    // VIRTUAL before 18).
    id: "103_webhook_replay_and_integration_binding",
    sql: `
      CREATE TABLE webhook_deliveries (
        integration_id text COLLATE "C" NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
        delivery_id text COLLATE "C" NOT NULL,
        received_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (integration_id, delivery_id)
      );
      CREATE INDEX webhook_deliveries_by_expiry ON webhook_deliveries(expires_at);

      ALTER TABLE revisions
        ADD COLUMN repo_ref text GENERATED ALWAYS AS (source_revision_config ->> 'repo_ref') STORED,
        ADD COLUMN repo_commit_sha text GENERATED ALWAYS AS (source_revision_config ->> 'repo_commit_sha') STORED;
      CREATE INDEX revisions_by_commit ON revisions(deployment_id, repo_commit_sha) WHERE repo_commit_sha IS NOT NULL;

      ALTER TABLE deployments ADD COLUMN integration_id text GENERATED ALWAYS AS (source_config ->> 'integration_id') STORED;
    `
  },
  {
    // The box lifecycle gained `stopped` and `deleting` (core/sandboxes/lifecycle.ts).
    id: "210_sandbox_lifecycle",
    sql: `
      ALTER TABLE sandboxes DROP CONSTRAINT sandboxes_status_check;
      ALTER TABLE sandboxes ADD CONSTRAINT sandboxes_status_check CHECK (status IN ('provisioning', 'ready', 'failed', 'stopped', 'deleting'));
    `
  },
  {
    // The spec: a volume's name is unique within the organization, not only within the tenant
    // (mirrors SQLite's 220). Volumes that already share a name across tenants of one
    // organization keep the oldest's name; the others get their id's first 8 characters
    // appended (still a DNS label). Templates mount volumes by id, so nothing breaks.
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
    // The current sandbox model (mirrors SQLite's 230): snapshots, boxes made from an image
    // (a snapshot's or the default) with their own resources, and their retention settings.
    id: "230_sandbox_snapshots",
    sql: `
      CREATE TABLE sandbox_snapshots (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text COLLATE "C" NOT NULL UNIQUE,
        tenant_id text NOT NULL REFERENCES tenants(id),
        name text COLLATE "C" NOT NULL,
        docker_image text NOT NULL,
        image_digest text,
        fs_capacity_bytes bigint NOT NULL CHECK (fs_capacity_bytes > 0),
        status text NOT NULL CHECK (status IN ('building', 'ready', 'failed')),
        status_message text,
        source_sandbox_id text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );
      CREATE UNIQUE INDEX sandbox_snapshots_name ON sandbox_snapshots(tenant_id, name);
      CREATE INDEX sandbox_snapshots_by_tenant ON sandbox_snapshots(tenant_id, seq);
      CREATE INDEX sandbox_snapshots_building ON sandbox_snapshots(status) WHERE status = 'building';

      ALTER TABLE sandboxes
        ALTER COLUMN template_id DROP NOT NULL,
        ADD COLUMN snapshot_id text REFERENCES sandbox_snapshots(id),
        ADD COLUMN image text,
        ADD COLUMN vcpus integer,
        ADD COLUMN mem_bytes bigint,
        ADD COLUMN fs_capacity_bytes bigint,
        ADD COLUMN ttl_seconds integer,
        ADD COLUMN idle_ttl_seconds integer,
        ADD COLUMN delete_after_stop_seconds integer,
        ADD COLUMN stopped_at timestamptz,
        ADD CONSTRAINT sandboxes_template_or_image CHECK ((template_id IS NULL) = (image IS NOT NULL));
      CREATE INDEX sandboxes_by_snapshot ON sandboxes(snapshot_id);
      CREATE INDEX sandboxes_with_retention ON sandboxes(seq)
        WHERE ttl_seconds > 0 OR idle_ttl_seconds > 0 OR delete_after_stop_seconds > 0;
    `
  },
  {
    // Private image registries and service URL grants (mirrors SQLite's 240): passwords are
    // stored sealed with the secrets key; grants name their box without a foreign key.
    id: "240_sandbox_registries",
    sql: `
      CREATE TABLE sandbox_registries (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text COLLATE "C" NOT NULL UNIQUE,
        tenant_id text COLLATE "C" NOT NULL REFERENCES tenants(id),
        name text COLLATE "C" NOT NULL,
        url text NOT NULL,
        username text NOT NULL,
        password_sealed text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );
      CREATE UNIQUE INDEX sandbox_registries_name ON sandbox_registries(tenant_id, name);

      CREATE TABLE sandbox_service_grants (
        id text COLLATE "C" PRIMARY KEY,
        tenant_id text COLLATE "C" NOT NULL,
        sandbox_id text COLLATE "C" NOT NULL,
        port integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL
      );
      CREATE UNIQUE INDEX sandbox_service_grants_port ON sandbox_service_grants(sandbox_id, port);
    `
  },
  {
    // Several replicas share the revision runtime's work (docs/postgres.md, "Claiming work"):
    // a step is claimed under a lease; a replica that dies stops renewing it and, once it has
    // expired, another replica claims the step. `lease_owner`/`lease_until` are NULL when free.
    id: "300_runtime_claims",
    sql: `
      ALTER TABLE revisions ADD COLUMN lease_owner text, ADD COLUMN lease_until timestamptz;
      CREATE INDEX revisions_due ON revisions(updated_at) WHERE status NOT IN (${finalList});
      ALTER TABLE deployments ADD COLUMN lease_owner text, ADD COLUMN lease_until timestamptz;
    `
  },
  // Deep list pages: a per-(tenant, table) version for the checkpoints of pages.ts.
  listVersionsMigration,
  // Deep pages of deployments and revisions: their list versions (pages.ts).
  deploymentListVersionsMigration,
  {
    // Several replicas with workloads (docs/replicas.md): each replica's row (its internal
    // address, a lease it renews while it lives), which replica serves a deployment's active
    // revision, runs a box or holds a volume (NULL: none yet), and values every replica shares
    // (the secrets key's check value).
    id: "replicas-1_ownership",
    sql: `
      CREATE TABLE replicas (
        id text COLLATE "C" PRIMARY KEY,
        internal_url text NOT NULL,
        started_at timestamptz NOT NULL,
        lease_until timestamptz NOT NULL
      );
      ALTER TABLE deployments ADD COLUMN serving_replica text COLLATE "C";
      CREATE INDEX deployments_by_serving_replica ON deployments(serving_replica) WHERE serving_replica IS NOT NULL;
      ALTER TABLE sandboxes ADD COLUMN replica_id text COLLATE "C";
      CREATE INDEX sandboxes_by_replica ON sandboxes(replica_id) WHERE replica_id IS NOT NULL;
      ALTER TABLE sandbox_volumes ADD COLUMN replica_id text COLLATE "C";
      CREATE TABLE cluster_settings (
        name text COLLATE "C" PRIMARY KEY,
        value text NOT NULL,
        updated_at timestamptz NOT NULL
      );
    `
  },
  {
    // Builds: an integration may hold a read token (sealed) for its private repositories.
    id: "builds-integration-read-token",
    sql: "ALTER TABLE integrations ADD COLUMN read_token text;"
  },
  {
    // Deployment build and deploy logs (server/deployments/logs/postgres.ts): every replica reads
    // every revision's lines. No foreign keys: lines of a deployment being deleted may still
    // arrive; the driver's teardown removes its logs after its processes stop.
    id: "replicas-2_deployment_logs",
    sql: `
      CREATE TABLE deployment_logs (
        seq bigserial PRIMARY KEY,
        deployment_id text COLLATE "C" NOT NULL,
        revision_id text COLLATE "C" NOT NULL,
        kind smallint NOT NULL,
        t bigint NOT NULL,
        level smallint NOT NULL,
        message text NOT NULL,
        stream text NOT NULL,
        replica text,
        bytes integer NOT NULL
      );
      CREATE INDEX deployment_logs_by_time ON deployment_logs (deployment_id, kind, t, revision_id, seq);
      CREATE INDEX deployment_logs_by_log ON deployment_logs (deployment_id, revision_id, kind, seq);
    `
  }
]

/**
 * A fixed key for `pg_advisory_lock` (an arbitrary 64-bit number: "slipway\0" in ASCII), taken
 * only by migrations. A session-level lock, held on one connection for the whole run and released
 * when that connection ends, even if the process dies mid-migration.
 */
export const MIGRATION_LOCK_KEY = 0x736c69707761_7900n

/**
 * Applies the migrations not applied yet, in id order, and answers the ids it applied. Holds
 * `pg_advisory_lock(MIGRATION_LOCK_KEY)` on one connection throughout; what is applied is read
 * while holding it, so replicas starting together apply each migration exactly once.
 */
export const migrate = (client: PgClientShape, migrations: ReadonlyArray<PgMigration> = postgresMigrations): Effect.Effect<ReadonlyArray<string>, PgError> =>
  Effect.acquireUseRelease(
    connect(client.pool),
    (connection) =>
      Effect.gen(function* () {
        const sql = makeSql(connection)
        yield* sql.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY.toString()])
        yield* sql.execute("CREATE TABLE IF NOT EXISTS schema_migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL)")
        const rows = yield* sql.query<{ id: string }>("SELECT id FROM schema_migrations")
        const applied = new Set(rows.map((row) => row.id))
        const done: Array<string> = []
        for (const migration of [...migrations].sort((a, b) => a.id.localeCompare(b.id))) {
          if (applied.has(migration.id)) continue
          yield* sql.execute("BEGIN")
          yield* Effect.onError(
            Effect.gen(function* () {
              yield* sql.execute(migration.sql)
              yield* sql.execute("INSERT INTO schema_migrations (id, applied_at) VALUES ($1, now())", [migration.id])
            }),
            () => Effect.ignore(sql.execute("ROLLBACK"))
          )
          yield* sql.execute("COMMIT")
          done.push(migration.id)
        }
        return done as ReadonlyArray<string>
      }),
    // Ending the session releases the advisory lock; a clean unlock first keeps the connection reusable.
    (connection, exit) =>
      Effect.promise(() =>
        exit._tag === "Success"
          ? connection.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY.toString()]).then(
              () => connection.release(),
              (error: Error) => connection.release(error)
            )
          : Promise.resolve(connection.release(true))
      )
  )
