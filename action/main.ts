/**
 * The GitHub Action's logic: `run()` reads the inputs through @actions/core, masks the API key and
 * every secret value before anything is logged, runs the deploy with the core's typed client, and
 * reports outputs, annotations and the job summary. With a `github-token` it also records a GitHub
 * Deployment and its status for the `environment`.
 *
 * Importing this module starts nothing: the runner's entry is index.ts (bundled to dist/index.js),
 * which calls `run()`; GitHub's local runner (`npx @github/local-action . action/main.ts .env`)
 * imports this file and calls `run()` itself.
 *
 * The workflow context comes from the runner's GITHUB_* variables directly.
 */
import { readFileSync } from "node:fs"
import * as core from "@actions/core"
import { Cause, Effect, Exit } from "effect"
// Only the deployment endpoints and the client modules: the sandbox area stays out of the bundle.
import { deploymentEndpoints } from "../core/api/deployments.ts"
import { logEndpoints } from "../core/api/logs.ts"
import { makeClient } from "../core/client/client.ts"
import type { Annotation } from "../core/deploy/errors.ts"
import { fromInputErrors } from "../core/deploy/errors.ts"
import { type Inputs, parseInputs } from "../core/deploy/inputs.ts"
import { failureLogTail, formatLogLine } from "../core/deploy/logs.ts"
import { type DeployClient, DeployFailure, run as deploy, type RunResult } from "../core/deploy/run.ts"
import { type GitHubDeployment, startGitHubDeployment } from "./github.ts"
import { renderSummary, type SummaryData, toSummary } from "./summary.ts"

export const userAgent = "slipway-action/0.1.0"

/** `core.ExitCode.Failure`, spelled out: GitHub's local runner (@github/local-action) stubs @actions/core without ExitCode. */
const failureExitCode = 1

/** Inputs the action reads besides the deploy's own (core/deploy/inputs.ts `inputNames`), in action.yml order. */
export const githubInputNames = ["github-token", "environment"] as const

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

/** pull_request events: the head commit, from the event payload the runner writes. */
const headShaFromEvent = (): string | undefined => {
  const path = process.env.GITHUB_EVENT_PATH
  if (!path || !process.env.GITHUB_HEAD_REF) return undefined
  try {
    const sha = JSON.parse(readFileSync(path, "utf8"))?.pull_request?.head?.sha
    return typeof sha === "string" ? sha : undefined
  } catch {
    return undefined
  }
}

const runUrl = () => {
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repository, GITHUB_RUN_ID: runId } = process.env
  return server && repository && runId ? `${server.replace(/\/+$/, "")}/${repository}/actions/runs/${runId}` : undefined
}

/** Known secret values never reach the summary, even inside a log line the server returned. */
const redact = (text: string, secrets: ReadonlyArray<string>) =>
  secrets.filter((secret) => secret.length >= 4).reduce((out, secret) => out.split(secret).join("***"), text)

/** The failing revision's last log lines for the summary; its status_message stays the fallback. */
const withFailureLog = async (inputs: Inputs, summary: SummaryData, result: RunResult): Promise<SummaryData> => {
  if (!result.deploymentId || !result.revisionId || !result.status || !/_FAILED$/.test(result.status)) return summary
  const secrets = [inputs.apiKey, ...(inputs.secrets ?? []).map((secret) => secret.value)]
  const exit = await Effect.runPromiseExit(
    failureLogTail({ baseUrl: inputs.apiUrl, apiKey: inputs.apiKey, tenantId: inputs.tenantId, userAgent }, result.deploymentId, result.revisionId, result.status)
  )
  if (Exit.isFailure(exit)) {
    const error = Cause.squash(exit.cause)
    core.warning(`Could not read the revision's logs: ${error instanceof Error ? error.message : String(error)}`)
    return summary
  }
  const { kind, result: logs } = exit.value
  if (!logs.available) {
    core.debug(logs.reason)
    return summary
  }
  return { ...summary, failureLog: { kind, lines: logs.lines.map((line) => redact(formatLogLine(line), secrets)) } }
}

/** One run of the action. Resolves when done; failures set process.exitCode through @actions/core. */
export const run = async (): Promise<void> => {
  try {
    await runAction()
  } catch (error) {
    core.setFailed(`Unexpected error: ${error instanceof Error ? error.message : String(error)}`)
  }
}

const runAction = async (): Promise<void> => {
  // First of all: nothing may print the key or a secret before the runner knows to mask them.
  mask(core.getInput("api-key"))
  const githubToken = core.getInput("github-token").trim()
  mask(githubToken)
  const parsed = parseInputs((name) => core.getInput(name), {
    repository: process.env.GITHUB_REPOSITORY,
    ref: process.env.GITHUB_REF,
    headRef: process.env.GITHUB_HEAD_REF,
    sha: process.env.GITHUB_SHA,
    headSha: headShaFromEvent()
  })
  if (!parsed.ok) {
    // One annotation per problem, each naming its input; the step fails without a request sent.
    annotate(fromInputErrors(parsed.errors))
    setOutputs({ created: false, outcome: "failed", deploymentId: undefined, revisionId: undefined, status: undefined, url: undefined, changes: [], elapsedMs: 0 })
    core.info(`Invalid inputs (${[...new Set(parsed.errors.map((error) => error.input))].join(", ")}); no request was sent`)
    process.exitCode = failureExitCode
    return
  }
  const inputs: Inputs = parsed.inputs
  for (const secret of inputs.secrets ?? []) mask(secret.value)

  const client = makeClient({ ...deploymentEndpoints, ...logEndpoints }, {
    baseUrl: inputs.apiUrl,
    apiKey: inputs.apiKey,
    tenantId: inputs.tenantId,
    userAgent
  }) satisfies DeployClient

  const environment = core.getInput("environment").trim() || "production"
  let github: GitHubDeployment | undefined
  if (githubToken !== "") {
    github = await startGitHubDeployment(
      {
        token: githubToken,
        environment,
        repository: process.env.GITHUB_REPOSITORY ?? "",
        ref: process.env.GITHUB_SHA || process.env.GITHUB_REF || "HEAD",
        description: `Slipway deployment ${inputs.name}`,
        logUrl: runUrl()
      },
      { info: (message) => core.info(message), warning: (message) => core.warning(message) }
    )
  }

  const exit = await Effect.runPromiseExit(
    deploy(inputs, {
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
    await github?.finish("success", exit.value.url, `${exit.value.status ?? "done"}: revision ${exit.value.revisionId ?? "none"}`)
    return
  }
  const failure = Cause.squash(exit.cause)
  if (failure instanceof DeployFailure) {
    setOutputs(failure.partial)
    // The annotations carry the message (setFailed would print it a second time).
    annotate(failure.annotations)
    const summary = await withFailureLog(inputs, toSummary(inputs, failure.partial, failure.message), failure.partial)
    await writeSummary(renderSummary(summary))
    await github?.finish("failure", failure.partial.url, failure.message)
    process.exitCode = failureExitCode
    return
  }
  await github?.finish("error", undefined, "unexpected error")
  // A defect: report its message only (never a request or response body).
  core.setFailed(`Unexpected error: ${failure instanceof Error ? failure.message : String(failure)}`)
}
