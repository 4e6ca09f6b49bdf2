/**
 * Embeddable server: `startServer()` opens the database, applies migrations, registers the
 * configured key, starts background work and listens. `close()` drains and checkpoints.
 */
// @ts-nocheck

import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Api } from "../core/index.ts"
import { makeKeyStore, type KeyStore } from "./auth/keys.ts"
import { type ServerConfig, defaultConfig, validateConfig } from "./config.ts"
import { closeDatabase, type Db, openDatabase } from "./db/database.ts"
import { coreMigrations } from "./db/migrations.ts"
import { makeApp } from "./http/app.ts"
import { type Logger, makeLogger } from "./log.ts"
import type { ServerContext, ServerModule } from "./module.ts"
import { modules as defaultModules } from "./modules.ts"

export { configFromEnv, defaultConfig, DEFAULT_TENANT_ID, DEFAULT_ORGANIZATION_ID, type ServerConfig } from "./config.ts"
export type { AuthContext, KeyStore } from "./auth/keys.ts"

export interface StartOptions extends Partial<ServerConfig> {
  readonly logger?: Logger
  readonly modules?: ReadonlyArray<ServerModule>
}

export interface SlipwayServer {
  /** Base URL, e.g. http://127.0.0.1:41234 */
  readonly url: string
  readonly port: number
  readonly config: ServerConfig
  readonly db: Db
  readonly keys: KeyStore
  /** The plaintext key minted at first start when none was configured (shown once). */
  readonly generatedKey: string | undefined
  /** Stops accepting, waits for in-flight requests, stops background work, checkpoints and closes the database. */
  readonly close: () => Promise<void>
}

export const allMigrations = (modules: ReadonlyArray<ServerModule> = defaultModules) => [
  ...coreMigrations,
  ...modules.flatMap((module) => module.migrations)
]

const listen = (server: Server, port: number, host: string) =>
  new Promise<AddressInfo>((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, host, () => {
      server.off("error", reject)
      resolve(server.address() as AddressInfo)
    })
  })

export const startServer = async (options: StartOptions = {}): Promise<SlipwayServer> => {
  const { logger, modules = defaultModules, ...overrides } = options
  const config: ServerConfig = validateConfig({ ...defaultConfig, ...overrides })
  const log = logger ?? makeLogger(config.logLevel)
  const db = openDatabase(config.databasePath, allMigrations(modules))
  const keys = makeKeyStore(db)
  keys.ensureTenant(config.defaultTenantId, config.defaultOrganizationId)
  if (config.apiKey) keys.createKey({ tenantId: config.defaultTenantId, organizationId: config.defaultOrganizationId, key: config.apiKey })
  const generatedKey = keys.hasAnyKey()
    ? undefined
    : keys.createKey({ tenantId: config.defaultTenantId, organizationId: config.defaultOrganizationId, description: "minted at first start" }).key

  const server = createServer({ keepAliveTimeout: 5_000 })
  let address: AddressInfo
  try {
    address = await listen(server, config.port, config.host)
  } catch (error) {
    closeDatabase(db)
    throw error
  }
  const publicUrl = config.publicUrl ?? `http://${address.address.includes(":") ? `[${address.address}]` : address.address}:${address.port}`
  const context: ServerContext = { db, config, keys, log, publicUrl }
  const routes = modules.flatMap((module) => module.routes(context))
  const served = new Set(routes.map((route) => route.endpoint.name))
  const missing = Object.keys(Api).filter((name) => !served.has(name))
  if (missing.length > 0) log.warn("endpoints without an implementation", { endpoints: missing })

  server.on("request", makeApp({ routes, authenticate: keys.authenticate, log }))
  const background = modules.flatMap((module) => (module.start ? [module.start(context)] : []))
  log.info("listening", { url: publicUrl, database: config.databasePath })

  let closing: Promise<void> | undefined
  const close = () =>
    (closing ??= (async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeIdleConnections()
      })
      for (const work of background) await work.stop()
      closeDatabase(db)
      log.info("stopped")
    })())

  return { url: `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${address.port}`, port: address.port, config, db, keys, generatedKey, close }
}
