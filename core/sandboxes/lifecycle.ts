/**
 * The sandbox (box) lifecycle: the states a box is in and the moves between them. The
 * controller applies these; a runtime driver only reports what it observes.
 *
 *   provisioning ──provisioned──▶ ready ──stop──▶ stopped ──start──▶ provisioning
 *        │  ▲                       │                                   
 *        │  └──────start───── failed ◀──failed── (provisioning or ready)
 *        └──────────── delete (from any state) ──▶ deleting ──▶ (gone)
 */
import { Schema } from "effect"

export const boxLifecycles = ["provisioning", "ready", "failed", "stopped", "deleting"] as const
export const BoxLifecycle = Schema.Literals(boxLifecycles)
export type BoxLifecycle = typeof BoxLifecycle.Type

export type BoxEvent =
  /** The runtime reports the box running and reachable. */
  | { readonly _tag: "Provisioned" }
  /** The runtime reports a failure (pull error, crash, limit), with the reason. */
  | { readonly _tag: "Failed"; readonly message: string }
  /** The runtime reports progress while provisioning ("pulling image", ...). */
  | { readonly _tag: "Progress"; readonly message: string }
  /** A caller asks to stop the box (its files are kept). */
  | { readonly _tag: "Stop" }
  /** A caller asks to start a stopped or failed box. */
  | { readonly _tag: "Start" }
  /** A caller deletes the box (or its pool). */
  | { readonly _tag: "Delete" }
  /** The server restarted: a box that should run is brought up again (until the runtime reports it). */
  | { readonly _tag: "Resume" }

export interface BoxState {
  readonly status: BoxLifecycle
  readonly status_message: string | null
}

/** The state after `event`, or null when the event does not apply in `state` (it is then ignored). */
export const nextBoxState = (state: BoxState, event: BoxEvent): BoxState | null => {
  const { status } = state
  if (status === "deleting") return null
  switch (event._tag) {
    case "Provisioned":
      return status === "provisioning" ? { status: "ready", status_message: null } : null
    case "Failed":
      return status === "provisioning" || status === "ready" ? { status: "failed", status_message: event.message } : null
    case "Progress":
      return status === "provisioning" ? { status, status_message: event.message } : null
    case "Stop":
      return status === "ready" || status === "provisioning" ? { status: "stopped", status_message: null } : null
    case "Start":
      return status === "stopped" || status === "failed" ? { status: "provisioning", status_message: null } : null
    case "Delete":
      return { status: "deleting", status_message: null }
    case "Resume":
      return wantsRunning(status) ? { status: "provisioning", status_message: "restarting after a server restart" } : null
  }
}

/**
 * Why a box failed, as the official clients name it (`LangSmithSandboxCreationError.errorType`):
 * its image could not be pulled, its init exited, or it could not start for another reason.
 */
export const boxFailureKinds = ["ImagePull", "CrashLoop", "SandboxConfig"] as const
export type BoxFailureKind = (typeof boxFailureKinds)[number]

/** What a failed box's `status_message` starts with, per kind: the message says why in words, and the kind can be read back. */
const failurePhrases: Record<BoxFailureKind, string> = {
  ImagePull: "image pull failed",
  CrashLoop: "box exited unexpectedly",
  SandboxConfig: "box could not start"
}

/** The `status_message` of a box that failed for `kind`: its phrase, then the runtime's detail. */
export const boxFailure = (kind: BoxFailureKind, detail: string): string => `${failurePhrases[kind]}: ${detail}`

/** The kind a failed box's `status_message` names (`SandboxConfig` when it names none, e.g. a runtime's own words). */
export const boxFailureKind = (statusMessage: string | null): BoxFailureKind =>
  boxFailureKinds.find((kind) => statusMessage?.startsWith(`${failurePhrases[kind]}:`)) ?? "SandboxConfig"

/** States in which the runtime should have the box's processes running. */
export const wantsRunning = (status: BoxLifecycle): boolean => status === "provisioning" || status === "ready"
