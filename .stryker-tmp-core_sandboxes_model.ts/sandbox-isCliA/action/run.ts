/**
 * One run of the action: find the deployment by name, plan, apply the plan through the core's
 * typed client, wait for the revision. Everything the outside world provides (the client, the
 * logger, the clock) is injected, so tests drive it against a fake or a real server.
 *
 * It never logs a request or response body: only ids, names, statuses and the plan's change
 * list, which holds no secret value.
 */
// @ts-nocheck

import { Effect } from "effect"
import { type ClientError, RevisionFailed, RevisionTimeout } from "../core/client/errors.ts"
import { waitForRevision } from "../core/client/wait.ts"
import { type Annotation, describeError, fromInputErrors, type Operation } from "./errors.ts"
import type { Inputs } from "./inputs.ts"
import { type DeploymentView, plan as makePlan, type Plan } from "./plan.ts"
import { formatElapsed, type Outcome, type SummaryData } from "./summary.ts"

interface RevisionView {
  readonly id: string
  readonly status: string
  readonly status_message?: string | null | undefined
}

type Call<I, A> = (input: I) => Effect.Effect<A, ClientError>
type Params<P> = { readonly params: P }
type WithBody<P, B> = { readonly params: P; readonly body: B }
type DeploymentParams = { readonly deployment_id: string }
type RevisionParams = { readonly deployment_id: string; readonly revision_id: string }

/** What the action needs of the client; `makeClient(deploymentEndpoints, …)` provides it. */
export interface ActionClient {
  readonly listDeployments: Call<{ readonly query: { readonly name_contains: string; readonly limit: string; readonly offset: string } }, { readonly resources: ReadonlyArray<DeploymentView>; readonly offset: number }>
  readonly getDeployment: Call<Params<DeploymentParams>, DeploymentView>
  readonly createDeployment: Call<{ readonly body: any }, DeploymentView>
  readonly updateDeployment: Call<WithBody<DeploymentParams, any>, DeploymentView>
  readonly getRevision: Call<Params<RevisionParams>, RevisionView>
  readonly redeployRevision: Call<Params<RevisionParams>, DeploymentView>
}

export interface Logger {
  readonly info: (message: string) => void
  readonly notice: (message: string) => void
  readonly warning: (message: string) => void
  readonly debug: (message: string) => void
}

export interface RunDeps {
  readonly client: ActionClient
  readonly log: Logger
  /** Milliseconds; `Date.now` outside tests. */
  readonly now: () => number
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
}

/** The step failed: the annotations say why, `partial` what was done before it did. */
export class ActionFailure extends Error {
  readonly annotations: ReadonlyArray<Annotation>
  readonly partial: RunResult
  constructor(message: string, annotations: ReadonlyArray<Annotation>, partial: RunResult) {
    super(message)
    this.annotations = annotations
    this.partial = partial
  }
}

const pageSize = 100

/** `name_contains` narrows the list; the exact name decides (names are unique per tenant). */
export const findDeployment = (client: ActionClient, name: string): Effect.Effect<DeploymentView | undefined, ClientError> => {
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

export const toSummary = (inputs: Inputs, result: RunResult, error?: string): SummaryData => ({
  outcome: error === undefined ? result.outcome : "failed",
  deploymentName: inputs.name,
  deploymentId: result.deploymentId,
  revisionId: result.revisionId,
  status: result.status,
  url: result.url,
  elapsedMs: result.elapsedMs,
  revisionLink: result.deploymentId && result.revisionId ? revisionUrl(inputs.apiUrl, result.deploymentId, result.revisionId) : undefined,
  changes: result.changes,
  error
})

const outcomeOf: Record<Plan["kind"], Outcome> = { create: "created", patch: "updated", redeploy: "redeployed", noop: "unchanged", invalid: "failed" }

export const run = (inputs: Inputs, deps: RunDeps): Effect.Effect<RunResult, ActionFailure> =>
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
    const fail = (message: string, annotations: ReadonlyArray<Annotation>) => {
      update({})
      return Effect.fail(new ActionFailure(message, annotations, state))
    }
    const api = <A>(operation: Operation, effect: Effect.Effect<A, ClientError>) =>
      effect.pipe(
        Effect.catch((error: ClientError) => {
          const annotations = describeError(error as any, operation, inputs)
          return fail(annotations.map((annotation) => annotation.message).join("\n"), annotations)
        })
      )
    const adopt = (deployment: DeploymentView) =>
      update({ deploymentId: deployment.id, url: deployment.source_config.custom_url ?? undefined })

    return Effect.gen(function* () {
      log.info(`Looking up deployment ${inputs.name} at ${inputs.apiUrl}`)
      const current = yield* api("find", findDeployment(client, inputs.name))
      let latestStatus: string | undefined
      if (current !== undefined) {
        adopt(current)
        log.info(`Found deployment ${current.name} (${current.id}); latest revision ${current.latest_revision_id ?? "none"}, active ${current.active_revision_id ?? "none"}`)
        if (current.latest_revision_id !== null && inputs.redeployRevisionId === undefined) {
          const latest = yield* api(
            "inspect",
            client.getRevision({ params: { deployment_id: current.id, revision_id: current.latest_revision_id } })
          )
          latestStatus = latest.status
        }
      } else {
        log.info(`No deployment named ${inputs.name} yet`)
      }

      const decided = makePlan(inputs, current, { latestRevisionStatus: latestStatus })
      let revisionId: string | null | undefined
      let createsRevision = true
      switch (decided.kind) {
        case "invalid":
          return yield* fail(decided.errors.map((error) => `${error.input}: ${error.message}`).join("\n"), fromInputErrors(decided.errors))
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
        case "redeploy": {
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
            update({ status: error.status })
            const detail = (error.revision as RevisionView | undefined)?.status_message
            const message = `Revision ${error.revisionId} of deployment ${inputs.name} ended in ${error.status} after waiting ${waited}${detail ? `: ${detail}` : ""}`
            return fail(message, [{ title: "Slipway: revision failed", message }])
          }
          if (error instanceof RevisionTimeout) {
            const message = `Revision ${error.revisionId} of deployment ${inputs.name} was not DEPLOYED after waiting ${waited} (timeout ${formatElapsed(inputs.timeoutMs)}); last status: ${error.lastStatus ?? "none seen"}`
            return fail(message, [{ input: "timeout", title: "Slipway: timed out", message }])
          }
          const annotations = describeError(error as any, "wait", inputs)
          return fail(annotations.map((annotation) => annotation.message).join("\n"), annotations)
        })
      )
      update({ status: revision.status })

      if (decided.kind === "redeploy") {
        // The redeployed revision must also be the one the deployment now serves.
        const deployment = yield* api("wait", client.getDeployment({ params: { deployment_id: deploymentId } }))
        adopt(deployment)
        if (deployment.active_revision_id !== revisionId) {
          const message = `Revision ${revisionId} is DEPLOYED but deployment ${inputs.name} now serves ${deployment.active_revision_id ?? "no revision"} (another deploy may have run meanwhile)`
          return yield* fail(message, [{ title: "Slipway: revision not active", message }])
        }
      }
      log.info(`Revision ${revisionId} is DEPLOYED after ${formatElapsed(state.elapsedMs)}`)
      return state
    })
  })
