/**
 * The PostgreSQL server deployments get their databases on: the one named by
 * `SLIPWAY_DEPLOYMENT_POSTGRES_URL` (an admin connection with CREATEROLE and CREATEDB), or one
 * Slipway runs itself (Debian's postgresql 15: `initdb` as the `postgres` system user, data under
 * `<root>/data`, loopback only, a free port, started on the first deployment that needs it and
 * stopped by `stop`). Each deployment gets a role with a random password that owns exactly one
 * database; `REVOKE ALL ... FROM PUBLIC` on that database, so another deployment's role cannot
 * connect to it. The client is the `pg` package (see docs/deployments-local.md for why).
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Semaphore } from "effect"
import pg from "pg"
import { PortAllocator } from "../../runtime/PortAllocator.ts"
import { ProcessRunner } from "../../runtime/ProcessRunner.ts"
import { assertReachable, DatabaseProvisionError, portFree, readJson, requireFile, runAs as runAsWith, systemUser, writeFileAtomic } from "./daemons.ts"

export interface PostgresOptions {
  /** Where the managed server keeps its files (`data/`, `slipway.json`, `postgres.log`). */
  readonly root: string
  /** `SLIPWAY_DEPLOYMENT_POSTGRES_URL`: an admin connection to an existing server. Unset: Slipway runs its own. */
  readonly postgresUrl?: string | undefined
  /** Directory of the PostgreSQL binaries. Default `/usr/lib/postgresql/15/bin`. */
  readonly binDir?: string
  /** Host the replicas use to reach the managed server (written into the URIs). */
  readonly advertiseHost: string
  readonly log: (message: string) => void
}

/** One deployment's database: its name, its owner role and that role's password. */
export interface DatabaseIdentity {
  readonly name: string
  readonly role: string
  readonly password: string
}

/** The admin connection, and where the replicas' URIs point. */
interface Endpoint {
  readonly admin: pg.ClientConfig
  readonly uriHost: string
  readonly uriPort: number
  readonly uriQuery: string
}

interface ManagedState {
  readonly port: number
  readonly password: string
}

export interface PostgresServer {
  /** Creates (or updates the password of) the role and its database; idempotent. */
  readonly createDatabase: (db: DatabaseIdentity) => Effect.Effect<void, DatabaseProvisionError>
  /** Drops the database (closing its connections) and its role; idempotent. */
  readonly dropDatabase: (db: DatabaseIdentity) => Effect.Effect<void, DatabaseProvisionError>
  /** `DATABASE_URI` of a deployment's database. */
  readonly uriOf: (db: DatabaseIdentity) => Effect.Effect<string, DatabaseProvisionError>
  /** Starts the managed server when it is not running (re-attaching to one that runs). */
  readonly ensureStarted: Effect.Effect<void, DatabaseProvisionError>
  /** Stops the managed server (data kept); nothing for an external server. */
  readonly stop: Effect.Effect<void>
}

const ADMIN_USER = "slipway"

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

export const formatHost = (h: string) => (h.includes(":") && !h.startsWith("[") ? `[${h}]` : h)

/** `SLIPWAY_DEPLOYMENT_POSTGRES_URL`: the admin connection, and where the replicas' URIs point. */
const parseAdminUrl = (raw: string): Effect.Effect<Endpoint, DatabaseProvisionError> => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return Effect.fail(new DatabaseProvisionError({ message: "SLIPWAY_DEPLOYMENT_POSTGRES_URL is not a URL (postgres://user:password@host:port/database)" }))
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    return Effect.fail(new DatabaseProvisionError({ message: "SLIPWAY_DEPLOYMENT_POSTGRES_URL must start with postgres:// or postgresql://" }))
  }
  const sslmode = url.searchParams.get("sslmode")
  return Effect.succeed({
    admin: { connectionString: raw },
    uriHost: url.hostname.replace(/^\[|\]$/g, ""),
    uriPort: url.port === "" ? 5432 : Number(url.port),
    uriQuery: sslmode === null ? "" : `?sslmode=${encodeURIComponent(sslmode)}`
  })
}

