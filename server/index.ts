/**
 * Embeddable server: `startServer()` listens, builds the server's services (stores, each area's
 * runtime) as Layers, registers the configured key and serves. `close()` drains, stops the
 * runtimes and closes the stores (the SQLite file is checkpointed).
 */
// First: fails the import with a clear message under a Node.js too old (better-sqlite3 would segfault).
import "../core/nodeVersion.ts"
import { createServer, type RequestListener, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect, Exit, Layer, Option, Scope } from "effect"
import { Api } from "../core/index.ts"
import { type ServerConfig, defaultConfig, validateConfig } from "./config.ts"
import { makeApp } from "./http/app.ts"
import { type Logger, makeLogger } from "./log.ts"
import { makeServerMetrics, Metrics } from "./metrics.ts"
import { ServerEnv, type ServerModule } from "./module.ts"
import { controllers, modules as defaultModules, runtimes, type ServerServices, type Substitution } from "./modules.ts"
import { resolveReplicaIdentity } from "./replicas/identity.ts"
import { layerReplicas } from "./replicas/Replicas.ts"
import { RuntimeChoiceLive } from "./runtime/select.ts"
import { resolveSecretsKeys, type SecretsKeys, secretsKeyProblem } from "./secrets/secretsKey.ts"
import { KeyStore } from "./store/KeyStore.ts"
import { describeDatabase, storesFor } from "./store/index.ts"
import { SqliteDatabase } from "./store/sqlite/index.ts"
import type { Db } from "./store/sqlite/database.ts"

export { configFromEnv, defaultConfig, DEFAULT_TENANT_ID, DEFAULT_ORGANIZATION_ID, type ServerConfig } from "./config.ts"
export { KeyStore, type AuthContext } from "./store/KeyStore.ts"
export { sqliteMigrations as allMigrations } from "./store/sqlite/migrations.ts"

export type { ServerServices, Substitution } from "./modules.ts"

export interface StartOptions extends Partial<ServerConfig> {
  readonly logger?: Logger
  /** The areas served (default: every area, `server/modules.ts`); an earlier module's route wins. */
  readonly modules?: ReadonlyArray<ServerModule<ServerServices>>
  /**
   * Services that replace the server's own of the same tag: a store, a driver, the dataplane
   * (`SubstitutableServices`). The Layer is built on the server's services, so it may wrap the
   * one it replaces. Tests inject faults this way (a driver that fails given revisions, a store
   * that holds a decision open); the controllers and routes are built on the substitutes.
   */
  readonly substitute?: Substitution
}

export interface SlipwayServer {
  /** Base URL, e.g. http://127.0.0.1:41234 */
  readonly url: string
  readonly port: number
  readonly config: ServerConfig
  /** The SQLite connection of the embedded store (reading it on PostgreSQL throws). */
  readonly db: Db
  readonly keys: KeyStore["Service"]
  /** The plaintext key minted at first start when none was configured (shown once). */
  readonly generatedKey: string | undefined
  /** Runs an effect with the server's services (stores, controllers). */
  readonly run: <A, E>(effect: Effect.Effect<A, E, ServerServices>) => Promise<A>
  /**
   * Stops accepting, waits for in-flight requests (at most `graceMs`, default the configured
   * `shutdownGraceMs`; then their connections are destroyed), stops background work,
   * checkpoints and closes the database. Always closes the stores, stragglers or not.
   */
  readonly close: (options?: { readonly graceMs?: number }) => Promise<void>
}

const listen = (server: Server, port: number, host: string) =>
  new Promise<AddressInfo>((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, host, () => {
      server.off("error", reject)
      resolve(server.address() as AddressInfo)
    })
  })

const hostForUrl = (host: string) => (host.includes(":") ? `[${host}]` : host)

