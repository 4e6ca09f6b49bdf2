/**
 * The sandbox runtime's seam, shaped like the deployment one: a driver starts, stops and tears
 * down boxes and reports what it observes (provisioning progress, ready, failed) on the
 * `SandboxObservations` queue, which the controller (`controller.ts`) consumes: it applies the
 * core's box lifecycle (`core/sandboxes/lifecycle.ts`) and persists it. Drivers: `simulated`
 * (boxes are ready at once, nothing runs) and `local` (bubblewrap); `SLIPWAY_RUNTIME` selects one.
 */
import { Context, Data, type Deferred, type Effect, Layer, Queue } from "effect"
import type { BoxEvent } from "../../core/index.ts"
import type { TemplateRecord } from "../store/TemplateStore.ts"

/**
 * A box to bring up: its template (exact quantities) and the volumes it mounts. A box made
 * from a snapshot or the default image gets a template built from its own spec (no mounts).
 */
export interface BoxWork {
  readonly tenantId: string
  readonly sandboxId: string
  readonly name: string
  readonly template: TemplateRecord
  /** The image's manifest digest when known (a ready snapshot's): a driver with an image cache uses that image, not what the tag points at now. */
  readonly imageDigest?: string
  /** The digest is the only source of the image (a captured snapshot's, in no registry): never fall back to pulling `template.image`. */
  readonly digestOnly?: boolean
  readonly volumes: ReadonlyArray<{ readonly volumeId: string; readonly mountPath: string; readonly sizeBytes: bigint }>
  /** Credentials of the tenant's stored registry for the image's host, when one matches (never logged). */
  readonly registryAuth?: { readonly registry: string; readonly username: string; readonly password: string } | undefined
}

/** What the driver saw happen to a box (only `Provisioned`, `Failed` and `Progress` come from drivers). */
export interface BoxObservation {
  readonly sandboxId: string
  readonly event: Extract<BoxEvent, { readonly _tag: "Provisioned" | "Failed" | "Progress" }>
  /** Completed by the controller once it has applied the observation (or found nothing to apply it to), for a driver that waits for that. */
  readonly applied?: Deferred.Deferred<void>
}

/** Where drivers report what they observe, in order; the controller takes from it. */
export class SandboxObservations extends Context.Service<SandboxObservations, Queue.Queue<BoxObservation>>()("slipway/SandboxObservations") {}

export const SandboxObservationsLive = Layer.effect(SandboxObservations, Queue.unbounded<BoxObservation>())

export class SandboxDriver extends Context.Service<
  SandboxDriver,
  {
    readonly name: string
    /**
     * Its volumes live on this replica's disk (the local runtime): with several replicas, a box
     * that mounts one runs where it lives. False where volumes are rows only or reachable from
     * anywhere.
     */
    readonly volumesOnThisReplica: boolean
    /** Brings a box up (new, started again, or resumed after a server restart), in the background: what happens is observed. */
    readonly start: (work: BoxWork) => Effect.Effect<void>
    /** Ends the box's processes (its bring-up too, when still under way); its files are kept for a later start. */
    readonly stop: (sandboxId: string) => Effect.Effect<void>
    /** Ends the box's processes and frees its disk; completes once it is gone. */
    readonly teardown: (sandboxId: string) => Effect.Effect<void>
    /**
     * At start, before any box is started: settles what a previous process on this data
     * directory left (it may have been killed). `owned` says, for each box this server is to
     * run (`"run"`: it is started next, and may be adopted) or to keep (`"keep"`: stopped or
     * failed, its files kept for a later start); anything a previous process left running of
     * the rest is ended, and boxes not in `owned` at all are freed from disk.
     */
    readonly recover: (owned: ReadonlyMap<string, "run" | "keep">) => Effect.Effect<void>
    /** Volumes: real storage of a size, growable (no-ops for a driver without storage). */
    readonly createVolume: (volumeId: string, sizeBytes: bigint) => Effect.Effect<void, VolumeError>
    readonly resizeVolume: (volumeId: string, sizeBytes: bigint) => Effect.Effect<void, VolumeError>
    readonly deleteVolume: (volumeId: string) => Effect.Effect<void, VolumeError>
    /** Snapshots: makes the image available to boxes (pulls it); answers its manifest digest (null without an image store). */
    readonly prepareImage: (image: string, registryAuth?: BoxWork["registryAuth"]) => Effect.Effect<{ readonly digest: string | null }, ImageError>
    /** Captures a running box's filesystem as a new local image; answers its digest (null without an image store). */
    readonly captureBox: (sandboxId: string) => Effect.Effect<{ readonly digest: string | null }, ImageError>
    /** Drops a captured image (its snapshot was deleted); pulled images stay, templates may share them. */
    readonly discardImage: (digest: string) => Effect.Effect<void>
  }
>()("slipway/SandboxDriver") {}

export class ImageError extends Data.TaggedError("ImageError")<{ readonly message: string }> {}

export class VolumeError extends Data.TaggedError("VolumeError")<{ readonly message: string }> {}
