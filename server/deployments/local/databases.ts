/**
 * What an agent server needs: per deployment its own PostgreSQL database and its own Redis,
 * handed to every replica as `DATABASE_URI` and `REDIS_URI`.
 *
 * PostgreSQL: on the server named by `SLIPWAY_DEPLOYMENT_POSTGRES_URL` (an admin connection
 * with CREATEROLE and CREATEDB), or on a server Slipway runs itself (Debian's postgresql 15:
 * `initdb` as the `postgres` system user, data under `<dataDir>/postgres`, loopback only, a free
 * port, started on the first deployment that needs it and stopped by `close()`). Each deployment
 * gets a role with a random password that owns exactly one database; `REVOKE ALL ... FROM PUBLIC`
 * on that database, so another deployment's role cannot connect to it.
 *
 * Redis: one `redis-server` (Debian package) per deployment, run as the `redis` system user on a
 * loopback port with `requirepass`, `maxmemory` (`redis_memory_mb`, default 64) and a
 * `maxmemory-policy`, its RDB snapshots in `<dataDir>/deployments/<id>/redis`. Both servers run
 * detached from Slipway's process: after a crash `recover()` re-attaches to what still runs and
 * restarts what does not; after `close()` (a clean stop) `recover()` restarts them.
 *
 * The client is the `pg` package (see docs/deployments-local.md for why).
 */
import { spawn, execFile, type ChildProcess } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { promisify } from "node:util"
import pg from "pg"

const execFileP = promisify(execFile)

export interface DeploymentDatabasesOptions {
  /** Slipway's data directory: `postgres/` (the managed server) and `deployments/<id>/` live under it. */
  readonly dataDir: string
  /** `SLIPWAY_DEPLOYMENT_POSTGRES_URL`: an admin connection to an existing server. Unset: Slipway runs its own. */
  readonly postgresUrl?: string
  /** Directory of the PostgreSQL binaries. Default `/usr/lib/postgresql/15/bin`. */
  readonly postgresBinDir?: string
  /** Default `/usr/bin/redis-server`. */
  readonly redisServerPath?: string
  /** Host the replicas use to reach the managed servers (written into the URIs). Default `127.0.0.1`. */
  readonly advertiseHost?: string
  /** Default `64`. */
  readonly defaultRedisMemoryMb?: number
  /** Default `volatile-lru`: evict only keys that expire, never silently drop the rest. */
  readonly redisMaxmemoryPolicy?: string
  readonly log?: (message: string) => void
}

export interface ProvisionOptions {
  /** `redis_memory_mb` of the deployment's resource spec; default from the options (64). */
  readonly redisMemoryMb?: number | null
}

export interface ProvisionedDatabases {
  /** `DATABASE_URI`: `postgres://<role>:<password>@<host>:<port>/<database>` */
  readonly databaseUri: string
  /** `REDIS_URI`: `redis://:<password>@<host>:<port>/0` */
  readonly redisUri: string
}

export interface DeploymentDatabases {
  /** Creates (or, when they exist, starts and returns) the deployment's database and Redis. Idempotent. */
  readonly provision: (deploymentId: string, options?: ProvisionOptions) => Promise<ProvisionedDatabases>
  /** Drops the database and its role, stops the Redis and removes its files. Idempotent. */
  readonly release: (deploymentId: string) => Promise<void>
  /** On server start: re-attaches to or restarts every provisioned deployment's servers; returns their ids. */
  readonly recover: () => Promise<ReadonlyArray<string>>
  /** Stops every Redis and the managed PostgreSQL (data is kept; `recover` starts them again). */
  readonly close: () => Promise<void>
}

/** A clear, operator-facing failure (missing binary, unreachable server, bad id...). */
export class DatabaseProvisionError extends Error {
  constructor(message: string) {
    super(message)
    this.name = "DatabaseProvisionError"
  }
}

interface DeploymentState {
  readonly deploymentId: string
  readonly database: { readonly name: string; readonly role: string; readonly password: string }
  readonly redis: { readonly port: number; readonly password: string; readonly memoryMb: number; readonly pid: number | null }
}

interface ManagedPostgresState {
  readonly port: number
  readonly password: string
}

