/**
 * Entry point of the GitHub Action (bundled to dist/index.js): reads the inputs through
 * @actions/core, masks the API key and every secret value before anything is logged, runs the
 * plan with the core's typed client, and reports outputs, annotations and the job summary.
 *
 * The workflow context comes from the runner's GITHUB_* variables directly, which is all that
 * @actions/github's `context` does for these fields; importing it would bundle Octokit and undici
 * (about a third of the bundle) for three environment variables.
 */
// @ts-nocheck

import * as core from "@actions/core"
import { Cause, Effect, Exit } from "effect"
// Only the deployment endpoints and the client modules: the sandbox area stays out of the bundle.
import { deploymentEndpoints } from "../core/api/deployments.ts"
import { makeClient } from "../core/client/client.ts"
import type { Annotation } from "./errors.ts"
import { fromInputErrors } from "./errors.ts"
import { type Inputs, parseInputs } from "./inputs.ts"
import { ActionFailure, type ActionClient, run, type RunResult, toSummary } from "./run.ts"
import { renderSummary } from "./summary.ts"

export const userAgent = "slipway-action/0.1.0"

/** Registers a value with the runner's log masking: the whole value, and each line of a multi-line one. */
const mask = (value: string) => {
  if (value.trim() === "") return
  core.setSecret(value)
  for (const line of value.split(/\r?\n/)) if (line.trim() !== "" && line !== value) core.setSecret(line)
}

const annotate = (annotations: ReadonlyArray<Annotation>) => {
  for (const annotation of annotations) core.error(annotation.message, { title: annotation.title })
}

const setOutputs = (result: RunResult) => {
  core.setOutput("deployment-id", result.deploymentId ?? "")
  core.setOutput("revision-id", result.revisionId ?? "")
  core.setOutput("status", result.status ?? "")
  core.setOutput("url", result.url ?? "")
  core.setOutput("created", result.created ? "true" : "false")
}

const writeSummary = async (markdown: string) => {
  if (!process.env.GITHUB_STEP_SUMMARY) return
  try {
    await core.summary.addRaw(markdown, true).write()
  } catch (error) {
    core.warning(`Could not write the job summary: ${(error as Error).message}`)
  }
}

const main = async (): Promise<void> => {
  // First of all: nothing may print the key or a secret before the runner knows to mask them.
  mask(core.getInput("api-key"))
  const parsed = parseInputs((name) => core.getInput(name), {
    repository: process.env.GITHUB_REPOSITORY,
    ref: process.env.GITHUB_REF,
    headRef: process.env.GITHUB_HEAD_REF
  })
  if (!parsed.ok) {
    // One annotation per problem, each naming its input; the step fails without a request sent.
    annotate(fromInputErrors(parsed.errors))
    setOutputs({ created: false, outcome: "failed", deploymentId: undefined, revisionId: undefined, status: undefined, url: undefined, changes: [], elapsedMs: 0 })
    core.info(`Invalid inputs (${[...new Set(parsed.errors.map((error) => error.input))].join(", ")}); no request was sent`)
    process.exitCode = core.ExitCode.Failure
    return
  }
  const inputs: Inputs = parsed.inputs
  for (const secret of inputs.secrets ?? []) mask(secret.value)

  const client = makeClient(deploymentEndpoints, {
    baseUrl: inputs.apiUrl,
    apiKey: inputs.apiKey,
    tenantId: inputs.tenantId,
    userAgent
  }) satisfies ActionClient

  const exit = await Effect.runPromiseExit(
    run(inputs, {
      client,
      now: Date.now,
      log: {
        info: (message) => core.info(message),
        notice: (message) => core.notice(message),
        warning: (message) => core.warning(message),
        debug: (message) => core.debug(message)
      }
    })
  )

  if (Exit.isSuccess(exit)) {
    setOutputs(exit.value)
    await writeSummary(renderSummary(toSummary(inputs, exit.value)))
    return
  }
  const failure = Cause.squash(exit.cause)
  if (failure instanceof ActionFailure) {
    setOutputs(failure.partial)
    // The annotations carry the message (setFailed would print it a second time).
    annotate(failure.annotations)
    await writeSummary(renderSummary(toSummary(inputs, failure.partial, failure.message)))
    process.exitCode = core.ExitCode.Failure
    return
  }
  // A defect: report its message only (never a request or response body).
  core.setFailed(`Unexpected error: ${failure instanceof Error ? failure.message : String(failure)}`)
}

main().catch((error: unknown) => core.setFailed(`Unexpected error: ${error instanceof Error ? error.message : String(error)}`))
