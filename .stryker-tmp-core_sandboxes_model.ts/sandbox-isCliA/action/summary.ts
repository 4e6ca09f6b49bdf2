/** The job summary: a markdown table of what the run did. Pure; main.ts writes it with core.summary. */
// @ts-nocheck


export type Outcome = "created" | "updated" | "unchanged" | "redeployed" | "failed"

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
}

/** 850 → `0.9s`, 65_000 → `1m 05s`, 3_725_000 → `1h 02m 05s`. */
export const formatElapsed = (ms: number): string => {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`
  const totalSeconds = Math.round(ms / 1000)
  const hours = Math.floor(totalSeconds / 3600)
  const minutes = Math.floor((totalSeconds % 3600) / 60)
  const seconds = String(totalSeconds % 60).padStart(2, "0")
  return hours > 0 ? `${hours}h ${String(minutes).padStart(2, "0")}m ${seconds}s` : `${minutes}m ${seconds}s`
}

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
  return lines.join("\n")
}