const ADMIN_USER = "slipway"
const ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,54}$/

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const writeFileAtomic = (file: string, data: string, mode = 0o600): void => {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`
  fs.writeFileSync(tmp, data, { mode })
  fs.renameSync(tmp, file)
}

const readJson = <T>(file: string): T | undefined => {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as T
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined
    throw e
  }
}

const freePort = (host: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once("error", reject)
    s.listen(0, host, () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })

const systemUser = (name: string, pkg: string): { uid: number; gid: number } => {
  const line = fs
    .readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${name}:`))
  if (line === undefined) throw new DatabaseProvisionError(`system user "${name}" is missing: install the Debian package ${pkg} (apt-get install -y ${pkg})`)
  const parts = line.split(":")
  return { uid: Number(parts[2]), gid: Number(parts[3]) }
}

/** Every ancestor of `dir` must be searchable by the given user, or the server cannot reach its files. */
const assertReachable = (dir: string, user: string, ids: { uid: number; gid: number }): void => {
  let current = path.resolve(dir)
  for (;;) {
    const parent = path.dirname(current)
    if (parent === current) return
    current = parent
    const st = fs.statSync(current)
    const ok = st.uid === ids.uid ? (st.mode & 0o100) !== 0 : st.gid === ids.gid ? (st.mode & 0o010) !== 0 : (st.mode & 0o001) !== 0
    if (!ok) throw new DatabaseProvisionError(`the "${user}" system user cannot reach ${dir}: ${current} is not searchable by it (chmod o+x ${current})`)
  }
}

const processAlive = (pid: number, name: string): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    if (/^\d+ \([^)]*\) Z/.test(stat)) return false
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(name)
  } catch {
    return false
  }
}

// ---- a minimal RESP client (AUTH + one command), enough to check that a Redis answers ----

type Resp = string | number | null | Error | ReadonlyArray<Resp>

