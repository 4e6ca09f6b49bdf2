/**
 * TEMPORARY (issue 26): the Promise API the deployment driver of before the refactor was written
 * against (`LocalHost`, `exposeToBox`, boxes with `stop`/`onExit`), made of the runtime's services.
 * It exists only so that the old `server/deployments/drivers/local.ts` keeps working until its
 * Effect rewrite over `BoxRunner`, `ImageStore`, `Egress` and `PortAllocator` lands (helper B's
 * branch), which deletes this file. Nothing new may use it.
 */
import type { Readable, Writable } from "node:stream"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { type ExecOptions, type ExitStatus, startNow } from "../BoxProcess.ts"
import { type BoxExit, BoxRunner, type BoxSpec, type RunningBox } from "./BoxRunner.ts"
import { Egress, type EgressTarget } from "./egress.ts"
import { ImageStore, type PulledImage } from "./ImageStore.ts"
import { LocalRuntimeLive } from "./LocalRuntime.ts"
import { RuntimeRoot } from "./RuntimeRoot.ts"

export type { BoxVolume } from "./BoxRunner.ts"
export { imageEnvironment, type PulledImage } from "./ImageStore.ts"

export interface BoxProcess {
  readonly pid: number
  readonly stdin: Writable
  readonly stdout: Readable
  readonly stderr: Readable
  readonly kill: (signal?: NodeJS.Signals) => void
  readonly exited: Promise<ExitStatus>
}

export interface Forward {
  readonly host: string
  readonly port: number
  readonly socketPath: string
  readonly close: () => Promise<void>
}

interface LegacyEgress {
  readonly close: () => Promise<void>
}
export type { LegacyEgress as Egress }

export interface LegacyRunningBox {
  readonly id: string
  readonly pid: number
  readonly status: () => "running" | "stopped"
  readonly onExit: (listener: (exit: BoxExit) => void) => void
  readonly exec: (argv: ReadonlyArray<string>, options?: ExecOptions) => BoxProcess
  readonly forward: (port: number, options?: { readonly host?: string; readonly hostPort?: number }) => Promise<Forward>
  readonly expose: (targets: ReadonlyArray<EgressTarget>, socketDir: string) => Promise<LegacyEgress>
  readonly destroy: () => Promise<void>
}
export type { LegacyRunningBox as RunningBox }

export class LocalHost extends Context.Service<
  LocalHost,
  {
    readonly root: string
    readonly images: { readonly pull: (reference: string, options?: { readonly onProgress?: (message: string) => void }) => Promise<PulledImage> }
    readonly boxes: {
      readonly start: (spec: BoxSpec) => Promise<LegacyRunningBox>
      readonly destroy: (id: string) => Promise<void>
      readonly list: () => ReadonlyArray<BoxSpec>
    }
    /** The old driver's own bookkeeping of its replica boxes. */
    readonly running: Map<string, LegacyRunningBox>
  }
>()("slipway/LocalHost") {}

export const exposeToBox = (box: LegacyRunningBox, targets: ReadonlyArray<EgressTarget>, socketDir: string): Promise<LegacyEgress> => box.expose(targets, socketDir)

export const LocalHostLive = Layer.effect(
  LocalHost,
  Effect.gen(function* () {
    const { root } = yield* RuntimeRoot
    const boxes = yield* BoxRunner
    const images = yield* ImageStore
    const egress = yield* Egress
    /** Boxes started here, by id, with the scope they run in. */
    const started = new Map<string, LegacyRunningBox>()
    const scopes = new Set<Scope.Closeable>()
    yield* Effect.addFinalizer(() => Effect.forEach([...scopes], (scope) => Scope.close(scope, Exit.void), { discard: true }))

    /** Runs `effect` in a new scope inside the box's; answers it and the function that closes it. */
    const inScope = <A>(parent: Scope.Scope, effect: Effect.Effect<A, { readonly message: string }, Scope.Scope>) => {
      const scope = Scope.forkUnsafe(parent)
      return Effect.runPromise(Scope.provide(effect, scope)).then(
        (value) => ({ value, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }),
        async (error: unknown) => {
          await Effect.runPromise(Scope.close(scope, Exit.void))
          throw error
        }
      )
    }

    const legacy = (box: RunningBox, scope: Scope.Closeable): LegacyRunningBox => {
      const exited = Effect.runPromise(box.exited)
      let stopped: Promise<void> | undefined
      const stop = () =>
        (stopped ??= Effect.runPromise(Scope.close(scope, Exit.void)).then(() => {
          scopes.delete(scope)
          if (started.get(box.id) === self) started.delete(box.id)
        }))
      const self: LegacyRunningBox = {
        id: box.id,
        pid: box.pid,
        status: () => (box.isRunning() ? "running" : "stopped"),
        onExit: (listener) => void exited.then(listener),
        exec: (argv, options) => startNow(box.exec(argv, options), scope),
        forward: (port, options) => inScope(scope, box.forward(port, options)).then(({ value, close }) => ({ ...value, close })),
        expose: (targets, socketDir) => inScope(scope, egress.exposeToBox(box, targets, socketDir)).then(({ close }) => ({ close })),
        destroy: () => stop().then(() => Effect.runPromise(boxes.destroy(box.id)))
      }
      // A box whose init died is taken apart at once, as the old runner did.
      void exited.then(() => stop())
      return self
    }

    return LocalHost.of({
      root,
      images: {
        pull: (reference, options) =>
          Effect.runPromise(images.pull(reference, options?.onProgress ? { onProgress: (message) => Effect.sync(() => options.onProgress!(message)) } : {}))
      },
      boxes: {
        start: async (spec) => {
          const scope = Scope.makeUnsafe()
          scopes.add(scope)
          try {
            const box = legacy(await Effect.runPromise(Scope.provide(boxes.start(spec), scope)), scope)
            started.set(spec.id, box)
            return box
          } catch (error) {
            scopes.delete(scope)
            await Effect.runPromise(Scope.close(scope, Exit.void))
            throw error
          }
        },
        destroy: (id) => started.get(id)?.destroy() ?? Effect.runPromise(boxes.destroy(id)),
        list: () => Effect.runSync(boxes.list)
      },
      running: new Map()
    })
  })
).pipe(Layer.provide(LocalRuntimeLive))
