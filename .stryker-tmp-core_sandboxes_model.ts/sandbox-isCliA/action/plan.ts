/**
 * Decides what one run of the action does, from its inputs and the deployment as the API shows
 * it (or none). Pure: no requests, no logging, so every decision is unit-tested.
 *
 * - no deployment yet → create it (POST /v2/deployments);
 * - redeploy-revision-id → redeploy that revision, unless it already is the active one;
 * - otherwise PATCH only the fields whose input differs from the deployment's current value.
 *   When nothing differs it is a no-op: no request is sent, no revision is created.
 *
 * Secrets are write-only (the API answers `"********"`), so their values cannot be compared.
 * For `external_container` deployments the action records a fingerprint of the applied secrets
 * (HMAC-SHA256 keyed with the API key, so it reveals nothing about low-entropy values to anyone
 * without that key) as the annotation `slipway.dev/secrets-fingerprint` in the resource spec,
 * the same pattern as a Helm `checksum/…` annotation: a changed set rolls the pods. A re-run
 * with identical secrets is then a no-op. `gitrepo` deployments have no resource spec to hold
 * it, so there a non-empty `secrets` input always creates a revision.
 */
// @ts-nocheck

import { createHmac } from "node:crypto"
import type { InputError, InputName, Inputs, Secret } from "./inputs.ts"

export const secretsAnnotation = "slipway.dev/secrets-fingerprint"

/** The fields of a Deployment (spec 2.1) that planning reads. The client's decoded Deployment satisfies it. */
export interface DeploymentView {
  readonly id: string
  readonly name: string
  readonly source: string
  readonly source_config: {
    readonly integration_id?: string | null | undefined
    readonly repo_url?: string | null | undefined
    readonly build_on_push?: boolean | null | undefined
    readonly custom_url?: string | null | undefined
    readonly resource_spec?: object | null | undefined
    readonly listener_id?: string | null | undefined
    readonly listener_config?: { readonly k8s_namespace?: string | null | undefined } | null | undefined
  }
  readonly source_revision_config: {
    readonly repo_ref?: string | null | undefined
    readonly graph_config_path?: string | null | undefined
    readonly image_uri?: string | null | undefined
  }
  readonly secrets: ReadonlyArray<{ readonly name: string }>
  readonly latest_revision_id: string | null
  readonly active_revision_id: string | null
}

type Json = Record<string, unknown>

export type Plan =
  | { readonly kind: "create"; readonly body: Json }
  | {
      readonly kind: "patch"
      readonly body: Json
      /** False when only in-place fields (build_on_push) change. */
      readonly createsRevision: boolean
      /** Human-readable list of what changes, e.g. `image-uri: a → b`. Never a secret value. */
      readonly changes: ReadonlyArray<string>
    }
  | { readonly kind: "redeploy"; readonly revisionId: string; readonly ignored: ReadonlyArray<InputName> }
  | { readonly kind: "noop"; readonly reason: string; readonly revisionId: string | null }
  | { readonly kind: "invalid"; readonly errors: ReadonlyArray<InputError> }

export interface PlanContext {
  /** Status of the deployment's latest revision, when known: a failed one is retried by an identical run. */
  readonly latestRevisionStatus?: string | undefined
}

const failedStatuses = new Set(["CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED"])

/** HMAC-SHA256 over the secrets sorted by name; the same set in any order gives the same value. */
export const secretsFingerprint = (secrets: ReadonlyArray<Secret>, key: string): string => {
  const canonical = JSON.stringify([...secrets].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((s) => [s.name, s.value]))
  return `hmac-sha256:${createHmac("sha256", key).update(canonical).digest("hex")}`
}

/** Drops null/undefined members recursively and sorts keys, so equal specs compare equal as text. */
export const canonicalize = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(canonicalize)
  if (value === null || typeof value !== "object") return value
  const out: Json = {}
  for (const key of Object.keys(value).sort()) {
    const inner = (value as Json)[key]
    if (inner === null || inner === undefined) continue
    out[key] = canonicalize(inner)
  }
  return out
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(canonicalize(a ?? {})) === JSON.stringify(canonicalize(b ?? {}))

const annotationsOf = (spec: unknown): Json => {
  const annotations = (spec as { annotations?: unknown } | null | undefined)?.annotations
  return annotations !== null && typeof annotations === "object" ? (annotations as Json) : {}
}

/** `spec` with the fingerprint annotation set (or left out when `fingerprint` is undefined). */
const withFingerprint = (spec: Json | undefined, fingerprint: string | undefined): Json | undefined => {
  const base = spec ?? {}
  const annotations = { ...annotationsOf(base) }
  delete annotations[secretsAnnotation]
  if (fingerprint !== undefined) annotations[secretsAnnotation] = fingerprint
  const { annotations: _, ...rest } = base as Json
  return Object.keys(annotations).length > 0 ? { ...rest, annotations } : spec === undefined ? undefined : rest
}

const defined = (entries: Json): Json => Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined))

