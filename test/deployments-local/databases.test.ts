/**
 * Per-deployment PostgreSQL databases and Redis servers, for real: Slipway's own PostgreSQL 15
 * (and, in the second suite, a server given by URL with a non-superuser admin), one redis-server
 * per deployment. Every check connects from outside with the URIs a replica would get.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DatabaseProvisionError, type ProvisionedDatabases } from "../../server/deployments/local/databases.ts"
import { openDatabases, type TestDatabases } from "./openDatabases.ts"

const PG_BIN = "/usr/lib/postgresql/15/bin"

const requireTools = () => {
  if (!fs.existsSync(path.join(PG_BIN, "initdb"))) throw new Error("PostgreSQL 15 is missing: apt-get install -y postgresql")
  if (!fs.existsSync("/usr/bin/redis-server")) throw new Error("redis-server is missing: apt-get install -y redis-server")
}

// ---- an independent RESP client, so the test does not trust the module's own ----

const resp = (port: number, commands: string[][], host = "127.0.0.1"): Promise<string[]> =>
  new Promise((resolve, reject) => {
    const s = net.connect({ host, port })
    let text = ""
    s.setTimeout(3000, () => {
      s.destroy()
      reject(new Error("timeout"))
    })
    s.on("connect", () => s.write(commands.map((c) => `*${c.length}\r\n${c.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`).join("")))
    s.on("data", (d) => {
      text += d
      // Every reply this test reads is a simple line, or an array of bulk strings (CONFIG GET).
      const lines = text.split("\r\n")
      const replies: string[] = []
      let i = 0
      while (i < lines.length - 1) {
        const l = lines[i]!
        if (l.startsWith("*")) {
          const n = Number(l.slice(1))
          if (i + 1 + 2 * n > lines.length - 1) break
          const items: string[] = []
          for (let k = 0; k < n; k++) items.push(lines[i + 2 + 2 * k]!)
          replies.push(items.join(" "))
          i += 1 + 2 * n
        } else if (l.startsWith("$")) {
          if (l === "$-1") {
            replies.push("(nil)")
            i += 1
            continue
          }
          if (i + 1 >= lines.length - 1) break
          replies.push(lines[i + 1]!)
          i += 2
        } else {
          replies.push(l)
          i += 1
        }
      }
      if (replies.length >= commands.length) {
        s.destroy()
        resolve(replies)
      }
    })
    s.on("error", reject)
  })

const redisParts = (uri: string) => {
  const u = new URL(uri)
  return { port: Number(u.port), password: decodeURIComponent(u.password) }
}

const query = async (uri: string, sql: string, params: unknown[] = []) => {
  const c = new pg.Client({ connectionString: uri, connectionTimeoutMillis: 5000 })
  c.on("error", () => {})
  await c.connect()
  try {
    return (await c.query(sql, params)).rows
  } finally {
    await c.end()
  }
}

const withDatabase = (uri: string, database: string) => {
  const u = new URL(uri)
  u.pathname = `/${database}`
  return u.toString()
}

const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port })
    s.on("connect", () => {
      s.destroy()
      resolve(false)
    })
    s.on("error", () => resolve(true))
  })

const open = openDatabases
type Databases = TestDatabases

const A = "0b0e6a8e-5d1f-4f6e-9a43-0c4c1d9e0a01"
const B = "0b0e6a8e-5d1f-4f6e-9a43-0c4c1d9e0a02"

describe("deployment databases on Slipway's own PostgreSQL", () => {
  let dir: string
  let dbs: Databases
  let a: ProvisionedDatabases
  let b: ProvisionedDatabases

  beforeAll(async () => {
    requireTools()
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "slipway-dbs-"))
    fs.chmodSync(dir, 0o755)
    dbs = await open({ dataDir: dir })
    ;[a, b] = await Promise.all([dbs.provision(A), dbs.provision(B, { redisMemoryMb: 32 })])
  })

  afterAll(async () => {
    await dbs?.close()
    if (dir !== undefined) {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("gives each deployment a real database it owns", async () => {
    expect(a.databaseUri).toMatch(/^postgres:\/\/slipway_0b0e6a8e_5d1f_4f6e_9a43_0c4c1d9e0a01:[0-9a-f]{48}@127\.0\.0\.1:\d+\/slipway_0b0e6a8e_5d1f_4f6e_9a43_0c4c1d9e0a01$/)
    await query(a.databaseUri, "CREATE TABLE runs (id int primary key, note text)")
    await query(a.databaseUri, "INSERT INTO runs VALUES (1, 'kept')")
    expect(await query(a.databaseUri, "SELECT note FROM runs")).toEqual([{ note: "kept" }])
    const [me] = await query(a.databaseUri, "SELECT current_user AS u, rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = current_user")
    expect(me).toMatchObject({ rolsuper: false, rolcreatedb: false, rolcreaterole: false })
    expect(await query(b.databaseUri, "SELECT 1 AS one")).toEqual([{ one: 1 }])
  })

  it("keeps deployments apart: A's role cannot open B's database nor the server's own", async () => {
    const bName = new URL(b.databaseUri).pathname.slice(1)
    await expect(query(withDatabase(a.databaseUri, bName), "SELECT 1")).rejects.toThrow(/permission denied for database/)
    await expect(query(withDatabase(a.databaseUri, "postgres"), "SELECT 1")).rejects.toThrow(/permission denied for database/)
    await expect(query(withDatabase(a.databaseUri, "template1"), "SELECT 1")).rejects.toThrow(/permission denied for database/)
    // A wrong password is refused (scram over TCP).
    const wrong = new URL(a.databaseUri)
    wrong.password = "nope"
    await expect(query(wrong.toString(), "SELECT 1")).rejects.toThrow(/password authentication failed/)
  })

  it("gives each deployment its own Redis with a password and maxmemory from redis_memory_mb", async () => {
    const ra = redisParts(a.redisUri)
    const rb = redisParts(b.redisUri)
    expect(a.redisUri).toMatch(/^redis:\/\/:[0-9a-f]{48}@127\.0\.0\.1:\d+\/0$/)
    expect(ra.port).not.toBe(rb.port)
    expect(await resp(ra.port, [["PING"]])).toEqual([expect.stringMatching(/^-NOAUTH/)])
    expect(await resp(ra.port, [["AUTH", ra.password], ["SET", "k", "from-a"], ["GET", "k"], ["CONFIG", "GET", "maxmemory"], ["CONFIG", "GET", "maxmemory-policy"]])).toEqual([
      "+OK",
      "+OK",
      "from-a",
      `maxmemory ${64 * 1024 * 1024}`,
      "maxmemory-policy volatile-lru"
    ])
    expect(await resp(rb.port, [["AUTH", rb.password], ["GET", "k"], ["CONFIG", "GET", "maxmemory"]])).toEqual(["+OK", "(nil)", `maxmemory ${32 * 1024 * 1024}`])
    // A's password does not open B's Redis.
    expect(await resp(rb.port, [["AUTH", ra.password]])).toEqual([expect.stringMatching(/^-WRONGPASS/)])
    // The server runs as the unprivileged redis user, and cannot be pointed at other files.
    expect(await resp(ra.port, [["AUTH", ra.password], ["CONFIG", "SET", "dir", "/etc"]])).toEqual(["+OK", expect.stringMatching(/^-ERR.*protected config/)])
  })

  it("provision is idempotent: same URIs, same data", async () => {
    expect(await dbs.provision(A)).toEqual(a)
    expect(await query(a.databaseUri, "SELECT count(*)::int AS n FROM runs")).toEqual([{ n: 1 }])
  })

  it("rejects bad input with a clear error", async () => {
    await expect(dbs.provision("../etc")).rejects.toBeInstanceOf(DatabaseProvisionError)
    await expect(dbs.provision("x; DROP ROLE y")).rejects.toThrow(/invalid deployment id/)
    await expect(dbs.provision(A, { redisMemoryMb: 0 })).rejects.toThrow(/redis_memory_mb/)
    await expect(dbs.provision(A, { redisMemoryMb: 1.5 })).rejects.toThrow(/redis_memory_mb/)
  })

  it("after a crash, recover re-attaches to the running servers (same processes, same URIs)", async () => {
    const ra = redisParts(a.redisUri)
    const pidBefore = (await resp(ra.port, [["AUTH", ra.password], ["INFO", "server"]]))[1]
    // A second instance over the same data dir, as after a crash of the first (no close()).
    const again = await open({ dataDir: dir })
    expect([...(await again.recover())].sort()).toEqual([A, B])
    expect(await again.provision(A)).toEqual(a)
    const pidAfter = (await resp(ra.port, [["AUTH", ra.password], ["INFO", "server"]]))[1]
    expect(pidAfter).toBe(pidBefore)
  })

  it("close stops every server; recover starts them again with the data kept", async () => {
    const ra = redisParts(a.redisUri)
    const rb = redisParts(b.redisUri)
    const pgPort = Number(new URL(a.databaseUri).port)
    await dbs.close()
    expect(await refused(ra.port)).toBe(true)
    expect(await refused(rb.port)).toBe(true)
    expect(await refused(pgPort)).toBe(true)
    dbs = await open({ dataDir: dir })
    expect([...(await dbs.recover())].sort()).toEqual([A, B])
    expect(await dbs.provision(A)).toEqual(a)
    expect(await query(a.databaseUri, "SELECT note FROM runs")).toEqual([{ note: "kept" }])
    // Redis saved its snapshot on SIGTERM and loaded it again.
    expect(await resp(ra.port, [["AUTH", ra.password], ["GET", "k"]])).toEqual(["+OK", "from-a"])
  })

  it("starts the managed PostgreSQL again when it was stopped behind Slipway's back", async () => {
    execFileSync("runuser", ["-u", "postgres", "--", path.join(PG_BIN, "pg_ctl"), "stop", "-D", path.join(dir, "postgres", "data"), "-m", "fast", "-w"], { stdio: "pipe" })
    await expect(query(a.databaseUri, "SELECT 1")).rejects.toThrow(/ECONNREFUSED/)
    expect(await dbs.provision(A)).toEqual(a)
    expect(await query(a.databaseUri, "SELECT note FROM runs")).toEqual([{ note: "kept" }])
  })

  it("a new redis_memory_mb restarts the deployment's Redis with it", async () => {
    const b2 = await dbs.provision(B, { redisMemoryMb: 16 })
    const rb = redisParts(b2.redisUri)
    expect(await resp(rb.port, [["AUTH", rb.password], ["CONFIG", "GET", "maxmemory"]])).toEqual(["+OK", `maxmemory ${16 * 1024 * 1024}`])
    b = b2
  })

  it("release drops the database and the role, stops the Redis and removes its files", async () => {
    const ra = redisParts(a.redisUri)
    await dbs.release(A)
    await expect(query(a.databaseUri, "SELECT 1")).rejects.toThrow(/password authentication failed|does not exist/)
    expect(await refused(ra.port)).toBe(true)
    expect(fs.existsSync(path.join(dir, "deployments", A, "redis"))).toBe(false)
    expect(fs.existsSync(path.join(dir, "deployments", A, "databases.json"))).toBe(false)
    // Seen from the admin side: no database, no role.
    const admin = JSON.parse(fs.readFileSync(path.join(dir, "postgres", "slipway.json"), "utf8"))
    const adminUri = `postgres://slipway:${admin.password}@127.0.0.1:${admin.port}/postgres`
    expect(await query(adminUri, "SELECT datname FROM pg_database WHERE datname LIKE 'slipway_%'")).toEqual([{ datname: new URL(b.databaseUri).pathname.slice(1) }])
    expect(await query(adminUri, "SELECT rolname FROM pg_roles WHERE rolname LIKE 'slipway_%'")).toEqual([{ rolname: new URL(b.databaseUri).username }])
    // B is untouched; releasing twice is fine.
    expect(await query(b.databaseUri, "SELECT 1 AS one")).toEqual([{ one: 1 }])
    await dbs.release(A)
    await dbs.release(B)
    expect(await dbs.recover()).toEqual([])
  })
})

describe("deployment databases on a server given by SLIPWAY_DEPLOYMENT_POSTGRES_URL", () => {
  let dir: string
  let pgDir: string
  let port: number
  let dbs: Databases | undefined

  beforeAll(async () => {
    requireTools()
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "slipway-dbs-ext-"))
    fs.chmodSync(dir, 0o755)
    pgDir = path.join(dir, "pg")
    fs.mkdirSync(pgDir)
    fs.chownSync(pgDir, Number(execFileSync("id", ["-u", "postgres"]).toString()), Number(execFileSync("id", ["-g", "postgres"]).toString()))
    const srv = net.createServer()
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r))
    port = (srv.address() as net.AddressInfo).port
    await new Promise<void>((r) => srv.close(() => r()))
    const run = (...args: string[]) => execFileSync("runuser", ["-u", "postgres", "--", ...args], { stdio: "pipe" })
    run(path.join(PG_BIN, "initdb"), "-D", `${pgDir}/data`, "-A", "trust", "-U", "owner")
    run(path.join(PG_BIN, "pg_ctl"), "-D", `${pgDir}/data`, "-l", `${pgDir}/log`, "-o", `-p ${port} -k ${pgDir} -c listen_addresses=127.0.0.1`, "-w", "start")
    // An operator's admin role: not a superuser, only CREATEROLE and CREATEDB.
    const c = new pg.Client({ host: "127.0.0.1", port, user: "owner", database: "postgres" })
    await c.connect()
    await c.query("CREATE ROLE provisioner LOGIN CREATEROLE CREATEDB PASSWORD 'pw'")
    await c.end()
  })

  afterAll(async () => {
    await dbs?.close()
    if (pgDir !== undefined) execFileSync("runuser", ["-u", "postgres", "--", path.join(PG_BIN, "pg_ctl"), "-D", `${pgDir}/data`, "-m", "immediate", "-w", "stop"], { stdio: "pipe" })
    if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true })
  })

  it("creates, isolates and drops databases there with a non-superuser admin", async () => {
    const ext = (dbs = await open({ dataDir: dir, postgresUrl: `postgres://provisioner:pw@127.0.0.1:${port}/postgres`, defaultRedisMemoryMb: 8 }))
    const a = await ext.provision(A)
    const b = await ext.provision(B)
    expect(new URL(a.databaseUri).port).toBe(String(port))
    await query(a.databaseUri, "CREATE TABLE t (x int)")
    await expect(query(withDatabase(a.databaseUri, new URL(b.databaseUri).pathname.slice(1)), "SELECT 1")).rejects.toThrow(/permission denied for database/)
    const ra = redisParts(a.redisUri)
    expect(await resp(ra.port, [["AUTH", ra.password], ["CONFIG", "GET", "maxmemory"]])).toEqual(["+OK", `maxmemory ${8 * 1024 * 1024}`])
    await ext.release(A)
    await ext.release(B)
    const rows = await query(`postgres://provisioner:pw@127.0.0.1:${port}/postgres`, "SELECT count(*)::int AS n FROM pg_database WHERE datname LIKE 'slipway_%'")
    expect(rows).toEqual([{ n: 0 }])
    expect(await refused(ra.port)).toBe(true)
  })

  it("names a bad SLIPWAY_DEPLOYMENT_POSTGRES_URL or an unreachable server clearly", async () => {
    await expect(open({ dataDir: dir, postgresUrl: "mysql://x" })).rejects.toThrow(/must start with postgres:\/\//)
    const closed = net.createServer()
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r))
    const deadPort = (closed.address() as net.AddressInfo).port
    await new Promise<void>((r) => closed.close(() => r()))
    const bad = await open({ dataDir: dir, postgresUrl: `postgres://provisioner:pw@127.0.0.1:${deadPort}/postgres` })
    await expect(bad.provision(A)).rejects.toThrow(new RegExp(`cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${deadPort} as provisioner: .*ECONNREFUSED`))
    await expect(bad.release(A)).rejects.toThrow(/cannot connect to PostgreSQL/)
    await bad.close()
    fs.rmSync(path.join(dir, "deployments", A), { recursive: true, force: true })
  })
})
