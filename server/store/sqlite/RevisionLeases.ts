/**
 * The SQLite `RevisionLeases`: one process owns the file, so it holds every unfinished revision.
 * `claim` hands out what the store says is unfinished, each revision once (at start: what a
 * previous process left); `claimOne` is always granted; a renewal keeps every lease; a release
 * changes nothing another replica could see (there is none).
 */
import { Effect, Layer } from "effect"
import { RevisionLeases } from "../RevisionLeases.ts"
import { type RevisionRecord, RevisionStore } from "../RevisionStore.ts"

export const makeSqliteRevisionLeases = (store: RevisionStore["Service"], leaseMs = 15_000): RevisionLeases["Service"] => {
  /** The unfinished revisions read at the first claim, not handed out yet. */
  let unclaimed: Array<RevisionRecord> | undefined
  return RevisionLeases.of({
    owner: `this process (${process.pid})`,
    leaseMs,
    claim: (limit) =>
      unclaimed === undefined
        ? Effect.map(store.inProgressRevisions(), (all) => {
            unclaimed = all.slice(limit)
            return all.slice(0, limit)
          })
        : Effect.sync(() => unclaimed!.splice(0, limit)),
    claimOne: () => Effect.succeed(true),
    renew: (revisionIds) => Effect.succeed(revisionIds),
    release: () => Effect.void
  })
}

export const SqliteRevisionLeases = Layer.effect(RevisionLeases, Effect.map(RevisionStore, (store) => makeSqliteRevisionLeases(store)))