const short = (value: string | null | undefined) => (value === null || value === undefined ? "(none)" : value)

/** Inputs that configure a deployment (everything a redeploy ignores). */
const updateInputs = (inputs: Inputs): Array<InputName> => {
  const given: Array<[InputName, unknown]> = [
    ["image-uri", inputs.imageUri],
    ["graph-config-path", inputs.graphConfigPath],
    ["secrets", inputs.secrets],
    ["resource-spec", inputs.resourceSpec],
    ["build-on-push", inputs.buildOnPush]
  ]
  return given.filter(([, value]) => value !== undefined).map(([name]) => name)
}

const planCreate = (inputs: Inputs): Plan => {
  const errors: Array<InputError> = []
  const missing = (input: InputName, why: string) => errors.push({ input, message: why })
  if (inputs.redeployRevisionId !== undefined) {
    missing("redeploy-revision-id", `deployment ${inputs.name} does not exist, so there is no revision to redeploy`)
    return { kind: "invalid", errors }
  }
  if (inputs.source === undefined) {
    missing("source", `is required to create deployment ${inputs.name} (external_container with image-uri, or gitrepo with repo-url)`)
  } else if (inputs.source === "external_container") {
    if (inputs.imageUri === undefined) missing("image-uri", `is required to create the external_container deployment ${inputs.name}`)
  } else {
    if (inputs.repoUrl === undefined) missing("repo-url", `is required to create the gitrepo deployment ${inputs.name}`)
    if (inputs.repoRef === undefined) missing("repo-ref", "is required: it could not be derived from the pushed ref (set repo-ref to a branch or refs/tags/…)")
    if (inputs.graphConfigPath === undefined) missing("graph-config-path", `is required to create the gitrepo deployment ${inputs.name}`)
  }
  if (errors.length > 0) return { kind: "invalid", errors }

  const external = inputs.source === "external_container"
  const fingerprint = external && inputs.secrets !== undefined ? secretsFingerprint(inputs.secrets, inputs.apiKey) : undefined
  const resourceSpec = external ? withFingerprint(inputs.resourceSpec, fingerprint) : undefined
  const sourceConfig = defined({
    integration_id: inputs.integrationId,
    repo_url: inputs.repoUrl,
    build_on_push: inputs.buildOnPush,
    resource_spec: resourceSpec,
    listener_id: inputs.listenerId,
    listener_config: inputs.k8sNamespace === undefined ? undefined : { k8s_namespace: inputs.k8sNamespace }
  })
  const revisionConfig = defined({ repo_ref: inputs.repoRef, graph_config_path: inputs.graphConfigPath, image_uri: inputs.imageUri })
  return {
    kind: "create",
    body: {
      name: inputs.name,
      source: inputs.source,
      source_config: sourceConfig,
      source_revision_config: revisionConfig,
      secrets: (inputs.secrets ?? []).map(({ name, value }) => ({ name, value }))
    }
  }
}

const planRedeploy = (inputs: Inputs, current: DeploymentView, revisionId: string): Plan => {
  const ignored = updateInputs(inputs)
  if (current.active_revision_id === revisionId) {
    return { kind: "noop", reason: `revision ${revisionId} is already the active revision of ${current.name}`, revisionId }
  }
  return { kind: "redeploy", revisionId, ignored }
}

