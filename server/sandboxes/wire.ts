/** The sandbox area's records as the API answers them, its lookups that refuse, and its exact quantities. */
import { Effect, Result } from "effect"
import {
  emptyProxyConfig,
  parseQuantity,
  type Pool,
  type Quantity,
  SandboxConflict,
  SandboxNotFound,
  type Template,
  toBytes,
  type Volume
} from "../../core/index.ts"
import type { PoolRecord } from "../store/PoolStore.ts"
import type { TemplateView } from "../store/TemplateStore.ts"
import type { VolumeRecord } from "../store/SandboxVolumeStore.ts"

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
