/** What the box runner deals in: specs, running boxes, forwards, exits and errors. */
import type { Duplex, Stream } from "node:stream"
import { Data, type Effect, type Scope } from "effect"
import type { BoxProcess, ExecOptions, ShellCommand } from "../../BoxProcess.ts"
import type { Resources } from "../cgroups.ts"

export type { LimitsMode, Resources } from "../cgroups.ts"

/**
 * What keeps a box's code from the host: `bwrap` (namespaces and cgroups on the host's kernel) or
 * `gvisor` (a gVisor sandbox, `runsc`: the box's system calls served by gVisor's own kernel). See
 * docs/runtime-isolation.md.
 */
export type Isolation = "bwrap" | "gvisor"

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
  /** Default "bwrap". A stopped box may be started again under the other isolation (its files' owners are converted). */
  readonly isolation?: Isolation
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
  readonly isolation: Isolation
  /** Host pid of the box's pid 1 (its init); under gVisor, of the sandbox's kernel (the sentry). */
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
   * Runs argv inside the box with its stdout relayed by a host process straight into `sink` (a
   * socket with a descriptor: a download's client): the bytes never pass through the server's
   * JavaScript, and the box never holds the sink (its stdout is a pipe to the relay). The
   * command's `stdout` is empty; its `stderr` is its own. Only where the host can enter the box
   * (bwrap); a gVisor box's output always streams through the server.
   */
  readonly execInto?: (argv: ReadonlyArray<string>, sink: Stream, options?: ExecOptions) => Effect.Effect<BoxProcess, BoxError, Scope.Scope>
  /**
   * Listens on the host (default 127.0.0.1, a free port) and forwards each connection to
   * 127.0.0.1:`port` inside the box's own network namespace; closed when the scope closes.
   */
  readonly forward: (port: number, options?: { readonly host?: string; readonly hostPort?: number }) => Effect.Effect<Forward, BoxError, Scope.Scope>
  /**
   * A connection to 127.0.0.1:`port` on the box's own loopback (`end` half-closes it, `destroy`
   * closes it); fails when nothing listens there.
   */
  readonly connect: (port: number) => Effect.Effect<Duplex, BoxError>
  /**
   * Serves 127.0.0.1:`port` on the box's loopback: each connection a process of the box makes
   * there is handed to `onConnection`, until the scope closes.
   */
  readonly listen: (port: number, onConnection: (connection: Duplex) => void) => Effect.Effect<void, BoxError, Scope.Scope>
  /** Whether something in the box listens on TCP `port` (any address of the box). */
  readonly listening: (port: number) => Effect.Effect<boolean>
}

