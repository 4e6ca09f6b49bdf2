/** The store conformance suite on the SQLite backend (a fresh file). */
import { SqliteStores } from "../../server/store/sqlite/index.ts"
import { tempDatabasePath } from "../support/server.ts"
import { describeStores } from "./stores.suite.ts"

describeStores("SQLite", async () => {
  const database = tempDatabasePath("slipway-store-suite")
  return { layer: SqliteStores({ path: database.path }), teardown: async () => database.remove() }
})
