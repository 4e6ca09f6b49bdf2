/**
 * The store conformance suites (the same as `sqlite.test.ts`) against the PostgreSQL backend, on
 * a real server this file starts (Debian `postgresql`) and removes at the end; each suite on its
 * own empty database.
 */
import { Effect, Layer } from "effect"
import { afterAll } from "vitest"
import { PostgresStores } from "../../server/store/postgres/index.ts"
import { startPostgres } from "../support/postgres.ts"
import { deploymentStoreSuite } from "./deploymentStore.suite.ts"
import { keyStoreSuite } from "./keyStore.suite.ts"
import { sandboxStoreSuite } from "./sandboxStore.suite.ts"

const server = await startPostgres()
afterAll(() => server.stop())
const postgres = (name: string) => Layer.unwrap(Effect.map(Effect.promise(() => server.createDatabase(name)), (url) => PostgresStores({ url })))

deploymentStoreSuite("postgres", postgres("deployments"))
sandboxStoreSuite("postgres", postgres("sandboxes"))
keyStoreSuite("postgres", postgres("keys"))
