/**
 * What an agent server needs: per deployment its own PostgreSQL database (`postgres.ts`) and its
 * own Redis (`redis.ts`), handed to every replica as `DATABASE_URI` and `REDIS_URI`.
 *
 * `DeploymentDatabases` composes them: a deployment's state (its database identity, its Redis's
 * port, password, memory and pid) is in `<dataDir>/deployments/<id>/databases.json`, written
 * before anything is created so that `release` can clean up after a crash mid-way; operations on
 * one deployment run one at a time. Both servers run detached from Slipway's process: after a
 * crash `recover` re-attaches to what still runs and restarts what does not; closing the layer
 * (a clean stop) stops them, data kept, and `recover` starts them again.
 */
import { createHmac, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Context, Effect, Layer, Semaphore } from "effect"
import { ServerEnv } from "../../module.ts"
import { Replicas } from "../../replicas/Replicas.ts"
import { deriveKey } from "../../secrets/secrets.ts"
import { RuntimeRoot } from "../../runtime/local/RuntimeRoot.ts"
import { DatabaseProvisionError, readJson, writeFileAtomic } from "./daemons.ts"
import { type DatabaseIdentity, formatHost, makePostgresServer } from "./postgres.ts"
import { makeRedisServers, type RedisState } from "./redis.ts"

export { DatabaseProvisionError } from "./daemons.ts"

export interface DeploymentDatabasesOptions {
  /** Slipway's data directory: `postgres/` (the managed server) and `deployments/<id>/` live under it. */
  readonly dataDir: string
  /** `SLIPWAY_DEPLOYMENT_POSTGRES_URL`: an admin connection to an existing server. Unset: Slipway runs its own. */
  readonly postgresUrl?: string | undefined
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
  /**
   * The password of a deployment's database role, the same on every replica (several replicas:
   * whichever serves the deployment hands its replicas the same credentials; derived from the
   * shared secrets key). Unset: a random password kept in the deployment's state file.
   */
  readonly databasePassword?: (deploymentId: string) => string
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

export class DeploymentDatabases extends Context.Service<
  DeploymentDatabases,
  {
    /** Creates (or, when they exist, starts and returns) the deployment's database and Redis. Idempotent. */
    readonly provision: (deploymentId: string, options?: ProvisionOptions) => Effect.Effect<ProvisionedDatabases, DatabaseProvisionError>
    /** Drops the database and its role, stops the Redis and removes its files. Idempotent. */
    readonly release: (deploymentId: string) => Effect.Effect<void, DatabaseProvisionError>
    /**
     * On server start: re-attaches to or restarts the servers of the provisioned deployments in
     * `keep` (every one when absent); answers their ids. The Redis of the others is stopped (a
     * previous process may have left it running): they are provisioned again when needed.
     */
    readonly recover: (keep?: ReadonlySet<string>) => Effect.Effect<ReadonlyArray<string>, DatabaseProvisionError>
    /** This replica no longer serves the deployment: its Redis here stops (its files and the database stay). */
    readonly detach: (deploymentId: string) => Effect.Effect<void, DatabaseProvisionError>
  }
>()("slipway/DeploymentDatabases") {}

interface DeploymentState {
  readonly deploymentId: string
  readonly database: DatabaseIdentity
  readonly redis: RedisState
}

const ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,54}$/

