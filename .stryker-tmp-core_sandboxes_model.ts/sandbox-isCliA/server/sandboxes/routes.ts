/**
 * Handlers of /v2/sandboxes. Each one reads state through the repository, asks the core
 * (core/sandboxes/rules.ts) what to do, and writes the answer; the server adds no rules of its
 * own. Work that must hold from decision to write (quota, name uniqueness, in-use checks) runs
 * in one `BEGIN IMMEDIATE` transaction, which also serializes against other server processes
 * on the same database file.
 *
 * Local runtime: sandboxes are ready as soon as they are created, so `wait_for_ready` and
 * `timeout` are accepted and validated but there is never anything to wait for.
 */
// @ts-nocheck

import { randomUUID } from "node:crypto"
import { Effect, Result } from "effect"
import {
  type ApiError,
  Api,
  checkBoxTemplate,
  checkPoolTemplate,
  checkTemplateDeletable,
  checkTemplateVolumes,
  checkVolumeCreate,
  checkVolumeDeletable,
  emptyProxyConfig,
  formatQuantity,
  fromBytes,
  generateSandboxName,
  Pagination,
  parseQuantity,
  planPoolDeletion,
  planPoolScale,
  planVolumeResize,
  type Quantity,
  resolveStorageClass,
  SandboxConflict,
  SandboxNotFound,
  sandboxPage,
  toBytes,
  toMillis
} from "../../core/index.ts"
import type { Sandbox, Template, Volume, Pool } from "../../core/index.ts"
import { implement, type ServerContext, sql } from "../module.ts"
import type { Route } from "../http/app.ts"
import { effectiveQuota, parseQuota } from "./quota.ts"
import {
  isUniqueViolation,
  makeSandboxRepository,
  parseMounts,
  type PoolRow,
  type SandboxRepository,
  type SandboxRow,
  type TemplateRow,
  type TemplateView,
  type VolumeRow
} from "./repository.ts"
import { orRefuse, refusable, refuse } from "../refusal.ts"

// ---------------------------------------------------------------------------------------------
// Rows → wire shapes

const volumeJson = (row: VolumeRow): typeof Volume.Encoded => ({
  id: row.id,
  name: row.name,
  size: row.size,
  storage_class: row.storage_class,
  created_at: row.created_at,
  updated_at: row.updated_at
})

const templateJson = (row: TemplateView): typeof Template.Encoded => ({
  id: row.id,
  name: row.name,
  image: row.image,
  resources: { cpu: row.cpu, memory: row.memory, ...(row.storage !== null ? { storage: row.storage } : {}) },
  volume_mounts: parseMounts(row.mounts).map(({ volume_name, mount_path }) => ({ volume_name, mount_path })),
  proxy_config: row.proxy_config === null ? emptyProxyConfig : JSON.parse(row.proxy_config),
  created_at: row.created_at,
  updated_at: row.updated_at
})

const poolJson = (row: PoolRow): typeof Pool.Encoded => ({
  id: row.id,
  name: row.name,
  template_name: row.template_name,
  replicas: row.replicas,
  created_at: row.created_at,
  updated_at: row.updated_at
})

const sandboxJson =
  (publicUrl: string) =>
  (row: SandboxRow): typeof Sandbox.Encoded => ({
    id: row.id,
    name: row.name,
    template_name: row.template_name,
    pool_name: row.pool_name,
    dataplane_url: `${publicUrl}/sandboxes/${row.id}`,
    created_at: row.created_at,
    updated_at: row.updated_at
  })

// ---------------------------------------------------------------------------------------------
// Transactions that can refuse

const now = () => new Date().toISOString()

const notFound = (kind: string, name: string) => new SandboxNotFound({ message: `${kind} ${name} not found` })
const taken = (kind: string, name: string) => new SandboxConflict({ message: `${kind} ${name} already exists` })

const exactBytes = (quantity: Quantity): bigint => Result.getOrThrow(toBytes(quantity))
/** The stored canonical text back to a quantity (it keeps the format the client wrote). */
const storedQuantity = (text: string): Quantity => Result.getOrThrow(parseQuantity(text))

/**
 * Test hook: holds every quota decision open this long between reading the usage and writing,
 * so the concurrency tests can show that the transaction, not luck, keeps the quota. Never set
 * it in production: it blocks the process for that long on each volume create or resize.
 */
const quotaRaceDelayMs = Number(process.env.SLIPWAY_TEST_QUOTA_DELAY_MS ?? 0) || 0

/** Attempts to find a free generated name before giving up (each try has 27^6 ≈ 387M suffixes). */
const nameAttempts = 16

