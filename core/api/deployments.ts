/**
 * Endpoints of the deployment control plane (design.md section 7): deployments, revisions,
 * listeners, the git-host integration and the tracing projects created with deployments.
 * Errors use string `detail` bodies, except 422 (the FastAPI list).
 */
import { Schema, SchemaTransformation } from "effect"
import {
  deploymentBodyOut,
  GithubIntegration,
  GithubRepository,
  listenerBodyOut
} from "../deployments/realApi.ts"
import {
  CommaSeparated,
  CreateDeployment,
  CreateListener,
  CreateRevision,
  Deployment,
  DeploymentList,
  DeploymentType,
  IntegrationInstall,
  Listener,
  ListenerList,
  PatchDeployment,
  PatchListener,
  PushEvent,
  Revision,
  RevisionList,
  TracingProject
} from "../deployments/model.ts"
import { DeploymentStatus, RevisionStatus } from "../deployments/revision.ts"
import { controlPage, doc, pageQueryFields, Timestamp, Uuid } from "./common.ts"
import { endpoint } from "./endpoint.ts"
import { rule } from "./validation.ts"

const control = { area: "control" } as const

/** Offered by the real LangSmith control plane too, with the same wire shapes (docs/real-api.md). */
const langsmith = { langsmith: {} } as const
const createDeploymentOut = { langsmith: { body: (body: unknown, dialect: "slipway" | "langsmith") => deploymentBodyOut(body, dialect, true) } }
const patchDeploymentOut = { langsmith: { body: (body: unknown, dialect: "slipway" | "langsmith") => deploymentBodyOut(body, dialect, false) } }

/** A FastAPI boolean query value: true/false, 1/0, yes/no, on/off (any case). */
const BoolFromQuery = Schema.String.check(
  rule((s: string) => /^(true|false|1|0|yes|no|on|off)$/i.test(s.trim()), "Input should be a valid boolean, unable to interpret input", "bool_parsing")
).pipe(
  Schema.decodeTo(
    Schema.Boolean,
    SchemaTransformation.transform({ decode: (s: string) => /^(true|1|yes|on)$/i.test(s.trim()), encode: (b: boolean) => String(b) })
  )
)

/** `?deployment_ids=a&deployment_ids=b` (the real API's list parameter) or `?deployment_ids=a,b`: 1–100 uuids. */
const DeploymentIdList = Schema.Union([Schema.String, Schema.Array(Schema.String)]).pipe(
  Schema.decodeTo(
    Schema.Array(Uuid).check(
      rule((ids: ReadonlyArray<string>) => ids.length >= 1, "List should have at least 1 item", "too_short"),
      rule((ids: ReadonlyArray<string>) => ids.length <= 100, "List should have at most 100 items", "too_long")
    ),
    SchemaTransformation.transform<ReadonlyArray<string>, string | ReadonlyArray<string>>({
      decode: (value) =>
        (typeof value === "string" ? [value] : value).flatMap((item) => item.split(",").map((part) => part.trim()).filter((part) => part.length > 0)),
      encode: (ids) => ids
    })
  )
)

const DeleteTracingProject = doc(BoolFromQuery, "Delete the deployment's tracing project too (default false)", [false])

const DeploymentParams = Schema.Struct({ deployment_id: Uuid })
const RevisionParams = Schema.Struct({ deployment_id: Uuid, revision_id: Uuid })
const ListenerParams = Schema.Struct({ listener_id: Uuid })

const ListDeploymentsQuery = Schema.Struct({
  name_contains: Schema.optionalKey(doc(Schema.String, "Only deployments whose name contains this text", ["agent"])),
  status: Schema.optionalKey(doc(DeploymentStatus, "Only deployments in this status")),
  image_version: Schema.optionalKey(doc(Schema.String, "Only deployments with this image_version", ["1.0.0"])),
  deployment_type: Schema.optionalKey(doc(DeploymentType, "Only deployments of this type")),
  /** Comma-separated deployment ids. */
  deployment_ids: Schema.optionalKey(doc(CommaSeparated(Uuid), "Only these deployments (comma-separated ids)")),
  ...pageQueryFields(controlPage)
})

const ListRevisionsQuery = Schema.Struct({
  /** Comma-separated revision statuses, e.g. `DEPLOYED,DEPLOY_FAILED`. */
  status: Schema.optionalKey(doc(CommaSeparated(RevisionStatus), "Only revisions in these statuses (comma-separated)")),
  ...pageQueryFields(controlPage)
})

