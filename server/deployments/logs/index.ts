/**
 * The server's `LogStore`: in the database when it is PostgreSQL (every replica reads every
 * revision's logs; lines of deployments that no longer exist are swept at start and hourly),
 * else files under the local runtime's root (`deployment-logs/`).
 */
import * as path from "node:path"
import { Effect, Layer, Option, Schedule } from "effect"
import { RuntimeRoot } from "../../runtime/local/RuntimeRoot.ts"
import { PostgresDatabase } from "../../store/postgres/PostgresDatabase.ts"
import { layerFileLogStore } from "./files.ts"
import { LogStore } from "./LogStore.ts"
import { makePostgresLogStore, sweepOrphanLogs } from "./postgres.ts"

export * from "./LogStore.ts"
export { layerFileLogStore, makeFileLogStore, type FileLogStoreOptions } from "./files.ts"
export { layerPostgresLogStore, makePostgresLogStore, sweepOrphanLogs } from "./postgres.ts"

export const LogStoreLive = Layer.unwrap(
  Effect.gen(function* () {
    const database = yield* Effect.serviceOption(PostgresDatabase)
    if (Option.isSome(database)) {
      const kit = database.value
      return Layer.effect(
        LogStore,
        Effect.tap(makePostgresLogStore(kit), () =>
          // Lines of deployments deleted while the replica that ran them was down: at start, then hourly.
          Effect.forkScoped(Effect.ignore(sweepOrphanLogs(kit)).pipe(Effect.repeat(Schedule.spaced("1 hour"))))
        )
      )
    }
    const { root } = yield* RuntimeRoot
    return layerFileLogStore({ root: path.join(root, "deployment-logs") })
  })
)
