/**
 * Endpoints of the sandbox area under /v2/sandboxes (design.md section 7): templates, volumes,
 * pools and sandboxes ("boxes" in paths). Items are addressed by name within the tenant.
 *
 * Error statuses: 404 `NotFound` for an unknown name; 409 `Conflict` when a name is taken on
 * create or rename, `ResourceInUse` when deleting a used template or mounted volume; 400
 * `TemplateNotFound` / `ValidationError` for references across resources and `ResizeError`
 * for a shrink; 429 when storage would pass the organization's quota. 401/403/422 are added
 * by the OpenAPI generator from `auth` and the presence of params, query or body.
 */
import { Schema } from "effect"
import {
  BoxStatus,
  CreateBox,
  CreatePool,
  CreateTemplate,
  CreateVolume,
  NameParams,
  PatchBox,
  PatchPool,
  PatchTemplate,
  PatchVolume,
  Pool,
  PoolList,
  Sandbox,
  SandboxList,
  Template,
  TemplateList,
  Volume,
  VolumeList
} from "../sandboxes/model.ts"
import { BoxLifecycle } from "../sandboxes/lifecycle.ts"
import { pageQueryFields, sandboxPage } from "./common.ts"
import { rule } from "./validation.ts"
import { endpoint } from "./endpoint.ts"

const area = "sandbox"
const tag = "sandboxes"
const base = "/v2/sandboxes"

const ListQuery = Schema.Struct(pageQueryFields(sandboxPage))

/** The real API's box list filters (the current model): a case-insensitive name substring and a status. */
const ListBoxesQuery = Schema.Struct({
  name_contains: Schema.optionalKey(Schema.String.check(rule((text: string) => text.length <= 63, "must be at most 63 characters", "string_too_long"))),
  status: Schema.optionalKey(BoxLifecycle),
  ...pageQueryFields(sandboxPage)
})

