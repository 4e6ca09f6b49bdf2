/** The store conformance suite on the PostgreSQL backend (a real server started for this file). */
import { PostgresStores } from "../../server/store/postgres/index.ts"
import { startPostgres } from "../support/postgres.ts"
import { describeStores } from "./stores.suite.ts"

describeStores("PostgreSQL", async () => {
  const server = await startPostgres()
  return { layer: PostgresStores({ url: await server.createDatabase() }), teardown: () => server.stop() }
})