/** The service over `options.dataDir`; closing the scope stops every Redis and the managed PostgreSQL (data kept). */
export const makeDeploymentDatabases = (options: DeploymentDatabasesOptions) =>
  Effect.gen(function* () {
    const dataDir = path.resolve(options.dataDir)
    const host = options.advertiseHost ?? "127.0.0.1"
    const defaultMemory = options.defaultRedisMemoryMb ?? 64
    const log = options.log ?? (() => {})
    const postgres = yield* makePostgresServer({
      root: path.join(dataDir, "postgres"),
      postgresUrl: options.postgresUrl,
      ...(options.postgresBinDir ? { binDir: options.postgresBinDir } : {}),
      advertiseHost: host,
      log
    })
    const redis = yield* makeRedisServers({
      ...(options.redisServerPath ? { serverPath: options.redisServerPath } : {}),
      ...(options.redisMaxmemoryPolicy ? { maxmemoryPolicy: options.redisMaxmemoryPolicy } : {}),
      log
    })

    const deploymentsDir = path.join(dataDir, "deployments")
    const deploymentDir = (id: string) => path.join(deploymentsDir, id)
    const stateFile = (id: string) => path.join(deploymentDir(id), "databases.json")
    const redisDir = (id: string) => path.join(deploymentDir(id), "redis")
    const save = (state: DeploymentState) => writeFileAtomic(stateFile(state.deploymentId), JSON.stringify(state))

    /** Operations on one deployment run one at a time. */
    const locks = new Map<string, Semaphore.Semaphore>()
    const serialize = <A, E>(id: string, effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
      Effect.suspend(() => {
        let lock = locks.get(id)
        if (lock === undefined) locks.set(id, (lock = Semaphore.makeUnsafe(1)))
        return lock.withPermits(1)(effect)
      })

    /** A deployment's database and role (its name), and the role's password: derived (shared) or new. */
    const identityOf = (id: string): DatabaseIdentity => {
      const ident = `slipway_${id.replace(/-/g, "_")}`
      return { name: ident, role: ident, password: options.databasePassword?.(id) ?? randomBytes(24).toString("hex") }
    }

    const checkId = (raw: string): Effect.Effect<string, DatabaseProvisionError> => {
      const id = typeof raw === "string" ? raw.toLowerCase() : ""
      return ID_PATTERN.test(id)
        ? Effect.succeed(id)
        : Effect.fail(new DatabaseProvisionError({ message: `invalid deployment id ${JSON.stringify(raw)}: letters, digits and "-" only, at most 55` }))
    }

    const uris = (state: DeploymentState) =>
      Effect.map(postgres.uriOf(state.database), (databaseUri) => ({
        databaseUri,
        redisUri: `redis://:${encodeURIComponent(state.redis.password)}@${formatHost(host)}:${state.redis.port}/0`
      }))

    /** The deployment's Redis running with `memoryMb` (a new size takes a restart); its state recorded. */
    const ensureRedis = (state: DeploymentState, memoryMb: number) =>
      Effect.gen(function* () {
        let current = state
        if (current.redis.memoryMb !== memoryMb) {
          yield* redis.stop(redisDir(current.deploymentId), current.redis)
          current = { ...current, redis: { ...current.redis, memoryMb, pid: null } }
          save(current)
        }
        const next = yield* redis.ensure(redisDir(current.deploymentId), current.redis)
        if (next.port !== current.redis.port || next.pid !== current.redis.pid) save((current = { ...current, redis: next }))
        return current
      })

    const provision = (rawId: string, opts: ProvisionOptions = {}) =>
      Effect.gen(function* () {
        const id = yield* checkId(rawId)
        const memoryMb = opts.redisMemoryMb ?? defaultMemory
        if (!Number.isInteger(memoryMb) || memoryMb < 1 || memoryMb > 1_048_576) {
          return yield* Effect.fail(new DatabaseProvisionError({ message: `redis_memory_mb must be an integer from 1 to 1048576, got ${JSON.stringify(opts.redisMemoryMb)}` }))
        }
        return yield* serialize(
          id,
          Effect.gen(function* () {
            fs.mkdirSync(deploymentDir(id), { recursive: true, mode: 0o711 })
            fs.chmodSync(deploymentsDir, 0o711)
            fs.chmodSync(deploymentDir(id), 0o711)
            let state = readJson<DeploymentState>(stateFile(id))
            if (state === undefined) {
              state = {
                deploymentId: id,
                database: identityOf(id),
                redis: { port: 0, password: randomBytes(24).toString("hex"), memoryMb, pid: null }
              }
              // Written first, so a crash mid-way leaves something release can clean up.
              save(state)
            } else if (options.databasePassword !== undefined && state.database.password !== options.databasePassword(id)) {
              state = { ...state, database: identityOf(id) }
              save(state)
            }
            // The database and the Redis are independent: both at once (a deployment's first
            // rollout waits for the slower of the two, not their sum).
            const [, current] = yield* Effect.all([postgres.createDatabase(state.database), ensureRedis(state, memoryMb)], { concurrency: 2 })
            return yield* uris(current)
          })
        )
      })

    const release = (rawId: string) =>
      Effect.flatMap(checkId(rawId), (id) =>
        serialize(
          id,
          Effect.gen(function* () {
            const state = readJson<DeploymentState>(stateFile(id))
            // Served by another replica (a shared server): its database goes all the same.
            if (state === undefined && options.databasePassword !== undefined && options.postgresUrl !== undefined) yield* postgres.dropDatabase(identityOf(id))
            if (state === undefined) return
            yield* redis.stop(redisDir(id), state.redis)
            yield* postgres.dropDatabase(state.database)
            fs.rmSync(redisDir(id), { recursive: true, force: true })
            fs.rmSync(path.join(deploymentDir(id), "redis.log"), { force: true })
            fs.rmSync(stateFile(id), { force: true })
            locks.delete(id)
            log(`deployment ${id}: database and redis released`)
          })
        )
      )

    const provisioned = (): ReadonlyArray<string> => {
      try {
        return fs.readdirSync(deploymentsDir).filter((id) => ID_PATTERN.test(id) && fs.existsSync(stateFile(id)))
      } catch {
        return []
      }
    }

    const recover = (keep?: ReadonlySet<string>) =>
      Effect.forEach(provisioned(), (id) =>
        serialize(
          id,
          Effect.gen(function* () {
            const state = readJson<DeploymentState>(stateFile(id))
            if (state === undefined) return []
            if (keep !== undefined && !keep.has(id)) {
              yield* redis.stop(redisDir(id), state.redis)
              return []
            }
            yield* postgres.ensureStarted
            yield* ensureRedis(state, state.redis.memoryMb)
            return [id]
          })
        )
      ).pipe(Effect.map((ids) => ids.flat()))

    const detach = (rawId: string) =>
      Effect.flatMap(checkId(rawId), (id) =>
        serialize(
          id,
          Effect.suspend(() => {
            const state = readJson<DeploymentState>(stateFile(id))
            return state === undefined ? Effect.void : redis.stop(redisDir(id), state.redis)
          })
        )
      )

    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        yield* Effect.forEach(
          provisioned(),
          (id) => {
            const state = readJson<DeploymentState>(stateFile(id))
            return state === undefined ? Effect.void : redis.stop(redisDir(id), state.redis)
          },
          { concurrency: "unbounded", discard: true }
        )
        yield* postgres.stop
      })
    )

    return DeploymentDatabases.of({ provision, release, recover: (keep) => Effect.suspend(() => recover(keep)), detach })
  })