export const sandboxEndpoints = {
  // Templates
  createTemplate: endpoint({
    name: "createTemplate",
    method: "POST",
    path: `${base}/templates`,
    area,
    tag,
    summary: "Create a sandbox template (400 when a mounted volume does not exist)",
    status: 201,
    body: CreateTemplate,
    success: Template,
    errors: [400, 409]
  }),
  listTemplates: endpoint({
    name: "listTemplates",
    method: "GET",
    path: `${base}/templates`,
    area,
    tag,
    summary: "List templates; pass the returned offset to get the next page",
    query: ListQuery,
    success: TemplateList
  }),
  getTemplate: endpoint({
    name: "getTemplate",
    method: "GET",
    path: `${base}/templates/{name}`,
    area,
    tag,
    summary: "Get a template by name",
    params: NameParams,
    success: Template,
    errors: [404]
  }),
  updateTemplate: endpoint({
    name: "updateTemplate",
    method: "PATCH",
    path: `${base}/templates/{name}`,
    area,
    tag,
    summary: "Rename a template",
    params: NameParams,
    body: PatchTemplate,
    success: Template,
    errors: [404, 409]
  }),
  deleteTemplate: endpoint({
    name: "deleteTemplate",
    method: "DELETE",
    path: `${base}/templates/{name}`,
    area,
    tag,
    summary: "Delete a template; refused (409 ResourceInUse) while a sandbox or pool uses it",
    status: 204,
    params: NameParams,
    errors: [404, 409]
  }),

  // Volumes
  createVolume: endpoint({
    name: "createVolume",
    method: "POST",
    path: `${base}/volumes`,
    area,
    tag,
    summary: "Create a volume within the organization's storage quota",
    status: 201,
    body: CreateVolume,
    success: Volume,
    errors: [409, 429]
  }),
  listVolumes: endpoint({
    name: "listVolumes",
    method: "GET",
    path: `${base}/volumes`,
    area,
    tag,
    summary: "List volumes; pass the returned offset to get the next page",
    query: ListQuery,
    success: VolumeList
  }),
  getVolume: endpoint({
    name: "getVolume",
    method: "GET",
    path: `${base}/volumes/{name}`,
    area,
    tag,
    summary: "Get a volume by name",
    params: NameParams,
    success: Volume,
    errors: [404]
  }),
  updateVolume: endpoint({
    name: "updateVolume",
    method: "PATCH",
    path: `${base}/volumes/{name}`,
    area,
    tag,
    summary: "Rename a volume or grow it (never shrink; growth within the storage quota)",
    params: NameParams,
    body: PatchVolume,
    success: Volume,
    errors: [400, 404, 409, 429]
  }),
  deleteVolume: endpoint({
    name: "deleteVolume",
    method: "DELETE",
    path: `${base}/volumes/{name}`,
    area,
    tag,
    summary: "Delete a volume; refused (409 ResourceInUse) while a template mounts it",
    status: 204,
    params: NameParams,
    errors: [404, 409]
  }),

  // Pools
  createPool: endpoint({
    name: "createPool",
    method: "POST",
    path: `${base}/pools`,
    area,
    tag,
    summary: "Create a pool and its sandboxes from a template that mounts no volumes",
    status: 201,
    body: CreatePool,
    success: Pool,
    errors: [400, 409]
  }),
  listPools: endpoint({
    name: "listPools",
    method: "GET",
    path: `${base}/pools`,
    area,
    tag,
    summary: "List pools; pass the returned offset to get the next page",
    query: ListQuery,
    success: PoolList
  }),
  getPool: endpoint({
    name: "getPool",
    method: "GET",
    path: `${base}/pools/{name}`,
    area,
    tag,
    summary: "Get a pool by name",
    params: NameParams,
    success: Pool,
    errors: [404]
  }),
  updatePool: endpoint({
    name: "updatePool",
    method: "PATCH",
    path: `${base}/pools/{name}`,
    area,
    tag,
    summary: "Rename a pool or change its replicas (its sandboxes are created or removed, newest first)",
    params: NameParams,
    body: PatchPool,
    success: Pool,
    errors: [404, 409]
  }),
  deletePool: endpoint({
    name: "deletePool",
    method: "DELETE",
    path: `${base}/pools/{name}`,
    area,
    tag,
    summary: "Delete a pool and terminate all its sandboxes",
    status: 204,
    params: NameParams,
    errors: [404]
  }),

  // Sandboxes
  createBox: endpoint({
    name: "createBox",
    method: "POST",
    path: `${base}/boxes`,
    area,
    tag,
    summary: "Create a sandbox from a template (name generated when absent)",
    description:
      "Create a sandbox from a template; without a name one is generated from the template's. With wait_for_ready the answer " +
      "comes once the sandbox is ready (201), failed (422 whose error is ImagePull, CrashLoop or SandboxConfig and whose message " +
      "says why) or still starting after timeout seconds (408; it goes on starting), otherwise at once. A name held by a sandbox " +
      "that failed is taken over: that sandbox is deleted. Its dataplane_url runs commands " +
      "and moves files (null when the server's runtime cannot execute)",
    status: 201,
    body: CreateBox,
    success: Sandbox,
    errors: [400, 408, 409, 422]
  }),
  listBoxes: endpoint({
    name: "listBoxes",
    method: "GET",
    path: `${base}/boxes`,
    area,
    tag,
    summary: "List sandboxes; pass the returned offset to get the next page; name_contains and status filter",
    query: ListBoxesQuery,
    success: SandboxList
  }),
  getBox: endpoint({
    name: "getBox",
    method: "GET",
    path: `${base}/boxes/{name}`,
    area,
    tag,
    summary: "Get a sandbox by name",
    params: NameParams,
    success: Sandbox,
    errors: [404]
  }),
  updateBox: endpoint({
    name: "updateBox",
    method: "PATCH",
    path: `${base}/boxes/{name}`,
    area,
    tag,
    summary: "Rename a sandbox (only the display name can be updated)",
    params: NameParams,
    body: PatchBox,
    success: Sandbox,
    errors: [404, 409]
  }),
  deleteBox: endpoint({
    name: "deleteBox",
    method: "DELETE",
    path: `${base}/boxes/{name}`,
    area,
    tag,
    summary: "Delete a sandbox",
    status: 204,
    params: NameParams,
    errors: [404]
  }),
  getBoxStatus: endpoint({
    name: "getBoxStatus",
    method: "GET",
    path: `${base}/boxes/{name}/status`,
    area,
    tag,
    summary: "Provisioning status of a sandbox",
    params: NameParams,
    success: BoxStatus,
    errors: [404]
  }),
  startBox: endpoint({
    name: "startBox",
    method: "POST",
    path: `${base}/boxes/{name}/start`,
    area,
    tag,
    summary: "Start a stopped or failed sandbox",
    description: "Brings the sandbox's processes up again with the files it had; answers the sandbox (status `provisioning` until it is ready).",
    params: NameParams,
    success: Sandbox,
    errors: [404]
  }),
  stopBox: endpoint({
    name: "stopBox",
    method: "POST",
    path: `${base}/boxes/{name}/stop`,
    area,
    tag,
    summary: "Stop a sandbox",
    description: "Ends the sandbox's processes and keeps its files for a later start; answers the sandbox (status `stopped`).",
    params: NameParams,
    success: Sandbox,
    errors: [404]
  })
} as const
