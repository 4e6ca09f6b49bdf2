/**
 * The sandbox area's access endpoints (issue 15): private image registries, service URLs and
 * download URLs, under /v2/sandboxes with the paths and shapes of the npm `langsmith@0.12.0`
 * client. The links these mint are served outside the API table (docs/sandboxes.md, "Service
 * and download URLs"): they carry their own token instead of an API key.
 */
import {
  CreateDownloadUrl,
  CreateRegistry,
  CreateServiceUrl,
  DeleteServiceUrlQuery,
  DownloadUrl,
  PatchRegistry,
  Registry,
  RegistryList,
  RegistryListQuery,
  RegistryNameParams,
  ServiceUrl,
  ServiceUrlList,
  ServiceUrlListQuery
} from "../sandboxes/access.ts"
import { NameParams } from "../sandboxes/model.ts"
import { endpoint } from "./endpoint.ts"

const area = "sandbox"
const base = "/v2/sandboxes"

export const sandboxAccessEndpoints = {
  createRegistry: endpoint({
    name: "createRegistry",
    method: "POST",
    path: `${base}/registries`,
    area,
    tag: "registries",
    summary: "Store credentials for a private image registry (encrypted at rest, never answered)",
    description:
      "Images of templates whose registry host (and repository prefix) matches `url` are pulled with these credentials. `auth_type` `AWS_ROLE` is refused (400): Slipway pulls with a username and password.",
    status: 201,
    body: CreateRegistry,
    success: Registry,
    errors: [400, 409]
  }),
  listRegistries: endpoint({
    name: "listRegistries",
    method: "GET",
    path: `${base}/registries`,
    area,
    tag: "registries",
    summary: "List registries, newest first (page_size/cursor, or the legacy limit/offset)",
    query: RegistryListQuery,
    success: RegistryList,
    errors: [400]
  }),
  getRegistry: endpoint({
    name: "getRegistry",
    method: "GET",
    path: `${base}/registries/{name}`,
    area,
    tag: "registries",
    summary: "Get a registry by name (without its credentials)",
    params: RegistryNameParams,
    success: Registry,
    errors: [404]
  }),
  updateRegistry: endpoint({
    name: "updateRegistry",
    method: "PATCH",
    path: `${base}/registries/{name}`,
    area,
    tag: "registries",
    summary: "Rename a registry, change its URL or replace its credentials",
    params: RegistryNameParams,
    body: PatchRegistry,
    success: Registry,
    errors: [400, 404, 409]
  }),
  deleteRegistry: endpoint({
    name: "deleteRegistry",
    method: "DELETE",
    path: `${base}/registries/{name}`,
    area,
    tag: "registries",
    summary: "Delete a registry and its credentials",
    status: 204,
    params: RegistryNameParams,
    errors: [404]
  }),

  createServiceUrl: endpoint({
    name: "createServiceUrl",
    method: "POST",
    path: `${base}/boxes/{name}/service-url`,
    area,
    tag: "sandboxes",
    summary: "Mint a short-lived URL that reaches an HTTP service on a port inside the sandbox",
    description:
      "Requests to `service_url` carry the header `X-Langsmith-Sandbox-Service-Token: <token>`; `browser_url` sets a cookie and redirects there. The token is signed, expires (`expires_in_seconds`, 1..86400, default 600) and reaches only this sandbox and port.",
    params: NameParams,
    body: CreateServiceUrl,
    success: ServiceUrl,
    errors: [400, 404]
  }),
  listServiceUrls: endpoint({
    name: "listServiceUrls",
    method: "GET",
    path: `${base}/boxes/{name}/service-urls`,
    area,
    tag: "sandboxes",
    summary: "The ports of the sandbox shared by a service URL that has not expired",
    params: NameParams,
    query: ServiceUrlListQuery,
    success: ServiceUrlList,
    errors: [404]
  }),
  deleteServiceUrls: endpoint({
    name: "deleteServiceUrls",
    method: "DELETE",
    path: `${base}/boxes/{name}/service-urls`,
    area,
    tag: "sandboxes",
    summary: "Stop sharing one port (`port`) or every port: the tokens minted for it stop working at once",
    status: 204,
    params: NameParams,
    query: DeleteServiceUrlQuery,
    errors: [404]
  }),
  createDownloadUrl: endpoint({
    name: "createDownloadUrl",
    method: "POST",
    path: `${base}/boxes/{name}/download-url`,
    area,
    tag: "sandboxes",
    summary: "Mint a link that downloads one file of the sandbox without an API key",
    description:
      "The link is pinned to the sandbox and the path, honours Range like the dataplane's /download, wakes a stopped sandbox, and expires after `expires_in_seconds` (never when omitted, as the real API).",
    params: NameParams,
    body: CreateDownloadUrl,
    success: DownloadUrl,
    errors: [400, 404]
  })
} as const
