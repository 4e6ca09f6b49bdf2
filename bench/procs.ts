/** Child processes under test: spawn, time to the first answer, resident memory, graceful stop. */
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { request } from "node:http"
import { createServer } from "node:net"
import { join } from "node:path"

export const root = join(import.meta.dirname, "..")

/** A bench setting from the environment (`BENCH_…`), or `fallback` when unset. */
export const num = (name: string, fallback: number): number => (process.env[name] ? Number(process.env[name]) : fallback)

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

/** One GET; resolves with the status, or undefined when nothing answers (not listening yet). */
export const probe = (url: string, headers: Record<string, string> = {}): Promise<number | undefined> =>
  new Promise((resolve) => {
    const req = request(url, { headers, agent: false }, (response) => {
      response.resume()
      response.on("end", () => resolve(response.statusCode))
    })
    req.on("error", () => resolve(undefined))
    req.end()
  })

export interface Target {
  readonly name: string
  readonly url: string
  readonly process: ChildProcess
  /** Milliseconds from spawn to the first answered request. */
  readonly startupMs: number
  readonly output: () => string
  readonly stop: () => Promise<number | null>
}

const ticksMicros = (statPath: string): number => {
  try {
    const fields = readFileSync(statPath, "utf8").split(") ")[1]!.split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100
  } catch {
    return NaN
  }
}

/** CPU time (user + system) a process has used, all its threads, in microseconds (Linux /proc; 10 ms ticks). */
export const cpuMicros = (pid: number | undefined): number => ticksMicros(`/proc/${pid}/stat`)

/** The same for its main thread alone: JavaScript, HTTP and SQLite run there; V8's compiler and GC helpers do not. */
export const mainThreadCpuMicros = (pid: number | undefined): number => ticksMicros(`/proc/${pid}/task/${pid}/stat`)

/** Resident set size of a process in bytes (Linux /proc); undefined elsewhere. */
export const residentBytes = (pid: number | undefined): { rss: number; peak: number } | undefined => {
  if (pid === undefined) return undefined
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN) * 1024
    return { rss: kb("VmRSS"), peak: kb("VmHWM") }
  } catch {
    return undefined
  }
}

/**
 * Spawns `command args` with `env`, then polls `probePath` every 2 ms until it is answered
 * (any status). `detached` puts the child in its own process group so `npm start` (npm, a
 * shell, node) stops as a whole.
 */
export const spawnTarget = async (options: {
  readonly name: string
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly env: Record<string, string>
  readonly port: number
  readonly probePath: string
  readonly probeHeaders?: Record<string, string>
  readonly timeoutMs?: number
}): Promise<Target> => {
  const started = performance.now()
  const child = spawn(options.command, [...options.args], {
    cwd: root,
    // The control-plane bench measures the API: the simulated runtime, unless a scenario asks otherwise.
    env: { ...process.env, SLIPWAY_RUNTIME: "simulated", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true
  })
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  const url = `http://127.0.0.1:${options.port}`
  const deadline = started + (options.timeoutMs ?? 30_000)
  let startupMs: number
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${options.name} exited early (${child.exitCode}):\n${output}`)
    const status = await probe(url + options.probePath, options.probeHeaders)
    if (status !== undefined) {
      startupMs = performance.now() - started
      break
    }
    if (performance.now() > deadline) {
      process.kill(-child.pid!, "SIGKILL")
      throw new Error(`${options.name} did not answer within ${options.timeoutMs ?? 30_000} ms:\n${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
  const stop = async () => {
    if (child.exitCode === null) {
      process.kill(-child.pid!, "SIGTERM")
      const timer = setTimeout(() => child.exitCode === null && process.kill(-child.pid!, "SIGKILL"), 15_000)
      const code = await exited
      clearTimeout(timer)
      return code
    }
    return child.exitCode
  }
  return { name: options.name, url, process: child, startupMs, output: () => output, stop }
}
