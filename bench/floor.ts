/**
 * The floor: the least a server can do to answer the benchmarked requests from the same SQLite
 * file. Bare `node:http` + `better-sqlite3`, no router, no schemas, no effect: authenticate the
 * key (SHA-256 + one indexed lookup, as any real server must), run the same statements in the
 * same transactions, `JSON.stringify` the answer. Whatever the real server spends above this is
 * its own code.
 *
 * `makeFloorOps` is also used in-process (no HTTP) by run.ts to time the raw SQLite
 * transactions, and to compare synchronous=NORMAL with FULL.
 *
 * Run as a child: `node bench/floor.ts` with PORT, DATABASE_PATH (and SYNCHRONOUS=FULL|NORMAL).
 */
import Database from "better-sqlite3"
import { createHash, randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { makeSecretBox } from "../server/secrets/secrets.ts"
import { applyPragmas } from "../server/store/sqlite/database.ts"

type Db = Database.Database

export interface Answer {
  readonly status: number
  readonly body: unknown
}

interface Auth {
  readonly tenantId: string
  readonly organizationId: string
}

const notFound: Answer = { status: 404, body: { detail: "Not Found" } }

/** The server's pragmas, without its migrations. */
export const openFloorDatabase = (path: string, synchronous: "NORMAL" | "FULL" = "NORMAL"): Db => {
  const db = new Database(path)
  applyPragmas(db, synchronous)
  return db
}

const binarySuffixes: Record<string, bigint> = { "": 1n, Ki: 1n << 10n, Mi: 1n << 20n, Gi: 1n << 30n, Ti: 1n << 40n, Pi: 1n << 50n }

/** Whole numbers with a binary suffix are all the benchmark sends (the server takes any Kubernetes quantity). */
const sizeBytes = (text: string): bigint | undefined => {
  const match = /^(\d+)(Ki|Mi|Gi|Ti|Pi)?$/.exec(text)
  return match ? BigInt(match[1]!) * binarySuffixes[match[2] ?? ""]! : undefined
}

const quotaBytes = (text: string | null): bigint => (text === null ? 100n << 30n : (sizeBytes(text) ?? 100n << 30n))

export const makeFloorOps = (db: Db) => {
  /** Prepared on first use, so the floor also runs on a database without some of the tables. */
  const lazy = <S>(make: () => S) => {
    let statement: S | undefined
    return () => (statement ??= make())
  }
  const keyByHash = lazy(() => db.prepare("SELECT organization_id, default_tenant_id FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL"))
  const deploymentColumns =
    "id, tenant_id, name, source, source_config, source_revision_config, secrets, image_version, status, latest_revision_id, active_revision_id, revision_seq, created_at, updated_at"
  const deploymentById = lazy(() => db.prepare(`SELECT ${deploymentColumns} FROM deployments WHERE tenant_id = ? AND id = ?`))
  const revisionById = lazy(() => db.prepare(
    "SELECT id, deployment_id, source, status, status_message, source_revision_config, created_at, updated_at FROM revisions WHERE tenant_id = ? AND deployment_id = ? AND id = ?"
  ))
  const insertRevision = lazy(() => db.prepare(
    `INSERT INTO revisions (id, tenant_id, deployment_id, seq, source, status, status_message, source_revision_config, secrets, deployed_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, 'CREATING', NULL, ?, ?, NULL, ?, ?)`
  ))
  const unfinishedRevisions = lazy(() => db.prepare(
    `SELECT id, status FROM revisions WHERE tenant_id = ? AND deployment_id = ?
       AND status NOT IN ('DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED', 'UNKNOWN')`
  ))
  const supersede = lazy(() => db.prepare("UPDATE revisions SET status = ?, status_message = 'Superseded by a newer revision', updated_at = ? WHERE tenant_id = ? AND id = ?"))
  const nameTaken = lazy(() => db.prepare("SELECT 1 FROM deployments WHERE tenant_id = ? AND name = ?").pluck())
  const updateDeployment = lazy(() => db.prepare(
    "UPDATE deployments SET source_revision_config = ?, latest_revision_id = ?, revision_seq = ?, updated_at = ? WHERE tenant_id = ? AND id = ?"
  ))
  const insertDeployment = lazy(() => db.prepare(
    `INSERT INTO deployments (${deploymentColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'AWAITING_DATABASE', ?, NULL, 1, ?, ?)`
  ))
  const upsertProject = lazy(() => db.prepare(
    `INSERT INTO tracing_projects (id, tenant_id, name, deployment_id, created_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (tenant_id, name) DO UPDATE SET deployment_id = excluded.deployment_id`
  ))
  const templatePage = lazy(() => db
    .prepare(
      `SELECT t.id, t.name, t.image, t.cpu, t.memory, t.storage, t.proxy_config, t.created_at, t.updated_at,
         (SELECT json_group_array(json_object('volume_name', mv.name, 'mount_path', m.mount_path) ORDER BY m.position)
            FROM sandbox_template_mounts m JOIN sandbox_volumes mv ON mv.id = m.volume_id WHERE m.template_id = t.id) AS mounts
       FROM sandbox_templates t WHERE t.tenant_id = ? ORDER BY t.seq LIMIT ? OFFSET ?`
    ))
  const volumeByName = lazy(() => db
    .prepare("SELECT id, organization_id, name, size_bytes, size, storage_class, created_at, updated_at FROM sandbox_volumes WHERE tenant_id = ? AND name = ?")
    .safeIntegers(true))
  const orgQuota = lazy(() => db.prepare("SELECT storage_quota FROM organizations WHERE id = ?").pluck())
  const orgUsage = lazy(() => db.prepare("SELECT coalesce(sum(size_bytes), 0) FROM sandbox_volumes WHERE organization_id = ?").pluck().safeIntegers(true))
  const updateVolume = lazy(() => db.prepare("UPDATE sandbox_volumes SET size_bytes = ?, size = ?, updated_at = ? WHERE id = ?"))

  const deploymentAnswer = (row: any) => ({
    name: row.name,
    source: row.source,
    source_config: JSON.parse(row.source_config),
    source_revision_config: JSON.parse(row.source_revision_config),
    secrets: (JSON.parse(row.secrets) as Array<{ name: string }>).map(({ name }) => ({ name, value: "********" })),
    id: row.id,
    created_at: row.created_at,
    updated_at: row.updated_at,
    status: row.status,
    latest_revision_id: row.latest_revision_id,
    active_revision_id: row.active_revision_id,
    image_version: row.image_version
  })

  const authenticate = (key: string | undefined): Auth | undefined => {
    if (!key) return undefined
    const row = keyByHash().get(createHash("sha256").update(key, "utf8").digest("hex")) as
      | { organization_id: string; default_tenant_id: string }
      | undefined
    return row && { tenantId: row.default_tenant_id, organizationId: row.organization_id }
  }

  const getDeployment = (auth: Auth, id: string): Answer => {
    const row = deploymentById().get(auth.tenantId, id)
    return row ? { status: 200, body: deploymentAnswer(row) } : notFound
  }

  const getRevision = (auth: Auth, deploymentId: string, id: string): Answer => {
    const row = revisionById().get(auth.tenantId, deploymentId, id) as any
    if (!row) return notFound
    return { status: 200, body: { ...row, source_revision_config: JSON.parse(row.source_revision_config) } }
  }

  /** PATCH with a new `source_revision_config`: unfinished revisions superseded, one new revision, the deployment points at it. */
  const patchDeployment = db.transaction((auth: Auth, id: string, body: any): Answer => {
    const row = deploymentById().get(auth.tenantId, id) as any
    if (!row) return notFound
    const now = new Date().toISOString()
    for (const unfinished of unfinishedRevisions().all(auth.tenantId, id) as Array<{ id: string; status: string }>) {
      supersede().run(unfinished.status === "CREATING" || unfinished.status === "QUEUED" ? "SKIPPED" : "INTERRUPTED", now, auth.tenantId, unfinished.id)
    }
    const revisionId = randomUUID()
    const config = JSON.stringify({ ...JSON.parse(row.source_revision_config), ...body.source_revision_config })
    const seq = row.revision_seq + 1
    insertRevision().run(revisionId, auth.tenantId, id, seq, row.source, config, row.secrets, now, now)
    updateDeployment().run(config, revisionId, seq, now, auth.tenantId, id)
    return {
      status: 200,
      body: deploymentAnswer({ ...row, source_revision_config: config, latest_revision_id: revisionId, revision_seq: seq, updated_at: now })
    }
  })

  /** POST: the deployment, its first revision and its tracing project, in one transaction. */
  const box = makeSecretBox(randomUUID())
  const createDeployment = db.transaction((auth: Auth, body: any): Answer => {
    if (typeof body?.name !== "string" || typeof body.source !== "string") return { status: 422, body: { detail: [] } }
    const now = new Date().toISOString()
    const id = randomUUID()
    const revisionId = randomUUID()
    const sourceConfig = JSON.stringify(body.source_config ?? {})
    const revisionConfig = JSON.stringify(body.source_revision_config ?? {})
    // Secret values are sealed at rest by default (AES-256-GCM), so the floor seals them too.
    const secrets = JSON.stringify(((body.secrets ?? []) as Array<{ name: string; value: string }>).map(({ name, value }) => ({ name, value: box.seal(value) })))
    if (nameTaken().get(auth.tenantId, body.name) !== undefined) return { status: 409, body: { detail: "name taken" } }
    insertDeployment().run(id, auth.tenantId, body.name, body.source, sourceConfig, revisionConfig, secrets, body.image_version ?? null, revisionId, now, now)
    insertRevision().run(revisionId, auth.tenantId, id, 1, body.source, revisionConfig, secrets, now, now)
    upsertProject().run(randomUUID(), auth.tenantId, body.name, id, now)
    return {
      status: 201,
      body: deploymentAnswer({
        id,
        name: body.name,
        source: body.source,
        source_config: sourceConfig,
        source_revision_config: revisionConfig,
        secrets,
        image_version: body.image_version ?? null,
        status: "AWAITING_DATABASE",
        latest_revision_id: revisionId,
        active_revision_id: null,
        created_at: now,
        updated_at: now
      })
    }
  })

  const listTemplates = (auth: Auth, limit: number, offset: number): Answer => {
    const rows = templatePage().all(auth.tenantId, limit, offset) as Array<any>
    const templates = rows.map((row) => ({
      id: row.id,
      name: row.name,
      image: row.image,
      resources: row.storage === null ? { cpu: row.cpu, memory: row.memory } : { cpu: row.cpu, memory: row.memory, storage: row.storage },
      volume_mounts: JSON.parse(row.mounts),
      proxy_config: row.proxy_config === null ? null : JSON.parse(row.proxy_config),
      created_at: row.created_at,
      updated_at: row.updated_at
    }))
    return { status: 200, body: { templates, offset: offset + templates.length } }
  }

  /** Volume resize: read the volume, the quota and the organization's usage, then write, holding the write lock. */
  const resizeVolume = db.transaction((auth: Auth, name: string, body: any): Answer => {
    const bytes = typeof body?.size === "string" ? sizeBytes(body.size) : undefined
    if (bytes === undefined) return { status: 422, body: { detail: [] } }
    const volume = volumeByName().get(auth.tenantId, name) as any
    if (!volume) return notFound
    if (bytes < volume.size_bytes) return { status: 400, body: { detail: { error: "ResizeError", message: "cannot shrink" } } }
    const quota = quotaBytes(orgQuota().get(auth.organizationId) as string | null)
    const usage = orgUsage().get(auth.organizationId) as bigint
    if (usage - volume.size_bytes + bytes > quota) return { status: 429, body: { detail: "Storage quota exceeded" } }
    const now = new Date().toISOString()
    updateVolume().run(bytes, body.size, now, volume.id)
    return {
      status: 200,
      body: { id: volume.id, name: volume.name, size: body.size, storage_class: volume.storage_class, created_at: volume.created_at, updated_at: now }
    }
  })

  return {
    authenticate,
    getDeployment,
    getRevision,
    patchDeployment: (auth: Auth, id: string, body: unknown) => patchDeployment.immediate(auth, id, body),
    createDeployment: (auth: Auth, body: unknown) => createDeployment.immediate(auth, body),
    listTemplates,
    resizeVolume: (auth: Auth, name: string, body: unknown) => resizeVolume.immediate(auth, name, body)
  }
}

export type FloorOps = ReturnType<typeof makeFloorOps>

const readJson = (request: IncomingMessage): Promise<unknown> =>
  new Promise((resolve) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")))
      } catch {
        resolve(undefined)
      }
    })
  })