const planUpdate = (inputs: Inputs, current: DeploymentView, context: PlanContext): Plan => {
  const errors: Array<InputError> = []
  const immutable = (input: InputName, wanted: string | undefined, actual: string | null | undefined) => {
    if (wanted !== undefined && wanted !== (actual ?? undefined)) {
      errors.push({ input, message: `cannot be changed after creation: deployment ${current.name} has ${short(actual)}, the input asks for ${wanted}` })
    }
  }
  immutable("source", inputs.source, current.source)
  if (inputs.source === undefined || inputs.source === current.source) {
    immutable("repo-url", inputs.repoUrl, current.source_config.repo_url)
    immutable("integration-id", inputs.integrationId, current.source_config.integration_id)
    immutable("listener-id", inputs.listenerId, current.source_config.listener_id)
    immutable("k8s-namespace", inputs.k8sNamespace, current.source_config.listener_config?.k8s_namespace)
  }
  // The inputs were validated against the inferred source; an existing deployment's source decides for the rest.
  const external = current.source === "external_container"
  if (inputs.source === undefined) {
    const foreign: Array<[InputName, unknown]> = external
      ? [["repo-url", inputs.repoUrl], ["graph-config-path", inputs.graphConfigPath], ["build-on-push", inputs.buildOnPush]]
      : [["image-uri", inputs.imageUri], ["resource-spec", inputs.resourceSpec], ["listener-id", inputs.listenerId], ["k8s-namespace", inputs.k8sNamespace]]
    for (const [input, value] of foreign) {
      if (value !== undefined) errors.push({ input, message: `does not apply: deployment ${current.name} has source ${current.source}` })
    }
  }
  if (errors.length > 0) return { kind: "invalid", errors }

  const changes: Array<string> = []
  const revisionConfig: Json = {}
  const sourceConfig: Json = {}
  const body: Json = {}
  const currentRevision = current.source_revision_config

  if (external && inputs.imageUri !== undefined && inputs.imageUri !== currentRevision.image_uri) {
    revisionConfig.image_uri = inputs.imageUri
    changes.push(`image-uri: ${short(currentRevision.image_uri)} → ${inputs.imageUri}`)
  }
  // repo-ref defaults to the pushed branch, so for gitrepo it is (almost) always set.
  const repoRef = external ? undefined : inputs.repoRef
  if (repoRef !== undefined && repoRef !== currentRevision.repo_ref) {
    revisionConfig.repo_ref = repoRef
    changes.push(`repo-ref: ${short(currentRevision.repo_ref)} → ${repoRef}`)
  }
  if (!external && inputs.graphConfigPath !== undefined && inputs.graphConfigPath !== currentRevision.graph_config_path) {
    revisionConfig.graph_config_path = inputs.graphConfigPath
    changes.push(`graph-config-path: ${short(currentRevision.graph_config_path)} → ${inputs.graphConfigPath}`)
  }

  const currentSpec = current.source_config.resource_spec as Json | null | undefined
  const recordedFingerprint = annotationsOf(currentSpec)[secretsAnnotation]
  if (inputs.secrets !== undefined) {
    const names = (list: ReadonlyArray<{ readonly name: string }>) => JSON.stringify(list.map((s) => s.name).sort())
    const fingerprint = external ? secretsFingerprint(inputs.secrets, inputs.apiKey) : undefined
    const same = fingerprint !== undefined && fingerprint === recordedFingerprint && names(inputs.secrets) === names(current.secrets)
    if (!same) {
      body.secrets = inputs.secrets.map(({ name, value }) => ({ name, value }))
      changes.push(
        external
          ? `secrets: ${inputs.secrets.length} secret(s) differ from the last applied set`
          : `secrets: ${inputs.secrets.length} secret(s) (gitrepo deployments cannot tell whether write-only secrets changed, so they are always applied)`
      )
    }
  }
  if (external) {
    const secretsChanged = body.secrets !== undefined
    const fingerprint =
      inputs.secrets === undefined ? (typeof recordedFingerprint === "string" ? recordedFingerprint : undefined) : secretsFingerprint(inputs.secrets, inputs.apiKey)
    // The wanted spec: the input's, else the current one; with the fingerprint of the secrets in force.
    const base = inputs.resourceSpec ?? (currentSpec ? (canonicalize(currentSpec) as Json) : undefined)
    const wanted = withFingerprint(base, fingerprint)
    if (inputs.resourceSpec !== undefined && !sameJson(inputs.resourceSpec, withFingerprint(currentSpec ?? undefined, undefined))) {
      changes.push("resource-spec: changed")
    }
    if (secretsChanged || !sameJson(wanted, currentSpec)) {
      sourceConfig.resource_spec = wanted ?? {}
    }
  }
  if (!external && inputs.buildOnPush !== undefined && inputs.buildOnPush !== (current.source_config.build_on_push ?? false)) {
    sourceConfig.build_on_push = inputs.buildOnPush
    changes.push(`build-on-push: ${current.source_config.build_on_push ?? false} → ${inputs.buildOnPush}`)
  }

  if (Object.keys(revisionConfig).length > 0) body.source_revision_config = revisionConfig
  if (Object.keys(sourceConfig).length > 0) body.source_config = sourceConfig
  const createsRevision =
    body.source_revision_config !== undefined || body.secrets !== undefined || (body.source_config as Json | undefined)?.resource_spec !== undefined

  if (Object.keys(body).length === 0) {
    const status = context.latestRevisionStatus
    if (status !== undefined && failedStatuses.has(status) && current.latest_revision_id !== null) {
      // An identical re-run after a failed revision retries it: re-sending a revision field makes a new revision.
      const retry: Json = external ? { image_uri: currentRevision.image_uri } : { repo_ref: currentRevision.repo_ref }
      return {
        kind: "patch",
        body: { source_revision_config: retry },
        createsRevision: true,
        changes: [`retry: the latest revision ${current.latest_revision_id} ended in ${status}`]
      }
    }
    return {
      kind: "noop",
      reason: `deployment ${current.name} already matches the inputs; no revision created`,
      revisionId: current.latest_revision_id
    }
  }
  if (changes.length === 0) changes.push("resource-spec: secrets fingerprint annotation")
  return { kind: "patch", body, createsRevision, changes }
}

export const plan = (inputs: Inputs, current: DeploymentView | undefined, context: PlanContext = {}): Plan => {
  if (current === undefined) return planCreate(inputs)
  if (inputs.redeployRevisionId !== undefined) return planRedeploy(inputs, current, inputs.redeployRevisionId)
  return planUpdate(inputs, current, context)
}
