/**
 * Wire shapes of the sandbox area (design.md section 7): what the server answers and what it
 * accepts.
 *
 * Responses carry quantities as strings: the server stores each quantity's canonical text next
 * to its exact integer (design.md section 6) and answers that text (`10Gi`, `500m`), so the
 * response schemas need no transformation. Request bodies decode quantities to exact
 * `Quantity` values (quantity.ts) and names to checked DNS labels (names.ts).
 */
import { Effect, Schema } from "effect"
import { doc, Timestamp, Uuid } from "../api/common.ts"
import { atLeast, atMost, Int, issueTypeKey, rule, ruleOf } from "../api/validation.ts"
import { imageReferenceProblem } from "../deployments/sourceFields.ts"
import { DnsLabel } from "./names.ts"
import { BoxLifecycle } from "./lifecycle.ts"
import { ProxyConfig, ProxyConfigInput } from "./proxy.ts"
import { CpuQuantity, MemoryQuantity, StorageQuantity, VolumeSize } from "./quantity.ts"

/** Defaults a missing key to an encoded (JSON) value, which then decodes like a sent one. */
const withDefault = <S extends Schema.Top>(schema: S, value: S["Encoded"]) => Schema.withDecodingDefaultKey<S>(Effect.succeed(value))(schema)

// ---------------------------------------------------------------------------------------------
// Shared pieces

export const defaultCpu = "500m"
export const defaultMemory = "512Mi"
export const maxPoolReplicas = 100
export const maxWaitSeconds = 3600
export const defaultWaitSeconds = 60

/** Canonical quantity text as the server prints it (`10Gi`, `1536Mi`, `500m`, `2`). */
const QuantityText = Schema.String.annotate({ description: "Kubernetes quantity in canonical form", examples: ["10Gi"] })

const AbsolutePath = Schema.String.check(
  rule((path: string) => path.startsWith("/"), "must be an absolute path (starting with '/')", "value_error"),
  // Mounting over "/" would hide the image's whole filesystem.
  rule((path: string) => !/^\/+$/.test(path), "must not be the root directory", "value_error"),
  rule((path: string) => !path.split("/").includes(".."), "must not contain '..' segments", "value_error")
)

/** An OCI image reference, checked as the deployment area checks `image_uri` (sourceFields.ts). */
export const Image = Schema.String.annotate({ description: "An OCI image reference: [registry[:port]/]repository[:tag][@digest]", examples: ["python:3.12"] }).check(
  rule((image: string) => image.length >= 1, "must be at least 1 character", "string_too_short"),
  ruleOf((image: string) => (image === "" ? undefined : imageReferenceProblem(image, "image")), "value_error")
)

const Replicas = doc(Int.check(atLeast(0)).check(atMost(maxPoolReplicas)), "Ready sandboxes the pool keeps", [2])

/** Seconds to wait for readiness when `wait_for_ready` is true. */
const WaitSeconds = Int.check(atLeast(1)).check(atMost(maxWaitSeconds))

/** `wait_for_ready` (default false) and `timeout` (seconds, default 60) of create requests. */
const waitFields = {
  wait_for_ready: withDefault(doc(Schema.Boolean, "Answer only once the resource is ready (or failed), waiting at most `timeout` seconds", [false]), false),
  timeout: withDefault(doc(WaitSeconds, "Seconds to wait when wait_for_ready is true", [defaultWaitSeconds]), defaultWaitSeconds)
}

/** Why a sandbox failed or what it is waiting for. */
const StatusMessage = Schema.NullOr(doc(Schema.String, "Why the sandbox failed or what it is waiting for; null when there is nothing to say", ["pulling python:3.12"]))

// ---------------------------------------------------------------------------------------------
// Responses

export const VolumeMount = Schema.Struct({
  volume_name: doc(Schema.String, "The mounted volume's name", ["agent-data"]),
  mount_path: doc(Schema.String, "Where the volume appears in the sandbox", ["/data"])
}).annotate({ identifier: "VolumeMount" })

