/**
 * Who drives which unfinished revision when several replicas share one database (PostgreSQL).
 * A replica leases the revisions it hands to its driver and renews the leases while it lives; a
 * replica that dies stops renewing, and once its leases have expired another replica claims
 * those revisions and its driver carries them on from the state they are in. Exactly-once steps
 * do not depend on the lease: the controller moves a revision only from the state its driver saw
 * (`advanceRevision`'s compare-and-set), so two drivers briefly on one revision apply each step
 * once. On SQLite (`sqlite/RevisionLeases.ts`) one process owns the file and holds every revision.
 */
import { Context, type Effect } from "effect"
import type { RevisionRecord } from "./RevisionStore.ts"
import type { StoreError } from "./StoreError.ts"

export class RevisionLeases extends Context.Service<
  RevisionLeases,
  {
    /** This replica's name in `lease_owner`. */
    readonly owner: string
    /** How long a lease lasts without renewal. */
    readonly leaseMs: number
    /** Leases up to `limit` unfinished revisions nobody holds (never leased, or expired) to this replica. */
    readonly claim: (limit: number) => Effect.Effect<ReadonlyArray<RevisionRecord>, StoreError>
    /** Leases one revision (a new one this replica created); false when another replica holds it. */
    readonly claimOne: (tenantId: string, revisionId: string) => Effect.Effect<boolean, StoreError>
    /** Extends this replica's leases; answers the ids it still holds (the rest were taken over). */
    readonly renew: (revisionIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>, StoreError>
    /** Gives leases up (shutdown, stop): another replica may claim them at once. */
    readonly release: (revisionIds: ReadonlyArray<string>) => Effect.Effect<void, StoreError>
  }
>()("slipway/RevisionLeases") {}
