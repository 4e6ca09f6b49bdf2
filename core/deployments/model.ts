/**
 * Schemas of the deployment control plane (spec 2.1–2.5, design.md section 7): the wire shapes
 * the server answers and the request bodies it accepts. Rules that need more than one field of
 * one object (unique names, mounts of declared volumes, min ≤ max) are checks on the object, so
 * `decodeWithIssues(schema, ["body"])` reports them with their exact `loc`. Rules that need the
 * source or the stored deployment live in rules.ts.
 */
import { Effect, Schema, SchemaTransformation } from "effect"
import { doc, Timestamp, Uuid } from "../api/common.ts"
import { above, atLeast, atMost, Int, issueTypeKey, rule, ruleOf, type PathIssue } from "../api/validation.ts"
import { resourceSpecIssues, type QuantityField } from "./resourceSpec.ts"
import { DeploymentStatus, RevisionStatus, sources, Source } from "./revision.ts"
import { buildCommandProblem } from "../builds/commands.ts"
import { gitRefProblem, imageReferenceProblem, repoPathProblem, repoUrlProblem } from "./sourceFields.ts"

// ---------------------------------------------------------------------------------------------
// Small building blocks

/** Optional and nullable, as every field of spec 2.2, 2.3 and 2.5 is: absent and null mean "not set". */
const nullable = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

const nonEmpty = rule((s: string) => s.length > 0, "String should have at least 1 character", "string_too_short", { minLength: 1 })
const NonEmptyString = Schema.String.check(nonEmpty)

const dnsLabelPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/

/** A Kubernetes DNS-1123 label: container, volume and namespace names. */
const DnsLabel = Schema.String.check(
  rule(
    (s: string) => s.length <= 63 && dnsLabelPattern.test(s),
    "Input should be a DNS label: 1-63 lowercase alphanumeric characters or '-', starting and ending with an alphanumeric character",
    "string_pattern_mismatch",
    { maxLength: 63, pattern: dnsLabelPattern.source }
  )
).annotate({
  description: "A Kubernetes DNS-1123 label: 1-63 lowercase alphanumeric characters or '-', starting and ending with an alphanumeric character",
  examples: ["agent-data"]
})

/** An environment variable name. */
export const CIdentifier = Schema.String.check(
  rule((s: string) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(s), "Input should be a C identifier: letters, digits and '_', not starting with a digit", "string_pattern_mismatch", {
    pattern: "^[A-Za-z_][A-Za-z0-9_]*$"
  })
).annotate({ description: "An environment variable name: letters, digits and '_', not starting with a digit", examples: ["OPENAI_API_KEY"] })

/**
 * Deployment names: 1–63 characters, lowercase alphanumeric, hyphens (design.md section 5) and
 * underscores, which the real API's own documented example uses (`my_deployment`, docs/real-api.md).
 */
export const DeploymentName = Schema.String.check(
  rule((s: string) => s.length >= 1, "String should have at least 1 character", "string_too_short", { minLength: 1 }),
  rule((s: string) => s.length <= 63, "String should have at most 63 characters", "string_too_long", { maxLength: 63 }),
  rule((s: string) => s.length === 0 || /^[a-z0-9_-]+$/.test(s), "Input should contain only lowercase letters, digits, '-' and '_'", "string_pattern_mismatch", {
    pattern: "^[a-z0-9_-]+$"
  })
).annotate({ description: "Deployment name: 1-63 lowercase letters, digits, '-' and '_'", examples: ["my-agent"] })

/**
 * Upper bounds of the resource spec (docs/deployments.md, "Validation rules"): far above any
 * real node, low enough that a typo (or 1e300) is refused instead of scheduled. A limit may be
 * twice its request's bound, since an unset limit defaults to twice the request.
 */
export const resourceBounds = {
  /** Replicas of any component. */
  scale: 1000,
  /** Cores of the database (a fraction allowed); limits up to twice as much. Replica CPU follows the real API: 0.1–8, limits 0.1–16. */
  cpu: 64,
  /** MB of memory requested per replica (256 GiB); limits up to twice as much. */
  memoryMb: 262_144,
  /** MB of memory of the cache store (64 GiB). */
  redisMemoryMb: 65_536,
  /** GiB of database storage (64 TiB). */
  dbStorageGi: 65_536,
  /** Database connections. */
  dbMaxConnections: 10_000
} as const

const between = (min: number, max: number) => Int.check(atLeast(min), atMost(max))