export const TemplateResources = Schema.Struct({
  cpu: QuantityText,
  memory: QuantityText,
  /** Absent when the template sets no ephemeral storage request. */
  storage: Schema.optionalKey(QuantityText)
}).annotate({ identifier: "TemplateResources" })

export const Template = Schema.Struct({
  id: Uuid,
  name: doc(Schema.String, "The template's name, unique per tenant", ["python"]),
  image: doc(Schema.String, "The OCI image sandboxes start from", ["python:3.12"]),
  resources: TemplateResources,
  volume_mounts: Schema.Array(VolumeMount),
  proxy_config: ProxyConfig,
  created_at: Timestamp,
  updated_at: Timestamp
}).annotate({ identifier: "Template" })
export type Template = typeof Template.Type

export const Volume = Schema.Struct({
  id: Uuid,
  name: doc(Schema.String, "The volume's name, unique per tenant", ["agent-data"]),
  size: QuantityText,
  storage_class: doc(Schema.String, "The storage class the volume was provisioned with", ["standard"]),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotate({ identifier: "Volume" })
export type Volume = typeof Volume.Type

export const Pool = Schema.Struct({
  id: Uuid,
  name: doc(Schema.String, "The pool's name, unique per tenant", ["warm-python"]),
  template_name: doc(Schema.String, "The template its sandboxes are made from", ["python"]),
  replicas: doc(Int, "Ready sandboxes the pool keeps", [2]),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotate({ identifier: "Pool" })
export type Pool = typeof Pool.Type

/** How long a box lives on its own, in seconds (0 = never). The client's minute resolution is not required. */
export const maxRetentionSeconds = 10 * 366 * 24 * 3600
const RetentionSeconds = Int.check(atLeast(0)).check(atMost(maxRetentionSeconds))

export const Sandbox = Schema.Struct({
  id: Uuid,
  name: doc(Schema.String, "The sandbox's name, unique per tenant", ["python-x7k2pq"]),
  template_name: doc(Schema.NullOr(Schema.String), "The template the sandbox was made from; null for a box made from a snapshot or the default image", ["python"]),
  /** The pool that created the sandbox; null for one created directly. */
  pool_name: Schema.NullOr(doc(Schema.String, "The pool that created the sandbox; null for one created directly", ["warm-python"])),
  /** Where the box's dataplane answers; null while no runtime that can execute is configured. */
  dataplane_url: Schema.NullOr(
    doc(Schema.String, "Where the sandbox's dataplane answers (run commands, files); null while no runtime that can execute is configured", [
      "http://127.0.0.1:8080/sandboxes/6f1c2a3e-8b0d-4c5e-9f7a-1b2c3d4e5f60"
    ])
  ),
  status: doc(BoxLifecycle, "The sandbox's lifecycle state; ready when commands can run"),
  /** Why the sandbox failed or what it is waiting for; null when there is nothing to say. */
  status_message: StatusMessage,
  created_at: Timestamp,
  updated_at: Timestamp,
  // The current sandbox model (docs/sandboxes.md, "Snapshots"): present only when set, so a box
  // made from a template answers the spec's shape.
  /** The snapshot the box was made from. */
  snapshot_id: Schema.optionalKey(Uuid),
  /** The image the box runs (a snapshot's, or the server's default): boxes without a template. */
  image: Schema.optionalKey(doc(Schema.String, "The image the box runs (a snapshot's, or the server's default); absent for a box made from a template", ["python:3.12-slim"])),
  vcpus: Schema.optionalKey(Int),
  mem_bytes: Schema.optionalKey(Int),
  fs_capacity_bytes: Schema.optionalKey(Int),
  ttl_seconds: Schema.optionalKey(Int),
  idle_ttl_seconds: Schema.optionalKey(Int),
  delete_after_stop_seconds: Schema.optionalKey(Int),
  /** When the box stopped (only while it is stopped). */
  stopped_at: Schema.optionalKey(Timestamp)
}).annotate({ identifier: "Sandbox" })
export type Sandbox = typeof Sandbox.Type

export const BoxStatusValue = BoxLifecycle
export type BoxStatusValue = BoxLifecycle

export const BoxStatus = Schema.Struct({
  status: doc(BoxStatusValue, "The sandbox's lifecycle state; ready when commands can run"),
  /** Why the sandbox failed or what it is waiting for; null when there is nothing to say. */
  status_message: StatusMessage
}).annotate({ identifier: "BoxStatus" })
export type BoxStatus = typeof BoxStatus.Type

export const TemplateList = Schema.Struct({ templates: Schema.Array(Template), offset: Int }).annotate({ identifier: "TemplateList" })
export const VolumeList = Schema.Struct({ volumes: Schema.Array(Volume), offset: Int }).annotate({ identifier: "VolumeList" })
export const PoolList = Schema.Struct({ pools: Schema.Array(Pool), offset: Int }).annotate({ identifier: "PoolList" })
export const SandboxList = Schema.Struct({ sandboxes: Schema.Array(Sandbox), offset: Int }).annotate({ identifier: "SandboxList" })

// ---------------------------------------------------------------------------------------------
// Requests

export const VolumeMountInput = Schema.Struct({ volume_name: DnsLabel, mount_path: doc(AbsolutePath, "An absolute path in the sandbox, not / and without '..'", ["/data"]) }).annotate({ identifier: "VolumeMountInput" })

/**
 * Two mounts at one path would shadow each other, and one volume mounted twice is almost
 * certainly a typo; each duplicate is reported at its own index.
 */
const uniqueMounts = Schema.makeFilter<ReadonlyArray<{ readonly volume_name: string; readonly mount_path: string }>>(
  (mounts) =>
    mounts.flatMap((mount, index) => {
      const before = mounts.slice(0, index)
      return [
        ...(before.some((other) => other.mount_path === mount.mount_path) ? [{ path: [index, "mount_path"], issue: `duplicate mount path '${mount.mount_path}'` }] : []),
        ...(before.some((other) => other.volume_name === mount.volume_name) ? [{ path: [index, "volume_name"], issue: `volume '${mount.volume_name}' is already mounted` }] : [])
      ]
    }),
  { [issueTypeKey]: "value_error" } as any
)

export const TemplateResourcesInput = Schema.Struct({
  cpu: withDefault(CpuQuantity, defaultCpu),
  memory: withDefault(MemoryQuantity, defaultMemory),
  storage: Schema.optionalKey(StorageQuantity)
}).annotate({ identifier: "TemplateResourcesInput" })

export const CreateTemplate = Schema.Struct({
  name: DnsLabel,
  image: Image,
  resources: withDefault(TemplateResourcesInput, {}),
  volume_mounts: withDefault(Schema.Array(VolumeMountInput).check(uniqueMounts), []),
  proxy_config: withDefault(ProxyConfigInput, {})
}).annotate({ identifier: "CreateTemplate" })
export type CreateTemplate = typeof CreateTemplate.Type

/** Only the name of a template changes; its build settings are what its sandboxes were made from. */
export const PatchTemplate = Schema.Struct({ name: DnsLabel }).annotate({ identifier: "PatchTemplate" })

export const CreateVolume = Schema.Struct({
  name: DnsLabel,
  size: VolumeSize,
  /** Omitted → the server's default class (see `resolveStorageClass`). */
  storage_class: Schema.optionalKey(doc(Schema.String, "One of the server's storage classes (SLIPWAY_STORAGE_CLASSES); omitted: the first", ["standard"])),
  ...waitFields
}).annotate({ identifier: "CreateVolume" })
export type CreateVolume = typeof CreateVolume.Type

export const PatchVolume = Schema.Struct({
  name: Schema.optionalKey(DnsLabel),
  size: Schema.optionalKey(VolumeSize)
}).annotate({ identifier: "PatchVolume" })
export type PatchVolume = typeof PatchVolume.Type

export const CreatePool = Schema.Struct({
  name: DnsLabel,
  template_name: DnsLabel,
  replicas: Replicas,
  ...waitFields
}).annotate({ identifier: "CreatePool" })
export type CreatePool = typeof CreatePool.Type

export const PatchPool = Schema.Struct({
  name: Schema.optionalKey(DnsLabel),
  replicas: Schema.optionalKey(Replicas)
}).annotate({ identifier: "PatchPool" })
export type PatchPool = typeof PatchPool.Type

/** Bounds of a box's own resources (boxes made without a template). */
export const maxVcpus = 64
export const minMemBytes = 64 * 1024 * 1024
export const maxMemBytes = 256 * 1024 ** 3
export const minFsCapacityBytes = 16 * 1024 * 1024
export const maxFsCapacityBytes = 1024 ** 4
export const defaultVcpus = 1
export const defaultMemBytes = 512 * 1024 * 1024

export const Vcpus = Int.check(atLeast(1)).check(atMost(maxVcpus))
export const MemBytes = Int.check(atLeast(minMemBytes)).check(atMost(maxMemBytes))
export const FsCapacityBytes = Int.check(atLeast(minFsCapacityBytes)).check(atMost(maxFsCapacityBytes))

/** The retention fields of create and PATCH; `null` means "not set", as in the real API. */
const retentionFields = {
  ttl_seconds: Schema.optionalKey(Schema.NullOr(doc(RetentionSeconds, "Delete the box this many seconds after it was created (0 or null: never)", [3600]))),
  idle_ttl_seconds: Schema.optionalKey(
    Schema.NullOr(doc(RetentionSeconds, "Stop the box after this many seconds without a dataplane request (0 or null: never)", [900]))
  ),
  delete_after_stop_seconds: Schema.optionalKey(
    Schema.NullOr(doc(RetentionSeconds, "Delete the box this many seconds after it stopped (0 or null: never)", [86400]))
  )
}

/**
 * A box from a template (the spec), or, in the current sandbox model, from a snapshot
 * (`snapshot_id` or `snapshot_name`) or the server's default image when none is given. At most
 * one of `template_name`, `snapshot_id`, `snapshot_name` (the handler answers 400 otherwise).
 */
export const CreateBox = Schema.Struct({
  template_name: Schema.optionalKey(DnsLabel),
  snapshot_id: Schema.optionalKey(Schema.NullOr(Uuid)),
  /** `name` or `name:tag`; a bare name also finds `name:latest`. */
  snapshot_name: Schema.optionalKey(
    Schema.NullOr(
      doc(Schema.String, "The snapshot to make the box from, by name (`name` or `name:tag`; a bare name also finds `name:latest`)", ["python-tools:v1"]).check(
        rule((text: string) => text.length >= 1 && text.length <= 255, "must be 1 to 255 characters", "string_too_long")
      )
    )
  ),
  /** Omitted → generated from the template name (`generateSandboxName`), or `sandbox-…`. */
  name: Schema.optionalKey(DnsLabel),
  /** Resources of a box made without a template (a template sets its own: these are then refused). */
  vcpus: Schema.optionalKey(Schema.NullOr(doc(Vcpus, "CPUs of a box made without a template (default 1)", [2]))),
  mem_bytes: Schema.optionalKey(Schema.NullOr(doc(MemBytes, "Memory of a box made without a template, in bytes (default 512 MiB)", [1073741824]))),
  fs_capacity_bytes: Schema.optionalKey(
    Schema.NullOr(doc(FsCapacityBytes, "Size of the writable filesystem of a box made without a template, in bytes (at least its snapshot's)", [4294967296]))
  ),
  ...retentionFields,
  ...waitFields
}).annotate({ identifier: "CreateBox" })
export type CreateBox = typeof CreateBox.Type

/** The display name and the retention settings; a PATCH with none of them answers the box unchanged. */
export const PatchBox = Schema.Struct({ name: Schema.optionalKey(DnsLabel), ...retentionFields }).annotate({ identifier: "PatchBox" })
export type PatchBox = typeof PatchBox.Type

/** The `{name}` path parameter of every sandbox-area item endpoint. */
export const NameParams = Schema.Struct({ name: doc(Schema.String, "The resource's name (names are DNS-1123 labels; any other text is simply not found)", ["my-sandbox"]) })
