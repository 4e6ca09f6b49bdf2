/**
 * One fiber per key: concurrent pulls of one reference (or of one digest) share one operation.
 * A caller joining late hears its progress from then on (the last message first); the operation
 * ends (and is removed) when it completes, or is interrupted when its last waiter is.
 */
import { Effect, Exit, Fiber, Queue } from "effect"

export type Listener = (message: string) => Effect.Effect<void>

interface Operation<A, E> {
  readonly fiber: Fiber.Fiber<A, E>
  readonly listeners: Set<Listener>
  waiters: number
  last: string | undefined
}

export type Shared<A, E> = (key: string, listener: Listener | undefined, operation: (emit: (message: string) => void) => Effect.Effect<A, E>) => Effect.Effect<A, E>

export const makeShared = <A, E>(): Shared<A, E> => {
  const operations = new Map<string, Operation<A, E>>()

  /** Starts the operation of `key`: its progress goes through a queue to the listeners, in order, all heard before it completes. */
  const start = (key: string, operation: (emit: (message: string) => void) => Effect.Effect<A, E>) =>
    Effect.gen(function* () {
      const messages = yield* Queue.unbounded<string | null>()
      const listeners = new Set<Listener>()
      const tell = (message: string) => Effect.forEach([...listeners], (listener) => Effect.ignore(listener(message)), { discard: true })
      const relay: Effect.Effect<void> = Effect.flatMap(Queue.take(messages), (message) => (message === null ? Effect.void : Effect.andThen(tell(message), relay)))
      const emit = (message: string) => {
        created.last = message
        Queue.offerUnsafe(messages, message)
      }
      const run = Effect.gen(function* () {
        const relaying = yield* Effect.forkChild(relay)
        const exit = yield* Effect.exit(operation(emit))
        Queue.offerUnsafe(messages, null)
        yield* Fiber.join(relaying)
        return yield* exit
      }).pipe(
        Effect.ensuring(
          Effect.sync(() => {
            if (operations.get(key) === created) operations.delete(key)
          })
        )
      )
      const created: Operation<A, E> = { fiber: yield* Effect.forkDetach(run, { startImmediately: false }), listeners, waiters: 0, last: undefined }
      operations.set(key, created)
      return created
    })

  return (key, listener, operation) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.gen(function* () {
        const existing = operations.get(key)
        const op = existing ?? (yield* start(key, operation))
        op.waiters++
        const joined = Effect.gen(function* () {
          if (listener && op.last !== undefined) yield* Effect.ignore(listener(op.last))
          if (listener) op.listeners.add(listener)
          return yield* Fiber.join(op.fiber)
        })
        return yield* restore(joined).pipe(
          Effect.onExit((exit) =>
            Effect.suspend(() => {
              op.waiters--
              if (listener) op.listeners.delete(listener)
              // The last waiter gone: nobody wants the result any more.
              return Exit.hasInterrupts(exit) && op.waiters === 0 ? Fiber.interrupt(op.fiber) : Effect.void
            })
          )
        )
      })
    )
}
