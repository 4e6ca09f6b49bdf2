/**
 * Rules of the control plane that need more than a body's shape: which fields belong to which
 * source, what each source requires, read-only and immutable fields, the tag/build_on_push rule,
 * what a PATCH changes and whether it creates a revision, push-triggered builds, and which
 * revisions can be redeployed. Pure functions over decoded bodies and stored state; the server
 * does the lookups and the writes.
 *
 * Every rule reports all its problems at once (as FastAPI does), each with the exact `loc` of the
 * field at fault. Issue types:
 * - `missing`: a field the source requires is absent or null;
 * - `value_error`: a field of the other source, a read-only field, the tag/build_on_push rule,
 *   an unknown listener or namespace, a masked secret value for an unknown secret;
 * - `frozen_field` (pydantic's name for assigning a frozen field): an immutable field changed.
 *
 * Null means "not set" everywhere: a null field of the other source is accepted (clients often
 * send whole objects), and a null PATCH field leaves the stored value as it is.
 */
import { Result } from "effect"
import { BadRequest, ValidationError } from "../api/errors.ts"
import { ValidationIssue, type Loc } from "../api/validation.ts"
import {
  secretMask,
  SourceConfig,
  SourceRevisionConfig,
  type CreateDeployment,
  type CreateRevision,
  type Listener,
  type PatchDeployment,
  type PushEvent,
  type Secret,
  type SourceConfigField,
  type SourceRevisionConfigField
} from "./model.ts"
import { everDeployed, type RevisionStatus, type Source } from "./revision.ts"
import { branchOf, repoUrlProblem } from "./sourceFields.ts"

// ---------------------------------------------------------------------------------------------
// Shared vocabulary

/** The deployment as stored: source config and revision config of the latest revision, secrets in clear. */
export interface StoredDeployment {
  readonly name: string
  readonly source: Source
  readonly source_config: SourceConfig
  readonly source_revision_config: SourceRevisionConfig
  readonly secrets: ReadonlyArray<Secret>
  readonly image_version?: string | null | undefined
}

/** The configuration a new revision is created with: complete, not a delta. */
export interface NewRevision {
  readonly source_revision_config: SourceRevisionConfig
  readonly secrets: ReadonlyArray<Secret>
}

/** A validated create request, completed with generated values, ready to store. */
export interface NewDeployment extends NewRevision {
  readonly name: string
  readonly source: Source
  readonly source_config: SourceConfig
  readonly image_version: string | null
  /** False for a source whose first revision comes by PATCH (`awaitsFirstRevision`): `source_revision_config` is then only the defaults it starts from. */
  readonly createsRevision: boolean
}

interface ConfigParts {
  readonly source_config?: SourceConfig | null | undefined
  readonly source_revision_config?: SourceRevisionConfig | null | undefined
}

type Group = keyof ConfigParts
type FieldOf<G extends Group> = G extends "source_config" ? SourceConfigField : SourceRevisionConfigField
type FieldsByGroup = { readonly [G in Group]: ReadonlyArray<FieldOf<G>> }

const bodyLoc = ["body"] as const
const fieldLoc = (group: Group, field: string): Loc => [...bodyLoc, group, field]

const issue = (loc: Loc, msg: string, type = "value_error") => new ValidationIssue({ loc: [...loc], msg, type })

const isSet = <A>(value: A | null | undefined): value is A => value !== null && value !== undefined

const fieldValue = (parts: ConfigParts, group: Group, field: string): unknown =>
  (parts[group] as Record<string, unknown> | null | undefined)?.[field]

/** Equality of JSON values where a null and an absent key mean the same thing. */
export const sameValue = (a: unknown, b: unknown): boolean => {
  if (!isSet(a) || !isSet(b)) return !isSet(a) && !isSet(b)
  if (typeof a !== "object" || typeof b !== "object") return a === b
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const keys = new Set([...Object.keys(a as object), ...Object.keys(b as object)])
  return [...keys].every((key) => sameValue((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]))
}

const toResult = <A>(issues: ReadonlyArray<ValidationIssue>, value: () => A): Result.Result<A, ValidationError> =>
  issues.length > 0 ? Result.fail(new ValidationError({ issues: [...issues] })) : Result.succeed(value())

// ---------------------------------------------------------------------------------------------
// Per-source fields