const encodeResp = (args: ReadonlyArray<string>): string => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`

/** Parses one reply at `offset`; returns undefined when the buffer holds less than one reply. */
const parseResp = (buf: Buffer, offset: number): { value: Resp; next: number } | undefined => {
  const end = buf.indexOf("\r\n", offset)
  if (end === -1) return undefined
  const type = String.fromCharCode(buf[offset]!)
  const line = buf.toString("utf8", offset + 1, end)
  switch (type) {
    case "+":
      return { value: line, next: end + 2 }
    case "-":
      return { value: new Error(line), next: end + 2 }
    case ":":
      return { value: Number(line), next: end + 2 }
    case "$": {
      const len = Number(line)
      if (len === -1) return { value: null, next: end + 2 }
      if (buf.length < end + 2 + len + 2) return undefined
      return { value: buf.toString("utf8", end + 2, end + 2 + len), next: end + 2 + len + 2 }
    }
    case "*": {
      const n = Number(line)
      if (n === -1) return { value: null, next: end + 2 }
      const items: Resp[] = []
      let next = end + 2
      for (let i = 0; i < n; i++) {
        const item = parseResp(buf, next)
        if (item === undefined) return undefined
        items.push(item.value)
        next = item.next
      }
      return { value: items, next }
    }
    default:
      return { value: new Error(`unexpected RESP type ${JSON.stringify(type)}`), next: buf.length }
  }
}

/** Sends the commands on one connection and resolves with their replies. */
const redisCommands = (host: string, port: number, commands: ReadonlyArray<ReadonlyArray<string>>, timeoutMs = 2000): Promise<Resp[]> =>
  new Promise((resolve, reject) => {
    const socket = net.connect({ host, port })
    let buf = Buffer.alloc(0)
    const replies: Resp[] = []
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`redis ${host}:${port}: no answer within ${timeoutMs} ms`))
    }, timeoutMs)
    socket.on("connect", () => socket.write(commands.map(encodeResp).join("")))
    socket.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d])
      let offset = 0
      for (;;) {
        const r = parseResp(buf, offset)
        if (r === undefined) break
        replies.push(r.value)
        offset = r.next
      }
      buf = buf.subarray(offset)
      if (replies.length >= commands.length) {
        clearTimeout(timer)
        socket.destroy()
        resolve(replies)
      }
    })
    socket.on("error", (e) => {
      clearTimeout(timer)
      reject(e)
    })
  })

// ---- the module ----

export const makeDeploymentDatabases = (options: DeploymentDatabasesOptions): DeploymentDatabases => {
  const dataDir = path.resolve(options.dataDir)
  const binDir = options.postgresBinDir ?? "/usr/lib/postgresql/15/bin"
  const redisServer = options.redisServerPath ?? "/usr/bin/redis-server"
  const host = options.advertiseHost ?? "127.0.0.1"
  const defaultMemory = options.defaultRedisMemoryMb ?? 64
  const policy = options.redisMaxmemoryPolicy ?? "volatile-lru"
  const log = options.log ?? (() => {})
  const external = options.postgresUrl !== undefined && options.postgresUrl !== "" ? parseAdminUrl(options.postgresUrl) : undefined

  const pgRoot = path.join(dataDir, "postgres")
  const pgData = path.join(pgRoot, "data")
  const pgStateFile = path.join(pgRoot, "slipway.json")
  const deploymentsDir = path.join(dataDir, "deployments")
  const deploymentDir = (id: string) => path.join(deploymentsDir, id)
  const stateFile = (id: string) => path.join(deploymentDir(id), "databases.json")
  const redisDir = (id: string) => path.join(deploymentDir(id), "redis")

  /** Our own redis children (so their exit is awaited, not polled). */
  const children = new Map<string, ChildProcess>()
  /** Operations on one deployment run one at a time. */
  const locks = new Map<string, Promise<unknown>>()
  let managed: Promise<ManagedPostgresState> | undefined
  let closed = false

  const serialize = <A>(id: string, f: () => Promise<A>): Promise<A> => {
    const prev = locks.get(id) ?? Promise.resolve()
    const run = prev.then(f, f)
    const tail = run.catch(() => {})
    locks.set(id, tail)
    void tail.then(() => {
      if (locks.get(id) === tail) locks.delete(id)
    })
    return run
  }

  const checkId = (raw: string): string => {
    const id = typeof raw === "string" ? raw.toLowerCase() : ""
    if (!ID_PATTERN.test(id)) throw new DatabaseProvisionError(`invalid deployment id ${JSON.stringify(raw)}: letters, digits and "-" only, at most 55`)
    return id
  }

  const requireFile = (file: string, pkg: string) => {
    if (!fs.existsSync(file)) throw new DatabaseProvisionError(`${file} is missing: install the Debian package ${pkg} (apt-get install -y ${pkg})`)
  }

  // ---- PostgreSQL ----

  const runAsPostgres = async (args: ReadonlyArray<string>, what: string): Promise<string> => {
    try {
      const { stdout } = await execFileP("runuser", ["-u", "postgres", "--", ...args], { timeout: 120_000 })
      return stdout
    } catch (e) {
      const err = e as { stderr?: string; stdout?: string; message: string }
      throw new DatabaseProvisionError(`${what} failed: ${(err.stderr || err.stdout || err.message).trim()}`)
    }
  }

  const startManagedPostgres = async (): Promise<ManagedPostgresState> => {
    requireFile(path.join(binDir, "initdb"), "postgresql")
    const ids = systemUser("postgres", "postgresql")
    fs.mkdirSync(pgRoot, { recursive: true, mode: 0o711 })
    fs.chmodSync(pgRoot, 0o711)
    assertReachable(pgData, "postgres", ids)
    let state = readJson<ManagedPostgresState>(pgStateFile)
    if (state === undefined || !fs.existsSync(path.join(pgData, "PG_VERSION"))) {
      // A fresh cluster: the admin password lives only in slipway.json (root, 0600).
      fs.rmSync(pgData, { recursive: true, force: true })
      fs.mkdirSync(pgData, { mode: 0o700 })
      fs.chownSync(pgData, ids.uid, ids.gid)
      const password = randomBytes(24).toString("hex")
      const pwfile = path.join(pgRoot, `pwfile-${randomBytes(4).toString("hex")}`)
      fs.writeFileSync(pwfile, password + "\n", { mode: 0o600 })
      fs.chownSync(pwfile, ids.uid, ids.gid)
      try {
        await runAsPostgres(
          [path.join(binDir, "initdb"), "-D", pgData, "-U", ADMIN_USER, `--pwfile=${pwfile}`, "--auth-host=scram-sha-256", "--auth-local=peer", "-E", "UTF8", "--locale=C"],
          "initdb"
        )
      } finally {
        fs.rmSync(pwfile, { force: true })
      }
      state = { port: 0, password }
      writeFileAtomic(pgStateFile, JSON.stringify(state))
      log(`postgres: initialized ${pgData}`)
    }
    const pgCtl = path.join(binDir, "pg_ctl")
    const running = await execFileP("runuser", ["-u", "postgres", "--", pgCtl, "status", "-D", pgData]).then(
      () => true,
      () => false
    )
    if (running && state.port !== 0) {
      log(`postgres: re-attached on port ${state.port}`)
      return state
    }
    const socketDir = path.join(pgRoot, "run")
    fs.mkdirSync(socketDir, { recursive: true, mode: 0o700 })
    fs.chownSync(socketDir, ids.uid, ids.gid)
    const logFile = path.join(pgRoot, "postgres.log")
    if (!fs.existsSync(logFile)) fs.writeFileSync(logFile, "", { mode: 0o600 })
    fs.chownSync(logFile, ids.uid, ids.gid)
    let lastError: unknown
    for (let attempt = 0; attempt < 3; attempt++) {
      // The previous port first, so URIs handed out before a restart stay valid.
      const port: number = attempt === 0 && state.port !== 0 && (await portFree(state.port)) ? state.port : await freePort("127.0.0.1")
      try {
        await runAsPostgres(
          [pgCtl, "start", "-D", pgData, "-l", logFile, "-w", "-t", "60", "-o", `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${socketDir}`],
          "pg_ctl start"
        )
        state = { port, password: state.password }
        writeFileAtomic(pgStateFile, JSON.stringify(state))
        break
      } catch (e) {
        lastError = e
        if (attempt === 2) throw new DatabaseProvisionError(`${(e as Error).message}; see ${logFile}`)
      }
    }
    void lastError
    // The managed server belongs to deployments only: nobody but the admin connects to its own databases.
    await withAdmin(state, async (c) => {
      await c.query("REVOKE CONNECT, TEMPORARY ON DATABASE postgres FROM PUBLIC")
      await c.query("REVOKE CONNECT, TEMPORARY ON DATABASE template1 FROM PUBLIC")
    })
    log(`postgres: started on 127.0.0.1:${state.port}`)
    return state
  }

  const ensurePostgres = async (): Promise<{ admin: pg.ClientConfig; uriHost: string; uriPort: number; uriQuery: string }> => {
    if (external !== undefined) return external
    managed ??= startManagedPostgres().catch((e) => {
      managed = undefined
      throw e
    })
    const s = await managed
    return { admin: adminConfig(s), uriHost: host, uriPort: s.port, uriQuery: "" }
  }

  const withClient = async <A>(config: pg.ClientConfig, f: (c: pg.Client) => Promise<A>): Promise<A> => {
    const client = new pg.Client({ ...config, connectionTimeoutMillis: 10_000 })
    client.on("error", () => {})
    try {
      await client.connect()
    } catch (e) {
      throw new DatabaseProvisionError(`cannot connect to PostgreSQL at ${describeServer(config)}: ${(e as Error).message}`)
    }
    try {
      return await f(client)
    } finally {
      await client.end().catch(() => {})
    }
  }

  const withAdmin = <A>(s: ManagedPostgresState, f: (c: pg.Client) => Promise<A>) => withClient(adminConfig(s), f)

  const createDatabase = async (admin: pg.ClientConfig, db: DeploymentState["database"]): Promise<void> => {
    const role = pg.escapeIdentifier(db.role)
    const name = pg.escapeIdentifier(db.name)
    await withClient(admin, async (c) => {
      const exists = await c.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [db.role])
      if (exists.rowCount === 0) {
        await c.query(`CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD ${pg.escapeLiteral(db.password)}`)
      } else {
        await c.query(`ALTER ROLE ${role} LOGIN PASSWORD ${pg.escapeLiteral(db.password)}`)
      }
      const su = await c.query<{ rolsuper: boolean }>("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
      // A non-superuser admin (CREATEROLE, CREATEDB) must be a member of a role to give it a database.
      if (su.rows[0]?.rolsuper !== true) {
        const member = await c.query("SELECT pg_has_role(current_user, $1, 'MEMBER') AS m", [db.role])
        if (member.rows[0]?.m !== true) await c.query(`GRANT ${role} TO CURRENT_USER`)
      }
      const dbExists = await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [db.name])
      if (dbExists.rowCount === 0) await c.query(`CREATE DATABASE ${name} OWNER ${role} ENCODING 'UTF8' TEMPLATE template0`)
      // Only the owner (and the admin) may connect: one deployment cannot open another's database.
      await c.query(`REVOKE ALL ON DATABASE ${name} FROM PUBLIC`)
    })
  }

  const dropDatabase = async (admin: pg.ClientConfig, db: DeploymentState["database"]): Promise<void> => {
    await withClient(admin, async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(db.name)} WITH (FORCE)`)
      await c.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(db.role)}`)
    })
  }

  // ---- Redis ----

  const redisAnswers = async (port: number, password: string): Promise<boolean> => {
    try {
      const [auth, pong] = await redisCommands("127.0.0.1", port, [["AUTH", password], ["PING"]], 1000)
      return auth === "OK" && pong === "PONG"
    } catch {
      return false
    }
  }

  const redisConf = (id: string, port: number, password: string, memoryMb: number): string =>
    [
      "# Written by Slipway for one deployment; rewritten on every start.",
      "bind 127.0.0.1",
      "protected-mode yes",
      `port ${port}`,
      `requirepass ${password}`,
      `maxmemory ${memoryMb}mb`,
      `maxmemory-policy ${policy}`,
      `dir ${redisDir(id)}`,
      "dbfilename dump.rdb",
      "save 300 1 60 1000",
      "appendonly no",
      "daemonize no",
      'logfile ""',
      "databases 16",
      "enable-protected-configs no",
      "enable-debug-command no",
      "enable-module-command no",
      ""
    ].join("\n")

  const startRedis = async (state: DeploymentState): Promise<DeploymentState> => {
    requireFile(redisServer, "redis-server")
    const ids = systemUser("redis", "redis-server")
    const id = state.deploymentId
    const dir = redisDir(id)
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
    fs.chownSync(dir, ids.uid, ids.gid)
    fs.chmodSync(dir, 0o700)
    assertReachable(dir, "redis", ids)
    const logFile = path.join(deploymentDir(id), "redis.log")
    let port = state.redis.port
    for (let attempt = 0; attempt < 3; attempt++) {
      if (attempt > 0 || !(await portFree(port))) port = await freePort("127.0.0.1")
      const conf = path.join(dir, "redis.conf")
      writeFileAtomic(conf, redisConf(id, port, state.redis.password, state.redis.memoryMb))
      fs.chownSync(conf, ids.uid, ids.gid)
      const out = fs.openSync(logFile, "a", 0o600)
      const child = spawn(redisServer, [conf], { uid: ids.uid, gid: ids.gid, cwd: dir, detached: true, stdio: ["ignore", out, out] })
      fs.closeSync(out)
      child.unref()
      let exited = false
      child.once("exit", () => (exited = true))
      child.once("error", () => (exited = true))
      const deadline = Date.now() + 10_000
      while (!exited && Date.now() < deadline) {
        if (await redisAnswers(port, state.redis.password)) {
          children.set(id, child)
          const next: DeploymentState = { ...state, redis: { ...state.redis, port, pid: child.pid ?? null } }
          writeFileAtomic(stateFile(id), JSON.stringify(next))
          log(`redis ${id}: started on 127.0.0.1:${port} (pid ${child.pid})`)
          return next
        }
        await sleep(50)
      }
      if (!exited) child.kill("SIGKILL")
      const tail = fs.readFileSync(logFile, "utf8").split("\n").slice(-6).join("\n")
      if (!/Address already in use/i.test(tail) || attempt === 2) {
        throw new DatabaseProvisionError(`redis-server for deployment ${id} did not start: ${tail.trim() || "no output"}`)
      }
    }
    throw new DatabaseProvisionError(`redis-server for deployment ${id} did not start`)
  }

  const stopRedis = async (state: DeploymentState): Promise<void> => {
    const id = state.deploymentId
    const child = children.get(id)
    children.delete(id)
    const pid = child?.pid ?? state.redis.pid
    if (pid === null || pid === undefined || !processAlive(pid, "redis-server")) return
    const exited = child !== undefined && child.exitCode === null && child.signalCode === null ? new Promise<void>((r) => child.once("exit", () => r())) : undefined
    try {
      process.kill(pid, "SIGTERM")
    } catch {
      return
    }
    const deadline = Date.now() + 10_000
    if (exited !== undefined) await Promise.race([exited, sleep(10_000)])
    else while (processAlive(pid, "redis-server") && Date.now() < deadline) await sleep(25)
    if (processAlive(pid, "redis-server")) {
      try {
        process.kill(pid, "SIGKILL")
      } catch {}
      if (exited !== undefined) await Promise.race([exited, sleep(2000)])
    }
  }

  /** Re-attaches to a running Redis of this deployment, or starts it. */
  const ensureRedis = async (state: DeploymentState): Promise<DeploymentState> => {
    const pid = state.redis.pid
    if (children.has(state.deploymentId) || (pid !== null && processAlive(pid, "redis-server"))) {
      if (await redisAnswers(state.redis.port, state.redis.password)) return state
      await stopRedis(state)
    }
    return startRedis(state)
  }

  const uris = async (state: DeploymentState): Promise<ProvisionedDatabases> => {
    const p = await ensurePostgres()
    const { name, role, password } = state.database
    return {
      databaseUri: `postgres://${encodeURIComponent(role)}:${encodeURIComponent(password)}@${formatHost(p.uriHost)}:${p.uriPort}/${encodeURIComponent(name)}${p.uriQuery}`,
      redisUri: `redis://:${encodeURIComponent(state.redis.password)}@${formatHost(host)}:${state.redis.port}/0`
    }
  }

  const provision = async (rawId: string, opts: ProvisionOptions = {}): Promise<ProvisionedDatabases> => {
    const id = checkId(rawId)
    const memoryMb = opts.redisMemoryMb ?? defaultMemory
    if (!Number.isInteger(memoryMb) || memoryMb < 1 || memoryMb > 1_048_576) {
      return Promise.reject(new DatabaseProvisionError(`redis_memory_mb must be an integer from 1 to 1048576, got ${JSON.stringify(opts.redisMemoryMb)}`))
    }
    return serialize(id, async () => {
      if (closed) throw new DatabaseProvisionError("deployment databases are closed")
      fs.mkdirSync(deploymentDir(id), { recursive: true, mode: 0o711 })
      fs.chmodSync(deploymentsDir, 0o711)
      fs.chmodSync(deploymentDir(id), 0o711)
      let state = readJson<DeploymentState>(stateFile(id))
      if (state === undefined) {
        const ident = `slipway_${id.replace(/-/g, "_")}`
        state = {
          deploymentId: id,
          database: { name: ident, role: ident, password: randomBytes(24).toString("hex") },
          redis: { port: 0, password: randomBytes(24).toString("hex"), memoryMb, pid: null }
        }
        // Written first, so a crash mid-way leaves something release() can clean up.
        writeFileAtomic(stateFile(id), JSON.stringify(state))
      }
      const current = state
      // The database and the Redis are independent: both at once (a deployment's first rollout
      // waits for the slower of the two, not their sum).
      const database = (async () => {
        let p = await ensurePostgres()
        try {
          await createDatabase(p.admin, current.database)
        } catch (e) {
          // The managed server may have been stopped behind our back: start it again, once.
          if (external !== undefined || !(e instanceof DatabaseProvisionError) || !e.message.startsWith("cannot connect")) throw e
          managed = undefined
          p = await ensurePostgres()
          await createDatabase(p.admin, current.database)
        }
      })()
      const redis = (async () => {
        let next = current
        if (next.redis.memoryMb !== memoryMb) {
          // A new memory size takes a restart of the deployment's Redis.
          await stopRedis(next)
          next = { ...next, redis: { ...next.redis, memoryMb } }
          writeFileAtomic(stateFile(id), JSON.stringify(next))
        }
        return ensureRedis(next)
      })()
      // Both settle before the deployment's lock is released, whichever fails.
      const [db, rd] = await Promise.allSettled([database, redis])
      if (db.status === "rejected") throw db.reason
      if (rd.status === "rejected") throw rd.reason
      return uris(rd.value)
    })
  }

  const release = async (rawId: string): Promise<void> => {
    const id = checkId(rawId)
    return serialize(id, async () => {
      const state = readJson<DeploymentState>(stateFile(id))
      if (state === undefined) return
      await stopRedis(state)
      const p = await ensurePostgres()
      await dropDatabase(p.admin, state.database)
      fs.rmSync(redisDir(id), { recursive: true, force: true })
      fs.rmSync(path.join(deploymentDir(id), "redis.log"), { force: true })
      fs.rmSync(stateFile(id), { force: true })
      log(`deployment ${id}: database and redis released`)
    })
  }

  const recover = async (): Promise<ReadonlyArray<string>> => {
    closed = false
    let entries: string[]
    try {
      entries = fs.readdirSync(deploymentsDir)
    } catch {
      return []
    }
    const recovered: string[] = []
    for (const id of entries) {
      if (!ID_PATTERN.test(id) || !fs.existsSync(stateFile(id))) continue
      await serialize(id, async () => {
        const state = readJson<DeploymentState>(stateFile(id))
        if (state === undefined) return
        await ensurePostgres()
        await ensureRedis(state)
        recovered.push(id)
      })
    }
    return recovered
  }

  const close = async (): Promise<void> => {
    closed = true
    await Promise.all([...locks.values()])
    let entries: string[] = []
    try {
      entries = fs.readdirSync(deploymentsDir)
    } catch {}
    await Promise.all(
      entries.map(async (id) => {
        const state = ID_PATTERN.test(id) ? readJson<DeploymentState>(stateFile(id)) : undefined
        if (state !== undefined) await stopRedis(state)
      })
    )
    if (external === undefined && fs.existsSync(path.join(pgData, "postmaster.pid"))) {
      const running = managed
      managed = undefined
      if (running !== undefined) await running.catch(() => {})
      await runAsPostgres([path.join(binDir, "pg_ctl"), "stop", "-D", pgData, "-m", "fast", "-w", "-t", "60"], "pg_ctl stop").catch((e) => log(String(e)))
    }
  }

  return { provision, release, recover, close }
}

const portFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    if (port === 0) return resolve(false)
    const s = net.createServer()
    s.once("error", () => resolve(false))
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)))
  })

/** `host:port as user`, never the password. */
const describeServer = (config: pg.ClientConfig): string => {
  if (config.connectionString !== undefined) {
    try {
      const u = new URL(config.connectionString)
      return `${u.hostname}:${u.port || 5432} as ${decodeURIComponent(u.username)}`
    } catch {
      return "SLIPWAY_DEPLOYMENT_POSTGRES_URL"
    }
  }
  return `${config.host}:${config.port} as ${config.user}`
}

const formatHost = (h: string) => (h.includes(":") && !h.startsWith("[") ? `[${h}]` : h)

const adminConfig = (s: ManagedPostgresState): pg.ClientConfig => ({ host: "127.0.0.1", port: s.port, user: ADMIN_USER, password: s.password, database: "postgres" })

/** `SLIPWAY_DEPLOYMENT_POSTGRES_URL`: the admin connection, and where the replicas' URIs point. */
const parseAdminUrl = (raw: string): { admin: pg.ClientConfig; uriHost: string; uriPort: number; uriQuery: string } => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new DatabaseProvisionError("SLIPWAY_DEPLOYMENT_POSTGRES_URL is not a URL (postgres://user:password@host:port/database)")
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new DatabaseProvisionError("SLIPWAY_DEPLOYMENT_POSTGRES_URL must start with postgres:// or postgresql://")
  }
  const port = url.port === "" ? 5432 : Number(url.port)
  const sslmode = url.searchParams.get("sslmode")
  return {
    admin: { connectionString: raw },
    uriHost: url.hostname.replace(/^\[|\]$/g, ""),
    uriPort: port,
    uriQuery: sslmode === null ? "" : `?sslmode=${encodeURIComponent(sslmode)}`
  }
}
