/**
 * The real LangSmith control plane's rules Slipway follows beyond the schemas (a PATCH's
 * `revision_source`), and the client's translation of Slipway's (spec) names into the real
 * API's. Pure. See docs/real-api.md.
 */
import { Result, Schema } from "effect"
import { doc, Uuid } from "../api/common.ts"
import type { Dialect } from "../api/endpoint.ts"
import { type ApiError, BadRequest, ValidationError } from "../api/errors.ts"
import { Int } from "../api/validation.ts"
import { realSourceNames, type SourceRevisionConfig } from "./model.ts"
import type { Source } from "./revision.ts"

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value)

/**
 * A PATCH's `revision_source` (real API: "override the source for this revision"). Slipway builds
 * every revision of a deployment from the deployment's own source, so only that source (in
 * either name) is accepted.
 */
export const checkRevisionSource = (current: Source, revisionSource: Source | null | undefined): Result.Result<void, BadRequest> =>
  revisionSource == null || revisionSource === current
    ? Result.succeed(undefined)
    : Result.fail(
        new BadRequest({
          message:
            `revision_source '${realSourceNames[revisionSource]}' differs from the deployment's source '${realSourceNames[current]}'${realSourceNames[current] === current ? "" : ` (${current})`}: ` +
            "Slipway builds every revision from the deployment's own source, so a revision cannot switch sources"
        })
      )

// ---------------------------------------------------------------------------------------------
// Outward: the client's bodies in the real API's names


const renameRevisionConfig = (config: unknown): unknown => {
  if (!isObject(config)) return config
  const { graph_config_path, langgraph_config_path, ...rest } = config as SourceRevisionConfig & { langgraph_config_path?: string | null }
  const path = langgraph_config_path ?? graph_config_path
  return path === undefined ? rest : { ...rest, langgraph_config_path: path }
}

const renameSource = (source: unknown): unknown => (typeof source === "string" && source in realSourceNames ? realSourceNames[source as Source] : source)

/** Fields of Slipway's bodies the real API does not have; dropped when talking to it. */
const slipwayOnlyDeploymentFields = ["image_version"] as const

/**
 * A create or PATCH deployment body written with the spec's names, in the real API's names:
 * `source` `gitrepo`→`github`, `external_container`→`external_docker`, `graph_config_path`→
 * `langgraph_config_path`. Slipway accepts these names too, so the client always sends them;
 * toward the real API, Slipway-only fields (`image_version`) are left out, and a create gets the
 * members the real API requires (`source_config`, `source_revision_config`, `secrets`).
 */
export const deploymentBodyOut = (body: unknown, dialect: Dialect, create: boolean): Result.Result<unknown, ApiError> => {
  if (!isObject(body)) return Result.succeed(body)
  const out: Record<string, unknown> = { ...body }
  if ("source" in out) out.source = renameSource(out.source)
  if ("revision_source" in out) out.revision_source = renameSource(out.revision_source)
  // The real API's revision_source has no image value but `internal_docker`; Slipway's means "the
  // deployment's own source", which the real API assumes when it is left out.
  if (dialect === "langsmith" && out.revision_source === "external_docker") delete out.revision_source
  if ("source_revision_config" in out) out.source_revision_config = renameRevisionConfig(out.source_revision_config)
  if (dialect === "langsmith") {
    for (const field of slipwayOnlyDeploymentFields) delete out[field]
    if (create) {
      out.source_config ??= {}
      out.source_revision_config ??= {}
      out.secrets ??= []
    }
  }
  return Result.succeed(out)
}

/**
 * A listener body toward the real API: a create needs `compute_type` and `compute_id` (Slipway
 * defaults both; the real API answers 422 without them, so the client says so before sending),
 * a PATCH cannot carry `compute_type`.
 */
export const listenerBodyOut = (body: unknown, dialect: Dialect, create: boolean): Result.Result<unknown, ApiError> => {
  if (!isObject(body) || dialect !== "langsmith") return Result.succeed(body)
  const out: Record<string, unknown> = { ...body }
  if (!create) {
    delete out.compute_type
    return Result.succeed(out)
  }
  out.compute_type ??= "k8s"
  if (typeof out.compute_id !== "string") {
    return Result.fail(ValidationError.single(["body", "compute_id"], "Field required: the LangSmith API requires compute_id (e.g. the cluster name)", "missing"))
  }
  return Result.succeed(out)
}

// ---------------------------------------------------------------------------------------------
// The real API's GitHub integration endpoints (answers)

/** `GET /v1/integrations/github/install`: one item per integration of the tenant. */
export const GithubIntegration = Schema.Struct({
  id: Uuid,
  /** The real API's GitHub App installation id. Slipway has no GitHub App: a stable number derived from `id`. */
  installation_id: doc(Int, "The GitHub App installation id (Slipway: a stable number derived from id)", [41234567]),
  /** The GitHub account (user or organization). */
  name: doc(Schema.String, "The GitHub account (user or organization)", ["acme"])
}).annotate({ identifier: "GithubIntegration" })
export type GithubIntegration = typeof GithubIntegration.Type

/** `GET /v1/integrations/github/{integration_id}/repos`: a repository the integration can deploy. */
export const GithubRepository = Schema.Struct({
  host_integration_id: Uuid,
  id: doc(Int, "The repository's number", [1]),
  name: doc(Schema.String, "The repository's name", ["agent"]),
  owner: doc(Schema.String, "The repository's owner", ["acme"]),
  url: doc(Schema.String, "The repository's URL", ["https://github.com/acme/agent"]),
  default_branch: doc(Schema.String, "The repository's default branch", ["main"])
}).annotate({ identifier: "GithubRepository" })
export type GithubRepository = typeof GithubRepository.Type

/** A stable positive integer (below 2^48) from a uuid, for the real API's integer ids Slipway does not have. */
export const numericIdOf = (uuid: string): number => Number.parseInt(uuid.replace(/-/g, "").slice(0, 12), 16)
