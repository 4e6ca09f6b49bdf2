/** The store conformance suites against the SQLite backend, on a real file. */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { SqliteStores } from "../../server/store/sqlite/index.ts"
import { deploymentStoreSuite } from "./deploymentStore.suite.ts"
import { keyStoreSuite } from "./keyStore.suite.ts"
import { sandboxStoreSuite } from "./sandboxStore.suite.ts"

const dir = mkdtempSync(join(tmpdir(), "slipway-store-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const sqlite = (name: string) => SqliteStores({ path: join(dir, `${name}.db`) })

deploymentStoreSuite("sqlite", sqlite("deployments"))
sandboxStoreSuite("sqlite", sqlite("sandboxes"))
keyStoreSuite("sqlite", sqlite("keys"))