/** Replica counts: 0 is meaningful (scaled to zero). */
const ReplicaCount = doc(between(0, resourceBounds.scale), "Replicas of this component (0: scaled to zero)", [1])
/** Memory amounts, storage sizes, connection counts: a zero would never schedule. */
const MemoryRequest = doc(between(1, resourceBounds.memoryMb), "MB of memory requested per replica", [1024])
const MemoryLimit = doc(between(1, 2 * resourceBounds.memoryMb), "MB of memory a replica may use at most (default: twice the request)", [2048])
/** The database's CPU may be a fraction of a core. */
const DbCpuRequest = doc(Schema.Finite.check(above(0), atMost(resourceBounds.cpu)), "CPU cores of the database (a fraction allowed)", [1])
const DbCpuLimit = doc(Schema.Finite.check(above(0), atMost(2 * resourceBounds.cpu)), "CPU cores the database may use at most", [2])

/**
 * CPU amounts the real API types as fractional numbers with bounds (2026-08 document): requests
 * 0.1–8, limits 0.1–16. See docs/real-api.md.
 */
const cpuAmount = (max: number) => Schema.Finite.check(atLeast(0.1), atMost(max))
const CpuRequest = doc(cpuAmount(8), "CPU cores requested per replica (a fraction allowed)", [1])
const CpuLimit = doc(cpuAmount(16), "CPU cores a replica may use at most (default: twice the request)", [2])

const HttpUrl = Schema.String.check(
  rule(
    (s: string) => {
      const url = URL.parse(s)
      return url !== null && (url.protocol === "http:" || url.protocol === "https:")
    },
    "Input should be a valid URL with an http or https scheme",
    "url_parsing"
  )
)

/** A grammar check that leaves the empty string to `NonEmptyString` (one issue per problem). */
const grammar = (problem: (value: string) => string | undefined) => ruleOf((value: string) => (value === "" ? undefined : problem(value)))

/** The source fields, each checked against its real grammar (sourceFields.ts); `type` is `value_error`. */
const grammarString = (problem: (value: string) => string | undefined, description: string, examples: ReadonlyArray<string>) =>
  Schema.String.annotate({ description, examples }).check(nonEmpty, grammar(problem))

/** The grammar only: whether an http:// URL's host is allowed is the server's setting, checked by `planCreate`. */
export const RepoUrl = grammarString(
  (url) => repoUrlProblem(url, { insecureHosts: "any" }),
  "A git repository URL: https://host/owner/repo, ssh://git@host/owner/repo or git@host:owner/repo (http://host:port/owner/repo only for hosts the server lists in SLIPWAY_INSECURE_GIT_HOSTS); no credentials",
  ["https://github.com/acme/agent"]
)
export const RepoRef = grammarString(gitRefProblem, "A branch by its bare name (main) or as refs/heads/main, or a tag as refs/tags/v1; a valid git ref name", [
  "main",
  "refs/tags/v1.0.0"
])
export const RepoPath = grammarString((path) => repoPathProblem(path), "A path relative to the repository root, inside it", ["langgraph.json"])
export const ImageReference = grammarString(
  (reference) => imageReferenceProblem(reference),
  "An OCI image reference: [registry[:port]/]repository[:tag][@digest]",
  ["ghcr.io/acme/agent:1.0"]
)
/** A container's image (sidecars, init containers): the same grammar, named after its own field. */
const ContainerImage = grammarString(
  (reference) => imageReferenceProblem(reference, "image"),
  "An OCI image reference: [registry[:port]/]repository[:tag][@digest]",
  ["python:3.12"]
)

/** Free-form Kubernetes objects (volume sources, envFrom, securityContext) are passed through as given. */
const FreeForm = Schema.Record(Schema.String, Schema.Unknown)
const StringMap = Schema.Record(Schema.String, Schema.String)

const objectCheck = <T>(issues: (value: T) => ReadonlyArray<PathIssue>) =>
  Schema.makeFilter<T>((value) => issues(value).map(({ path, message }) => ({ path, issue: message })), {
    [issueTypeKey]: "value_error"
  } as any)

/** Every later occurrence of a name already used earlier in the list. */
export const duplicateNames = <A>(
  items: ReadonlyArray<A>,
  nameOf: (item: A) => string,
  pathOf: (index: number) => ReadonlyArray<string | number>,
  what: string
): Array<PathIssue> => {
  const seen = new Set<string>()
  return items.flatMap((item, index) => {
    const name = nameOf(item)
    if (!seen.has(name)) {
      seen.add(name)
      return []
    }
    return [{ path: pathOf(index), message: `Duplicate ${what} name '${name}'` }]
  })
}