export const sandboxRoutes = (context: ServerContext): ReadonlyArray<Route> => {
  const repository: SandboxRepository = makeSandboxRepository(context.db)
  const { config, publicUrl } = context
  const toSandbox = sandboxJson(publicUrl)

  // Fail at start, not on the first volume request, when the configured default is not a quantity.
  const configuredQuota = parseQuota(config.storageQuota)
  if (Result.isFailure(configuredQuota)) throw new Error(`SLIPWAY_STORAGE_QUOTA: ${configuredQuota.failure}`)

  /**
   * Runs `work` in one BEGIN IMMEDIATE transaction. A `Refusal` rolls back and answers its
   * error; a UNIQUE violation (a name taken by a concurrent writer between check and write,
   * which IMMEDIATE makes impossible within SQLite but the index still guards) answers
   * `onUnique`; anything else is a defect (500, or 503 when the database stays busy).
   */
  const transact = <A>(work: () => A, onUnique: () => ApiError): Effect.Effect<A, ApiError> =>
    refusable(
      () => repository.immediate(work),
      (error) => (isUniqueViolation(error) ? onUnique() : undefined)
    )

  /** A read answered from the database, or NotFound. */
  const read = <R, A>(kind: string, name: string, lookup: () => R | undefined, toJson: (row: R) => A): Effect.Effect<A, ApiError> =>
    Effect.flatMap(sql(lookup), (row) => (row === undefined ? Effect.fail(notFound(kind, name)) : Effect.succeed(toJson(row))))

  /** Organization usage and quota, read inside the caller's transaction. */
  const storage = (organizationId: string) => {
    const quota = effectiveQuota(repository, organizationId, config.storageQuota)
    const usage = fromBytes(repository.organizationUsage(organizationId))
    if (quotaRaceDelayMs > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, quotaRaceDelayMs)
    return { usage, quota: quota.quantity }
  }

  /** A free sandbox name: `<prefix>-<random>`, asked again on the rare clash. */
  const freeSandboxName = (tenantId: string, prefix: string): string => {
    for (let attempt = 0; attempt < nameAttempts; attempt++) {
      const candidate = generateSandboxName(prefix, Math.random)
      if (!repository.sandboxNameTaken(tenantId, candidate)) return candidate
    }
    throw new Error(`no free sandbox name for prefix ${prefix} after ${nameAttempts} attempts`)
  }

  const insertBox = (tenantId: string, name: string, templateId: string, poolId: string | null, at: string) => {
    const id = randomUUID()
    // Local runtime: ready at once.
    repository.insertSandbox({
      id,
      tenant_id: tenantId,
      name,
      template_id: templateId,
      pool_id: poolId,
      status: "ready",
      status_message: null,
      created_at: at,
      updated_at: at
    })
    return id
  }

  return [
    // -------------------------------------------------------------------------------------------
    // Templates

    implement(Api.createTemplate, ({ body }, { auth }) =>
      transact(
        () => {
          const tenantId = auth.tenantId
          const volumes = body.volume_mounts.map((mount) => repository.volumeByName(tenantId, mount.volume_name))
          orRefuse(
            checkTemplateVolumes(
              body.volume_mounts,
              volumes.flatMap((volume) => (volume ? [volume.name] : []))
            )
          )
          if (repository.templateByName(tenantId, body.name)) refuse(taken("template", body.name))
          const at = now()
          const id = randomUUID()
          const { cpu, memory, storage } = body.resources
          repository.insertTemplate({
            id,
            tenant_id: tenantId,
            name: body.name,
            image: body.image,
            cpu_millicores: Result.getOrThrow(toMillis(cpu)),
            cpu: formatQuantity(cpu),
            memory_bytes: exactBytes(memory),
            memory: formatQuantity(memory),
            storage_bytes: storage === undefined ? null : exactBytes(storage),
            storage: storage === undefined ? null : formatQuantity(storage),
            proxy_config: JSON.stringify(body.proxy_config),
            created_at: at,
            updated_at: at,
            mounts: body.volume_mounts.map((mount, index) => ({ volume_id: volumes[index]!.id, mount_path: mount.mount_path }))
          })
          return templateJson(repository.templateByName(tenantId, body.name)!)
        },
        () => taken("template", body.name)
      )
    ),

    implement(Api.listTemplates, ({ query }, { auth }) =>
      sql(() => {
        const page = Pagination.resolve(query, sandboxPage)
        return Pagination.response("templates", repository.listTemplates(auth.tenantId, page).map(templateJson), page)
      })
    ),

    implement(Api.getTemplate, ({ params }, { auth }) =>
      read("template", params.name, () => repository.templateByName(auth.tenantId, params.name), templateJson)
    ),

    implement(Api.updateTemplate, ({ params, body }, { auth }) =>
      transact(
        () => {
          const template = repository.templateByName(auth.tenantId, params.name) ?? refuse(notFound("template", params.name))
          if (body.name !== template.name) {
            if (repository.templateByName(auth.tenantId, body.name)) refuse(taken("template", body.name))
            repository.renameTemplate(template.id, body.name, now())
          }
          return templateJson(repository.templateByName(auth.tenantId, body.name)!)
        },
        () => taken("template", body.name)
      )
    ),

    implement(Api.deleteTemplate, ({ params }, { auth }) =>
      transact(
        () => {
          const template = repository.templateByName(auth.tenantId, params.name) ?? refuse(notFound("template", params.name))
          const usage = repository.templateUsage(template.id)
          orRefuse(checkTemplateDeletable(template.name, usage.sandboxes, usage.pools))
          repository.deleteTemplate(template.id)
        },
        () => notFound("template", params.name)
      )
    ),

    // -------------------------------------------------------------------------------------------
    // Volumes

    implement(Api.createVolume, ({ body }, { auth }) =>
      transact(
        () => {
          const storageClass = orRefuse(resolveStorageClass(body.storage_class, config.storageClasses))
          if (repository.volumeByName(auth.tenantId, body.name)) refuse(taken("volume", body.name))
          const { usage, quota } = storage(auth.organizationId)
          orRefuse(checkVolumeCreate(body.size, usage, quota))
          const at = now()
          const row: VolumeRow = {
            id: randomUUID(),
            tenant_id: auth.tenantId,
            organization_id: auth.organizationId,
            name: body.name,
            size_bytes: exactBytes(body.size),
            size: formatQuantity(body.size),
            storage_class: storageClass,
            created_at: at,
            updated_at: at
          }
          repository.insertVolume(row)
          return volumeJson(row)
        },
        () => taken("volume", body.name)
      )
    ),

    implement(Api.listVolumes, ({ query }, { auth }) =>
      sql(() => {
        const page = Pagination.resolve(query, sandboxPage)
        return Pagination.response("volumes", repository.listVolumes(auth.tenantId, page).map(volumeJson), page)
      })
    ),

    implement(Api.getVolume, ({ params }, { auth }) =>
      read("volume", params.name, () => repository.volumeByName(auth.tenantId, params.name), volumeJson)
    ),

    implement(Api.updateVolume, ({ params, body }, { auth }) =>
      transact(
        () => {
          const volume = repository.volumeByName(auth.tenantId, params.name) ?? refuse(notFound("volume", params.name))
          let next: VolumeRow = volume
          if (body.size !== undefined) {
            const { usage, quota } = storage(auth.organizationId)
            const plan = orRefuse(planVolumeResize({ name: volume.name, size: storedQuantity(volume.size) }, body.size, usage, quota))
            const bytes = exactBytes(plan.size)
            if (bytes !== volume.size_bytes) next = { ...next, size_bytes: bytes, size: formatQuantity(plan.size) }
          }
          if (body.name !== undefined && body.name !== volume.name) {
            if (repository.volumeByName(auth.tenantId, body.name)) refuse(taken("volume", body.name))
            next = { ...next, name: body.name }
          }
          if (next === volume) return volumeJson(volume)
          next = { ...next, updated_at: now() }
          repository.updateVolume(volume, next)
          return volumeJson(next)
        },
        () => taken("volume", body.name ?? params.name)
      )
    ),

    implement(Api.deleteVolume, ({ params }, { auth }) =>
      transact(
        () => {
          const volume = repository.volumeByName(auth.tenantId, params.name) ?? refuse(notFound("volume", params.name))
          orRefuse(checkVolumeDeletable(volume.name, repository.templatesMounting(volume.id)))
          repository.deleteVolume(volume.id)
        },
        () => notFound("volume", params.name)
      )
    ),

    // -------------------------------------------------------------------------------------------
    // Pools

    implement(Api.createPool, ({ body }, { auth }) =>
      transact(
        () => {
          const tenantId = auth.tenantId
          const row = repository.templateByName(tenantId, body.template_name)
          const template = orRefuse(
            checkPoolTemplate(body.template_name, row && { id: row.id, volume_mounts: parseMounts(row.mounts) })
          )
          if (repository.poolByName(tenantId, body.name)) refuse(taken("pool", body.name))
          const at = now()
          const id = randomUUID()
          repository.insertPool({ id, tenant_id: tenantId, name: body.name, template_id: template.id, replicas: body.replicas, created_at: at, updated_at: at })
          const plan = planPoolScale([], body.replicas)
          for (let index = 0; index < plan.create; index++) insertBox(tenantId, freeSandboxName(tenantId, body.name), template.id, id, at)
          return poolJson(repository.poolByName(tenantId, body.name)!)
        },
        () => taken("pool", body.name)
      )
    ),

    implement(Api.listPools, ({ query }, { auth }) =>
      sql(() => {
        const page = Pagination.resolve(query, sandboxPage)
        return Pagination.response("pools", repository.listPools(auth.tenantId, page).map(poolJson), page)
      })
    ),

    implement(Api.getPool, ({ params }, { auth }) => read("pool", params.name, () => repository.poolByName(auth.tenantId, params.name), poolJson)),

    implement(Api.updatePool, ({ params, body }, { auth }) =>
      transact(
        () => {
          const tenantId = auth.tenantId
          const pool = repository.poolByName(tenantId, params.name) ?? refuse(notFound("pool", params.name))
          const name = body.name ?? pool.name
          const replicas = body.replicas ?? pool.replicas
          if (name !== pool.name && repository.poolByName(tenantId, name)) refuse(taken("pool", name))
          if (name === pool.name && replicas === pool.replicas) return poolJson(pool)
          const at = now()
          repository.updatePool(pool, { name, replicas, updated_at: at })
          const boxes = repository.poolSandboxes(pool.id)
          const plan = planPoolScale(
            boxes.map((box) => box.name),
            replicas
          )
          const idByName = new Map(boxes.map((box) => [box.name, box.id]))
          for (const boxName of plan.remove) repository.deleteSandbox(idByName.get(boxName)!)
          for (let index = 0; index < plan.create; index++) insertBox(tenantId, freeSandboxName(tenantId, name), pool.template_id, pool.id, at)
          return poolJson(repository.poolByName(tenantId, name)!)
        },
        () => taken("pool", body.name ?? params.name)
      )
    ),

    implement(Api.deletePool, ({ params }, { auth }) =>
      transact(
        () => {
          const pool = repository.poolByName(auth.tenantId, params.name) ?? refuse(notFound("pool", params.name))
          for (const box of planPoolDeletion(pool, repository.poolSandboxes(pool.id))) repository.deleteSandbox(box.id)
          repository.deletePool(pool.id)
        },
        () => notFound("pool", params.name)
      )
    ),

    // -------------------------------------------------------------------------------------------
    // Sandboxes

    implement(Api.createBox, ({ body }, { auth }) =>
      transact(
        () => {
          const tenantId = auth.tenantId
          const template = orRefuse(checkBoxTemplate(body.template_name, repository.templateByName(tenantId, body.template_name)))
          if (body.name !== undefined && repository.sandboxNameTaken(tenantId, body.name)) refuse(taken("sandbox", body.name))
          const name = body.name ?? freeSandboxName(tenantId, template.name)
          insertBox(tenantId, name, template.id, null, now())
          return toSandbox(repository.sandboxByName(tenantId, name)!)
        },
        () => taken("sandbox", body.name ?? "")
      )
    ),

    implement(Api.listBoxes, ({ query }, { auth }) =>
      sql(() => {
        const page = Pagination.resolve(query, sandboxPage)
        return Pagination.response("sandboxes", repository.listSandboxes(auth.tenantId, page).map(toSandbox), page)
      })
    ),

    implement(Api.getBox, ({ params }, { auth }) => read("sandbox", params.name, () => repository.sandboxByName(auth.tenantId, params.name), toSandbox)),

    implement(Api.updateBox, ({ params, body }, { auth }) =>
      transact(
        () => {
          const box = repository.sandboxByName(auth.tenantId, params.name) ?? refuse(notFound("sandbox", params.name))
          if (body.name === box.name) return toSandbox(box)
          if (repository.sandboxNameTaken(auth.tenantId, body.name)) refuse(taken("sandbox", body.name))
          repository.renameSandbox(box.id, body.name, now())
          return toSandbox(repository.sandboxByName(auth.tenantId, body.name)!)
        },
        () => taken("sandbox", body.name)
      )
    ),

    implement(Api.deleteBox, ({ params }, { auth }) =>
      transact(
        () => {
          const box = repository.sandboxByName(auth.tenantId, params.name) ?? refuse(notFound("sandbox", params.name))
          repository.deleteSandbox(box.id)
        },
        () => notFound("sandbox", params.name)
      )
    ),

    implement(Api.getBoxStatus, ({ params }, { auth }) =>
      read("sandbox", params.name, () => repository.sandboxByName(auth.tenantId, params.name), (box) => ({
        status: box.status,
        status_message: box.status_message
      }))
    )
  ]
}