/**
 * The fields each source can use; a field no source lists (`custom_url`) belongs to every one.
 * install_command and build_command ("JS deployments only") belong to the sources the server
 * builds: whether a deployment is JS is only known once its graph config is read at build time,
 * so they are accepted for every built deployment and ignored by non-JS builds. internal_docker
 * and internal_source take what `langgraph deploy` sends (`deployment_type`; the commands of a
 * remote build), and run on the server's own runtime, not on a listener.
 */
export const sourceFields: Record<Source, FieldsByGroup> = {
  gitrepo: {
    source_config: ["integration_id", "repo_url", "deployment_type", "build_on_push", "install_command", "build_command"],
    source_revision_config: ["repo_ref", "graph_config_path", "repo_commit_sha"]
  },
  external_container: {
    source_config: ["listener_id", "listener_config", "resource_spec"],
    source_revision_config: ["image_uri"]
  },
  internal_docker: {
    source_config: ["deployment_type"],
    source_revision_config: ["image_uri"]
  },
  internal_source: {
    source_config: ["deployment_type", "install_command", "build_command"],
    source_revision_config: ["graph_config_path", "source_tarball_path"]
  }
}

/**
 * What each source's revisions cannot do without: checked on create, and on the merged result
 * whenever a revision is created. internal_docker and internal_source are created without them
 * (`awaitsFirstRevision`): the image or tarball belongs to the deployment, so it comes by PATCH.
 */
export const requiredFields: Record<Source, FieldsByGroup> = {
  gitrepo: { source_config: ["repo_url"], source_revision_config: ["repo_ref", "graph_config_path"] },
  external_container: { source_config: [], source_revision_config: ["image_uri"] },
  internal_docker: { source_config: [], source_revision_config: ["image_uri"] },
  internal_source: { source_config: [], source_revision_config: ["source_tarball_path", "graph_config_path"] }
}

/**
 * Sources whose deployment is created without a revision (`latest_revision_id` null): what it
 * deploys is pushed to its own registry path (internal_docker) or uploaded to its own upload URL
 * (internal_source), which exist only once it does. The first PATCH that brings an image or a
 * tarball creates the first revision.
 */
export const awaitsFirstRevision = (source: Source): boolean => source === "internal_docker" || source === "internal_source"

/** The field that names what such a deployment deploys, and how to get one (refused on create, required by its first revision). */
const ownArtifact: Partial<Record<Source, { readonly field: SourceRevisionConfigField; readonly how: string }>> = {
  internal_docker: { field: "image_uri", how: "push an image with the credentials of POST /v2/deployments/{id}/push-token, then PATCH its digest reference as image_uri" },
  internal_source: {
    field: "source_tarball_path",
    how: "PUT a source tarball to the upload_url of POST /v2/deployments/{id}/upload-url, then PATCH its object_path as source_tarball_path"
  }
}

/** Fields the server sets: `custom_url` is generated except for external_container, `repo_commit_sha` comes from the build or push. */
export const readOnlyFields: Record<Source, FieldsByGroup> = {
  gitrepo: { source_config: ["custom_url"], source_revision_config: ["repo_commit_sha"] },
  external_container: { source_config: [], source_revision_config: [] },
  internal_docker: { source_config: ["custom_url"], source_revision_config: [] },
  internal_source: { source_config: ["custom_url"], source_revision_config: [] }
}

/** Fields fixed at creation (spec 2.2): PATCH may repeat them, never change them. */
export const immutableSourceConfigFields: ReadonlyArray<SourceConfigField> = [
  "integration_id",
  "repo_url",
  "deployment_type",
  "listener_id",
  "listener_config"
]

const groups: ReadonlyArray<Group> = ["source_config", "source_revision_config"]

type FieldList = ReadonlyArray<{ readonly group: Group; readonly field: string }>

// The field tables are constants: flatten each once, not on every request.
const flattened = new WeakMap<FieldsByGroup, FieldList>()

const eachField = (fields: FieldsByGroup): FieldList => {
  let list = flattened.get(fields)
  // Stryker disable next-line ConditionalExpression,BlockStatement: a cache; computing the list every time gives the same list
  if (!list) {
    list = groups.flatMap((group) => fields[group].map((field) => ({ group, field })))
    // Stryker disable next-line CallExpression: a cache; not storing the list only recomputes it
    flattened.set(fields, list)
  }
  return list
}

const allSources = Object.keys(sourceFields) as ReadonlyArray<Source>

