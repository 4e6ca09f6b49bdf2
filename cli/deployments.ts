/**
 * `slipway deploy | status | revisions | logs | rollback`: the deployment commands. Deploying and
 * rolling back go through the same core as the GitHub Action (core/deploy: `parseInputs`, `plan`,
 * `run`), so the CLI and the action decide and report alike.
 */
import { readFileSync } from "node:fs"
import { Cause, Effect, Exit } from "effect"
import { isUuid } from "../core/api/common.ts"
import { deploymentEndpoints } from "../core/api/deployments.ts"
import { makeClient } from "../core/client/client.ts"
import { isBuiltSource } from "../core/deployments/revision.ts"
import type { ClientError } from "../core/client/errors.ts"
import { isFailedRevisionStatus } from "../core/client/wait.ts"
import { type InputName, inputNames, parseInputs } from "../core/deploy/inputs.ts"
import { formatLogLine, type LogKind, readRevisionLogs } from "../core/deploy/logs.ts"
import type { DeploymentView } from "../core/deploy/plan.ts"
import { DeployFailure, findDeployment, formatElapsed, run as deploy, type RunResult } from "../core/deploy/run.ts"
import { CliError, ExitCode, exitCodeFor, fromClientError } from "./errors.ts"
import { type Settings, requireKey } from "./config.ts"
import { type Output, table } from "./output.ts"

export const userAgent = "slipway-cli/0.1.0"

export const clientFor = (settings: Settings) =>
  makeClient(deploymentEndpoints, { baseUrl: settings.url, apiKey: requireKey(settings), tenantId: settings.tenantId, userAgent })

type Client = ReturnType<typeof clientFor>

/** Runs a client call; its failure becomes a CliError naming what was being done. */
export const call = async <A>(effect: Effect.Effect<A, ClientError>, during: string): Promise<A> => {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) return exit.value
  const error = Cause.squash(exit.cause)
  if (error !== null && typeof error === "object" && "_tag" in error) throw fromClientError(error as any, during)
  throw error
}

/** A deployment by id (a uuid) or by its exact name. */
export const resolveDeployment = async (client: Client, ref: string): Promise<DeploymentView & Record<string, any>> => {
  if (isUuid(ref)) return (await call(client.getDeployment({ params: { deployment_id: ref.toLowerCase() } }), `getting deployment ${ref}`)) as any
  const found = await call(findDeployment(client as any, ref), `looking up deployment ${ref}`)
  if (found === undefined) throw new CliError(ExitCode.notFound, "NotFound", `no deployment named ${ref}`)
  return found as any
}

// ---------------------------------------------------------------------------------------------
// deploy and rollback: one way, through core/deploy

/** The deploy flags, named like the action's inputs (`--image-uri` is the input `image-uri`). */
export const deployFlags: ReadonlyArray<readonly [InputName, string]> = [
  ["name", "deployment name (DNS label); required"],
  ["source", "external_container or gitrepo (inferred from --image-uri / --repo-url)"],
  ["image-uri", "external_container: the image to deploy"],
  ["repo-url", "gitrepo: the repository (fixed at creation)"],
  ["repo-ref", "gitrepo: branch name, or refs/tags/…"],
  ["graph-config-path", "gitrepo: path of the graph configuration file"],
  ["integration-id", "gitrepo: the git-host integration (uuid)"],
  ["listener-id", "external_container: the listener (uuid)"],
  ["k8s-namespace", "external_container: namespace on the listener"],
  ["build-on-push", "gitrepo: true or false"],
  ["secrets", "NAME=value lines, or JSON ({\"NAME\": \"value\"}); see also --secret and --secrets-file"],
  ["resource-spec", "external_container: resource spec as JSON or YAML, or @file"],
  ["redeploy-revision-id", "make this revision (DEPLOYED before) the active one again"],
  ["commit-sha", "gitrepo: pin the new revision to this commit"],
  ["timeout", "how long to wait for DEPLOYED (15m, 90s, 1h30m)"],
  ["poll-interval", "first pause between polls (grows by half up to 15s)"]
]