export const layerDeploymentDatabases = (options: DeploymentDatabasesOptions) => Layer.effect(DeploymentDatabases, makeDeploymentDatabases(options))

/**
 * The server's: under the local runtime's root (`deployment-data/`), on the PostgreSQL server of
 * `SLIPWAY_DEPLOYMENT_POSTGRES_URL` when set. A bad URL fails the start with its reason.
 */
export const DeploymentDatabasesLive = Layer.unwrap(
  Effect.gen(function* () {
    const { log, config } = yield* ServerEnv
    const { root } = yield* RuntimeRoot
    const replicas = yield* Replicas
    const key = config.secretsKey
    return layerDeploymentDatabases({
      dataDir: path.join(root, "deployment-data"),
      postgresUrl: process.env["SLIPWAY_DEPLOYMENT_POSTGRES_URL"] || undefined,
      // Several replicas: any of them may serve a deployment, with the same credentials.
      ...(replicas.shared && key !== undefined ? { databasePassword: (id: string) => derivedPassword(key, id) } : {}),
      log: (message) => log.debug("deployment databases", { message })
    })
  })
).pipe(Layer.orDie)

/** A deployment database's password every replica computes alike: an HMAC of its id under the shared secrets key. */
export const derivedPassword = (secretsKey: string, deploymentId: string): string =>
  createHmac("sha256", deriveKey(secretsKey)).update(`slipway deployment database ${deploymentId}`).digest("hex").slice(0, 48)
