/** Runs the real `slipway` binary (bin/slipway.js, the package's bin) as a child process. */
import { spawn } from "node:child_process"
import { join } from "node:path"

export const root = join(import.meta.dirname, "../..")
export const binary = join(root, "bin/slipway.js")

export interface CliRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  /** stdout parsed as JSON (for --json runs). */
  readonly json: () => any
}

/**
 * `env` is added to a copy of this process's environment without its SLIPWAY_*, DATABASE_PATH
 * and XDG_CONFIG_HOME (so nothing leaks in from the machine running the tests); the CLI runs from
 * its sources, as in a checkout.
 */
export const slipway = (args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}, options: { cwd?: string } = {}): Promise<CliRun> => {
  const base: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith("SLIPWAY_") && key !== "DATABASE_PATH" && key !== "XDG_CONFIG_HOME") base[key] = value
  }
  base.SLIPWAY_CLI_SOURCES = "1"
  base.XDG_CONFIG_HOME = join(root, "test/cli/no-such-config-home")
  for (const [key, value] of Object.entries(env)) if (value !== undefined) base[key] = value
  const child = spawn(process.execPath, [binary, ...args], { cwd: options.cwd ?? root, env: base, stdio: ["ignore", "pipe", "pipe"] })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (chunk) => (stdout += chunk))
  child.stderr.on("data", (chunk) => (stderr += chunk))
  return new Promise((resolve, reject) => {
    child.on("error", reject)
    child.on("close", (code) =>
      resolve({
        code,
        stdout,
        stderr,
        json: () => {
          try {
            return JSON.parse(stdout)
          } catch {
            throw new Error(`stdout is not JSON:\n${stdout}\nstderr:\n${stderr}`)
          }
        }
      })
    )
  })
}
