/**
 * Waiting for a revision to be deployed, the spec's step 3: poll getRevision until its status is
 * DEPLOYED, a state it will not leave, or the time budget runs out.
 */
// @ts-nocheck

import { Clock, Duration, Effect } from "effect"
import { isTerminal, type RevisionStatus, revisionStatuses } from "../deployments/revision.ts"
import { RevisionFailed, RevisionTimeout } from "./errors.ts"

const knownStatuses: ReadonlySet<string> = new Set(revisionStatuses)

/**
 * Whether the wait ends without success: a terminal state other than DEPLOYED (a failure,
 * superseded as SKIPPED/INTERRUPTED, or UNKNOWN, which nothing will advance). A status this
 * client does not know yet (a newer server) keeps the wait going until its timeout rather than
 * failing a revision that may well be in progress.
 */
export const isFailedRevisionStatus = (status: string): boolean =>
  status !== "DEPLOYED" && knownStatuses.has(status) && isTerminal(status as RevisionStatus)

/** What waitForRevision needs of a revision; the API's Revision has more. */
export interface RevisionLike {
  readonly id: string
  readonly status: string
}

/** What waitForRevision needs of a client: the generated `getRevision` method satisfies it. */
export interface RevisionReader<R extends RevisionLike, E> {
  readonly getRevision: (input: {
    readonly params: { readonly deployment_id: string; readonly revision_id: string }
  }) => Effect.Effect<R, E>
}

export interface RevisionPoll<R> {
  readonly revision: R
  /** 1 for the first poll. */
  readonly attempt: number
  readonly elapsedMs: number
}

export interface WaitForRevisionOptions<R> {
  readonly deploymentId: string
  readonly revisionId: string
  /** Total budget, polls included. Default 15 minutes. */
  readonly timeout?: Duration.Input | undefined
  /** Pause after the first poll; grows by half on each poll up to `maxInterval`. Default 1 s. */
  readonly interval?: Duration.Input | undefined
  /** Default 15 s: slow builds are not hammered, fast deploys are still noticed quickly. */
  readonly maxInterval?: Duration.Input | undefined
  /** Called after every poll, e.g. to log progress. */
  readonly onPoll?: ((poll: RevisionPoll<R>) => void) | undefined
}

const growthFactor = 1.5

/**
 * Succeeds with the revision once DEPLOYED; fails with RevisionFailed on a failed or superseded
 * state, with RevisionTimeout when the budget runs out, or with the client's own error when a
 * poll fails (the client has already retried what was worth retrying).
 */
export const waitForRevision = <R extends RevisionLike, E>(
  client: RevisionReader<R, E>,
  options: WaitForRevisionOptions<R>
): Effect.Effect<R, E | RevisionFailed | RevisionTimeout> =>
  Effect.gen(function* () {
    const timeoutMs = Duration.toMillis(options.timeout ?? "15 minutes")
    const maxIntervalMs = Duration.toMillis(options.maxInterval ?? "15 seconds")
    const start = yield* Clock.currentTimeMillis
    // Kept outside the loop so the timeout can report the last status it saw.
    let lastStatus: string | undefined

    const poll = (attempt: number, intervalMs: number): Effect.Effect<R, E | RevisionFailed> =>
      client.getRevision({ params: { deployment_id: options.deploymentId, revision_id: options.revisionId } }).pipe(
        Effect.flatMap((revision) =>
          Effect.gen(function* () {
            lastStatus = revision.status
            const elapsedMs = (yield* Clock.currentTimeMillis) - start
            options.onPoll?.({ revision, attempt, elapsedMs })
            if (revision.status === "DEPLOYED") return revision
            if (isFailedRevisionStatus(revision.status)) {
              return yield* Effect.fail(new RevisionFailed({ revisionId: options.revisionId, status: revision.status, revision }))
            }
            yield* Effect.sleep(intervalMs)
            return yield* poll(attempt + 1, Math.min(maxIntervalMs, intervalMs * growthFactor))
          })
        )
      )

    const timedOut = Effect.gen(function* () {
      const elapsedMs = (yield* Clock.currentTimeMillis) - start
      return yield* Effect.fail(new RevisionTimeout({ revisionId: options.revisionId, lastStatus, elapsedMs }))
    })

    return yield* poll(1, Math.min(maxIntervalMs, Duration.toMillis(options.interval ?? "1 second"))).pipe(
      Effect.timeoutOrElse({ duration: timeoutMs, orElse: () => timedOut })
    )
  })
