/**
 * A REAL PostgreSQL server for tests: Debian's `postgresql` binaries, a fresh cluster in a temp
 * directory, loopback only, a free port, `fsync=off` (a test database need not survive a power
 * loss). One server per test file: `startPostgres()` in `beforeAll`, `stop()` in `afterAll`,
 * which stops the server and removes its directory. `createDatabase()` gives each test its own
 * empty database on that server.
 *
 * `initdb` and `postgres` refuse to run as root: as root (CI) they run as the `postgres` system
 * user that the Debian package creates (`runuser -u postgres --`), with the cluster directory
 * chowned to it; as any other user they run as that user.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir, userInfo } from "node:os"
import { join } from "node:path"
import pg from "pg"

export interface PostgresServer {
  /** `postgres://slipway@127.0.0.1:<port>/postgres`: the maintenance database, superuser. */
  readonly url: string
  readonly port: number
  /** Creates an empty database (a fresh name when none is given) and answers its URL. */
  readonly createDatabase: (name?: string) => Promise<string>
  /** Stops the server (fast, then immediate) and removes its directory. Idempotent. */
  readonly stop: () => Promise<void>
}

const MISSING = "PostgreSQL server binaries not found: install Debian package postgresql (apt-get install -y postgresql)"

/** The newest `/usr/lib/postgresql/<major>/bin` holding initdb (PG_BIN overrides). */
export const postgresBin = (): string => {
  const fromEnv = process.env.PG_BIN
  if (fromEnv) {
    if (!existsSync(join(fromEnv, "initdb"))) throw new Error(`PG_BIN=${fromEnv} has no initdb. ${MISSING}`)
    return fromEnv
  }
  const root = "/usr/lib/postgresql"
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((name) => /^\d+$/.test(name) && existsSync(join(root, name, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : []
  if (majors.length === 0) throw new Error(MISSING)
  return join(root, majors[0]!, "bin")
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

const asRoot = userInfo().uid === 0

/** Runs a PostgreSQL binary as the cluster's owner. */
const run = (bin: string, program: string, args: ReadonlyArray<string>) => {
  const command = asRoot ? "runuser" : join(bin, program)
  const argv = asRoot ? ["-u", "postgres", "--", join(bin, program), ...args] : [...args]
  const result = spawnSync(command, argv, { encoding: "utf8", timeout: 60_000 })
  if (result.error) throw result.error
  return result
}

const stopCluster = (bin: string, data: string) => {
  if (!existsSync(join(data, "postmaster.pid"))) return
  const fast = run(bin, "pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "20", "stop"])
  if (fast.status !== 0) run(bin, "pg_ctl", ["-D", data, "-m", "immediate", "-w", "-t", "20", "stop"])
}

/** Every cluster this process started and has not stopped: stopped if the process exits first. */
const running = new Map<string, () => void>()
let exitHook = false
const hookExit = () => {
  if (exitHook) return
  exitHook = true
  process.once("exit", () => {
    for (const stop of running.values()) stop()
  })
}

export const startPostgres = async (): Promise<PostgresServer> => {
  const bin = postgresBin()
  if (asRoot) {
    try {
      execFileSync("id", ["-u", "postgres"], { stdio: "ignore" })
    } catch {
      throw new Error(`running as root needs the "postgres" system user. ${MISSING}`)
    }
  }
  const dir = mkdtempSync(join(tmpdir(), "slipway-pg-"))
  const data = join(dir, "data")
  const remove = () => rmSync(dir, { recursive: true, force: true })
  try {
    if (asRoot) {
      const pgUid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim())
      const pgGid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim())
      chownSync(dir, pgUid, pgGid)
      chmodSync(dir, 0o700)
    }
    const init = run(bin, "initdb", ["-D", data, "-A", "trust", "-U", "slipway", "-E", "UTF8", "--locale=C", "--no-sync"])
    if (init.status !== 0) throw new Error(`initdb failed (${init.status}):\n${init.stderr}${init.stdout}`)

    for (let attempt = 1; ; attempt++) {
      const port = await freePort()
      const options = [
        `-p ${port}`,
        "-c listen_addresses=127.0.0.1",
        `-c unix_socket_directories=${dir}`,
        "-c fsync=off",
        "-c synchronous_commit=off",
        "-c full_page_writes=off",
        "-c max_connections=200",
        "-c shared_buffers=32MB"
      ].join(" ")
      const started = run(bin, "pg_ctl", ["-D", data, "-l", join(dir, "log"), "-o", options, "-w", "-t", "30", "start"])
      if (started.status !== 0) {
        const log = existsSync(join(dir, "log")) ? readFileSync(join(dir, "log"), "utf8") : ""
        stopCluster(bin, data)
        // Another process may have taken the port between the probe and the start: try another.
        if (attempt < 4 && /could not bind|Address already in use/i.test(log)) continue
        throw new Error(`pg_ctl start failed (${started.status}):\n${started.stderr}${started.stdout}\n${log}`)
      }
      const url = `postgres://slipway@127.0.0.1:${port}/postgres`
      const stopNow = () => {
        running.delete(dir)
        try {
          stopCluster(bin, data)
        } finally {
          remove()
        }
      }
      running.set(dir, stopNow)
      hookExit()
      let counter = 0
      return {
        url,
        port,
        createDatabase: async (name) => {
          const database = name ?? `t${process.pid}_${Date.now().toString(36)}_${counter++}`
          if (!/^[a-z_][a-z0-9_]{0,62}$/.test(database)) throw new Error(`database name must be a lowercase identifier, got "${database}"`)
          const client = new pg.Client({ connectionString: url })
          await client.connect()
          try {
            await client.query(`CREATE DATABASE ${database}`)
          } finally {
            await client.end()
          }
          return `postgres://slipway@127.0.0.1:${port}/${database}`
        },
        stop: async () => {
          if (running.has(dir)) stopNow()
        }
      }
    }
  } catch (error) {
    stopCluster(bin, data)
    remove()
    throw error
  }
}

/** Runs one statement on the database at `url` (a connection of its own) and answers its rows. */
export const queryDatabase = async <R>(url: string, text: string, params: ReadonlyArray<unknown> = []): Promise<Array<R>> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query(text, [...params])).rows as Array<R>
  } finally {
    await client.end()
  }
}