export const startServer = async (options: StartOptions = {}): Promise<SlipwayServer> => {
  const { logger, modules = defaultModules, substitute = Layer.empty, ...overrides } = options
  const requested: ServerConfig = validateConfig({ ...defaultConfig, ...overrides })
  const log = logger ?? makeLogger(requested.logLevel)
  // Refused before anything is written (a key file) or opened (the port).
  const keyProblem = secretsKeyProblem(requested)
  if (keyProblem !== undefined) throw new Error(keyProblem)

  const server = createServer({
    keepAliveTimeout: 5_000,
    // A client that trickles its headers (slowloris) or its body is cut off; node checks both
    // every `connectionsCheckingInterval`.
    headersTimeout: requested.headersTimeoutMs,
    requestTimeout: requested.requestTimeoutMs,
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(requested.headersTimeoutMs / 4)))
  })
  // Past the cap node destroys new sockets at once: stalled clients cannot take the memory.
  server.maxConnections = requested.maxConnections
  // The port opens before the stores are ready (migrations may wait on another replica's lock):
  // until then every request gets 503 + Retry-After, instead of hanging with no listener.
  let app: RequestListener | undefined
  server.on("request", (request, response) => {
    if (app) return app(request, response)
    request.resume()
    response.writeHead(503, { "content-type": "application/json", "retry-after": "1" })
    response.end('{"detail":"Starting, retry shortly"}')
  })
  const address = await listen(server, requested.port, requested.host)
  // Secrets are encrypted at rest by default: without SLIPWAY_SECRETS_KEY, with a key kept beside
  // the database, generated once the port is ours (a start that cannot listen leaves nothing behind).
  let secrets: SecretsKeys
  try {
    secrets = resolveSecretsKeys(requested)
  } catch (error) {
    await new Promise<void>((resolve) => server.close(() => resolve()))
    throw error
  }
  if (secrets.created) {
    log.warn("generated the key that encrypts secrets at rest; keep it with the database's backups (without it stored secrets cannot be read)", {
      key_file: secrets.path
    })
  }
  if (secrets.previous.length > 0) log.warn("a secrets key rotation did not finish: run `npm run keys -- secrets rotate` again", { key_file: secrets.path })
  const config: ServerConfig = { ...requested, secretsKey: secrets.key, previousSecretsKeys: secrets.previous }
  const publicUrl = config.publicUrl ?? `http://${hostForUrl(address.address)}:${address.port}`

  // This replica among those sharing the database (docs/replicas.md): its id, the address others reach it at.
  const identity = resolveReplicaIdentity(config.databasePath)
  const internalUrl = config.internalUrl ?? `http://${hostForUrl(address.address)}:${address.port}`

  const scope = Effect.runSync(Scope.make())
  const metrics = makeServerMetrics()
  const base = layerReplicas({ identity, internalUrl }).pipe(
    Layer.provideMerge(
      RuntimeChoiceLive.pipe(
        Layer.provideMerge(Layer.mergeAll(storesFor(config, identity.id), Layer.succeed(ServerEnv, { config, log, publicUrl }), Layer.succeed(Metrics, metrics)))
      )
    )
  )
  // The order of server/modules.ts: base, runtimes, substitutions, controllers.
  const all = controllers.pipe(Layer.provideMerge(substitute.pipe(Layer.provideMerge(runtimes.pipe(Layer.provideMerge(base))))))
  let context
  try {
    context = await Effect.runPromise(Layer.buildWithScope(all, scope))
  } catch (error) {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await new Promise<void>((resolve) => server.close(() => resolve()))
    throw error
  }
  const services = context
  const run = <A, E>(effect: Effect.Effect<A, E, ServerServices>) => Effect.runPromise(Effect.provideContext(effect, services))

  const keys = await run(KeyStore)
  // Present only on the SQLite backend.
  const db = Option.getOrUndefined(await run(Effect.serviceOption(SqliteDatabase)))?.db
  await run(keys.ensureTenant(config.defaultTenantId, config.defaultOrganizationId))
  if (config.apiKey) await run(keys.createKey({ tenantId: config.defaultTenantId, organizationId: config.defaultOrganizationId, key: config.apiKey }))
  const generatedKey = (await run(keys.hasAnyKey()))
    ? undefined
    : (await run(keys.createKey({ tenantId: config.defaultTenantId, organizationId: config.defaultOrganizationId, description: "minted at first start" }))).key

  const routes = (await run(Effect.all(modules.map((module) => module.routes)))).flat()
  const served = new Set(routes.map((route) => route.endpoint.name))
  const missing = Object.keys(Api).filter((name) => !served.has(name))
  if (missing.length > 0) log.warn("endpoints without an implementation", { endpoints: missing })

  const raw = await run(Effect.all(modules.flatMap((module) => (module.http ? [module.http] : []))))
  const requestHooks = raw.flatMap((hooks) => (hooks.request ? [hooks.request] : []))
  const upgradeHooks = raw.flatMap((hooks) => (hooks.upgrade ? [hooks.upgrade] : []))
  const handler = makeApp({
    routes,
    authenticate: keys.authenticate,
    authenticateNow: keys.authenticateNow,
    log,
    unauthenticatedMaxBody: config.unauthenticatedMaxBody,
    observe: metrics.route,
    services: context
  })
  app = (request, response) => {
    for (const hook of requestHooks) if (hook(request, response)) return
    handler(request, response)
  }
  server.on("upgrade", (request, socket, head) => {
    for (const hook of upgradeHooks) if (hook(request, socket, head)) return
    socket.end("HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 22\r\nconnection: close\r\n\r\n{\"detail\":\"Not Found\"}")
  })
  log.info("listening", { url: publicUrl, database: describeDatabase(config) })

  let closing: Promise<void> | undefined
  const close = (options: { readonly graceMs?: number } = {}) =>
    (closing ??= (async () => {
      const graceMs = options.graceMs ?? config.shutdownGraceMs
      let grace: ReturnType<typeof setTimeout> | undefined
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeIdleConnections()
        // Requests still unfinished after the grace period (a client that stopped sending) lose
        // their connection; the stores are closed all the same.
        grace = setTimeout(() => {
          log.warn("shutdown grace period over: closing unfinished requests", { grace_ms: graceMs })
          server.closeAllConnections()
        }, graceMs)
      })
      clearTimeout(grace)
      await Effect.runPromise(Scope.close(scope, Exit.void))
      log.info("stopped")
    })())

  const sqliteDb = db
  return {
    url: `http://${hostForUrl(config.host)}:${address.port}`,
    port: address.port,
    config,
    get db(): Db {
      if (sqliteDb === undefined) throw new Error("server.db is the SQLite connection; this server runs on PostgreSQL (DATABASE_URL)")
      return sqliteDb
    },
    keys,
    generatedKey,
    run,
    close
  }
}
