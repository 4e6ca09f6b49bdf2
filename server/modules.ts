/** Every area the server serves. A new area adds its module here. */
import type { ServerModule } from "./module.ts"
import { deploymentsModule } from "./deployments/module.ts"
import { metricsModule } from "./metrics.ts"
import { sandboxAccessModule } from "./sandboxes/access/module.ts"
import { sandboxModule } from "./sandboxes/module.ts"
import { systemModule } from "./system/routes.ts"

export const modules: ReadonlyArray<ServerModule> = [systemModule, deploymentsModule, sandboxModule, sandboxAccessModule, metricsModule]
