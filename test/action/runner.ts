/**
 * Runs the committed bundle (dist/index.js) the way the GitHub runner does, `node dist/index.js`
 * with INPUT_* variables (hyphens kept, upper-cased), GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files.
 */
import { spawn } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

export const bundle = join(import.meta.dirname, "../../dist/index.js")
export const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export interface ActionRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  readonly outputs: Record<string, string>
  readonly summary: string
}

/** Reads the `name<<delimiter` blocks @actions/core appends to GITHUB_OUTPUT. */
export const parseOutputFile = (text: string): Record<string, string> => {
  const outputs: Record<string, string> = {}
  const lines = text.split("\n")
  for (let index = 0; index < lines.length; index++) {
    const match = /^([^<]+)<<(.+)$/.exec(lines[index]!)
    if (!match) continue
    const value: Array<string> = []
    while (++index < lines.length && lines[index] !== match[2]) value.push(lines[index]!)
    outputs[match[1]!] = value.join("\n")
  }
  return outputs
}

let runCount = 0

/** One run of the bundle in `workDir`; `env` overrides the GITHUB_* defaults (push of main at a fixed commit). */
export const runBundle = (workDir: string, inputs: Record<string, string>, env: Record<string, string> = {}): Promise<ActionRun> => {
  const id = ++runCount
  const outputFile = join(workDir, `output-${process.pid}-${id}`)
  const summaryFile = join(workDir, `summary-${process.pid}-${id}`)
  writeFileSync(outputFile, "")
  writeFileSync(summaryFile, "")
  const inputEnv = Object.fromEntries(Object.entries(inputs).map(([name, value]) => [`INPUT_${name.toUpperCase()}`, value]))
  const child = spawn(process.execPath, [bundle], {
    cwd: workDir,
    env: {
      PATH: process.env.PATH ?? "",
      GITHUB_ACTIONS: "true",
      GITHUB_OUTPUT: outputFile,
      GITHUB_STEP_SUMMARY: summaryFile,
      GITHUB_REPOSITORY: "acme/Shop_API",
      GITHUB_REF: "refs/heads/main",
      GITHUB_SHA: "0123456789abcdef0123456789abcdef01234567",
      GITHUB_SERVER_URL: "https://github.com",
      GITHUB_RUN_ID: "42",
      GITHUB_EVENT_NAME: "push",
      GITHUB_WORKSPACE: workDir,
      // Debug logging on: even then no request or response body may be printed.
      RUNNER_DEBUG: "1",
      // What the runner sets for every input from action.yml defaults.
      INPUT_WAIT: "true",
      INPUT_TIMEOUT: "15m",
      "INPUT_POLL-INTERVAL": "50ms",
      INPUT_ENVIRONMENT: "production",
      ...inputEnv,
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (chunk) => (stdout += chunk))
  child.stderr.on("data", (chunk) => (stderr += chunk))
  return new Promise((resolve, reject) => {
    child.on("error", reject)
    child.on("close", (code) =>
      resolve({ code, stdout, stderr, outputs: parseOutputFile(readFileSync(outputFile, "utf8")), summary: readFileSync(summaryFile, "utf8") })
    )
  })
}
