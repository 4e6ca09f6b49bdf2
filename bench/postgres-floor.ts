/**
 * The Postgres floor of `bench/postgres.ts`: the same statements the server runs for the read
 * path (the key by its hash, then the deployment; the first page of the list), over a raw `pg`
 * pool of the same size, with no framework, no validation and no Effect. DATABASE_URL, PORT.
 */
import { createHash } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10, options: "-c TimeZone=UTC" })
pool.on("error", () => undefined)
const keySql = "SELECT id, organization_id, default_tenant_id, key_hash FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL"
const columns =
  "id, tenant_id, name, source, source_config, source_revision_config, secrets, image_version, status, latest_revision_id, active_revision_id, revision_seq, created_at, updated_at"
const byIdSql = `SELECT ${columns} FROM deployments WHERE tenant_id = $1 AND id = $2`
const listSql = `SELECT ${columns} FROM deployments WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`

const answer = (row: any) => ({
  name: row.name,
  source: row.source,
  source_config: row.source_config,
  source_revision_config: row.source_revision_config,
  secrets: (row.secrets as Array<{ name: string }>).map(({ name }) => ({ name, value: "********" })),
  id: row.id,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
  status: row.status,
  latest_revision_id: row.latest_revision_id,
  active_revision_id: row.active_revision_id,
  image_version: row.image_version
})

createServer(async (request, response) => {
  const reply = (status: number, body: unknown) => {
    const text = JSON.stringify(body)
    response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
    response.end(text)
  }
  try {
    const url = request.url ?? "/"
    if (url === "/health") return reply(200, { status: "ok" })
    const key = request.headers["x-api-key"]
    const hash = createHash("sha256").update(String(key ?? ""), "utf8").digest("hex")
    const auth = (await pool.query({ name: "key", text: keySql, values: [hash] })).rows[0]
    if (!auth) return reply(401, { detail: "Invalid API key" })
    const parts = url.split("?")[0]!.split("/")
    if (parts.length === 4 && parts[2] === "deployments") {
      const row = (await pool.query({ name: "byId", text: byIdSql, values: [auth.default_tenant_id, parts[3]] })).rows[0]
      return row ? reply(200, answer(row)) : reply(404, { detail: "not found" })
    }
    if (parts.length === 3 && parts[2] === "deployments") {
      const rows = (await pool.query({ name: "list", text: listSql, values: [auth.default_tenant_id, 20, 0] })).rows
      return reply(200, { resources: rows.map(answer), offset: rows.length })
    }
    reply(404, { detail: "not found" })
  } catch (error) {
    reply(500, { detail: String(error) })
  }
}).listen(Number(process.env.PORT), "127.0.0.1")
