/**
 * The Postgres floor of the bench's Postgres section (bench/postgres-section.ts): bare `node:http`
 * and a raw `pg` pool of the server's size running the server's own statements, imported as text
 * from the stores (the key by its hash, then the deployment, the revision, or a list page with
 * plain LIMIT/OFFSET), each prepared once per connection. No router, no schemas, no Effect.
 * Environment: DATABASE_URL, PORT.
 */
import { createHash } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"
import { deploymentByIdSql, listDeploymentsSql, revisionByIdSql } from "../server/store/postgres/deploymentStores.ts"
import { authenticateSql } from "../server/store/postgres/KeyStore.ts"

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.PGPOOL_MAX ?? 10), options: "-c TimeZone=UTC" })
pool.on("error", () => undefined)

const iso = (value: Date | string) => (value instanceof Date ? value.toISOString() : value)

const deployment = (row: any) => ({
  name: row.name,
  source: row.source,
  source_config: row.source_config,
  source_revision_config: row.source_revision_config,
  secrets: (row.secrets as Array<{ name: string }>).map(({ name }) => ({ name, value: "********" })),
  id: row.id,
  tenant_id: row.tenant_id,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
  status: row.status,
  latest_revision_id: row.latest_revision_id,
  active_revision_id: row.active_revision_id,
  image_version: row.image_version
})

const revision = (row: any) => ({
  id: row.id,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
  status: row.status,
  source: row.source,
  source_revision_config: row.source_revision_config,
  deployment_id: row.deployment_id,
  status_message: row.status_message
})

const int = (value: string | null, fallback: number) => {
  const n = value === null ? fallback : Number(value)
  return Number.isSafeInteger(n) && n >= 0 ? n : fallback
}

createServer(async (request, response) => {
  const reply = (status: number, body: unknown) => {
    const text = JSON.stringify(body)
    response.writeHead(status, { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) })
    response.end(text)
  }
  try {
    const url = new URL(request.url ?? "/", "http://floor")
    if (url.pathname === "/health") return reply(200, { status: "ok" })
    const key = request.headers["x-api-key"]
    const hash = createHash("sha256").update(String(key ?? ""), "utf8").digest("hex")
    const auth = (await pool.query({ name: "key", text: authenticateSql, values: [hash] })).rows[0]
    if (!auth) return reply(401, { detail: "Invalid API key" })
    const tenant = auth.default_tenant_id
    const parts = url.pathname.split("/")
    if (parts.length === 4 && parts[2] === "deployments") {
      const row = (await pool.query({ name: "deployment", text: deploymentByIdSql, values: [tenant, parts[3]] })).rows[0]
      return row ? reply(200, deployment(row)) : reply(404, { detail: "not found" })
    }
    if (parts.length === 6 && parts[2] === "deployments" && parts[4] === "revisions") {
      const row = (await pool.query({ name: "revision", text: revisionByIdSql, values: [tenant, parts[3], parts[5]] })).rows[0]
      return row ? reply(200, revision(row)) : reply(404, { detail: "not found" })
    }
    if (parts.length === 3 && parts[2] === "deployments") {
      const limit = int(url.searchParams.get("limit"), 20)
      const offset = int(url.searchParams.get("offset"), 0)
      const rows = (await pool.query({ name: "list", text: listDeploymentsSql, values: [tenant, null, null, null, null, null, limit, offset] })).rows
      return reply(200, { resources: rows.map(deployment), offset: offset + rows.length })
    }
    reply(404, { detail: "not found" })
  } catch (error) {
    reply(500, { detail: String(error) })
  }
}).listen(Number(process.env.PORT), "127.0.0.1")
