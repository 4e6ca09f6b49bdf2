/** The sandbox area (/v2/sandboxes): templates, volumes, pools and sandboxes. */
// @ts-nocheck

import type { ServerModule } from "../module.ts"
import { sandboxMigrations } from "./migrations.ts"
import { sandboxRoutes } from "./routes.ts"

export const sandboxModule: ServerModule = {
  name: "sandboxes",
  migrations: sandboxMigrations,
  routes: sandboxRoutes
}