// ---------------------------------------------------------------------------------------------
// Enumerations

export const DeploymentType = Schema.Literals(["dev_free", "dev", "prod"])
export type DeploymentType = typeof DeploymentType.Type

// ---------------------------------------------------------------------------------------------
// ResourceSpec and its Kubernetes-shaped parts (spec 2.5). Volume and VolumeMount are named
// PodVolume and PodVolumeMount here: the sandbox area has its own Volume resource.

export const LocalObjectReference = Schema.Struct({ name: doc(NonEmptyString, "The name of a Kubernetes object in the deployment's namespace", ["registry-credentials"]) }).annotate({ identifier: "LocalObjectReference" })

export const PodVolume = Schema.Struct({
  name: DnsLabel,
  configMap: nullable(FreeForm),
  secret: nullable(FreeForm),
  emptyDir: nullable(FreeForm),
  persistentVolumeClaim: nullable(FreeForm),
  nfs: nullable(FreeForm),
  projected: nullable(FreeForm),
  downwardAPI: nullable(FreeForm),
  csi: nullable(FreeForm)
}).annotate({ identifier: "PodVolume" })
export type PodVolume = typeof PodVolume.Type

export const PodVolumeMount = Schema.Struct({
  name: doc(NonEmptyString, "The name of a volume of the pod (resource_spec.volumes)", ["agent-data"]),
  mountPath: doc(NonEmptyString, "Where the volume appears in the container", ["/data"]),
  subPath: nullable(doc(Schema.String, "A path inside the volume to mount instead of its root", ["cache"])),
  mountPropagation: nullable(doc(Schema.String, "Kubernetes mount propagation mode", ["None"])),
  readOnly: nullable(doc(Schema.Boolean, "Mount read-only")),
  subPathExpr: nullable(doc(Schema.String, "Like subPath, with $(VAR) references to the container's environment", ["$(POD_NAME)"]))
}).annotate({ identifier: "PodVolumeMount" })
export type PodVolumeMount = typeof PodVolumeMount.Type

export const EnvVar = Schema.Struct({
  name: CIdentifier,
  value: nullable(doc(Schema.String, "The variable's value", ["info"])),
  valueFrom: nullable(doc(FreeForm, "A Kubernetes EnvVarSource (secretKeyRef, configMapKeyRef, fieldRef); not with a non-empty value"))
})
  .check(
    // Kubernetes refuses both: the variable would have two competing sources.
    objectCheck((env: { readonly value?: string | null; readonly valueFrom?: unknown }) =>
      env.valueFrom != null && (env.value ?? "") !== "" ? [{ path: ["valueFrom"], message: "valueFrom cannot be combined with a non-empty value" }] : []
    )
  )
  .annotate({ identifier: "EnvVar" })
export type EnvVar = typeof EnvVar.Type

export const ResourceRequirements = Schema.Struct({
  limits: nullable(StringMap),
  requests: nullable(StringMap)
}).annotate({ identifier: "ResourceRequirements" })

export const Container = Schema.Struct({
  name: DnsLabel,
  image: ContainerImage,
  imagePullPolicy: nullable(Schema.Literals(["Always", "Never", "IfNotPresent"])),
  command: nullable(Schema.Array(Schema.String)),
  args: nullable(Schema.Array(Schema.String)),
  workingDir: nullable(doc(Schema.String, "The container's working directory", ["/app"])),
  env: nullable(Schema.Array(EnvVar)),
  envFrom: nullable(Schema.Array(FreeForm)),
  resources: nullable(ResourceRequirements),
  volumeMounts: nullable(Schema.Array(PodVolumeMount)),
  securityContext: nullable(FreeForm),
  restartPolicy: nullable(Schema.Literals(["Always", "OnFailure"]))
}).annotate({ identifier: "Container" })
export type Container = typeof Container.Type