/** Every field some source lists, with the sources that list it. */
const ownedFields: ReadonlyArray<{ readonly group: Group; readonly field: string; readonly owners: ReadonlyArray<Source> }> = groups.flatMap((group) =>
  [...new Set(allSources.flatMap((source) => sourceFields[source][group] as ReadonlyArray<string>))].map((field) => ({
    group,
    field,
    owners: allSources.filter((source) => (sourceFields[source][group] as ReadonlyArray<string>).includes(field))
  }))
)

/** Whether a source may not use a field (another source owns it). */
const belongsElsewhere = (source: Source, group: Group, field: string): boolean =>
  ownedFields.some((owned) => owned.group === group && owned.field === field && !owned.owners.includes(source))

const listed = (names: ReadonlyArray<string>): string => (names.length === 1 ? names[0]! : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`)

/** Fields of other sources that were sent with a value. */
export const wrongSourceIssues = (source: Source, parts: ConfigParts): Array<ValidationIssue> =>
  ownedFields
    .filter(({ group, field, owners }) => !owners.includes(source) && isSet(fieldValue(parts, group, field)))
    .map(({ group, field, owners }) => issue(fieldLoc(group, field), `${field} applies to ${listed(owners)} deployments only; this deployment's source is ${source}`))

/** Read-only fields sent with a value, unless it repeats the stored one (so a fetched deployment can be sent back). */
export const readOnlyIssues = (source: Source, parts: ConfigParts, current?: ConfigParts): Array<ValidationIssue> =>
  eachField(readOnlyFields[source])
    .filter(({ group, field }) => {
      const sent = fieldValue(parts, group, field)
      return isSet(sent) && !(current && sameValue(sent, fieldValue(current, group, field)))
    })
    .map(({ group, field }) => issue(fieldLoc(group, field), `${field} is read-only for ${source} deployments`))

export const missingIssues = (source: Source, parts: ConfigParts): Array<ValidationIssue> =>
  eachField(requiredFields[source])
    .filter(({ group, field }) => !isSet(fieldValue(parts, group, field)))
    .map(({ group, field }) => issue(fieldLoc(group, field), "Field required", "missing"))

/**
 * What a new revision lacks, on its complete configuration (the latest values merged with the
 * request's). Only a deployment created without a revision (`awaitsFirstRevision`) can lack
 * anything: the message says how to get its image or tarball.
 */
export const newRevisionMissingIssues = (source: Source, config: SourceRevisionConfig): Array<ValidationIssue> =>
  requiredFields[source].source_revision_config
    .filter((field) => !isSet(config[field]))
    .map((field) => {
      const artifact = ownArtifact[source]
      const hint = artifact === undefined ? "" : artifact.field === field ? `: ${artifact.how}` : ": the revision this request creates needs it"
      return issue(fieldLoc("source_revision_config", field), `Field required${hint}`, "missing")
    })

/** A deployment's own image or tarball sent on create, when it cannot exist yet. */
const artifactOnCreateIssues = (source: Source, config: SourceRevisionConfig | null | undefined): Array<ValidationIssue> => {
  const artifact = ownArtifact[source]
  return artifact !== undefined && isSet(config?.[artifact.field])
    ? [issue(fieldLoc("source_revision_config", artifact.field), `${artifact.field} names something of this deployment, which does not exist yet: create the deployment without it, ${artifact.how}`)]
    : []
}

// ---------------------------------------------------------------------------------------------
// Cross-field rules

export const isTagRef = (ref: string | null | undefined): boolean => isSet(ref) && ref.startsWith("refs/tags/")

/**
 * A tag never moves, so building on push to it makes no sense (spec 2.2, 8). Checked on the
 * result of the request merged with what is stored; reported at `build_on_push` when this
 * request sent it, else at the `repo_ref` that made the combination invalid.
 */
export const tagBuildOnPushIssues = (merged: { readonly buildOnPush: boolean | null | undefined; readonly repoRef: string | null | undefined }, sent: ConfigParts): Array<ValidationIssue> => {
  if (!(merged.buildOnPush === true && isTagRef(merged.repoRef))) return []
  const loc = isSet(sent.source_config?.build_on_push) ? fieldLoc("source_config", "build_on_push") : fieldLoc("source_revision_config", "repo_ref")
  return [issue(loc, `build_on_push must be false when repo_ref is a tag (${merged.repoRef})`)]
}

/** `listener_config` says where to deploy on a listener, so it means nothing without one. */
export const listenerConfigIssues = (config: SourceConfig | null | undefined): Array<ValidationIssue> =>
  isSet(config?.listener_config) && !isSet(config.listener_id)
    ? [issue(fieldLoc("source_config", "listener_config"), "listener_config requires listener_id")]
    : []

/**
 * The checks that need the listener named by `listener_id` (the server looks it up, in the
 * caller's tenant): it must exist, and the namespace must be one it serves.
 */
export const listenerIssues = (config: SourceConfig | null | undefined, listener: Listener | undefined): Array<ValidationIssue> => {
  if (!isSet(config?.listener_id)) return []
  if (!listener) return [issue(fieldLoc("source_config", "listener_id"), `Listener ${config.listener_id} not found`)]
  const namespace = config.listener_config?.k8s_namespace
  const served = listener.compute_config.k8s_namespaces ?? []
  return isSet(namespace) && !served.includes(namespace)
    ? [
        issue(
          [...fieldLoc("source_config", "listener_config"), "k8s_namespace"],
          `Namespace '${namespace}' is not served by listener ${listener.id} (namespaces: ${served.join(", ")})`
        )
      ]
    : []
}

/**
 * Secrets are write-only, so a client that fetched a deployment holds masked values. A masked
 * value for a secret that exists means "keep its value"; for any other name it is an error
 * rather than silently storing the mask as the value.
 */
export const resolveSecrets = (
  incoming: ReadonlyArray<Secret>,
  current: ReadonlyArray<Secret>
): { readonly secrets: Array<Secret>; readonly issues: Array<ValidationIssue> } => {
  const stored = new Map(current.map((secret) => [secret.name, secret.value]))
  const issues: Array<ValidationIssue> = []
  const secrets = incoming.map((secret, index) => {
    if (secret.value !== secretMask) return secret
    const kept = stored.get(secret.name)
    if (kept === undefined) {
      issues.push(issue([...bodyLoc, "secrets", index, "value"], `${secretMask} is how responses mask secret values; send the real value of new secret '${secret.name}'`))
      return secret
    }
    return { name: secret.name, value: kept }
  })
  return { secrets, issues }
}

// ---------------------------------------------------------------------------------------------
// Normal forms: every key present, null when not set

const sourceConfigKeys = Object.keys(SourceConfig.fields) as Array<SourceConfigField>
const sourceRevisionConfigKeys = Object.keys(SourceRevisionConfig.fields) as Array<SourceRevisionConfigField>

const complete = <K extends string>(keys: ReadonlyArray<K>, value: object | null | undefined): { [P in K]: unknown } => {
  const given = value as Record<string, unknown> | null | undefined
  const out = {} as { [P in K]: unknown }
  for (const key of keys) out[key] = given?.[key] ?? null
  return out
}

export const fullSourceConfig = (config: SourceConfig | null | undefined): SourceConfig => complete(sourceConfigKeys, config) as SourceConfig
export const fullSourceRevisionConfig = (config: SourceRevisionConfig | null | undefined): SourceRevisionConfig =>
  complete(sourceRevisionConfigKeys, config) as SourceRevisionConfig

/** Stored values overridden by every field the request set. A resource_spec is one value, so it is replaced whole. */
const overlay = <A extends object>(stored: A, sent: A | null | undefined): A => {
  const merged: Record<string, unknown> = { ...(stored as Record<string, unknown>) }
  for (const [key, value] of Object.entries(sent ?? {})) if (isSet(value)) merged[key] = value
  return merged as A
}

// ---------------------------------------------------------------------------------------------
// Create

/** `custom_url` of a deployment the server builds or receives (every source but external_container): generated from the public base URL, never chosen by the caller. */
export const gitrepoCustomUrl = (publicUrl: string, name: string): string => `${publicUrl.replace(/\/+$/, "")}/d/${name}`

export interface CreateOptions {
  /** `SLIPWAY_PUBLIC_URL`, the base of generated custom URLs. */
  readonly publicUrl: string
  /** `SLIPWAY_INSECURE_GIT_HOSTS`: the `host:port` pairs a `repo_url` may reach over plain http:// (default none). */
  readonly insecureGitHosts?: ReadonlyArray<string> | undefined
}

/** A plain-http `repo_url` whose host the server does not list (the request schema checks only the URL's grammar). */
export const insecureRepoUrlIssues = (config: SourceConfig | null | undefined, insecureGitHosts: ReadonlyArray<string> = []): Array<ValidationIssue> => {
  const url = config?.repo_url
  const problem = isSet(url) ? repoUrlProblem(url, { insecureHosts: insecureGitHosts }) : undefined
  return problem ? [issue(fieldLoc("source_config", "repo_url"), problem)] : []
}

/**
 * Validates a decoded `POST /v2/deployments` body against the source rules and returns what to
 * store. Name uniqueness (409) and the listener lookup (`listenerIssues`) need the database and
 * are the server's.
 */
export const planCreate = (body: CreateDeployment, options: CreateOptions): Result.Result<NewDeployment, ValidationError> => {
  const { source } = body
  const incoming = body.secrets ?? []
  // Stryker disable next-line ArrayDeclaration: on create nothing is stored; a non-secret in the stored list can never match a secret's name
  const resolved = resolveSecrets(incoming, [])
  const issues = [
    ...wrongSourceIssues(source, body),
    ...readOnlyIssues(source, body),
    ...(awaitsFirstRevision(source) ? artifactOnCreateIssues(source, body.source_revision_config) : missingIssues(source, body)),
    ...listenerConfigIssues(body.source_config),
    ...insecureRepoUrlIssues(body.source_config, options.insecureGitHosts),
    ...tagBuildOnPushIssues({ buildOnPush: body.source_config?.build_on_push, repoRef: body.source_revision_config?.repo_ref }, body),
    ...resolved.issues
  ]
  return toResult(issues, () => {
    const sourceConfig = fullSourceConfig(body.source_config)
    return {
      name: body.name,
      source,
      source_config: source === "external_container" ? sourceConfig : { ...sourceConfig, custom_url: gitrepoCustomUrl(options.publicUrl, body.name) },
      source_revision_config: fullSourceRevisionConfig(body.source_revision_config),
      secrets: resolved.secrets,
      image_version: body.image_version ?? null,
      createsRevision: !awaitsFirstRevision(source)
    }
  })
}

// ---------------------------------------------------------------------------------------------
// PATCH and new revisions

/** The PATCH fields that create a revision when non-null (spec section 3), and only those. */
export const revisionTriggerFields = [
  "source_revision_config.repo_ref",
  "source_revision_config.graph_config_path",
  "source_revision_config.image_uri",
  "source_revision_config.source_tarball_path",
  "secrets",
  "source_config.resource_spec"
] as const
export type RevisionTrigger = (typeof revisionTriggerFields)[number]

export const revisionTriggers = (patch: PatchDeployment): Array<RevisionTrigger> => {
  const sent: Record<RevisionTrigger, unknown> = {
    "source_revision_config.repo_ref": patch.source_revision_config?.repo_ref,
    "source_revision_config.graph_config_path": patch.source_revision_config?.graph_config_path,
    "source_revision_config.image_uri": patch.source_revision_config?.image_uri,
    "source_revision_config.source_tarball_path": patch.source_revision_config?.source_tarball_path,
    secrets: patch.secrets,
    "source_config.resource_spec": patch.source_config?.resource_spec
  }
  return revisionTriggerFields.filter((field) => isSet(sent[field]))
}

export interface PatchPlan {
  /** The deployment's new source_config (stored merged with the request; complete). */
  readonly source_config: SourceConfig
  readonly image_version: string | null
  /** The one revision to create, or null when only in-place fields changed. */
  readonly newRevision: NewRevision | null
  /** Why a revision is created (empty when none is). */
  readonly revisionTriggers: ReadonlyArray<RevisionTrigger>
}

/** Sent immutable fields whose value differs from the stored one. */
export const immutableIssues = (current: StoredDeployment, patch: PatchDeployment): Array<ValidationIssue> => {
  const topLevel = (["name", "source"] as const)
    .filter((field) => isSet(patch[field]) && patch[field] !== current[field])
    .map((field) => issue([...bodyLoc, field], `${field} cannot be changed after creation (it is '${current[field]}')`, "frozen_field"))
  // A field of another source is already reported by wrongSourceIssues: say it once.
  const ownFields = immutableSourceConfigFields.filter((field) => !belongsElsewhere(current.source, "source_config", field))
  const nested = ownFields
    .filter((field) => {
      const sent = patch.source_config?.[field]
      return isSet(sent) && !sameValue(sent, current.source_config[field])
    })
    .map((field) => issue(fieldLoc("source_config", field), `${field} cannot be changed after creation`, "frozen_field"))
  return [...topLevel, ...nested]
}

/** The revision config a new revision gets: the latest one's values overridden by the request's. Its commit is not known yet. */
const nextRevisionConfig = (current: SourceRevisionConfig, sent: SourceRevisionConfig | null | undefined): SourceRevisionConfig => ({
  ...fullSourceRevisionConfig(overlay(current, sent)),
  repo_commit_sha: null
})

/**
 * Plans a `PATCH /v2/deployments/{id}`: validates the body (decoded with `PatchDeployment`)
 * against the stored deployment and answers what to write. The source rules apply to the patch
 * as on create; immutable fields may repeat their value; the tag rule is checked on the merged
 * result; exactly the spec's trigger fields create one new revision, which starts from the
 * latest revision's values.
 */
export const planPatch = (current: StoredDeployment, patch: PatchDeployment): Result.Result<PatchPlan, ValidationError> => {
  const { source } = current
  const sourceConfig = fullSourceConfig(overlay(fullSourceConfig(current.source_config), patch.source_config))
  const revisionConfig = overlay(fullSourceRevisionConfig(current.source_revision_config), patch.source_revision_config)
  const resolved = isSet(patch.secrets) ? resolveSecrets(patch.secrets, current.secrets) : { secrets: [...current.secrets], issues: [] }
  const issues = [
    ...wrongSourceIssues(source, patch),
    ...immutableIssues(current, patch),
    ...readOnlyIssues(source, patch, current),
    ...tagBuildOnPushIssues({ buildOnPush: sourceConfig.build_on_push, repoRef: revisionConfig.repo_ref }, patch),
    ...resolved.issues
  ]
  const triggers = revisionTriggers(patch)
  const nextConfig = triggers.length === 0 ? null : nextRevisionConfig(current.source_revision_config, patch.source_revision_config)
  if (nextConfig !== null) issues.push(...newRevisionMissingIssues(source, nextConfig))
  return toResult(issues, () => ({
    source_config: sourceConfig,
    image_version: patch.image_version ?? current.image_version ?? null,
    newRevision: nextConfig === null ? null : { source_revision_config: nextConfig, secrets: resolved.secrets },
    revisionTriggers: triggers
  }))
}

/** A git commit id as `repo_commit_sha` pins it: abbreviated (7+) or full SHA-1 / SHA-256 hex. */
export const commitShaPattern = /^[0-9a-fA-F]{7,64}$/

/**
 * Plans `POST /v2/deployments/{id}/revisions`: unlike PATCH it always creates a revision, from the
 * latest revision's values overridden by the body's, with the body's secrets (or the current ones).
 * For gitrepo, `repo_commit_sha` (read-only elsewhere) pins the commit the revision builds: a CI
 * run deploying the commit it was started for sends it, so a later commit always makes a new revision.
 */
export const planRevision = (current: StoredDeployment, body: CreateRevision): Result.Result<NewRevision, ValidationError> => {
  const { source } = current
  // A gitrepo revision may be pinned to a commit (the commit a CI run was started for); otherwise the build resolves the ref.
  const pinned = source === "gitrepo" ? body.source_revision_config?.repo_commit_sha : undefined
  const { repo_commit_sha: _, ...sentConfig } = body.source_revision_config ?? {}
  const rest: CreateRevision = source === "gitrepo" && body.source_revision_config ? { ...body, source_revision_config: sentConfig as SourceRevisionConfig } : body
  const revisionConfig = { ...nextRevisionConfig(current.source_revision_config, rest.source_revision_config), ...(isSet(pinned) ? { repo_commit_sha: pinned.toLowerCase() } : {}) }
  const resolved = isSet(body.secrets) ? resolveSecrets(body.secrets, current.secrets) : { secrets: [...current.secrets], issues: [] }
  const issues = [
    ...wrongSourceIssues(source, body),
    ...readOnlyIssues(source, rest, current),
    ...(isSet(pinned) && !commitShaPattern.test(pinned)
      ? [issue(fieldLoc("source_revision_config", "repo_commit_sha"), "repo_commit_sha must be a git commit id: 7 to 64 hexadecimal digits")]
      : []),
    ...tagBuildOnPushIssues({ buildOnPush: current.source_config.build_on_push, repoRef: revisionConfig.repo_ref }, body),
    ...newRevisionMissingIssues(source, revisionConfig),
    ...resolved.issues
  ]
  return toResult(issues, () => ({ source_revision_config: revisionConfig, secrets: resolved.secrets }))
}

// ---------------------------------------------------------------------------------------------
// Push webhook

/** One spelling for a repository: `host/owner/name`, lowercase, whatever URL form it came in. */
export const normalizeRepo = (url: string): string =>
  url
    .trim()
    .toLowerCase()
    .replace(/^git@([^:]+):/, "$1/")
    .replace(/^[a-z+]+:\/\//, "")
    .replace(/^[^@/]+@/, "")
    .replace(/^www\./, "")
    .replace(/\/+$/, "")
    .replace(/\.git$/, "")

const pushedRepoMatches = (repoUrl: string, push: PushEvent): boolean => {
  const repo = normalizeRepo(repoUrl)
  const { clone_url, html_url, full_name } = push.repository
  return repo === normalizeRepo(clone_url) || repo === normalizeRepo(html_url) || repo.endsWith(`/${full_name.toLowerCase()}`)
}

/**
 * A branch is configured by its bare name (spec 2.3) or as `refs/heads/<name>`; a push names
 * its full ref. A tag never matches: tags cannot build on push.
 */
const pushedRefMatches = (repoRef: string, pushedRef: string): boolean => {
  const branch = branchOf(repoRef)
  return branch !== null && pushedRef === `refs/heads/${branch}`
}

const isDeletion = (push: PushEvent): boolean => push.deleted === true || /^0+$/.test(push.after)

/** Whether a push builds this deployment: gitrepo, build_on_push on, same repository, same ref, not a branch deletion. */
export const pushTriggersBuild = (deployment: StoredDeployment, push: PushEvent): boolean => {
  const { repo_url, build_on_push } = deployment.source_config
  const { repo_ref } = deployment.source_revision_config
  return (
    deployment.source === "gitrepo" &&
    build_on_push === true &&
    isSet(repo_url) &&
    isSet(repo_ref) &&
    !isDeletion(push) &&
    pushedRepoMatches(repo_url, push) &&
    pushedRefMatches(repo_ref, push.ref)
  )
}

/** The revision a push creates for a deployment it triggers, pinned to the pushed commit; null when it triggers none. */
export const revisionForPush = (deployment: StoredDeployment, push: PushEvent): NewRevision | null =>
  pushTriggersBuild(deployment, push)
    ? { source_revision_config: { ...nextRevisionConfig(deployment.source_revision_config, null), repo_commit_sha: push.after }, secrets: deployment.secrets }
    : null

// ---------------------------------------------------------------------------------------------
// Redeploy

/** What the redeploy rule needs to know of a revision. */
export interface RevisionRecord {
  readonly id: string
  readonly deployment_id: string
  readonly status: RevisionStatus
  /** When the revision first reached DEPLOYED; null if it never did. */
  readonly deployed_at: string | null
}

export interface RedeployRequest {
  readonly deployment: { readonly id: string; readonly deleting: boolean }
  readonly revisionId: string
  /** The revision looked up by id in the caller's tenant, or undefined if none. */
  readonly revision: RevisionRecord | undefined
}

/**
 * `POST .../revisions/{revision_id}/redeploy` is allowed for a revision of this deployment that
 * reached DEPLOYED at some point (its image exists and once ran); it then becomes the active
 * revision (`activate` in revision.ts). An unknown deployment is the server's 404; everything
 * else refused here is a 400 with a string detail (design.md section 5).
 */
export const checkRedeploy = ({ deployment, revisionId, revision }: RedeployRequest): Result.Result<RevisionRecord, BadRequest> => {
  if (deployment.deleting) return Result.fail(new BadRequest({ message: `Deployment ${deployment.id} is being deleted` }))
  if (!revision || revision.deployment_id !== deployment.id) {
    return Result.fail(new BadRequest({ message: `Revision ${revisionId} not found in deployment ${deployment.id}` }))
  }
  if (!everDeployed(revision)) {
    return Result.fail(
      new BadRequest({ message: `Revision ${revisionId} cannot be redeployed: it has never been deployed (status ${revision.status})` })
    )
  }
  return Result.succeed(revision)
}
