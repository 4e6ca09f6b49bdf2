/**
 * The sandbox boxes running in this server, by sandbox id: what the dataplane serves requests
 * of. ONE writer, the local sandbox driver, registers a box in the box's own scope (so the entry
 * goes when the box's scope closes, before the box is taken apart); everything else only reads.
 * Deployment replicas are not in it.
 */
import { Context, Effect, Layer, type Scope } from "effect"
import type { RunningBox } from "../runtime/local/BoxRunner.ts"

export interface RegisteredBox {
  readonly box: RunningBox
  /**
   * The box's own scope: what a reader starts for the box (a port relay, a command) and adds to
   * it ends before the box does.
   */
  readonly scope: Scope.Scope
}

export class BoxRegistry extends Context.Service<
  BoxRegistry,
  {
    /** The running box of a sandbox, if this server runs it. */
    readonly get: (sandboxId: string) => RegisteredBox | undefined
    /** Registers `box` as the sandbox's box until the current scope (the box's own) closes. */
    readonly register: (sandboxId: string, box: RunningBox) => Effect.Effect<void, never, Scope.Scope>
  }
>()("slipway/BoxRegistry") {}

export const makeBoxRegistry = Effect.sync(() => {
  const boxes = new Map<string, RegisteredBox>()
  return BoxRegistry.of({
    get: (sandboxId) => boxes.get(sandboxId),
    register: (sandboxId, box) =>
      Effect.flatMap(Effect.scope, (scope) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            const entry: RegisteredBox = { box, scope }
            boxes.set(sandboxId, entry)
            return entry
          }),
          (entry) =>
            Effect.sync(() => {
              if (boxes.get(sandboxId) === entry) boxes.delete(sandboxId)
            })
        )
      ).pipe(Effect.asVoid)
  })
})

export const BoxRegistryLive = Layer.effect(BoxRegistry, makeBoxRegistry)
