/**
 * The sandbox area's volumes (quantities as exact bigints plus their canonical text). Calls take
 * the tenant, or an id read under the tenant's filter; a taken name fails with `SandboxConflict`.
 * One Layer per backend; every backend passes `test/store/sandboxStore.suite.ts`.
 */
import { Context } from "effect"
import type { Page, SandboxConflict } from "../../core/index.ts"
import type { StoreOp as Op } from "./StoreError.ts"

export interface VolumeRecord {
  readonly id: string
  readonly tenant_id: string
  readonly organization_id: string
  readonly name: string
  readonly size_bytes: bigint
  readonly size: string
  readonly storage_class: string
  readonly created_at: string
  readonly updated_at: string
}

export class SandboxVolumeStore extends Context.Service<
  SandboxVolumeStore,
  {
    readonly volumeByName: (tenantId: string, name: string) => Op<VolumeRecord | undefined>
    readonly listVolumes: (tenantId: string, page: Page) => Op<ReadonlyArray<VolumeRecord>>
    readonly insertVolume: (volume: VolumeRecord) => Op<void, SandboxConflict>
    /** Writes the fields of `after` that differ from `before`. */
    readonly updateVolume: (before: VolumeRecord, after: VolumeRecord) => Op<void, SandboxConflict>
    readonly deleteVolume: (id: string) => Op<void>
    /** Names of the templates that mount the volume. */
    readonly templatesMounting: (volumeId: string) => Op<ReadonlyArray<string>>
    /** The sandboxes (of any template) that mount any of these volumes, oldest first: a volume attaches to one sandbox. */
    readonly volumesAttached: (volumeIds: ReadonlyArray<string>) => Op<ReadonlyArray<{ readonly volume_name: string; readonly sandbox_name: string }>>
  }
>()("slipway/SandboxVolumeStore") {}
