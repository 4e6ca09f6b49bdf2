/**
 * The box runner of the local runtime: boxes under bubblewrap.
 *
 * A box = an image rootfs (read-only) + its own writable layer (kernel overlayfs; upper/work on a
 * per-box ext4 image loop-mounted, so `storageBytes` is a hard cap) + new user, mount, pid, ipc,
 * uts, net and cgroup namespaces (`bwrap --unshare-all`) + a cgroup with its limits. Box root is an
 * unprivileged host uid of its own (bwrap runs under `setpriv --reuid`), so even a process that got
 * out of every namespace would hold no host privilege. An init (`busybox sleep`) keeps the
 * namespaces alive; commands join them through the box's exec helper (or `nsenter`).
 * See docs/runtime-isolation.md and docs/runtime-local.md.
 *
 * A running box lives in a `Scope`: `start` acquires each part (the layer's loop mount, the
 * id-mapped image and volumes, the overlay, the cgroup, the init, the exec helper) with its release
 * registered right after it succeeds, so closing the scope (a stop, an interruption, a failure
 * half-way) undoes exactly what was done, in reverse order. The box's files stay on disk until
 * `destroy`.
 */
import { Context, Data, type Effect, type Scope } from "effect"
import type { BoxProcess, ExecOptions, ShellCommand } from "../BoxProcess.ts"
import type { LimitsMode, Resources } from "./cgroups.ts"

export type { LimitsMode, Resources } from "./cgroups.ts"

export class BoxError extends Data.TaggedError("BoxError")<{ readonly message: string }> {}

export interface BoxVolume {
  /** Host directory (e.g. `VolumeStore.path(id)`), bound at `mountPath`. */
  readonly hostPath: string
  readonly mountPath: string
  readonly readOnly?: boolean
}

export interface BoxSpec {
  /** [A-Za-z0-9][A-Za-z0-9_.-]{0,99}; names the state dir and the cgroup. */
  readonly id: string
  /** Read-only image root filesystem (a directory on the host). */
  readonly rootfs: string
  readonly env: Readonly<Record<string, string>>
  /** Default working directory of the init and of `exec`; default BOX_HOME. */
  readonly workingDir?: string
  readonly hostname?: string
  /** Cap of the writable layer (default 1 GiB; minimum 8 MiB). A larger value on a later start grows it; a smaller one is ignored. */
  readonly storageBytes?: number
  readonly resources?: Resources
  readonly volumes?: ReadonlyArray<BoxVolume>
  /** Size of the box's tmpfs /tmp (default: a quarter of the memory limit, at most 512 MiB); counts against memory. */
  readonly tmpBytes?: number
  /**
   * "none" (default): the box has only its own loopback. Ports served inside the box on its
   * loopback are reached from the host with `RunningBox.forward(port)` (a bridge), never by
   * sharing the host network.
   */
  readonly network?: "none"
}

export interface BoxExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  /** True when the box's scope closed (a stop); false when its init died on its own. */
  readonly expected: boolean
}

/** A host listener forwarding to a port inside a box; closed with the scope it was made in. */
export interface Forward {
  readonly host: string
  readonly port: number
  /**
   * The unix socket the bridge listens on (root only): a connection to it reaches the box's port
   * without the host port's hop through this process (the deployment proxy dials it).
   */
  readonly socketPath: string
}

export interface RunningBox {
  readonly id: string
  readonly spec: BoxSpec
  /** Host pid of the box's pid 1 (its init). */
  readonly pid: number
  /** The host uid that box root is mapped to. */
  readonly hostUid: number
  /** Host path of the box's root filesystem as the box sees it (image + writable layer, the overlay); mounted while the box runs. */
  readonly filesystem: string
  /** Completes when the box's init has exited (its scope closed, or it died). */
  readonly exited: Effect.Effect<BoxExit>
  /** True until the init exits. */
  readonly isRunning: () => boolean
  /** Runs argv inside the box (its namespaces, root filesystem and cgroup); the command is killed when the scope closes. */
  readonly exec: (argv: ReadonlyArray<string>, options?: ExecOptions) => Effect.Effect<BoxProcess, BoxError, Scope.Scope>
  /** A shell command with the launcher's rules (`shellLaunchArgv`), in one exec when the box has its exec helper. */
  readonly execShell: (command: ShellCommand, options?: ExecOptions) => Effect.Effect<BoxProcess, BoxError, Scope.Scope>
  /**
   * Listens on the host (default 127.0.0.1, a free port) and forwards each connection to
   * 127.0.0.1:`port` inside the box's own network namespace; closed when the scope closes.
   */
  readonly forward: (port: number, options?: { readonly host?: string; readonly hostPort?: number }) => Effect.Effect<Forward, BoxError, Scope.Scope>
}

export class BoxRunner extends Context.Service<
  BoxRunner,
  {
    readonly limitsMode: LimitsMode
    /** How exec runs commands: "helper" (the per-box exec helper) or "nsenter" (a host spawn per command, with why). */
    readonly execMode: { readonly mode: "helper" | "nsenter"; readonly reason?: string }
    /** Starts a box; it runs until the scope closes, which ends it and keeps its files. */
    readonly start: (spec: BoxSpec) => Effect.Effect<RunningBox, BoxError, Scope.Scope>
    /** Adopts box `id` when its init still runs (left by a previous server process); it then runs until the scope closes. */
    readonly attach: (id: string) => Effect.Effect<RunningBox | undefined, BoxError, Scope.Scope>
    /**
     * After a restart: cleans what boxes that are no longer running left (mounts, cgroups, loop
     * devices) and answers which boxes on disk still run (to `attach` or end) and which are stopped.
     */
    readonly recover: Effect.Effect<{ readonly running: ReadonlyArray<BoxSpec>; readonly stopped: ReadonlyArray<BoxSpec> }, BoxError>
    /** Stored specs of every box on disk (running or not). */
    readonly list: Effect.Effect<ReadonlyArray<BoxSpec>>
    /** Frees the disk of a box that is not running here (one a previous process left running is ended first). */
    readonly destroy: (id: string) => Effect.Effect<void, BoxError>
  }
>()("slipway/BoxRunner") {}
