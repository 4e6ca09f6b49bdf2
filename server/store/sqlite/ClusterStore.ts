/**
 * The SQLite `ClusterStore`: one process owns the file and is the only replica, so it runs every
 * box and serves every deployment (`shared: false`: the controllers never ask where work runs);
 * only the values every replica agrees on are stored (`cluster_settings`).
 */
import { Effect, Layer } from "effect"
import { ClusterStore } from "../ClusterStore.ts"
import type { Db } from "./database.ts"
import { op } from "./errors.ts"
import { onSqlite } from "./SqliteDatabase.ts"

export const makeSqliteClusterStore = (db: Db): ClusterStore["Service"] => {
  const read = db.prepare("SELECT value FROM cluster_settings WHERE name = ?").pluck()
  const insert = db.prepare("INSERT INTO cluster_settings (name, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING")
  const upsert = db.prepare("INSERT INTO cluster_settings (name, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at")
  const none = Effect.succeed([])
  return ClusterStore.of({
    shared: false,
    register: () => Effect.void,
    heartbeat: () => Effect.succeed(true),
    replica: () => Effect.succeed(undefined),
    liveReplicas: none,
    adopt: () => Effect.void,
    forgetDead: () => Effect.succeed(0),
    boxOwner: () => Effect.succeed(undefined),
    placeBoxes: () => Effect.void,
    boxesOf: () => none,
    orphanedBoxes: () => none,
    volumeHolders: () => none,
    holdVolume: () => Effect.void,
    claimDeployments: () => none,
    serveDeployment: () => Effect.void,
    deploymentsOf: () => none,
    releaseDeployments: () => Effect.void,
    remoteDeployments: () => none,
    setting: (name) => op(() => read.get(name) as string | undefined),
    initSetting: (name, value) =>
      op(() => {
        insert.run(name, value, new Date().toISOString())
        return read.get(name) as string
      }),
    putSetting: (name, value) => op(() => void upsert.run(name, value, new Date().toISOString()))
  })
}

export const SqliteClusterStore = Layer.effect(ClusterStore, onSqlite(makeSqliteClusterStore))