/** Routes by splitting the path; only the benchmarked requests exist. */
export const serveFloor = (ops: FloorOps) => async (request: IncomingMessage, response: ServerResponse) => {
  const reply = ({ status, body }: Answer) => {
    response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body))
  }
  const url = request.url ?? "/"
  const q = url.indexOf("?")
  const parts = (q === -1 ? url : url.slice(0, q)).split("/")
  if (parts[1] === "health") return reply({ status: 200, body: { status: "ok" } })
  const key = request.headers["x-api-key"]
  const auth = ops.authenticate(typeof key === "string" ? key : undefined)
  if (!auth) {
    request.resume()
    return reply({ status: 401, body: { detail: "Invalid API key" } })
  }
  const method = request.method
  // /v2/deployments[/{id}[/revisions/{rid}]]
  if (parts[1] === "v2" && parts[2] === "deployments") {
    if (parts.length === 3 && method === "POST") return reply(ops.createDeployment(auth, await readJson(request)))
    if (parts.length === 4 && method === "GET") return reply(ops.getDeployment(auth, parts[3]!))
    if (parts.length === 4 && method === "PATCH") return reply(ops.patchDeployment(auth, parts[3]!, await readJson(request)))
    if (parts.length === 6 && parts[4] === "revisions" && method === "GET") return reply(ops.getRevision(auth, parts[3]!, parts[5]!))
  }
  // /v2/sandboxes/templates?limit=&offset=, /v2/sandboxes/volumes/{name}
  if (parts[1] === "v2" && parts[2] === "sandboxes") {
    if (parts[3] === "templates" && parts.length === 4 && method === "GET") {
      const query = new URLSearchParams(q === -1 ? "" : url.slice(q + 1))
      return reply(ops.listTemplates(auth, Number(query.get("limit") ?? 100), Number(query.get("offset") ?? 0)))
    }
    if (parts[3] === "volumes" && parts.length === 5 && method === "PATCH") return reply(ops.resizeVolume(auth, parts[4]!, await readJson(request)))
  }
  request.resume()
  reply(notFound)
}

if (import.meta.main) {
  const db = openFloorDatabase(process.env.DATABASE_PATH!, process.env.SYNCHRONOUS === "FULL" ? "FULL" : "NORMAL")
  const server = createServer({ keepAliveTimeout: 5_000 }, serveFloor(makeFloorOps(db)))
  server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
    process.stderr.write(`floor: listening on ${JSON.stringify(server.address())}\n`)
  })
  const stop = () => server.close(() => (db.close(), process.exit(0)))
  process.on("SIGTERM", stop)
  process.on("SIGINT", stop)
}
