/** What the sandbox handlers share: records to wire shapes, lookups that refuse, quota, names. */
import { Effect, Result } from "effect"
import {
  emptyProxyConfig,
  fromBytes,
  generateSandboxName,
  parseQuantity,
  type Pool,
  type Quantity,
  type Sandbox,
  SandboxConflict,
  SandboxNotFound,
  type Template,
  toBytes,
  type Volume
} from "../../core/index.ts"
import { ServerEnv } from "../module.ts"
import { SandboxStore, type PoolRecord, type SandboxRecord, type TemplateView, type VolumeRecord } from "../store/SandboxStore.ts"
import { SandboxController } from "./controller.ts"
import { Dataplane } from "./dataplane/Dataplane.ts"
import { SandboxDriver } from "./Driver.ts"
import { effectiveQuota, parseQuota } from "./quota.ts"

export const volumeJson = (record: VolumeRecord): typeof Volume.Encoded => ({
  id: record.id,
  name: record.name,
  size: record.size,
  storage_class: record.storage_class,
  created_at: record.created_at,
  updated_at: record.updated_at
})

export const templateJson = (record: TemplateView): typeof Template.Encoded => ({
  id: record.id,
  name: record.name,
  image: record.image,
  resources: { cpu: record.cpu, memory: record.memory, ...(record.storage !== null ? { storage: record.storage } : {}) },
  volume_mounts: record.mounts.map(({ volume_name, mount_path }) => ({ volume_name, mount_path })),
  proxy_config: record.proxy_config ?? emptyProxyConfig,
  created_at: record.created_at,
  updated_at: record.updated_at
})

export const poolJson = (record: PoolRecord): typeof Pool.Encoded => ({
  id: record.id,
  name: record.name,
  template_name: record.template_name,
  replicas: record.replicas,
  created_at: record.created_at,
  updated_at: record.updated_at
})

export const notFound = (kind: string, name: string) => new SandboxNotFound({ message: `${kind} ${name} not found` })
export const taken = (kind: string, name: string) => new SandboxConflict({ message: `${kind} ${name} already exists` })

export const exactBytes = (quantity: Quantity): bigint => Result.getOrThrow(toBytes(quantity))
/** The stored canonical text back to a quantity (it keeps the format the client wrote). */
export const storedQuantity = (text: string): Quantity => Result.getOrThrow(parseQuantity(text))

/** A record, or the area's NotFound. */
export const found = <A>(kind: string, name: string) => (record: A | undefined) =>
  record === undefined ? Effect.fail(notFound(kind, name)) : Effect.succeed(record)

/**
 * Test hook: holds every quota decision open this long between reading the usage and writing,
 * so the concurrency tests can show that the transaction, not luck, keeps the quota. Never set
 * it in production: it blocks the process for that long on each volume create or resize.
 */
const quotaRaceDelayMs = Number(process.env.SLIPWAY_TEST_QUOTA_DELAY_MS ?? 0) || 0

/**
 * The image of a box created with neither a template nor a snapshot (the real API's "default
 * snapshot"): `SLIPWAY_DEFAULT_SANDBOX_IMAGE`, default `python:3.12-slim`, pulled like any image.
 */
const defaultSandboxImage = process.env.SLIPWAY_DEFAULT_SANDBOX_IMAGE || "python:3.12-slim"

/** Attempts to find a free generated name before giving up (each try has 27^6 ≈ 387M suffixes). */
const nameAttempts = 16

export const makeSandboxShared = Effect.gen(function* () {
  const store = yield* SandboxStore
  const controller = yield* SandboxController
  const dataplane = yield* Dataplane
  const driver = yield* SandboxDriver
  const { config } = yield* ServerEnv

  // Fail at start, not on the first volume request, when the configured default is not a quantity.
  const configuredQuota = parseQuota(config.storageQuota)
  if (Result.isFailure(configuredQuota)) return yield* Effect.die(new Error(`SLIPWAY_STORAGE_QUOTA: ${configuredQuota.failure}`))

  /** The spec's fields, then the current model's only where set (a template box without retention answers the spec's shape). */
  const sandboxJson = (record: SandboxRecord): typeof Sandbox.Encoded => ({
    id: record.id,
    name: record.name,
    template_name: record.template_name,
    pool_name: record.pool_name,
    dataplane_url: dataplane.urlFor(record.id),
    status: record.status,
    status_message: record.status_message,
    created_at: record.created_at,
    updated_at: record.updated_at,
    ...(record.snapshot_id !== null ? { snapshot_id: record.snapshot_id } : {}),
    ...(record.image !== null ? { image: record.image } : {}),
    ...(record.vcpus !== null ? { vcpus: record.vcpus } : {}),
    ...(record.mem_bytes !== null ? { mem_bytes: record.mem_bytes } : {}),
    ...(record.fs_capacity_bytes !== null ? { fs_capacity_bytes: record.fs_capacity_bytes } : {}),
    ...(record.ttl_seconds !== null ? { ttl_seconds: record.ttl_seconds } : {}),
    ...(record.idle_ttl_seconds !== null ? { idle_ttl_seconds: record.idle_ttl_seconds } : {}),
    ...(record.delete_after_stop_seconds !== null ? { delete_after_stop_seconds: record.delete_after_stop_seconds } : {}),
    ...(record.stopped_at !== null ? { stopped_at: record.stopped_at } : {})
  })

  /** Organization usage and quota, read inside the caller's transaction. */
  const storage = Effect.fnUntraced(function* (organizationId: string) {
    const quota = effectiveQuota(yield* store.organizationQuota(organizationId), config.storageQuota)
    const usage = fromBytes(yield* store.organizationUsage(organizationId))
    if (quotaRaceDelayMs > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, quotaRaceDelayMs)
    return { usage, quota: quota.quantity }
  })

  /** A free sandbox name: `<prefix>-<random>`, asked again on the rare clash. */
  const freeSandboxName = Effect.fnUntraced(function* (tenantId: string, prefix: string) {
    for (let attempt = 0; attempt < nameAttempts; attempt++) {
      const candidate = generateSandboxName(prefix, Math.random)
      if (!(yield* store.sandboxNameTaken(tenantId, candidate))) return candidate
    }
    return yield* Effect.die(new Error(`no free sandbox name for prefix ${prefix} after ${nameAttempts} attempts`))
  })

  /** After the commit: bring the new boxes up; with `wait`, answer once they settle (or the timeout passes). */
  const launch = Effect.fnUntraced(function* (tenantId: string, created: ReadonlyArray<SandboxRecord>, wait: { readonly wait_for_ready: boolean; readonly timeout: number }) {
    yield* controller.boxesCreated(created)
    if (!wait.wait_for_ready) return created
    return yield* Effect.forEach(created, (box) =>
      Effect.map(controller.awaitSettled(tenantId, box.id, wait.timeout * 1000), (settled) => settled ?? box)
    )
  })

  return { store, controller, driver, config, sandboxJson, storage, freeSandboxName, launch, defaultSandboxImage }
})

export type SandboxShared = Effect.Success<typeof makeSandboxShared>
