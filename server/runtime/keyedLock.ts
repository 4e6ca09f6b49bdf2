/** One operation at a time per key (a volume grown while it is destroyed, two starts of one box): a semaphore per key, kept while in use. */
import { Effect, RcMap, Semaphore, type Scope } from "effect"

export type KeyedLock<K> = (key: K) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

export const makeKeyedLock = <K>(): Effect.Effect<KeyedLock<K>, never, Scope.Scope> =>
  Effect.map(
    RcMap.make({ lookup: (_: K) => Semaphore.make(1) }),
    (locks) => (key) => (effect) => Effect.scoped(Effect.flatMap(RcMap.get(locks, key), (lock) => lock.withPermit(effect)))
  )