const resourceSpecFields = {
  min_scale: nullable(ReplicaCount),
  max_scale: nullable(ReplicaCount),
  cpu: nullable(CpuRequest),
  cpu_limit: nullable(CpuLimit),
  memory_mb: nullable(MemoryRequest),
  memory_limit_mb: nullable(MemoryLimit),
  queue_min_scale: nullable(ReplicaCount),
  queue_max_scale: nullable(ReplicaCount),
  queue_cpu: nullable(CpuRequest),
  queue_cpu_limit: nullable(CpuLimit),
  queue_memory_mb: nullable(MemoryRequest),
  queue_memory_limit_mb: nullable(MemoryLimit),
  // The orchestrator_* and executor_* fields are marked "do not use" by the spec: accepted and
  // stored so existing clients keep working, never defaulted.
  orchestrator_cpu: nullable(CpuRequest),
  orchestrator_cpu_limit: nullable(CpuLimit),
  orchestrator_memory_mb: nullable(MemoryRequest),
  orchestrator_memory_limit_mb: nullable(MemoryLimit),
  orchestrator_min_scale: nullable(ReplicaCount),
  orchestrator_max_scale: nullable(ReplicaCount),
  executor_cpu: nullable(CpuRequest),
  executor_cpu_limit: nullable(CpuLimit),
  executor_memory_mb: nullable(MemoryRequest),
  executor_memory_limit_mb: nullable(MemoryLimit),
  redis_cpu: nullable(CpuRequest),
  redis_cpu_limit: nullable(CpuLimit),
  redis_memory_mb: nullable(doc(between(1, resourceBounds.redisMemoryMb), "MB of memory of the cache store", [512])),
  redis_memory_limit_mb: nullable(doc(between(1, 2 * resourceBounds.redisMemoryMb), "MB of memory the cache store may use at most", [1024])),
  labels: nullable(doc(StringMap, "Kubernetes labels of the deployment's pods", [{ team: "agents" }])),
  annotations: nullable(doc(StringMap, "Kubernetes annotations of the deployment's pods", [{ "example.com/owner": "agents" }])),
  service_account_name: nullable(doc(NonEmptyString, "The Kubernetes service account the pods run as", ["agent"])),
  image_pull_secrets: nullable(Schema.Array(LocalObjectReference)),
  volumes: nullable(Schema.Array(PodVolume)),
  volume_mounts: nullable(Schema.Array(PodVolumeMount)),
  init_containers: nullable(Schema.Array(Container)),
  sidecars: nullable(Schema.Array(Container)),
  db_cpu: nullable(DbCpuRequest),
  db_cpu_limit: nullable(DbCpuLimit),
  db_memory_mb: nullable(MemoryRequest),
  db_memory_limit_mb: nullable(MemoryLimit),
  db_storage_gi: nullable(doc(between(1, resourceBounds.dbStorageGi), "GiB of database storage", [10])),
  db_max_connections: nullable(doc(between(1, resourceBounds.dbMaxConnections), "Database connections at most", [100]))
} satisfies Record<QuantityField, Schema.Top> & Record<string, Schema.Top>

/** The resource spec's structure alone, before its cross-field checks. */
const ResourceSpecFields = Schema.Struct(resourceSpecFields)
export type ResourceSpec = typeof ResourceSpecFields.Type

const containerGroups = ["init_containers", "sidecars"] as const

/** Every volume mount, wherever it appears, with the path of its `name`. */
const mountsOf = (spec: ResourceSpec): Array<{ readonly mount: PodVolumeMount; readonly path: ReadonlyArray<string | number> }> => [
  ...(spec.volume_mounts ?? []).map((mount, index) => ({ mount, path: ["volume_mounts", index, "name"] })),
  ...containerGroups.flatMap((group) =>
    // Stryker disable next-line ArrayDeclaration: a placeholder element has no volumeMounts, so it adds no mount
    (spec[group] ?? []).flatMap((container, c) =>
      (container.volumeMounts ?? []).map((mount, index) => ({ mount, path: [group, c, "volumeMounts", index, "name"] }))
    )
  )
]

/** Pod-level rules Kubernetes would otherwise reject at deploy time, reported at request time instead. */
export const podIssues = (spec: ResourceSpec): Array<PathIssue> => {
  // Stryker disable next-line ArrayDeclaration: a placeholder element declares no name a mount could use, and one element has no duplicate
  const volumes = spec.volumes ?? []
  const declared = new Set(volumes.map((volume) => volume.name))
  const containers = containerGroups.flatMap((group) => (spec[group] ?? []).map((container, index) => ({ container, path: [group, index, "name"] })))
  return [
    ...duplicateNames(volumes, (volume) => volume.name, (index) => ["volumes", index, "name"], "volume"),
    // Init containers and sidecars share one pod, so their names share one namespace.
    ...duplicateNames(containers, (entry) => entry.container.name, (index) => containers[index]!.path, "container"),
    ...mountsOf(spec)
      .filter(({ mount }) => !declared.has(mount.name))
      .map(({ mount, path }) => ({ path, message: `Volume mount '${mount.name}' does not name a volume declared in resource_spec.volumes` }))
  ]
}

