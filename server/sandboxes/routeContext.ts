/**
 * What the sandbox handlers are built from: the stores, the controller and the driver, a box's
 * answer (with its dataplane URL), the quota check, free names, and bringing new boxes up.
 * Built once per server.
 */
import { Effect, Result } from "effect"
import { fromBytes, generateSandboxName, type Sandbox } from "../../core/index.ts"
import { ServerEnv } from "../module.ts"
import { Replicas } from "../replicas/Replicas.ts"
import { ClusterStore } from "../store/ClusterStore.ts"
import { PoolStore } from "../store/PoolStore.ts"
import { QuotaStore } from "../store/QuotaStore.ts"
import { type SandboxRecord, SandboxStore } from "../store/SandboxStore.ts"
import { SnapshotStore } from "../store/SnapshotStore.ts"
import { TemplateStore } from "../store/TemplateStore.ts"
import { Transactions } from "../store/Transactions.ts"
import { SandboxVolumeStore } from "../store/SandboxVolumeStore.ts"
import { SandboxController } from "./controller.ts"
import { Dataplane } from "./dataplane/Dataplane.ts"
import { SandboxDriver } from "./Driver.ts"
import { effectiveQuota, parseQuota } from "./quota.ts"
import { makeVolumeOperations } from "./volumeCalls.ts"

/**
 * The image of a box created with neither a template nor a snapshot (the real API's "default
 * snapshot"): `SLIPWAY_DEFAULT_SANDBOX_IMAGE`, default `python:3.12-slim`, pulled like any image.
 */
const defaultSandboxImage = process.env.SLIPWAY_DEFAULT_SANDBOX_IMAGE || "python:3.12-slim"

/** Attempts to find a free generated name before giving up (each try has 27^6 ≈ 387M suffixes). */
const nameAttempts = 16

export const makeSandboxRouteContext = Effect.gen(function* () {
  const { transaction } = yield* Transactions
  const sandboxStore = yield* SandboxStore
  const volumeStore = yield* SandboxVolumeStore
  const templateStore = yield* TemplateStore
  const poolStore = yield* PoolStore
  const snapshotStore = yield* SnapshotStore
  const quotaStore = yield* QuotaStore
  const controller = yield* SandboxController
  const dataplane = yield* Dataplane
  const driver = yield* SandboxDriver
  const { config, log } = yield* ServerEnv
  const replicas = yield* Replicas
  const cluster = yield* ClusterStore
  /** Grows or deletes a volume on the replica whose disk holds it. */
  const onVolumeHolder = yield* makeVolumeOperations

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
    const quota = effectiveQuota(yield* quotaStore.organizationQuota(organizationId), config.storageQuota)
    const usage = fromBytes(yield* quotaStore.organizationUsage(organizationId))
    return { usage, quota: quota.quantity }
  })

  /** A free sandbox name: `<prefix>-<random>`, asked again on the rare clash. */
  const freeSandboxName = Effect.fnUntraced(function* (tenantId: string, prefix: string) {
    for (let attempt = 0; attempt < nameAttempts; attempt++) {
      const candidate = generateSandboxName(prefix, Math.random)
      if (!(yield* sandboxStore.sandboxNameTaken(tenantId, candidate))) return candidate
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

  return { transaction, sandboxStore, volumeStore, templateStore, poolStore, snapshotStore, controller, driver, config, log, replicas, cluster, onVolumeHolder, sandboxJson, storage, freeSandboxName, launch, defaultSandboxImage }
})

export type SandboxRouteContext = Effect.Success<typeof makeSandboxRouteContext>