const ListSessionsQuery = Schema.Struct({
  name: Schema.optionalKey(doc(Schema.String, "Only the tracing project of this name", ["my-agent"])),
  ...pageQueryFields(controlPage)
})

/** `POST …/push-token` (internal_docker): what `langgraph deploy` logs in and pushes with (docs/registry.md). */
export const PushToken = Schema.Struct({
  token: doc(Schema.String, "The password of user oauth2accesstoken for the registry (docker login); push and pull on registry_url and below only", ["eyJ0IjoiMDAw..."]),
  registry_url: doc(Schema.String, "host[:port]/path of the deployment's repository: push <registry_url>/<name>:<tag>, then PATCH the pushed digest as image_uri", [
    "registry.example.com/00000000-0000-4000-8000-000000000001/6f1c2a3e-8b0d-4c5e-9f7a-1b2c3d4e5f60"
  ]),
  expires_at: doc(Timestamp, "When the token stops working")
}).annotate({ identifier: "PushToken" })

/** `POST …/upload-url` (internal_source): where `langgraph deploy --remote` PUTs its source tarball (docs/registry.md). */
export const UploadUrl = Schema.Struct({
  upload_url: doc(Schema.String, "A signed, short-lived URL for one PUT of the tarball (Content-Type: application/gzip); no API key", ["https://slipway.example.com/v2/source-uploads/eyJ0Ijoi..."]),
  object_path: doc(Schema.String, "What to PATCH as source_revision_config.source_tarball_path once the upload is done", [
    "uploads/00000000-0000-4000-8000-000000000001/6f1c2a3e-8b0d-4c5e-9f7a-1b2c3d4e5f60/0b5f9a7e-3c1d-4e2f-8a9b-7c6d5e4f3a2b.tar.gz"
  ])
}).annotate({ identifier: "UploadUrl" })