export const ResourceSpec = ResourceSpecFields.check(objectCheck((spec: ResourceSpec) => [...podIssues(spec), ...resourceSpecIssues(spec)])).annotate({
  identifier: "ResourceSpec"
})

// ---------------------------------------------------------------------------------------------
// Source configuration (spec 2.2, 2.3) and secrets (2.4)

/** `install_command` / `build_command`: refused where the langgraph CLI refuses them (core/builds/commands.ts), since each becomes a Dockerfile line. */
const buildCommand = (field: "install_command" | "build_command", description: string, examples: ReadonlyArray<string>) =>
  Schema.String.annotate({ description: `${description}; the characters the langgraph CLI refuses (" \` \\ | ; $ < >, a lone &, control characters) are refused`, examples }).check(
    ruleOf((command: string) => buildCommandProblem(field, command))
  )

export const ListenerConfig = Schema.Struct({ k8s_namespace: nullable(DnsLabel) }).annotate({ identifier: "ListenerConfig" })
export type ListenerConfig = typeof ListenerConfig.Type

export const SourceConfig = Schema.Struct({
  integration_id: nullable(Uuid),
  repo_url: nullable(RepoUrl),
  deployment_type: nullable(doc(DeploymentType, "The deployment's tier")),
  build_on_push: nullable(doc(Schema.Boolean, "Build a new revision on every push to repo_ref (gitrepo)", [true])),
  custom_url: nullable(doc(HttpUrl, "The URL the deployment answers at (http or https)", ["https://agent.example.com"])),
  resource_spec: nullable(ResourceSpec),
  listener_id: nullable(Uuid),
  listener_config: nullable(ListenerConfig),
  install_command: nullable(
    buildCommand("install_command", "Shell command that installs a JS deployment's dependencies, run from the repository root (gitrepo, internal_source)", ["pnpm install --frozen-lockfile"])
  ),
  build_command: nullable(buildCommand("build_command", "Shell command that builds a JS deployment after install, run where langgraph.json lives (gitrepo, internal_source)", ["pnpm run build"]))
}).annotate({ identifier: "SourceConfig" })
export type SourceConfig = typeof SourceConfig.Type
export type SourceConfigField = keyof typeof SourceConfig.fields

export const SourceRevisionConfig = Schema.Struct({
  repo_ref: nullable(RepoRef),
  graph_config_path: nullable(RepoPath),
  image_uri: nullable(ImageReference),
  repo_commit_sha: nullable(doc(Schema.String, "The commit built (answered; set by a push or a build)", ["4b825dc642cb6eb9a060e54bf8d69288fbee4904"])),
  source_tarball_path: nullable(
    doc(
      NonEmptyString,
      "The object_path of a source tarball uploaded to this deployment's upload URL (POST /v2/deployments/{id}/upload-url); internal_source",
      ["uploads/00000000-0000-4000-8000-000000000001/6f1c2a3e-8b0d-4c5e-9f7a-1b2c3d4e5f60/0b5f9a7e-3c1d-4e2f-8a9b-7c6d5e4f3a2b.tar.gz"]
    )
  )
}).annotate({ identifier: "SourceRevisionConfig" })
export type SourceRevisionConfig = typeof SourceRevisionConfig.Type
export type SourceRevisionConfigField = keyof typeof SourceRevisionConfig.fields

/** What responses show instead of a secret's value: secrets are write-only. */
export const secretMask = "********"

export const Secret = Schema.Struct({
  name: doc(NonEmptyString, "The environment variable the secret becomes", ["OPENAI_API_KEY"]),
  value: doc(Schema.String, "The secret's value; write-only: answers show ********", ["sk-..."])
}).annotate({ identifier: "Secret" })
export type Secret = typeof Secret.Type

/** A secrets list: names are unique, since each becomes one environment variable. */
export const Secrets = Schema.Array(Secret).check(
  objectCheck((secrets: ReadonlyArray<Secret>) => duplicateNames(secrets, (secret) => secret.name, (index) => [index, "name"], "secret"))
)

export const maskSecrets = (secrets: ReadonlyArray<Secret>): Array<Secret> => secrets.map(({ name }) => ({ name, value: secretMask }))

// ---------------------------------------------------------------------------------------------
// The real LangSmith API's names (design.md section 11, docs/real-api.md): accepted on input
// beside the spec's and turned into the spec's while decoding, so the server, the OpenAPI
// document and the client all see one normalisation. Answers keep the spec's names.