const readArgumentFile = (value: string, flag: string): string => {
  if (!value.startsWith("@")) return value
  try {
    return readFileSync(value.slice(1), "utf8")
  } catch (error) {
    throw new CliError(ExitCode.usage, "UsageError", `--${flag}: cannot read ${value.slice(1)}: ${(error as Error).message}`)
  }
}

export interface DeployOptions {
  readonly [key: string]: unknown
  readonly secret?: ReadonlyArray<string>
  readonly secretsFile?: string
  readonly wait?: boolean
}

const camel = (name: string) => name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase())

/** The deploy's inputs from flags and settings, validated by the action's own parser. */
export const deployInputs = (settings: Settings, options: DeployOptions) => {
  const values: Record<string, string> = {
    "api-url": settings.url,
    "api-key": requireKey(settings),
    "tenant-id": settings.tenantId ?? "",
    wait: options.wait === false ? "false" : "true",
    timeout: "15m",
    "poll-interval": "1s"
  }
  for (const name of inputNames) {
    const value = options[camel(name)]
    if (typeof value === "string") values[name] = name === "resource-spec" ? readArgumentFile(value, name) : value
  }
  const secretLines: Array<string> = []
  if (values.secrets !== undefined) secretLines.push(values.secrets)
  if (options.secretsFile !== undefined) secretLines.push(readArgumentFile(`@${options.secretsFile}`, "secrets-file"))
  for (const entry of options.secret ?? []) secretLines.push(entry)
  if (secretLines.length > 1 && secretLines.some((text) => /^\s*[[{]/.test(text))) {
    throw new CliError(ExitCode.usage, "UsageError", "JSON secrets cannot be combined with --secret or --secrets-file; use NAME=value lines")
  }
  if (secretLines.length > 0) values.secrets = secretLines.join("\n")
  const parsed = parseInputs((name) => values[name] ?? "", { repository: undefined, ref: undefined, headRef: undefined })
  if (!parsed.ok) {
    const flag = (input: string) => (input === "api-url" ? "--url" : input === "api-key" ? "--api-key" : input === "tenant-id" ? "--tenant" : `--${input}`)
    throw new CliError(ExitCode.usage, "InvalidInputs", parsed.errors.map((error) => `${flag(error.input)}: ${error.message.replace(/^is required: no valid name.*/, "is required")}`).join("\n"))
  }
  return parsed.inputs
}

/** The result as JSON, in the API's snake_case. */
export const resultJson = (result: RunResult) => ({
  deployment_id: result.deploymentId ?? null,
  revision_id: result.revisionId ?? null,
  status: result.status ?? null,
  url: result.url ?? null,
  created: result.created,
  outcome: result.outcome,
  changes: result.changes,
  elapsed_ms: result.elapsedMs,
  ...(result.statusMessage ? { status_message: result.statusMessage } : {})
})

const describeResult = (result: RunResult, name: string) =>
  [
    `${name}: ${result.outcome}${result.revisionId ? `, revision ${result.revisionId}` : ""}${result.status ? ` ${result.status}` : ""} (${formatElapsed(result.elapsedMs)})`,
    ...(result.deploymentId ? [`deployment ${result.deploymentId}`] : []),
    ...(result.url ? [`url ${result.url}`] : [])
  ].join("\n")

/** Runs core/deploy's `run` with progress lines on stderr; prints the result; throws a CliError on failure. */
export const runDeploy = async (settings: Settings, output: Output, inputs: ReturnType<typeof deployInputs>): Promise<void> => {
  const client = clientFor(settings)
  const exit = await Effect.runPromiseExit(
    deploy(inputs, {
      client,
      now: Date.now,
      log: { info: output.progress, notice: output.progress, warning: (message) => output.progress(`warning: ${message}`), debug: () => {} }
    })
  )
  if (Exit.isSuccess(exit)) {
    output.result(resultJson(exit.value), () => describeResult(exit.value, inputs.name))
    return
  }
  const failure = Cause.squash(exit.cause)
  if (failure instanceof DeployFailure) {
    const message = failure.annotations.map((annotation) => annotation.message).join("\n") || failure.message
    throw new CliError(exitCodeFor(failure.kind), failure.kind, message, { result: resultJson(failure.partial) })
  }
  throw failure
}

/** The most recent DEPLOYED revision before the active one (what "roll back" means), or a given one. */
export const rollbackTarget = async (client: Client, deployment: DeploymentView, to: string | undefined): Promise<string> => {
  if (to !== undefined) {
    if (!isUuid(to)) throw new CliError(ExitCode.usage, "UsageError", `--to must be a revision id (uuid), got ${JSON.stringify(to)}`)
    return to.toLowerCase()
  }
  const active = deployment.active_revision_id
  // Newest first: past the active revision, the first DEPLOYED one is the previous.
  let passedActive = active === null
  for (let offset = 0; ; ) {
    const page = await call(
      client.listRevisions({ params: { deployment_id: deployment.id }, query: { limit: "100", offset: String(offset) } as any }),
      `listing the revisions of ${deployment.name}`
    )
    for (const revision of page.resources) {
      if (revision.id === active) passedActive = true
      else if (passedActive && revision.status === "DEPLOYED") return revision.id
    }
    if (page.resources.length < 100) break
    offset = page.offset
  }
  throw new CliError(ExitCode.failure, "NoPreviousRevision", `deployment ${deployment.name} has no DEPLOYED revision before the active one ${active ?? "(none)"}; pass --to <revision id>`)
}

// ---------------------------------------------------------------------------------------------
// status and revisions

const revisionLabel = (config: Record<string, any> | undefined) =>
  config === undefined ? "" : (config.image_uri ?? [config.repo_ref, config.repo_commit_sha ? `@${String(config.repo_commit_sha).slice(0, 12)}` : ""].filter(Boolean).join(""))

export const status = async (settings: Settings, output: Output, ref: string) => {
  const client = clientFor(settings)
  const deployment = await resolveDeployment(client, ref)
  const revision = async (id: string | null) =>
    id === null ? null : await call(client.getRevision({ params: { deployment_id: deployment.id, revision_id: id } }), `getting revision ${id}`)
  const active = await revision(deployment.active_revision_id)
  const latest = deployment.latest_revision_id === deployment.active_revision_id ? active : await revision(deployment.latest_revision_id)
  output.result({ deployment, active_revision: active, latest_revision: latest }, () =>
    [
      `name      ${deployment.name}`,
      `id        ${deployment.id}`,
      `status    ${deployment.status}`,
      `source    ${deployment.source} ${revisionLabel(deployment.source_revision_config)}`,
      `active    ${active ? `${active.id} ${active.status} ${revisionLabel(active.source_revision_config)}` : "(none)"}`,
      `latest    ${latest ? `${latest.id} ${latest.status}${latest.status_message ? `: ${latest.status_message}` : ""}` : "(none)"}`,
      ...(deployment.source_config.custom_url ? [`url       ${deployment.source_config.custom_url}`] : [])
    ].join("\n")
  )
}

export const list = async (settings: Settings, output: Output, options: { limit: string; offset: string; nameContains?: string; status?: string }) => {
  const client = clientFor(settings)
  const query: Record<string, string> = {
    limit: options.limit,
    offset: options.offset,
    ...(options.nameContains ? { name_contains: options.nameContains } : {}),
    ...(options.status ? { status: options.status.toUpperCase() } : {})
  }
  const page = await call(client.listDeployments({ query: query as any }), "listing deployments")
  output.result(page, () =>
    page.resources.length === 0
      ? "no deployments"
      : table(
          ["NAME", "STATUS", "URL", "SOURCE"],
          page.resources.map((deployment) => [
            deployment.name,
            deployment.status,
            deployment.source_config.custom_url ?? "-",
            `${deployment.source} ${revisionLabel(deployment.source_revision_config as any)}`.trim()
          ])
        )
  )
}

export const revisions = async (settings: Settings, output: Output, ref: string, options: { limit: string; offset: string; status?: string }) => {
  const client = clientFor(settings)
  const deployment = await resolveDeployment(client, ref)
  const query: Record<string, string> = { limit: options.limit, offset: options.offset, ...(options.status ? { status: options.status } : {}) }
  const page = await call(client.listRevisions({ params: { deployment_id: deployment.id }, query: query as any }), `listing the revisions of ${deployment.name}`)
  output.result(page, () =>
    table(
      ["", "REVISION", "STATUS", "CREATED", "SOURCE", "MESSAGE"],
      page.resources.map((revision) => [
        revision.id === deployment.active_revision_id ? "*" : "",
        revision.id,
        revision.status,
        String(revision.created_at),
        revisionLabel(revision.source_revision_config as any),
        revision.status_message ?? ""
      ])
    )
  )
}

// ---------------------------------------------------------------------------------------------
// logs

const buildPhase = new Set(["CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "BUILD_FAILED"])

export const logs = async (settings: Settings, output: Output, ref: string, options: { revision?: string; type?: string; follow?: boolean; tail?: string }) => {
  const client = clientFor(settings)
  const deployment = await resolveDeployment(client, ref)
  const revisionId = options.revision?.toLowerCase() ?? deployment.latest_revision_id
  if (revisionId === null) throw new CliError(ExitCode.notFound, "NotFound", `deployment ${deployment.name} has no revision`)
  if (!isUuid(revisionId)) throw new CliError(ExitCode.usage, "UsageError", `--revision must be a uuid, got ${JSON.stringify(revisionId)}`)
  const getRevision = () => call(client.getRevision({ params: { deployment_id: deployment.id, revision_id: revisionId } }), `getting revision ${revisionId}`)
  let revision = await getRevision()
  if (options.type !== undefined && options.type !== "build" && options.type !== "deploy") {
    throw new CliError(ExitCode.usage, "UsageError", `--type must be build or deploy, got ${JSON.stringify(options.type)}`)
  }
  const kind: LogKind = (options.type as LogKind | undefined) ?? (isBuiltSource(revision.source) && buildPhase.has(revision.status) ? "build" : "deploy")
  const tail = options.tail === undefined ? undefined : Number(options.tail)
  if (tail !== undefined && (!Number.isInteger(tail) || tail < 1)) throw new CliError(ExitCode.usage, "UsageError", `--tail must be a positive integer, got ${options.tail}`)
  const connection = { baseUrl: settings.url, apiKey: requireKey(settings), tenantId: settings.tenantId, userAgent }
  let cursor: string | null = null
  const read = async () => {
    const result = await call(readRevisionLogs(connection, deployment.id, revisionId, kind, { cursor, order: "asc", limit: 1000 }), `reading the ${kind} logs of revision ${revisionId}`)
    if (!result.available) {
      throw new CliError(
        ExitCode.unavailable,
        "LogsUnavailable",
        `${result.reason}: this server does not serve revision logs yet. Revision ${revisionId} is ${revision.status}${revision.status_message ? `: ${revision.status_message}` : ""}`
      )
    }
    cursor = result.next
    return result.lines
  }
  const print = (lines: ReadonlyArray<{ message: string }>) => {
    for (const line of lines) process.stdout.write(output.json ? `${JSON.stringify(line)}\n` : `${formatLogLine(line as any)}\n`)
  }
  const first = await read()
  if (!options.follow) {
    const shown = tail === undefined ? first : first.slice(-tail)
    if (output.json) output.result({ deployment_id: deployment.id, revision_id: revisionId, type: kind, lines: shown }, () => "")
    else print(shown)
    return
  }
  print(tail === undefined ? first : first.slice(-tail))
  // Follow until the revision reaches a state it will not leave, then read what is left once more.
  for (;;) {
    const done = revision.status === "DEPLOYED" || isFailedRevisionStatus(revision.status)
    await new Promise((resolve) => setTimeout(resolve, 1000))
    print(await read())
    if (done) break
    revision = await getRevision()
  }
  if (!output.json) output.progress(`revision ${revisionId}: ${revision.status}`)
}