export const deploymentEndpoints = {
  createDeployment: endpoint({
    ...control,
    name: "createDeployment",
    method: "POST",
    path: "/v2/deployments",
    tag: "deployments",
    summary: "Create a deployment, its first revision and its tracing project",
    description:
      "Create a deployment, its first revision and its tracing project (named after the deployment). The revision then advances " +
      "on its own: poll getRevision with the answer's latest_revision_id until DEPLOYED. An internal_docker or internal_source " +
      "deployment (langgraph deploy) is created without a revision (latest_revision_id null): its first PATCH with an image or a " +
      "tarball creates it. Secret values are stored encrypted and answered masked. A name the tenant already uses is a 409",
    status: 201,
    body: CreateDeployment,
    success: Deployment,
    errors: [400, 409, 422],
    ...createDeploymentOut
  }),
  listDeployments: endpoint({
    ...control,
    name: "listDeployments",
    method: "GET",
    path: "/v2/deployments",
    tag: "deployments",
    summary: "List deployments, filtered and paginated",
    query: ListDeploymentsQuery,
    success: DeploymentList,
    errors: [422],
    ...langsmith
  }),
  getDeployment: endpoint({
    ...control,
    name: "getDeployment",
    method: "GET",
    path: "/v2/deployments/{deployment_id}",
    tag: "deployments",
    summary: "Get a deployment",
    params: DeploymentParams,
    success: Deployment,
    errors: [404, 422],
    ...langsmith
  }),
  updateDeployment: endpoint({
    ...control,
    name: "updateDeployment",
    method: "PATCH",
    path: "/v2/deployments/{deployment_id}",
    tag: "deployments",
    summary: "Update a deployment; revision fields, secrets or a resource_spec create one new revision",
    params: DeploymentParams,
    body: PatchDeployment,
    success: Deployment,
    errors: [400, 404, 422],
    ...patchDeploymentOut
  }),
  deleteDeployment: endpoint({
    ...control,
    name: "deleteDeployment",
    method: "DELETE",
    path: "/v2/deployments/{deployment_id}",
    tag: "deployments",
    summary: "Delete a deployment (status AWAITING_DELETE until it is gone); delete_tracing_project=true deletes its tracing project too",
    status: 204,
    params: DeploymentParams,
    query: Schema.Struct({ delete_tracing_project: Schema.optionalKey(DeleteTracingProject) }),
    errors: [404, 422],
    ...langsmith
  }),
  deleteDeployments: endpoint({
    ...control,
    name: "deleteDeployments",
    method: "DELETE",
    path: "/v2/deployments",
    tag: "deployments",
    summary: "Delete up to 100 deployments at once (all or none: 404 names the ids not found)",
    query: Schema.Struct({
      deployment_ids: doc(DeploymentIdList, "The deployments to delete: 1-100 ids, repeated (?deployment_ids=a&deployment_ids=b) or comma-separated"),
      delete_tracing_project: Schema.optionalKey(DeleteTracingProject)
    }),
    queryArrays: ["deployment_ids"],
    // Slipway answers the ids it deleted; the real API documents no shape (any JSON).
    success: Schema.Struct({ deleted: Schema.optionalKey(Schema.Array(Uuid)) }),
    errors: [404, 422],
    ...langsmith
  }),
  createPushToken: endpoint({
    ...control,
    name: "createPushToken",
    method: "POST",
    path: "/v2/deployments/{deployment_id}/push-token",
    tag: "deployments",
    summary: "Credentials to push an image for an internal_docker deployment to the server's registry (langgraph deploy)",
    description:
      "Answers a token (the password of user oauth2accesstoken) and the deployment's registry_url: push <registry_url>/<name>:<tag> " +
      "with them, then PATCH the deployment with revision_source internal_docker and the pushed digest reference as " +
      "source_revision_config.image_uri. Only for internal_docker deployments (400 otherwise); 503 when the server runs no registry",
    params: DeploymentParams,
    success: PushToken,
    errors: [400, 404, 409, 422, 503]
  }),
  createUploadUrl: endpoint({
    ...control,
    name: "createUploadUrl",
    method: "POST",
    path: "/v2/deployments/{deployment_id}/upload-url",
    tag: "deployments",
    summary: "A signed URL to upload a source tarball for an internal_source deployment (langgraph deploy --remote)",
    description:
      "Answers upload_url (one PUT of a tar.gz, Content-Type: application/gzip, no API key, short-lived) and object_path: once " +
      "uploaded, PATCH the deployment with revision_source internal_source, source_revision_config.source_tarball_path = object_path " +
      "and langgraph_config_path (the path of langgraph.json inside the tarball). Only for internal_source deployments (400 otherwise)",
    params: DeploymentParams,
    success: UploadUrl,
    errors: [400, 404, 409, 422]
  }),
  listRevisions: endpoint({
    ...control,
    name: "listRevisions",
    method: "GET",
    path: "/v2/deployments/{deployment_id}/revisions",
    tag: "revisions",
    summary: "List a deployment's revisions, newest first",
    params: DeploymentParams,
    query: ListRevisionsQuery,
    success: RevisionList,
    errors: [404, 422],
    ...langsmith
  }),
  createRevision: endpoint({
    ...control,
    name: "createRevision",
    method: "POST",
    path: "/v2/deployments/{deployment_id}/revisions",
    tag: "revisions",
    summary: "Create a revision from the latest one's configuration plus the given values",
    status: 201,
    params: DeploymentParams,
    body: CreateRevision,
    success: Revision,
    // Slipway only (no `langsmith`): the real API creates revisions through PATCH.
    errors: [400, 404, 422]
  }),
  getRevision: endpoint({
    ...control,
    name: "getRevision",
    method: "GET",
    path: "/v2/deployments/{deployment_id}/revisions/{revision_id}",
    tag: "revisions",
    summary: "Get a revision (poll its status until DEPLOYED)",
    params: RevisionParams,
    success: Revision,
    errors: [404, 422],
    ...langsmith
  }),
  redeployRevision: endpoint({
    ...control,
    name: "redeployRevision",
    method: "POST",
    path: "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy",
    tag: "revisions",
    summary: "Make a previously deployed revision the active one",
    description:
      "Make a previously deployed revision the active one. Answers once the deployment's URL serves it (at once on a runtime that " +
      "serves nothing); 400 when it cannot be served again (the revision that served before stays active), 503 when it is still " +
      "starting after about 25 s (send the redeploy again to go on waiting; the previous revision serves meanwhile)",
    params: RevisionParams,
    success: Deployment,
    errors: [400, 404, 422, 503],
    ...langsmith
  }),
  listListeners: endpoint({
    ...control,
    name: "listListeners",
    method: "GET",
    path: "/v2/listeners",
    tag: "listeners",
    summary: "List listeners",
    query: Schema.Struct(pageQueryFields(controlPage)),
    success: ListenerList,
    errors: [422],
    ...langsmith
  }),
  createListener: endpoint({
    ...control,
    name: "createListener",
    method: "POST",
    path: "/v2/listeners",
    tag: "listeners",
    summary: "Register a listener and the cluster namespaces it serves",
    status: 201,
    body: CreateListener,
    success: Listener,
    errors: [409, 422],
    langsmith: { body: (body: unknown, dialect: "slipway" | "langsmith") => listenerBodyOut(body, dialect, true) }
  }),
  getListener: endpoint({
    ...control,
    name: "getListener",
    method: "GET",
    path: "/v2/listeners/{listener_id}",
    tag: "listeners",
    summary: "Get a listener",
    params: ListenerParams,
    success: Listener,
    errors: [404, 422],
    ...langsmith
  }),
  updateListener: endpoint({
    ...control,
    name: "updateListener",
    method: "PATCH",
    path: "/v2/listeners/{listener_id}",
    tag: "listeners",
    summary: "Update a listener's namespaces",
    params: ListenerParams,
    body: PatchListener,
    success: Listener,
    errors: [404, 409, 422],
    langsmith: { body: (body: unknown, dialect: "slipway" | "langsmith") => listenerBodyOut(body, dialect, false) }
  }),
  deleteListener: endpoint({
    ...control,
    name: "deleteListener",
    method: "DELETE",
    path: "/v2/listeners/{listener_id}",
    tag: "listeners",
    summary: "Delete a listener no deployment uses",
    status: 204,
    params: ListenerParams,
    errors: [404, 409, 422],
    ...langsmith
  }),
  getGitIntegrations: endpoint({
    ...control,
    name: "getGitIntegrations",
    method: "GET",
    path: "/v1/integrations/gitrepo/install",
    tag: "integrations",
    summary: "The tenant's git-host integrations (their ids are source_config.integration_id) and the URL to install another",
    success: IntegrationInstall
  }),
  listGithubIntegrations: endpoint({
    ...control,
    name: "listGithubIntegrations",
    method: "GET",
    path: "/v1/integrations/github/install",
    tag: "integrations",
    summary: "The tenant's GitHub integrations as the real API lists them: their ids are source_config.integration_id",
    success: Schema.Array(GithubIntegration),
    ...langsmith
  }),
  listGithubRepositories: endpoint({
    ...control,
    name: "listGithubRepositories",
    method: "GET",
    path: "/v1/integrations/github/{integration_id}/repos",
    tag: "integrations",
    summary: "The repositories the tenant's deployments use through this integration (Slipway has no GitHub App to ask)",
    params: Schema.Struct({ integration_id: Uuid }),
    success: Schema.Array(GithubRepository),
    errors: [404, 422],
    ...langsmith
  }),
  gitPushWebhook: endpoint({
    ...control,
    name: "gitPushWebhook",
    method: "POST",
    path: "/v1/integrations/gitrepo/webhook",
    tag: "integrations",
    summary: "GitHub push events (signed with X-Hub-Signature-256): build deployments with build_on_push on the pushed ref",
    status: 202,
    // Authenticated by the integration's webhook signature, not by an API key.
    auth: false,
    // A `ping` (sent when the webhook is added) has none of a push's keys, so any JSON object is
    // accepted here; the server decodes PushEvent once the signature and X-GitHub-Event are checked.
    body: Schema.Union([PushEvent, Schema.Record(Schema.String, Schema.Unknown)]),
    /** The revisions the push created (empty for a ping or a push that matches no deployment). */
    success: Schema.Struct({ revision_ids: Schema.Array(Uuid) }),
    // 409: a delivery id already received (a redelivery or a replay).
    errors: [401, 409, 422]
  }),
  listTracingProjects: endpoint({
    ...control,
    name: "listTracingProjects",
    method: "GET",
    path: "/v1/sessions",
    tag: "tracing",
    summary: "Tracing projects (sessions), one per deployment under its name; filter with ?name=",
    query: ListSessionsQuery,
    // A plain array, as tracing clients that call /sessions expect.
    success: Schema.Array(TracingProject),
    errors: [422]
  })
} as const