/** Real source names and the spec source each one means. */
export const sourceAliases = { github: "gitrepo", external_docker: "external_container" } as const

export type RealSourceName = "github" | "external_docker" | "internal_docker" | "internal_source"

/** The names the real API sends for the spec's sources (the client speaks these outward). */
export const realSourceNames: Record<Source, RealSourceName> = {
  gitrepo: "github",
  external_container: "external_docker",
  internal_docker: "internal_docker",
  internal_source: "internal_source"
}

const aliasSource = (name: string): string => (sourceAliases as Record<string, string>)[name] ?? name

const sourceNames = [...sources, "github", "external_docker"] as const

const sourceSchema = (description: string) =>
  Schema.Literals(sourceNames)
    .annotate({ description, examples: ["external_container"] })
    .pipe(
      Schema.decodeTo(
        Source,
        SchemaTransformation.transform<Source, (typeof sourceNames)[number]>({ decode: (name) => aliasSource(name) as Source, encode: (name) => name })
      )
    )

/** A request's `source`: the spec's names or the real API's (`github`, `external_docker`), decoded to the spec's. */
export const SourceInput = sourceSchema(
  "gitrepo (a git repository, built), external_container (a prebuilt image), internal_docker (an image pushed to this server's registry, langgraph deploy) or internal_source (an uploaded source tarball, built: langgraph deploy --remote); the real API's names github and external_docker are accepted too"
)

/** A `source` as answered: Slipway answers the spec's names; the real service's `github` / `external_docker` decode to them. */
export const SourceAnswer = sourceSchema("Where the deployment's code comes from")

/**
 * SourceRevisionConfig as sent: `langgraph_config_path` (the real name) beside
 * `graph_config_path`. Decodes to the spec's SourceRevisionConfig.
 */
const SourceRevisionConfigWire = Schema.Struct({
  ...SourceRevisionConfig.fields,
  // The same grammar as graph_config_path, whatever it becomes.
  langgraph_config_path: SourceRevisionConfig.fields.graph_config_path
})
  .check(
    objectCheck((config: { readonly graph_config_path?: string | null; readonly langgraph_config_path?: string | null }) =>
      config.graph_config_path != null && config.langgraph_config_path != null && config.graph_config_path !== config.langgraph_config_path
        ? [{ path: ["langgraph_config_path"], message: "langgraph_config_path and graph_config_path name the same field: send one, or the same value in both" }]
        : []
    )
  )
  // The component the OpenAPI document shows: what is accepted.
  .annotate({ identifier: "SourceRevisionConfig" })

export const SourceRevisionConfigInput = SourceRevisionConfigWire.pipe(
  Schema.decodeTo(
    Schema.toType(SourceRevisionConfig),
    SchemaTransformation.transform({
      decode: ({ langgraph_config_path, ...rest }: typeof SourceRevisionConfigWire.Type) =>
        (rest.graph_config_path == null && langgraph_config_path != null ? { ...rest, graph_config_path: langgraph_config_path } : rest) as SourceRevisionConfig,
      encode: (config: SourceRevisionConfig) => config
    })
  )
)

/** A listener's version as its agent reports it. */
const ListenerVersion = doc(Schema.String, "The listener agent's version", ["0.4.2"])

/** A free-form label of what a deployment runs, shown in lists and filterable (`?image_version=`). */
const ImageVersion = doc(Schema.String, "A free-form label of the version deployed (e.g. the image tag)", ["1.0.0"])

/** A reference to a Kubernetes Secret (real API, `external_docker` only); see docs/real-api.md for what Slipway does with it. */
export const SecretReference = Schema.Struct({
  name: CIdentifier,
  secret_name: doc(NonEmptyString, "The Kubernetes Secret's name", ["agent-secrets"]),
  secret_key: doc(NonEmptyString, "The key inside that Secret", ["openai-api-key"])
}).annotate({
  identifier: "SecretReference"
})

// ---------------------------------------------------------------------------------------------
// Resources as answered (wire shapes)

