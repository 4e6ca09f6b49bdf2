/**
 * The sandbox area's access features as a server area of their own (issue 15): registries,
 * service URLs and download URLs. Built on the sandbox module's runtime (its controller and
 * dataplane, in the same server context); adds no Layer.
 */
import { Effect } from "effect"
import { accessRoutes } from "../routes/access.ts"
import { registryRoutes } from "../routes/registries.ts"
import { accessHttp } from "./http.ts"
import { makeAccessContext } from "./context.ts"

export const sandboxAccessModule = {
  name: "sandbox-access",
  routes: Effect.map(makeAccessContext, (context) => [...registryRoutes(context), ...accessRoutes(context)]),
  http: accessHttp
}