/** The server could not be reached (as opposed to refusing a statement). */
const unreachable = (config: pg.ClientConfig, e: unknown) =>
  new DatabaseProvisionError({ message: `cannot connect to PostgreSQL at ${describeServer(config)}: ${(e as Error).message}`, unreachable: true })

/** Runs `f` on one admin connection, closed afterwards (also when interrupted). */
const withClient = <A>(config: pg.ClientConfig, f: (c: pg.Client) => Promise<A>): Effect.Effect<A, DatabaseProvisionError> =>
  Effect.acquireUseRelease(
    Effect.tryPromise({
      try: async () => {
        const client = new pg.Client({ ...config, connectionTimeoutMillis: 10_000 })
        client.on("error", () => {})
        try {
          await client.connect()
        } catch (e) {
          await client.end().catch(() => {})
          throw e
        }
        return client
      },
      catch: (e) => unreachable(config, e)
    }),
    (client) => Effect.tryPromise({ try: () => f(client), catch: (e) => new DatabaseProvisionError({ message: `PostgreSQL at ${describeServer(config)}: ${(e as Error).message}` }) }),
    (client) => Effect.promise(() => client.end().catch(() => {}))
  )

export const makePostgresServer = (options: PostgresOptions): Effect.Effect<PostgresServer, DatabaseProvisionError, ProcessRunner | PortAllocator> =>
  Effect.gen(function* () {
    const runner = yield* ProcessRunner
    const ports = yield* PortAllocator
    const runAs = (user: string, argv: ReadonlyArray<string>, what: string) => runAsWith(runner, user, argv, what)
    const external = options.postgresUrl ? yield* parseAdminUrl(options.postgresUrl) : undefined
    const binDir = options.binDir ?? "/usr/lib/postgresql/15/bin"
    const pgRoot = path.resolve(options.root)
    const pgData = path.join(pgRoot, "data")
    const stateFile = path.join(pgRoot, "slipway.json")
    const pgCtl = path.join(binDir, "pg_ctl")
    const lock = yield* Semaphore.make(1)
    /** The managed server as this process knows it runs; undefined: start (or re-attach) first. */
    let running: ManagedState | undefined

    const adminConfig = (s: ManagedState): pg.ClientConfig => ({ host: "127.0.0.1", port: s.port, user: ADMIN_USER, password: s.password, database: "postgres" })

    const initCluster = Effect.gen(function* () {
      const user = yield* systemUser("postgres", "postgresql")
      // A fresh cluster: the admin password lives only in slipway.json (root, 0600).
      fs.rmSync(pgData, { recursive: true, force: true })
      fs.mkdirSync(pgData, { mode: 0o700 })
      fs.chownSync(pgData, user.uid, user.gid)
      const password = randomBytes(24).toString("hex")
      const pwfile = path.join(pgRoot, `pwfile-${randomBytes(4).toString("hex")}`)
      fs.writeFileSync(pwfile, password + "\n", { mode: 0o600 })
      fs.chownSync(pwfile, user.uid, user.gid)
      yield* runAs(
        "postgres",
        [path.join(binDir, "initdb"), "-D", pgData, "-U", ADMIN_USER, `--pwfile=${pwfile}`, "--auth-host=scram-sha-256", "--auth-local=peer", "-E", "UTF8", "--locale=C"],
        "initdb"
      ).pipe(Effect.ensuring(Effect.sync(() => fs.rmSync(pwfile, { force: true }))))
      const state: ManagedState = { port: 0, password }
      writeFileAtomic(stateFile, JSON.stringify(state))
      options.log(`postgres: initialized ${pgData}`)
      return state
    })

    /** Starts the managed server (or re-attaches to the one a previous process left running). */
    const startManaged = Effect.gen(function* () {
      yield* requireFile(path.join(binDir, "initdb"), "postgresql")
      const user = yield* systemUser("postgres", "postgresql")
      fs.mkdirSync(pgRoot, { recursive: true, mode: 0o711 })
      fs.chmodSync(pgRoot, 0o711)
      yield* assertReachable(pgData, user)
      const stored = readJson<ManagedState>(stateFile)
      let state = stored !== undefined && fs.existsSync(path.join(pgData, "PG_VERSION")) ? stored : yield* initCluster
      const alive = yield* Effect.exit(runAs("postgres", [pgCtl, "status", "-D", pgData], "pg_ctl status"))
      if (alive._tag === "Success" && state.port !== 0) {
        options.log(`postgres: re-attached on port ${state.port}`)
        return state
      }
      const logFile = path.join(pgRoot, "postgres.log")
      if (!fs.existsSync(logFile)) fs.writeFileSync(logFile, "", { mode: 0o600 })
      fs.chownSync(logFile, user.uid, user.gid)
      // The previous port first, so URIs handed out before a restart stay valid; then free ones
      // (another program may take a port between the check and the start: up to three tries).
      const previous = state.port
      let attempt = 0
      const start = Effect.scoped(
        Effect.gen(function* () {
          const port = attempt++ === 0 && (yield* portFree(previous)) ? previous : yield* Effect.orDie(ports.reserve())
          // Recorded before the start: a server started by an interrupted attempt is found again.
          state = { port, password: state.password }
          writeFileAtomic(stateFile, JSON.stringify(state))
          // TCP only (everything connects to 127.0.0.1): no unix socket, whose path (at most 107
          // bytes) a deep data directory would exceed.
          yield* runAs("postgres", [pgCtl, "start", "-D", pgData, "-l", logFile, "-w", "-t", "60", "-o", `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''`], "pg_ctl start")
        })
      )
      yield* start.pipe(
        Effect.retry({ times: 2 }),
        Effect.mapError((e) => new DatabaseProvisionError({ message: `${e.message}; see ${logFile}` }))
      )
      // The managed server belongs to deployments only: nobody but the admin connects to its own databases.
      yield* withClient(adminConfig(state), async (c) => {
        await c.query("REVOKE CONNECT, TEMPORARY ON DATABASE postgres FROM PUBLIC")
        await c.query("REVOKE CONNECT, TEMPORARY ON DATABASE template1 FROM PUBLIC")
      })
      options.log(`postgres: started on 127.0.0.1:${state.port}`)
      return state
    })

    const endpoint: Effect.Effect<Endpoint, DatabaseProvisionError> =
      external !== undefined
        ? Effect.succeed(external)
        : lock.withPermits(1)(
            Effect.suspend(() => (running !== undefined ? Effect.succeed(running) : Effect.tap(startManaged, (s) => Effect.sync(() => (running = s))))).pipe(
              Effect.map((s) => ({ admin: adminConfig(s), uriHost: options.advertiseHost, uriPort: s.port, uriQuery: "" }))
            )
          )

    /** Runs `f` as the admin; a managed server stopped behind Slipway's back is started again, once. */
    const asAdmin = <A>(f: (c: pg.Client) => Promise<A>) => {
      const once = Effect.flatMap(endpoint, (e) => withClient(e.admin, f))
      return external !== undefined
        ? once
        : once.pipe(Effect.catchIf((e) => e.unreachable === true, () => Effect.andThen(Effect.sync(() => (running = undefined)), once)))
    }

    const createDatabase = (db: DatabaseIdentity) => {
      const role = pg.escapeIdentifier(db.role)
      const name = pg.escapeIdentifier(db.name)
      return asAdmin(async (c) => {
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

    const dropDatabase = (db: DatabaseIdentity) =>
      asAdmin(async (c) => {
        await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(db.name)} WITH (FORCE)`)
        await c.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(db.role)}`)
      })

    const uriOf = (db: DatabaseIdentity) =>
      Effect.map(
        endpoint,
        (p) =>
          `postgres://${encodeURIComponent(db.role)}:${encodeURIComponent(db.password)}@${formatHost(p.uriHost)}:${p.uriPort}/${encodeURIComponent(db.name)}${p.uriQuery}`
      )

    const stop = lock.withPermits(1)(
      Effect.suspend(() => {
        running = undefined
        if (external !== undefined || !fs.existsSync(path.join(pgData, "postmaster.pid"))) return Effect.void
        return runAs("postgres", [pgCtl, "stop", "-D", pgData, "-m", "fast", "-w", "-t", "60"], "pg_ctl stop").pipe(
          Effect.catch((e) => Effect.sync(() => options.log(e.message)))
        )
      })
    )

    return { createDatabase, dropDatabase, uriOf, ensureStarted: Effect.asVoid(endpoint), stop }
  })
