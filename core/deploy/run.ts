/**
 * One deploy (a run of the GitHub Action, or `slipway deploy`): find the deployment by name,
 * plan, apply the plan through the core's typed client, wait for the revision. Everything the outside world provides (the client, the
 * logger, the clock) is injected, so tests drive it against a fake or a real server.
 *
 * It never logs a request or response body: only ids, names, statuses and the plan's change
 * list, which holds no secret value.
 */
import { Effect } from "effect"
import { type ClientError, RevisionFailed, RevisionTimeout } from "../client/errors.ts"
import { waitForRevision } from "../client/wait.ts"
import { type Annotation, describeError, fromInputErrors, type Operation } from "./errors.ts"
import type { Inputs } from "./inputs.ts"
import { type DeploymentView, plan as makePlan, type Plan } from "./plan.ts"

export type Outcome = "created" | "updated" | "unchanged" | "redeployed" | "failed"

/** 850 → `0.9s`, 65_000 → `1m 05s`, 3_725_000 → `1h 02m 05s`. */
export const formatElapsed = (ms: number): string => {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`
  const totalSeconds = Math.round(ms / 1000)
  const hours = Math.floor(totalSeconds / 3600)
  const minutes = Math.floor((totalSeconds % 3600) / 60)
  const seconds = String(totalSeconds % 60).padStart(2, "0")
  return hours > 0 ? `${hours}h ${String(minutes).padStart(2, "0")}m ${seconds}s` : `${minutes}m ${seconds}s`
}

export interface RevisionView {
  readonly id: string
  readonly status: string
  readonly status_message?: string | null | undefined
  readonly source_revision_config?: { readonly repo_commit_sha?: string | null | undefined } | undefined
}

type Call<I, A> = (input: I) => Effect.Effect<A, ClientError>
type Params<P> = { readonly params: P }
type WithBody<P, B> = { readonly params: P; readonly body: B }
type DeploymentParams = { readonly deployment_id: string }
type RevisionParams = { readonly deployment_id: string; readonly revision_id: string }

/** What a deploy needs of the client; `makeClient(deploymentEndpoints, …)` provides it. */
export interface DeployClient {
  readonly listDeployments: Call<{ readonly query: { readonly name_contains: string; readonly limit: string; readonly offset: string } }, { readonly resources: ReadonlyArray<DeploymentView>; readonly offset: number }>
  readonly getDeployment: Call<Params<DeploymentParams>, DeploymentView>
  readonly createDeployment: Call<{ readonly body: any }, DeploymentView>
  readonly updateDeployment: Call<WithBody<DeploymentParams, any>, DeploymentView>
  readonly getRevision: Call<Params<RevisionParams>, RevisionView>
  readonly redeployRevision: Call<Params<RevisionParams>, DeploymentView>
  readonly createRevision: Call<WithBody<DeploymentParams, any>, RevisionView>
  readonly listRevisions: Call<
    { readonly params: DeploymentParams; readonly query: { readonly limit: string; readonly offset: string } },
    { readonly resources: ReadonlyArray<RevisionView>; readonly offset: number }
  >
  /** The log endpoints (`makeClient(logEndpoints, …)`): printed when a revision fails; optional (older servers lack them). */
  readonly getBuildLogs?: Call<WithBody<RevisionParams, LogsQuery>, LogsView>
  readonly getRevisionDeployLogs?: Call<WithBody<RevisionParams, LogsQuery>, LogsView>
}

interface LogsQuery {
  readonly order: "desc"
  readonly limit: number
}
interface LogsView {
  readonly logs: ReadonlyArray<{ readonly message: string; readonly level?: string; readonly replica?: string }>
}

/** Lines of a failed revision's logs the action prints (newest last). */
const failureLogLines = 30

/** Prints the last lines of a failed revision's build and deploy logs; a server without the endpoints prints nothing. */
const showFailureLogs = (client: DeployClient, log: Logger, deploymentId: string, revisionId: string): Effect.Effect<void> =>
  Effect.forEach(
    [
      ["build", client.getBuildLogs],
      ["deploy", client.getRevisionDeployLogs]
    ] as const,
    ([kind, call]) =>
      call === undefined
        ? Effect.void
        : call({ params: { deployment_id: deploymentId, revision_id: revisionId }, body: { order: "desc", limit: failureLogLines } }).pipe(
            Effect.map(({ logs }) => {
              if (logs.length === 0) return
              log.info(`Last ${logs.length} lines of the ${kind} log of revision ${revisionId}:`)
              for (const line of [...logs].reverse()) log.info(`  [${line.level ?? "INFO"}]${line.replica ? ` ${line.replica}` : ""} ${line.message}`)
            }),
            Effect.catch(() => Effect.void)
          ),
    { discard: true }
  )

export interface Logger {
  readonly info: (message: string) => void
  readonly notice: (message: string) => void
  readonly warning: (message: string) => void
  readonly debug: (message: string) => void
}

export interface RunDeps {
  readonly client: DeployClient
  readonly log: Logger
  /** Milliseconds; `Date.now` outside tests. */
  readonly now: () => number
  /** How long a build-on-push run waits for the webhook's revision of its commit before creating one itself. Default 60 s. */
  readonly webhookGraceMs?: number | undefined
}

export interface RunResult {
  readonly created: boolean
  readonly outcome: Outcome
  readonly deploymentId: string | undefined
  readonly revisionId: string | undefined
  readonly status: string | undefined
  readonly url: string | undefined
  readonly changes: ReadonlyArray<string>
  readonly elapsedMs: number
  /** The failing revision's status_message, when the wait ended in a failure. */
  readonly statusMessage?: string | undefined
}

/** The step failed: the annotations say why, `partial` what was done before it did. */
export class DeployFailure extends Error {
  readonly annotations: ReadonlyArray<Annotation>
  readonly partial: RunResult
  /**
   * What kind of failure: the client error's tag (`ValidationError`, `NotFound`, `Unauthorized`,
   * `TransportError`, …), `RevisionFailed`, `RevisionTimeout`, `InvalidInputs` (the plan refused
   * the inputs) or `NotActive` (redeployed but another revision serves). The CLI's exit code.
   */
  readonly kind: string
  constructor(message: string, annotations: ReadonlyArray<Annotation>, partial: RunResult, kind = "Failure") {
    super(message)
    this.annotations = annotations
    this.partial = partial
    this.kind = kind
  }
}

const pageSize = 100

/** `name_contains` narrows the list; the exact name decides (names are unique per tenant). */
export const findDeployment = (client: DeployClient, name: string): Effect.Effect<DeploymentView | undefined, ClientError> => {
  const page = (offset: number): Effect.Effect<DeploymentView | undefined, ClientError> =>
    client.listDeployments({ query: { name_contains: name, limit: String(pageSize), offset: String(offset) } }).pipe(
      Effect.flatMap((list) => {
        const match = list.resources.find((deployment) => deployment.name === name)
        if (match !== undefined) return Effect.succeed(match)
        return list.resources.length < pageSize ? Effect.succeed(undefined) : page(list.offset)
      })
    )
  return page(0)
}

/** The API address of a revision, for the summary's link. */
export const revisionUrl = (apiUrl: string, deploymentId: string, revisionId: string) =>
  `${apiUrl.replace(/\/+$/, "")}/v2/deployments/${deploymentId}/revisions/${revisionId}`

const outcomeOf: Record<Plan["kind"], Outcome> = {
  create: "created",
  patch: "updated",
  revision: "updated",
  "await-push": "updated",
  redeploy: "redeployed",
  noop: "unchanged",
  invalid: "failed"
}

/** The newest revision pinned to `commitSha` among the deployment's latest 100, if any. */
export const findCommitRevision = (client: DeployClient, deploymentId: string, commitSha: string): Effect.Effect<RevisionView | undefined, ClientError> =>
  client
    .listRevisions({ params: { deployment_id: deploymentId }, query: { limit: "100", offset: "0" } })
    .pipe(Effect.map((list) => list.resources.find((revision) => revision.source_revision_config?.repo_commit_sha?.toLowerCase() === commitSha)))

export const run = (inputs: Inputs, deps: RunDeps): Effect.Effect<RunResult, DeployFailure> =>
  Effect.suspend(() => {
    const { client, log } = deps
    const started = deps.now()
    // What is known so far, reported as outputs and in the summary even when a later step fails.
    let state: RunResult = {
      created: false,
      outcome: "failed",
      deploymentId: undefined,
      revisionId: undefined,
      status: undefined,
      url: undefined,
      changes: [],
      elapsedMs: 0
    }
    const update = (changes: Partial<RunResult>) => void (state = { ...state, ...changes, elapsedMs: deps.now() - started })
    const fail = (message: string, annotations: ReadonlyArray<Annotation>, kind?: string) => {
      update({})
      return Effect.fail(new DeployFailure(message, annotations, state, kind))
    }
    const api = <A>(operation: Operation, effect: Effect.Effect<A, ClientError>) =>
      effect.pipe(
        Effect.catch((error: ClientError) => {
          const annotations = describeError(error as any, operation, inputs)
          return fail(annotations.map((annotation) => annotation.message).join("\n"), annotations, error._tag)
        })
      )
    const adopt = (deployment: DeploymentView) =>
      update({ deploymentId: deployment.id, url: deployment.source_config.custom_url ?? undefined })

    return Effect.gen(function* () {
      log.info(`Looking up deployment ${inputs.name} at ${inputs.apiUrl}`)
      const current = yield* api("find", findDeployment(client, inputs.name))
      let latestStatus: string | undefined
      let latestCommit: string | null | undefined
      if (current !== undefined) {
        adopt(current)
        log.info(`Found deployment ${current.name} (${current.id}); latest revision ${current.latest_revision_id ?? "none"}, active ${current.active_revision_id ?? "none"}`)
        if (current.latest_revision_id !== null && inputs.redeployRevisionId === undefined) {
          const latest = yield* api(
            "inspect",
            client.getRevision({ params: { deployment_id: current.id, revision_id: current.latest_revision_id } })
          )
          latestStatus = latest.status
          latestCommit = latest.source_revision_config?.repo_commit_sha
        }
      } else {
        log.info(`No deployment named ${inputs.name} yet`)
      }

      const decided = makePlan(inputs, current, { latestRevisionStatus: latestStatus, latestCommitSha: latestCommit })
      const applyInPlace = (body: Record<string, unknown> | undefined) =>
        body === undefined
          ? Effect.void
          : api("update", client.updateDeployment({ params: { deployment_id: current!.id }, body })).pipe(
              Effect.tap((deployment) => Effect.sync(() => adopt(deployment))),
              Effect.asVoid
            )
      const createPinned = (body: Record<string, unknown>) =>
        api("update", client.createRevision({ params: { deployment_id: current!.id }, body })).pipe(
          Effect.tap((revision) => Effect.sync(() => log.info(`New revision ${revision.id} of commit ${inputs.commitSha ?? "(unpinned)"}`))),
          Effect.map((revision) => revision.id)
        )
      let revisionId: string | null | undefined
      let createsRevision = true
      /** After waiting, the revision must also be the one the deployment serves (redeploys). */
      let mustBeActive = decided.kind === "redeploy"
      switch (decided.kind) {
        case "invalid":
          return yield* fail(decided.errors.map((error) => `${error.input}: ${error.message}`).join("\n"), fromInputErrors(decided.errors), "InvalidInputs")
        case "create": {
          log.info(`Creating deployment ${inputs.name} (source ${inputs.source})`)
          const deployment = yield* api("create", client.createDeployment({ body: decided.body }))
          adopt(deployment)
          update({ created: true })
          revisionId = deployment.latest_revision_id
          log.info(`Created deployment ${deployment.id} with revision ${revisionId ?? "none"}`)
          break
        }
        case "patch": {
          log.info(`Updating deployment ${inputs.name}:\n${decided.changes.map((change) => `  - ${change}`).join("\n")}`)
          update({ changes: decided.changes })
          const deployment = yield* api("update", client.updateDeployment({ params: { deployment_id: current!.id }, body: decided.body }))
          adopt(deployment)
          revisionId = deployment.latest_revision_id
          createsRevision = decided.createsRevision
          log.info(decided.createsRevision ? `New revision ${revisionId ?? "none"}` : "Updated in place; no new revision")
          break
        }
        case "revision": {
          log.info(`Updating deployment ${inputs.name}:\n${decided.changes.map((change) => `  - ${change}`).join("\n")}`)
          update({ changes: decided.changes })
          if (!decided.inPlaceAfter) yield* applyInPlace(decided.inPlace)
          revisionId = yield* createPinned(decided.body)
          if (decided.inPlaceAfter) yield* applyInPlace(decided.inPlace)
          break
        }
        case "await-push": {
          update({ changes: decided.changes })
          yield* applyInPlace(decided.inPlace)
          const grace = deps.webhookGraceMs ?? 60_000
          log.info(`build-on-push is on: waiting up to ${formatElapsed(grace)} for the push webhook's revision of commit ${decided.commitSha}`)
          const graceStarted = deps.now()
          let found: RevisionView | undefined
          for (;;) {
            found = yield* api("inspect", findCommitRevision(client, current!.id, decided.commitSha))
            if (found !== undefined || deps.now() - graceStarted >= grace) break
            yield* Effect.sleep(Math.min(inputs.pollIntervalMs, 2_000))
          }
          if (found !== undefined) {
            log.info(`The push webhook created revision ${found.id} for commit ${decided.commitSha}`)
            revisionId = found.id
            if (found.status === "DEPLOYED" && current!.active_revision_id !== found.id) {
              // Built and deployed before, but another revision serves now (a later push, or a rollback): serve this commit again.
              const deployment = yield* api("redeploy", client.redeployRevision({ params: { deployment_id: current!.id, revision_id: found.id } }))
              adopt(deployment)
              mustBeActive = true
            }
          } else {
            log.warning(`No revision of commit ${decided.commitSha} appeared within ${formatElapsed(grace)} (is the webhook configured?); creating it`)
            revisionId = yield* createPinned(decided.fallback)
          }
          break
        }
        case "redeploy": {
          if (decided.reason !== undefined) log.notice(`Redeploying: ${decided.reason}`)
          yield* applyInPlace(decided.inPlace)
          if (decided.ignored.length > 0) {
            log.warning(`redeploy-revision-id is set, so these inputs are ignored for this run: ${decided.ignored.join(", ")}`)
          }
          log.info(`Redeploying revision ${decided.revisionId} of ${inputs.name}`)
          const deployment = yield* api(
            "redeploy",
            client.redeployRevision({ params: { deployment_id: current!.id, revision_id: decided.revisionId } })
          )
          adopt(deployment)
          revisionId = decided.revisionId
          break
        }
        case "noop":
          log.notice(`Nothing to do: ${decided.reason}`)
          revisionId = decided.revisionId
          createsRevision = false
          break
      }
      update({ outcome: outcomeOf[decided.kind], revisionId: revisionId ?? undefined })
      const deploymentId = state.deploymentId!
      if (revisionId === null || revisionId === undefined) return state

      if (!inputs.wait) {
        const revision = yield* api("wait", client.getRevision({ params: { deployment_id: deploymentId, revision_id: revisionId } }))
        update({ status: revision.status })
        log.info(`Not waiting (wait: false); revision ${revisionId} is ${revision.status}`)
        return state
      }

      log.info(`Waiting up to ${formatElapsed(inputs.timeoutMs)} for revision ${revisionId} to be DEPLOYED${createsRevision ? "" : " (existing revision)"}`)
      let lastStatus: string | undefined
      const waitStarted = deps.now()
      const revision = yield* waitForRevision(client, {
        deploymentId,
        revisionId,
        timeout: inputs.timeoutMs,
        interval: inputs.pollIntervalMs,
        maxInterval: Math.max(inputs.pollIntervalMs, 15_000),
        onPoll: ({ revision }) => {
          update({ status: revision.status })
          if (revision.status !== lastStatus) log.info(`Revision ${revisionId}: ${revision.status} (${formatElapsed(deps.now() - waitStarted)})`)
          else log.debug(`Revision ${revisionId}: still ${revision.status}`)
          lastStatus = revision.status
        }
      }).pipe(
        Effect.catch((error) => {
          const waited = formatElapsed(deps.now() - waitStarted)
          if (error instanceof RevisionFailed) {
            const detail = (error.revision as RevisionView | undefined)?.status_message
            update({ status: error.status, statusMessage: detail ?? undefined })
            const message = `Revision ${error.revisionId} of deployment ${inputs.name} ended in ${error.status} after waiting ${waited}${detail ? `: ${detail}` : ""}`
            return Effect.andThen(showFailureLogs(client, log, deploymentId, error.revisionId), fail(message, [{ title: "Slipway: revision failed", message }], "RevisionFailed"))
          }
          if (error instanceof RevisionTimeout) {
            const message = `Revision ${error.revisionId} of deployment ${inputs.name} was not DEPLOYED after waiting ${waited} (timeout ${formatElapsed(inputs.timeoutMs)}); last status: ${error.lastStatus ?? "none seen"}`
            return fail(message, [{ input: "timeout", title: "Slipway: timed out", message }], "RevisionTimeout")
          }
          const annotations = describeError(error as any, "wait", inputs)
          return fail(annotations.map((annotation) => annotation.message).join("\n"), annotations, (error as { _tag: string })._tag)
        })
      )
      update({ status: revision.status })

      if (mustBeActive) {
        // The redeployed revision must also be the one the deployment now serves.
        const deployment = yield* api("wait", client.getDeployment({ params: { deployment_id: deploymentId } }))
        adopt(deployment)
        if (deployment.active_revision_id !== revisionId) {
          const message = `Revision ${revisionId} is DEPLOYED but deployment ${inputs.name} now serves ${deployment.active_revision_id ?? "no revision"} (another deploy may have run meanwhile)`
          return yield* fail(message, [{ title: "Slipway: revision not active", message }], "NotActive")
        }
      }
      log.info(`Revision ${revisionId} is DEPLOYED after ${formatElapsed(state.elapsedMs)}`)
      return state
    })
  })
