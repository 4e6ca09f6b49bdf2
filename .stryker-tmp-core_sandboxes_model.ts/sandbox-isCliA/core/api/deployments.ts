/**
 * Endpoints of the deployment control plane (design.md section 7): deployments, revisions,
 * listeners, the git-host integration and the tracing projects created with deployments.
 * Errors use string `detail` bodies, except 422 (the FastAPI list).
 */
// @ts-nocheck

import { Schema } from "effect"
import {
  CommaSeparated,
  CreateDeployment,
  CreateListener,
  CreateRevision,
  Deployment,
  DeploymentList,
  DeploymentStatus,
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
import { RevisionStatus } from "../deployments/revision.ts"
import { controlPage, pageQueryFields, Uuid } from "./common.ts"
import { endpoint } from "./endpoint.ts"

const control = { area: "control" } as const

const DeploymentParams = Schema.Struct({ deployment_id: Uuid })
const RevisionParams = Schema.Struct({ deployment_id: Uuid, revision_id: Uuid })
const ListenerParams = Schema.Struct({ listener_id: Uuid })

const ListDeploymentsQuery = Schema.Struct({
  name_contains: Schema.optionalKey(Schema.String),
  status: Schema.optionalKey(DeploymentStatus),
  image_version: Schema.optionalKey(Schema.String),
  deployment_type: Schema.optionalKey(DeploymentType),
  /** Comma-separated deployment ids. */
  deployment_ids: Schema.optionalKey(CommaSeparated(Uuid)),
  ...pageQueryFields(controlPage)
})

const ListRevisionsQuery = Schema.Struct({
  /** Comma-separated revision statuses, e.g. `DEPLOYED,DEPLOY_FAILED`. */
  status: Schema.optionalKey(CommaSeparated(RevisionStatus)),
  ...pageQueryFields(controlPage)
})

const ListSessionsQuery = Schema.Struct({
  name: Schema.optionalKey(Schema.String),
  ...pageQueryFields(controlPage)
})

export const deploymentEndpoints = {
  createDeployment: endpoint({
    ...control,
    name: "createDeployment",
    method: "POST",
    path: "/v2/deployments",
    tag: "deployments",
    summary: "Create a deployment, its first revision and its tracing project",
    status: 201,
    body: CreateDeployment,
    success: Deployment,
    errors: [409, 422]
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
    errors: [422]
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
    errors: [404, 422]
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
    errors: [404, 422]
  }),
  deleteDeployment: endpoint({
    ...control,
    name: "deleteDeployment",
    method: "DELETE",
    path: "/v2/deployments/{deployment_id}",
    tag: "deployments",
    summary: "Delete a deployment (status AWAITING_DELETE until it is gone)",
    status: 204,
    params: DeploymentParams,
    errors: [404, 422]
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
    errors: [404, 422]
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
    errors: [404, 422]
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
    errors: [404, 422]
  }),
  redeployRevision: endpoint({
    ...control,
    name: "redeployRevision",
    method: "POST",
    path: "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy",
    tag: "revisions",
    summary: "Make a previously deployed revision the active one",
    params: RevisionParams,
    success: Deployment,
    errors: [400, 404, 422]
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
    errors: [422]
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
    errors: [422]
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
    errors: [404, 422]
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
    errors: [404, 409, 422]
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
    errors: [404, 409, 422]
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
    errors: [401, 422]
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
