/**
 * The sections of `npm run bench` that run as their own scripts (each also runs alone): the
 * sandboxes of the local runtime (bench/sandboxes.ts), the deployments of the local runtime
 * (bench/deployments.ts) and its builds (bench/builds.ts). A section is a child process with stdio inherited (its progress shows as
 * it runs) that writes a JSON file with `verdicts`; a section that fails, or cannot run on this
 * machine (not root, a Debian package missing), is one FAIL verdict naming why, never a silent skip.
 */
import { spawn } from "node:child_process"
import { existsSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { root } from "./procs.ts"

export interface Verdict {
  readonly target: string
  readonly pass: boolean
  readonly detail: string
}

export interface Section {
  readonly verdicts: ReadonlyArray<Verdict>
  readonly lines: ReadonlyArray<string>
  readonly json: unknown
}

export interface SectionSpec {
  /** Shown in the report, e.g. "sandboxes". */
  readonly name: string
  /** The script, relative to the repository. */
  readonly script: string
  /** The JSON the script writes, relative to the repository (read for its `verdicts`). */
  readonly results: string
  /** Scenario names the script knows (its BENCH_ONLY vocabulary). */
  readonly scenarios: ReadonlyArray<string>
}

/** Which of a section's scenarios `BENCH_ONLY` asks for: all when unset, none when it names only other sections'. */
export const sectionScenarios = (spec: SectionSpec, only: ReadonlySet<string> | undefined): ReadonlyArray<string> =>
  only === undefined ? spec.scenarios : spec.scenarios.filter((name) => only.has(name))

export const runSection = async (spec: SectionSpec, scenarios: ReadonlyArray<string>): Promise<Section> => {
  const resultsPath = join(root, spec.results)
  rmSync(resultsPath, { force: true })
  const env: NodeJS.ProcessEnv = { ...process.env, BENCH_ONLY: scenarios.join(",") }
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [spec.script], { cwd: root, env, stdio: ["ignore", "inherit", "inherit"] })
    child.on("error", () => resolve(-1))
    child.on("exit", (exitCode) => resolve(exitCode))
  })
  const json = existsSync(resultsPath) ? (JSON.parse(readFileSync(resultsPath, "utf8")) as { verdicts?: ReadonlyArray<Verdict> }) : undefined
  const verdicts: Array<Verdict> = [...(json?.verdicts ?? [])]
  if (code !== 0 || json === undefined) {
    verdicts.push({
      target: `${spec.name}: the section ran`,
      pass: false,
      detail: `node ${spec.script} exited ${code}${json === undefined ? " without results" : ""} (its output above says why; e.g. not root, or a package of scripts/setup-host.sh missing)`
    })
  }
  const lines = verdicts.map((verdict) => `${verdict.pass ? "PASS" : "FAIL"}  ${verdict.target}: ${verdict.detail}`)
  return { verdicts, lines, json }
}

export const sandboxSection: SectionSpec = {
  name: "sandboxes",
  script: "bench/sandboxes.ts",
  results: "bench/results/sandboxes.json",
  scenarios: ["exec", "warm-claim", "cold-create", "files", "burst", "density"]
}

export const buildSection: SectionSpec = {
  name: "builds",
  script: "bench/builds.ts",
  results: "bench/results/builds.json",
  scenarios: ["builds"]
}

export const deploymentSection: SectionSpec = {
  name: "deployments",
  script: "bench/deployments.ts",
  results: "bench/results/deployments.json",
  scenarios: ["deploy-time", "proxy"]
}
