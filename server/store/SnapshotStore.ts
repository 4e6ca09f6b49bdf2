/**
 * The sandbox area's snapshots: an image reference (or a captured box) and a filesystem
 * capacity, built by the controller. Calls take the tenant, or an id read under the tenant's
 * filter; a taken name fails with `SandboxConflict`. One Layer per backend; every backend passes
 * `test/store/sandboxStore.suite.ts`.
 */
import { Context } from "effect"
import type { SandboxConflict } from "../../core/index.ts"
import type { StoreOp as Op } from "./StoreError.ts"

export const snapshotStatuses = ["building", "ready", "failed"] as const
export type SnapshotStatus = (typeof snapshotStatuses)[number]

/** A snapshot: an image reference and a filesystem capacity, pulled into the image store. */
export interface SnapshotRecord {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly docker_image: string
  /** The manifest digest the reference resolved to when it was built (null until ready, or on a runtime without images). */
  readonly image_digest: string | null
  readonly fs_capacity_bytes: number
  readonly status: SnapshotStatus
  readonly status_message: string | null
  /** The box a captured snapshot was made from; null for one built from an image reference. */
  readonly source_sandbox_id: string | null
  readonly created_at: string
  readonly updated_at: string
}

export interface SnapshotPage {
  readonly limit: number
  readonly offset: number
  /** Case-insensitive substring of the name. */
  readonly nameContains?: string
  readonly status?: SnapshotStatus
}

export class SnapshotStore extends Context.Service<
  SnapshotStore,
  {
    readonly snapshotById: (tenantId: string, id: string) => Op<SnapshotRecord | undefined>
    readonly snapshotByName: (tenantId: string, name: string) => Op<SnapshotRecord | undefined>
    /** Oldest first. */
    readonly listSnapshots: (tenantId: string, page: SnapshotPage) => Op<ReadonlyArray<SnapshotRecord>>
    readonly insertSnapshot: (snapshot: SnapshotRecord) => Op<void, SandboxConflict>
    /** Moves a snapshot on only if it is still in `from`; `digest` is written when given. */
    readonly setSnapshotStatus: (id: string, from: SnapshotStatus, to: SnapshotStatus, message: string | null, digest: string | null, now: string) => Op<boolean>
    readonly deleteSnapshot: (id: string) => Op<void>
    /** How many sandboxes were made from the snapshot (and still exist). */
    readonly snapshotUsage: (snapshotId: string) => Op<number>
    /** System scan at start: snapshots (any tenant) still building, to build again. */
    readonly buildingSnapshots: () => Op<ReadonlyArray<SnapshotRecord>>
  }
>()("slipway/SnapshotStore") {}
