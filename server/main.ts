/** `npm start`: serves the API with the embedded database until SIGTERM/SIGINT. */
import { dirname } from "node:path"
import { ConfigError, configFromEnv, type ServerConfig } from "./config.ts"
import { makeDirectory } from "./directories.ts"
import { tuneGc } from "./gcTuning.ts"
import { startServer } from "./index.ts"
import { isFileDatabase } from "./dataDir.ts"
import { secretsKeyProblem } from "./secrets/secretsKey.ts"
import { settingProblem, unknownSettings } from "./settings.ts"
import { describeDatabase } from "./store/index.ts"

/**
 * The whole environment, checked before anything starts: every setting of server/settings.ts,
 * and the database file's directory created (or refused with its path and the reason).
 */
const configure = (): ServerConfig => {
  for (const warning of unknownSettings(process.env)) process.stderr.write(`slipway: warning: ${warning}\n`)
  tuneGc()
  const config = configFromEnv()
  const problem = settingProblem(process.env) ?? secretsKeyProblem(config)
  if (problem !== undefined) throw new ConfigError(problem)
  if (config.databaseUrl === undefined && isFileDatabase(config.databasePath)) {
    try {
      makeDirectory(dirname(config.databasePath))
    } catch (error) {
      throw new ConfigError(`DATABASE_PATH ${config.databasePath}: cannot create its directory: ${(error as Error).message}`)
    }
  }
  return config
}

const main = async () => {
  let config
  try {
    config = configure()
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`slipway: ${error.message}\n`)
      process.exit(2)
    }
    throw error
  }
  const server = await startServer(config)
  if (server.generatedKey) {
    // Printed once, on first start only: only its hash is stored.
    process.stderr.write(
      `\nslipway: no API key was configured, so one was created for tenant ${config.defaultTenantId}.\n` +
        `slipway: it is shown only now; store it safely:\n\n    ${server.generatedKey}\n\n` +
        `slipway: use it as "X-Api-Key: <key>" or "Authorization: Bearer <key>". More keys: npm run keys -- create --tenant <uuid>\n\n`
    )
  }
  process.stderr.write(`slipway: listening on ${server.url} (database ${describeDatabase(config)}); docs at ${server.url}/docs\n`)
  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    process.stderr.write(`slipway: ${signal} received, draining\n`)
    // close() ends unfinished requests after the grace period and still checkpoints; this is only
    // a last resort should stopping the runtimes hang.
    const force = setTimeout(() => {
      process.stderr.write("slipway: shutdown did not finish in time, exiting\n")
      process.exit(1)
    }, server.config.shutdownGraceMs + 30_000)
    force.unref()
    server.close().then(
      () => process.exit(0),
      (error) => {
        process.stderr.write(`slipway: shutdown failed: ${error}\n`)
        process.exit(1)
      }
    )
  }
  process.on("SIGTERM", () => stop("SIGTERM"))
  process.on("SIGINT", () => stop("SIGINT"))
}

main().catch((error) => {
  process.stderr.write(`slipway: failed to start: ${error?.message ?? error}\n`)
  process.exit(1)
})
