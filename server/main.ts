/** `npm start`: serves the API with the embedded database until SIGTERM/SIGINT. */
import { ConfigError, configFromEnv } from "./config.ts"
import { tuneGc } from "./gcTuning.ts"
import { startServer } from "./index.ts"
import { describeDatabase } from "./store/index.ts"

const main = async () => {
  let config
  try {
    tuneGc()
    config = configFromEnv()
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