export const Deployment = Schema.Struct({
  name: doc(Schema.String, "The deployment's name, unique per tenant", ["my-agent"]),
  source: SourceAnswer,
  source_config: SourceConfig,
  source_revision_config: SourceRevisionConfigInput,
  /** Always masked (`secretMask`) in responses. */
  secrets: Schema.Array(Secret),
  id: Uuid,
  /** The owning tenant (real API field); Slipway always answers it. */
  tenant_id: Schema.optionalKey(Uuid),
  created_at: Timestamp,
  updated_at: Timestamp,
  status: doc(DeploymentStatus, "The deployment's own state (its revisions have theirs)"),
  latest_revision_id: Schema.NullOr(Uuid),
  active_revision_id: Schema.NullOr(Uuid),
  image_version: nullable(ImageVersion)
}).annotate({ identifier: "Deployment" })
export type Deployment = typeof Deployment.Type

export const Revision = Schema.Struct({
  id: Uuid,
  created_at: Timestamp,
  updated_at: Timestamp,
  status: doc(RevisionStatus, "Where the revision is in its build and deploy; DEPLOYED when it serves"),
  source: SourceAnswer,
  /** The values of this revision (not of the deployment's latest one). */
  source_revision_config: SourceRevisionConfigInput,
  // Not in the real API's Revision: optional so its answers decode too.
  deployment_id: Schema.optionalKey(Uuid),
  status_message: Schema.optionalKey(Schema.NullOr(doc(Schema.String, "Why the revision failed, or what it is doing; null when there is nothing to say", ["pulling ghcr.io/acme/agent:1.0"])))
}).annotate({ identifier: "Revision" })
export type Revision = typeof Revision.Type

export const ComputeConfig = Schema.Struct({
  // Nullable as in the real API: a listener may be registered before its namespaces are known.
  k8s_namespaces: nullable(
    Schema.Array(DnsLabel).check(
      rule((namespaces: ReadonlyArray<string>) => namespaces.length > 0, "List should have at least 1 item", "too_short"),
      objectCheck((namespaces: ReadonlyArray<string>) => duplicateNames(namespaces, (name) => name, (index) => [index], "namespace"))
    )
  )
}).annotate({ identifier: "ComputeConfig" })

/** The real API's user-assigned id of the compute a listener runs on (e.g. the cluster name): unique per tenant. */
export const ComputeId = NonEmptyString.check(rule((s: string) => s.length <= 255, "String should have at most 255 characters", "string_too_long", { maxLength: 255 })).annotate({
  description: "The user-assigned id of the compute the listener runs on (e.g. the cluster name); unique per tenant",
  examples: ["prod-cluster"]
})

export const ComputeType = Schema.Literal("k8s")

export const Listener = Schema.Struct({
  id: Uuid,
  compute_type: doc(ComputeType, "The kind of compute: k8s"),
  /** Defaults to the listener's id when not given on create. */
  compute_id: Schema.optionalKey(doc(Schema.String, "The user-assigned id of the compute the listener runs on (e.g. the cluster name)", ["prod-cluster"])),
  version: Schema.optionalKey(Schema.NullOr(ListenerVersion)),
  compute_config: ComputeConfig,
  created_at: Timestamp,
  updated_at: Timestamp
}).annotate({ identifier: "Listener" })
export type Listener = typeof Listener.Type

export const Integration = Schema.Struct({
  id: Uuid,
  /** The git host; "github" for every integration today. */
  provider: doc(Schema.String, "The git host", ["github"]),
  /** The account or organization the integration was installed on. */
  owner: doc(Schema.String, "The account or organization the integration was installed on", ["acme"]),
  installed_at: Timestamp
}).annotate({ identifier: "Integration" })
export type Integration = typeof Integration.Type

/** `GET /v1/integrations/gitrepo/install`: the tenant's integrations and where to add another. */
export const IntegrationInstall = Schema.Struct({
  integrations: Schema.Array(Integration),
  install_url: doc(Schema.String, "Where to install another integration", ["https://github.com/apps/slipway/installations/new"])
}).annotate({ identifier: "IntegrationInstall" })
export type IntegrationInstall = typeof IntegrationInstall.Type

/** The tracing project (session) created with each deployment, under the deployment's name. */
export const TracingProject = Schema.Struct({
  id: Uuid,
  name: doc(Schema.String, "The tracing project's name: its deployment's name", ["my-agent"]),
  created_at: Timestamp
}).annotate({ identifier: "TracingProject" })
export type TracingProject = typeof TracingProject.Type

const listOf = <S extends Schema.Top>(item: S) => Schema.Struct({ resources: Schema.Array(item), offset: Int })

export const DeploymentList = listOf(Deployment)
export const RevisionList = listOf(Revision)
export const ListenerList = listOf(Listener)

// ---------------------------------------------------------------------------------------------
// Request bodies

