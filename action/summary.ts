/** The job summary: a markdown table of what the run did. Pure; main.ts writes it with core.summary. */
import type { Inputs } from "../core/deploy/inputs.ts"
import { formatElapsed, type Outcome, revisionUrl, type RunResult } from "../core/deploy/run.ts"

export { formatElapsed, type Outcome }

export interface SummaryData {
  readonly outcome: Outcome
  readonly deploymentName: string
  readonly deploymentId: string | undefined
  readonly revisionId: string | undefined
  readonly status: string | undefined
  readonly url: string | undefined
  readonly elapsedMs: number
  /** API address of the revision (GET …/revisions/{id}). */
  readonly revisionLink: string | undefined
  readonly changes: ReadonlyArray<string>
  /** Why the step failed, when it did. */
  readonly error?: string | undefined
  /** The failing revision's last log lines (`kind` says which logs); else its status_message is shown. */
  readonly failureLog?: { readonly kind: "build" | "deploy"; readonly lines: ReadonlyArray<string> } | undefined
  readonly statusMessage?: string | undefined
}

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
  error,
  statusMessage: result.statusMessage
})

/** Table cells: pipes and newlines would break the row; backticks would break code spans. */
const cell = (text: string) => text.replace(/\\/g, "\\\\").replace(/\|/g, "\\|").replace(/\r?\n/g, " ")
const code = (text: string | undefined) => (text ? `\`${text.replace(/`/g, "'")}\`` : "—")
const link = (label: string, href: string | undefined) => (href ? `[${cell(label)}](${href.replace(/\)/g, "%29").replace(/ /g, "%20")})` : cell(label))

const headline: Record<Outcome, string> = {
  created: "created",
  updated: "updated",
  unchanged: "unchanged (no-op)",
  redeployed: "redeployed",
  failed: "failed"
}

export const renderSummary = (data: SummaryData): string => {
  const statusIcon = data.status === "DEPLOYED" ? "✅ " : data.outcome === "failed" ? "❌ " : ""
  const rows: Array<[string, string]> = [
    ["Deployment", `${cell(data.deploymentName)}${data.deploymentId ? ` (${code(data.deploymentId)})` : ""}`],
    ["Revision", data.revisionId ? link(data.revisionId, data.revisionLink) : "—"],
    ["Status", data.status ? `${statusIcon}${cell(data.status)}` : "—"],
    ["URL", data.url ? link(data.url, data.url) : "—"],
    ["Elapsed", formatElapsed(data.elapsedMs)]
  ]
  const lines = [
    `### Slipway deployment ${cell(data.deploymentName)}: ${headline[data.outcome]}`,
    "",
    "| Field | Value |",
    "| --- | --- |",
    ...rows.map(([key, value]) => `| ${key} | ${value} |`),
    ""
  ]
  if (data.changes.length > 0) lines.push("**Changes**", "", ...data.changes.map((change) => `- ${cell(change)}`), "")
  if (data.error) lines.push("**Error**", "", "```", data.error.replace(/```/g, "'''"), "```", "")
  const fence = (text: string) => text.replace(/```/g, "'''")
  if (data.failureLog !== undefined && data.failureLog.lines.length > 0) {
    lines.push(`**Last ${data.failureLog.lines.length} ${data.failureLog.kind} log lines**`, "", "```", ...data.failureLog.lines.map(fence), "```", "")
  } else if (data.statusMessage) {
    lines.push("**Status message**", "", "```", fence(data.statusMessage), "```", "")
  }
  return lines.join("\n")
}
