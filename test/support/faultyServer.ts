/**
 * `node test/support/faultyServer.ts`: the server as `npm start` runs it, with faults
 * substituted (test/support/faults.ts), for tests that need them in a child process
 * (`spawnServer({ entry: faultyServerEntry })`). `FAULT_QUOTA_HOLD_MS` holds every quota decision
 * open that long (`heldQuotaDecisions`).
 */
import { Layer } from "effect"
import { configFromEnv } from "../../server/config.ts"
import { startServer } from "../../server/index.ts"
import { heldQuotaDecisions } from "./faults.ts"

const holdMs = Number(process.env.FAULT_QUOTA_HOLD_MS ?? 0)
const server = await startServer({ ...configFromEnv(), substitute: holdMs > 0 ? heldQuotaDecisions(holdMs) : Layer.empty })
process.on("SIGTERM", () => void server.close().then(() => process.exit(0)))