export const CreateDeployment = Schema.Struct({
  name: DeploymentName,
  source: SourceInput,
  source_config: nullable(SourceConfig),
  source_revision_config: nullable(SourceRevisionConfigInput),
  secrets: nullable(Secrets),
  /** Real API field; accepted and not stored (docs/real-api.md). */
  secret_references: nullable(Schema.Array(SecretReference)),
  image_version: nullable(ImageVersion)
}).annotate({ identifier: "CreateDeployment" })
export type CreateDeployment = typeof CreateDeployment.Type

/**
 * Every field optional; null means "leave as is". `name` and `source` are accepted only with
 * their current values (idempotent apply), so they are plain strings here: the immutability
 * rule in rules.ts gives the useful message, not a pattern mismatch.
 */
export const PatchDeployment = Schema.Struct({
  name: nullable(doc(Schema.String, "Only the deployment's current name is accepted (names cannot change)", ["my-agent"])),
  source: nullable(SourceInput),
  /** Real API field: the source of the revision this PATCH creates; only the deployment's own source is accepted (400 otherwise). */
  revision_source: nullable(SourceInput),
  source_config: nullable(SourceConfig),
  source_revision_config: nullable(SourceRevisionConfigInput),
  secrets: nullable(Secrets),
  /** Real API field; accepted and not stored (docs/real-api.md). */
  secret_references: nullable(Schema.Array(SecretReference)),
  image_version: nullable(ImageVersion)
}).annotate({ identifier: "PatchDeployment" })
export type PatchDeployment = typeof PatchDeployment.Type

/** `POST .../revisions`: always creates a revision from the latest one's values plus these. */
export const CreateRevision = Schema.Struct({
  source_revision_config: nullable(SourceRevisionConfigInput),
  secrets: nullable(Secrets)
}).annotate({ identifier: "CreateRevision" })
export type CreateRevision = typeof CreateRevision.Type

export const CreateListener = Schema.Struct({
  // Only one compute type exists, so it may be left out.
  compute_type: doc(ComputeType, "The kind of compute: k8s (the default)").pipe(Schema.withDecodingDefaultKey(Effect.succeed("k8s" as const))),
  /** Required by the real API; Slipway defaults it to the new listener's id. 409 when the tenant already has it. */
  compute_id: nullable(ComputeId),
  version: nullable(ListenerVersion),
  compute_config: ComputeConfig
}).annotate({ identifier: "CreateListener" })
export type CreateListener = typeof CreateListener.Type

export const PatchListener = Schema.Struct({
  compute_type: nullable(doc(ComputeType, "The kind of compute: k8s")),
  version: nullable(ListenerVersion),
  compute_config: nullable(ComputeConfig)
}).annotate({ identifier: "PatchListener" })
export type PatchListener = typeof PatchListener.Type

/**
 * The part of a GitHub `push` event we use. GitHub sends many more keys (and adds new ones), so
 * unlike our own bodies these objects accept unknown keys.
 */
const openObject = <F extends Schema.Struct.Fields>(fields: F) =>
  Schema.StructWithRest(Schema.Struct(fields), [Schema.Record(Schema.String, Schema.Unknown)])

export const PushEvent = openObject({
  ref: doc(Schema.String, "The pushed ref", ["refs/heads/main"]),
  after: doc(Schema.String, "The commit the ref points to after the push", ["4b825dc642cb6eb9a060e54bf8d69288fbee4904"]),
  deleted: Schema.optionalKey(Schema.Boolean),
  repository: openObject({
    clone_url: doc(Schema.String, "The repository's git URL", ["https://github.com/acme/agent.git"]),
    html_url: doc(Schema.String, "The repository's web page", ["https://github.com/acme/agent"]),
    full_name: doc(Schema.String, "owner/name", ["acme/agent"])
  })
}).annotate({ identifier: "PushEvent" })
export type PushEvent = typeof PushEvent.Type

// ---------------------------------------------------------------------------------------------
// Query strings

/** `a,b,c` → each item decoded by `item`; empty items are dropped so `a,,b` and `a,` work. */
export const CommaSeparated = <S extends Schema.Top>(item: S) =>
  Schema.String.pipe(
    Schema.decodeTo(
      Schema.Array(item),
      SchemaTransformation.transform({
        decode: (text: string) =>
          text
            .split(",")
            .map((part) => part.trim())
            .filter((part) => part.length > 0),
        encode: (items: ReadonlyArray<unknown>) => items.join(",")
      }) as any
    )
  )
