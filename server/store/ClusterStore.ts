/**
 * What the replicas sharing one database know of each other, and which of them runs what
 * (docs/replicas.md): each replica's row (its internal address and a lease it renews while it
 * lives; the database's clock decides expiry), the replica that serves a deployment's active
 * revision, runs a box or holds a volume, and the values every replica must agree on (the secrets
 * key's check value). On PostgreSQL several replicas share it (`shared`); on SQLite one process is
 * the only replica: it runs everything, and only the shared values are stored.
 *
 * The controllers decide with it where work runs; the rows say where, not how (a Kubernetes
 * runtime would keep the same ownership and run the work elsewhere).
 */
import { Context, type Effect } from "effect"
import type { StoreError } from "./StoreError.ts"

export interface ReplicaRecord {
  readonly id: string
  /** Where other replicas reach it (`SLIPWAY_INTERNAL_URL`). */
  readonly internal_url: string
  readonly started_at: string
  readonly lease_until: string
  /** Its lease had not expired when read (the database's clock). */
  readonly alive: boolean
}

/** A box as ownership sees it: its state and the replica that runs it (null: none yet). */
export interface BoxOwnership {
  readonly id: string
  readonly tenant_id: string
  readonly status: string
  readonly replica_id: string | null
  /** That replica's row (undefined when it is gone). */
  readonly replica: ReplicaRecord | undefined
}

/** A volume and the replica whose disk holds it. */
export interface VolumeHolder {
  readonly volume_id: string
  readonly replica_id: string | null
  readonly replica: ReplicaRecord | undefined
}

export interface DeploymentRef {
  readonly tenant_id: string
  readonly deployment_id: string
}

/** A deployment another replica serves: enough to route its URL there. */
export interface RemoteDeployment extends DeploymentRef {
  readonly name: string
  readonly custom_url: string | null
  readonly replica: ReplicaRecord
}

export class ClusterStore extends Context.Service<
  ClusterStore,
  {
    /** Several replicas may share this database (PostgreSQL): ownership applies. */
    readonly shared: boolean
    /** Records (or renews) a replica with its address and a lease of `leaseMs`. */
    readonly register: (replicaId: string, internalUrl: string, leaseMs: number) => Effect.Effect<void, StoreError>
    /** Renews a replica's lease; false when its row is gone. */
    readonly heartbeat: (replicaId: string, leaseMs: number) => Effect.Effect<boolean, StoreError>
    readonly replica: (replicaId: string) => Effect.Effect<ReplicaRecord | undefined, StoreError>
    /** Live replicas (their lease not expired). */
    readonly liveReplicas: Effect.Effect<ReadonlyArray<ReplicaRecord>, StoreError>
    /**
     * A previous process on the same data directory (`from`) is dead: what it ran, held and
     * served is `to`'s now, the revisions it leased are free, its row goes. One transaction.
     */
    readonly adopt: (from: string, to: string) => Effect.Effect<void, StoreError>
    /** Removes rows of replicas whose lease expired more than `afterMs` ago and that own nothing any more. */
    readonly forgetDead: (afterMs: number) => Effect.Effect<number, StoreError>

    /** A box's owner (undefined: no such box). */
    readonly boxOwner: (sandboxId: string) => Effect.Effect<BoxOwnership | undefined, StoreError>
    /** Records that `replicaId` runs these boxes. */
    readonly placeBoxes: (sandboxIds: ReadonlyArray<string>, replicaId: string) => Effect.Effect<void, StoreError>
    /** Every box a replica owns, whatever its state. */
    readonly boxesOf: (replicaId: string) => Effect.Effect<ReadonlyArray<BoxOwnership>, StoreError>
    /**
     * Boxes that want to run (`provisioning`, `ready`) on a replica that is gone or whose lease
     * expired; and boxes nobody owns that want to run and did not change for `unplacedAfterMs`
     * (rows written before ownership existed): those have `replica_id` null.
     */
    readonly orphanedBoxes: (unplacedAfterMs: number) => Effect.Effect<ReadonlyArray<BoxOwnership>, StoreError>

    /** Where each of these volumes lives. */
    readonly volumeHolders: (volumeIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<VolumeHolder>, StoreError>
    /** Records that a volume lives on `replicaId`'s disk. */
    readonly holdVolume: (volumeId: string, replicaId: string) => Effect.Effect<void, StoreError>

    /**
     * Makes `replicaId` serve up to `limit` deployments with an active revision that no live
     * replica serves (never assigned, released at a clean stop, or their replica's lease
     * expired): answers them. Two replicas never claim one deployment in the same round.
     */
    readonly claimDeployments: (replicaId: string, limit: number) => Effect.Effect<ReadonlyArray<DeploymentRef>, StoreError>
    /** `replicaId` serves the deployment from now on (it rolled out or redeployed its active revision). */
    readonly serveDeployment: (tenantId: string, deploymentId: string, replicaId: string) => Effect.Effect<void, StoreError>
    /** The deployments `replicaId` serves (with an active revision, not being deleted). */
    readonly deploymentsOf: (replicaId: string) => Effect.Effect<ReadonlyArray<DeploymentRef>, StoreError>
    /** Gives deployments up (a clean stop): another replica claims them at once. */
    readonly releaseDeployments: (replicaId: string, deploymentIds: ReadonlyArray<string>) => Effect.Effect<void, StoreError>
    /** Deployments other replicas serve, with where those replicas are. */
    readonly remoteDeployments: (replicaId: string) => Effect.Effect<ReadonlyArray<RemoteDeployment>, StoreError>

    /** A value every replica shares, or undefined. */
    readonly setting: (name: string) => Effect.Effect<string | undefined, StoreError>
    /** Stores `value` under `name` unless a value is there; answers the value stored (the first one written wins). */
    readonly initSetting: (name: string, value: string) => Effect.Effect<string, StoreError>
    /** Replaces the value of `name` (a key rotation re-seals it), in the caller's transaction. */
    readonly putSetting: (name: string, value: string) => Effect.Effect<void, StoreError>
  }
>()("slipway/ClusterStore") {}
