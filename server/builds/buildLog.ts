/**
 * A build's log as it happens: buildah's output lines turned into events (a step starts, a line
 * of its output, a step ends with its duration and whether the layer cache answered it), plus
 * the builder's own phases (pulling a base image, exporting the image, an egress refusal).
 * `BuildLogParser` keeps the last lines of each step for the failure message.
 */

export type BuildLogEvent =
  /** Something the builder does around buildah's steps. */
  | { readonly _tag: "Phase"; readonly at: number; readonly message: string }
  | { readonly _tag: "Step"; readonly at: number; readonly index: number; readonly total: number; readonly stage: string | undefined; readonly instruction: string }
  | { readonly _tag: "Output"; readonly at: number; readonly step: number | undefined; readonly line: string }
  | { readonly _tag: "StepDone"; readonly at: number; readonly index: number; readonly total: number; readonly durationMs: number; readonly cached: boolean }

/** One line of the build log for an event (what the revision's build log shows). */
export const formatBuildLogEvent = (event: BuildLogEvent): string => {
  switch (event._tag) {
    case "Phase":
      return event.message
    case "Step":
      return `${event.stage ? `[${event.stage}] ` : ""}STEP ${event.index}/${event.total}: ${event.instruction}`
    case "Output":
      return event.line
    case "StepDone":
      return `STEP ${event.index}/${event.total} done in ${(event.durationMs / 1000).toFixed(1)} s${event.cached ? " (cached)" : ""}`
  }
}

export interface StepInfo {
  readonly index: number
  readonly total: number
  readonly stage: string | undefined
  readonly instruction: string
}

export interface StepSummary extends StepInfo {
  readonly durationMs: number
  readonly cached: boolean
}

const STEP_RE = /^(?:\[([^\]]+)\]\s+)?STEP (\d+)\/(\d+): (.*)$/
const TAIL = 20

/** Folds buildah's output lines into events; remembers the running step and its last lines. */
export class BuildLogParser {
  private current: (StepInfo & { readonly startedAt: number; cached: boolean; tail: Array<string> }) | undefined
  private readonly done: Array<StepSummary> = []
  /** The last lines of output whatever the step (for failures outside a step). */
  private readonly tail: Array<string> = []

  /** The events one output line makes, at time `at` (epoch ms). */
  line(line: string, at: number): Array<BuildLogEvent> {
    const text = line.replace(/\s+$/, "")
    const m = STEP_RE.exec(text)
    if (m) {
      const events = this.finish(at)
      const step: StepInfo = { index: Number(m[2]), total: Number(m[3]), stage: m[1], instruction: m[4]! }
      this.current = { ...step, startedAt: at, cached: false, tail: [] }
      events.push({ _tag: "Step", at, ...step })
      return events
    }
    if (this.current && /^--> Using cache [0-9a-f]+/.test(text)) this.current.cached = true
    if (/^COMMIT\b/.test(text)) {
      const events = this.finish(at)
      events.push({ _tag: "Output", at, step: undefined, line: text })
      return events
    }
    if (this.current) {
      this.current.tail.push(text)
      if (this.current.tail.length > TAIL) this.current.tail.shift()
    }
    this.tail.push(text)
    if (this.tail.length > TAIL) this.tail.shift()
    return [{ _tag: "Output", at, step: this.current?.index, line: text }]
  }

  /** Ends the running step (the build ended, or another step started). */
  finish(at: number): Array<BuildLogEvent> {
    const c = this.current
    if (!c) return []
    this.current = undefined
    const summary: StepSummary = { index: c.index, total: c.total, stage: c.stage, instruction: c.instruction, durationMs: Math.max(0, at - c.startedAt), cached: c.cached }
    this.done.push(summary)
    this.failed = { ...summary, tail: c.tail }
    return [{ _tag: "StepDone", at, index: c.index, total: c.total, durationMs: summary.durationMs, cached: c.cached }]
  }

  /** The step that ran last (the failing one when the build failed) and its last output lines. */
  failed: (StepInfo & { readonly tail: ReadonlyArray<string> }) | undefined

  /** The running step, if any. */
  running(): StepInfo | undefined {
    return this.current
  }

  steps(): ReadonlyArray<StepSummary> {
    return this.done
  }

  lastLines(): ReadonlyArray<string> {
    return this.tail
  }
}
