/**
 * Configuration mistakes fail fast and clearly (issue 30): every setting of the README's settings
 * tables, given a bad value, makes `node server/main.ts` exit non-zero within seconds with one
 * line naming the setting, never hang or start half-configured; an unknown `SLIPWAY_*` name is a
 * warning naming the closest known one; and every variable the code reads is in the one table of
 * known settings (server/settings.ts).
 */
import { spawn } from "node:child_process"
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { closestSetting, isKnownSetting, knownSettings, settingProblem, unknownSettings } from "../../server/settings.ts"
import { tempDatabasePath } from "../support/server.ts"

const root = join(import.meta.dirname, "..", "..")
const scratch = tempDatabasePath("settings")
afterAll(() => scratch.remove())

/** A port nothing listens on (bound, then released). */
const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

interface Run {
  readonly code: number | null
  readonly lines: ReadonlyArray<string>
  /** True when the server had to be killed: it started (or hung) instead of refusing. */
  readonly killed: boolean
}

/**
 * `node server/main.ts` with `env` over a clean environment (no SLIPWAY_* of the test's own),
 * killed after `ms` or once its output matches `until`.
 */
const start = (env: Record<string, string>, ms = 30_000, until?: RegExp): Promise<Run> =>
  new Promise((resolve) => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !isKnownSetting(name) && !name.startsWith("SLIPWAY_")))
    const child = spawn(process.execPath, [join(root, "server/main.ts")], {
      cwd: scratch.dir,
      // A secrets key given, so that no key file is generated (and logged) before a later refusal.
      env: {
        ...clean,
        PORT: "0",
        DATABASE_PATH: join(scratch.dir, `${Math.random().toString(36).slice(2)}.db`),
        SLIPWAY_RUNTIME: "simulated",
        SLIPWAY_SECRETS_KEY: "settings-test-secrets-key",
        ...env
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    let killed = false
    const kill = () => {
      killed = true
      child.kill("SIGKILL")
    }
    const timer = setTimeout(kill, ms)
    const read = (chunk: Buffer) => {
      output += chunk
      if (until?.test(output)) kill()
    }
    child.stdout.on("data", read)
    child.stderr.on("data", read)
    child.on("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, lines: output.split("\n").filter((line) => line.trim() !== ""), killed })
    })
  })

/** A bad value for every setting the server reads, and what its one line must say. */
const badValues = async (): Promise<Record<string, { readonly value: string; readonly says: RegExp }>> => {
  const authFile = join(scratch.dir, "auth.json")
  writeFileSync(authFile, "{ not json")
  const closed = await freePort()
  return {
    PORT: { value: "80a", says: /PORT must be an integer/ },
    HOST: { value: "no-such-host.invalid", says: /no-such-host\.invalid/ },
    DATABASE_PATH: { value: "/proc/slipway-test/slipway.db", says: /DATABASE_PATH \/proc\/slipway-test\/slipway\.db: cannot create its directory: ENOENT/ },
    DATABASE_URL: { value: `postgres://slipway:secret@127.0.0.1:${closed}/slipway`, says: new RegExp(`cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${closed}: connection refused`) },
    SLIPWAY_LEASE_MS: { value: "5", says: /SLIPWAY_LEASE_MS must be an integer between 300/ },
    SLIPWAY_API_KEY: { value: "abc", says: /SLIPWAY_API_KEY must be at least 16/ },
    SLIPWAY_TENANT_ID: { value: "tenant-1", says: /SLIPWAY_TENANT_ID must be a UUID/ },
    SLIPWAY_ORGANIZATION_ID: { value: "org-1", says: /SLIPWAY_ORGANIZATION_ID must be a UUID/ },
    SLIPWAY_STORAGE_QUOTA: { value: "10 gigs", says: /SLIPWAY_STORAGE_QUOTA: Invalid quantity/ },
    SLIPWAY_STORAGE_CLASSES: { value: " , ", says: /SLIPWAY_STORAGE_CLASSES must name at least one/ },
    SLIPWAY_DEFAULT_SANDBOX_IMAGE: { value: "python 3.12", says: /SLIPWAY_DEFAULT_SANDBOX_IMAGE: invalid image reference/ },
    SLIPWAY_SANDBOX_SWEEP_MS: { value: "1s", says: /SLIPWAY_SANDBOX_SWEEP_MS must be an integer/ },
    SLIPWAY_REVISION_STEP_MS: { value: "-1", says: /SLIPWAY_REVISION_STEP_MS must be an integer/ },
    SLIPWAY_PUBLIC_URL: { value: "localhost:8091", says: /SLIPWAY_PUBLIC_URL must be an http:\/\/ or https:\/\/ URL/ },
    SLIPWAY_SECRETS_KEY: { value: "   ", says: /SLIPWAY_SECRETS_KEY is blank/ },
    SLIPWAY_HEADERS_TIMEOUT_MS: { value: "0", says: /SLIPWAY_HEADERS_TIMEOUT_MS must be an integer/ },
    SLIPWAY_REQUEST_TIMEOUT_MS: { value: "1m", says: /SLIPWAY_REQUEST_TIMEOUT_MS must be an integer/ },
    SLIPWAY_MAX_CONNECTIONS: { value: "0", says: /SLIPWAY_MAX_CONNECTIONS must be an integer/ },
    SLIPWAY_UNAUTHENTICATED_MAX_BODY: { value: "10", says: /SLIPWAY_UNAUTHENTICATED_MAX_BODY must be an integer between 1024/ },
    SLIPWAY_SHUTDOWN_GRACE_MS: { value: "soon", says: /SLIPWAY_SHUTDOWN_GRACE_MS must be an integer/ },
    SLIPWAY_METRICS_TOKEN: { value: "short", says: /SLIPWAY_METRICS_TOKEN must be at least 16 characters/ },
    SLIPWAY_INTERNAL_URL: { value: "replica-2:8080", says: /SLIPWAY_INTERNAL_URL must be an http:\/\/ or https:\/\/ URL/ },
    SLIPWAY_INTERNAL_TOKEN: { value: "short secret", says: /SLIPWAY_INTERNAL_TOKEN must be at least 16 visible ASCII characters/ },
    LOG_LEVEL: { value: "loud", says: /LOG_LEVEL must be one of/ },
    SLIPWAY_RUNTIME: { value: "docker", says: /SLIPWAY_RUNTIME must be one of auto, simulated, local/ },
    SLIPWAY_REGISTRY_MIRROR: { value: "ftp://mirror.example", says: /SLIPWAY_REGISTRY_MIRROR: .*only http:\/\/ and https:\/\/ mirrors/ },
    SLIPWAY_INSECURE_REGISTRIES: { value: "localhost:5000,not a host", says: /SLIPWAY_INSECURE_REGISTRIES: insecure registry "not a host"/ },
    SLIPWAY_REGISTRY_AUTH_FILE: { value: authFile, says: /SLIPWAY_REGISTRY_AUTH_FILE: .*auth\.json is not a readable JSON file/ },
    SLIPWAY_IMAGE_PULL_TIMEOUT_S: { value: "0", says: /SLIPWAY_IMAGE_PULL_TIMEOUT_S must be a whole number of seconds/ },
    SLIPWAY_HEAP_GROWING_PERCENT: { value: "lots", says: /SLIPWAY_HEAP_GROWING_PERCENT must be an integer from 0 to 1000/ },
    SLIPWAY_EXEC_HELPER: { value: "of", says: /SLIPWAY_EXEC_HELPER must be "on" or "off", got "of"/ },
    SLIPWAY_SANDBOX_ISOLATION: { value: "docker", says: /SLIPWAY_SANDBOX_ISOLATION must be "auto", "bwrap", "gvisor", got "docker"/ },
    SLIPWAY_DEPLOYMENT_ISOLATION: { value: "kata", says: /SLIPWAY_DEPLOYMENT_ISOLATION must be "auto", "bwrap", "gvisor", got "kata"/ },
    SLIPWAY_GVISOR_PLATFORM: { value: "xen", says: /SLIPWAY_GVISOR_PLATFORM must be "ptrace", "kvm", "systrap", got "xen"/ },
    SLIPWAY_GVISOR_FILE_ACCESS: { value: "cached", says: /SLIPWAY_GVISOR_FILE_ACCESS must be "exclusive", "shared", got "cached"/ },
    SLIPWAY_DEPLOY_HEALTH_CHECK: { value: "udp", says: /SLIPWAY_DEPLOY_HEALTH_CHECK must be auto, http or tcp/ },
    SLIPWAY_DEPLOY_HEALTH_PATH: { value: "ok", says: /SLIPWAY_DEPLOY_HEALTH_PATH must be a path starting with "\/"/ },
    SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS: { value: "0", says: /SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS must be a positive integer/ },
    SLIPWAY_DEPLOY_DRAIN_MS: { value: "-1", says: /SLIPWAY_DEPLOY_DRAIN_MS must be a positive integer/ },
    SLIPWAY_DEPLOYMENT_POSTGRES_URL: { value: "localhost:5432", says: /SLIPWAY_DEPLOYMENT_POSTGRES_URL must be a postgres:\/\/ or postgresql:\/\/ URL/ },
    SLIPWAY_REGISTRY: { value: "yes", says: /SLIPWAY_REGISTRY must be one of auto, on, off, got "yes"/ },
    SLIPWAY_REGISTRY_ADDR: { value: "5000", says: /SLIPWAY_REGISTRY_ADDR must be host:port/ },
    SLIPWAY_REGISTRY_HOST: { value: "https://registry.example.com", says: /SLIPWAY_REGISTRY_HOST must be host\[:port\] with no scheme or path/ },
    SLIPWAY_REGISTRY_URL: { value: "registry.example.com", says: /SLIPWAY_REGISTRY_URL must be http\(s\):\/\/host\[:port\] with no path/ },
    SLIPWAY_REGISTRY_TOKEN_TTL: { value: "0", says: /SLIPWAY_REGISTRY_TOKEN_TTL must be a number of seconds from 1 to 86400/ },
    SLIPWAY_REGISTRY_GC: { value: "daily", says: /SLIPWAY_REGISTRY_GC must be a cron expression/ },
    SLIPWAY_UPLOAD_URL_TTL: { value: "1", says: /SLIPWAY_UPLOAD_URL_TTL must be an integer between 10 and 86400/ },
    SLIPWAY_UPLOAD_MAX_BYTES: { value: "200MB", says: /SLIPWAY_UPLOAD_MAX_BYTES must be an integer/ },
    SLIPWAY_UPLOAD_MAX_UNPACKED: { value: "-1", says: /SLIPWAY_UPLOAD_MAX_UNPACKED must be an integer/ },
    SLIPWAY_UPLOAD_MAX_FILES: { value: "0", says: /SLIPWAY_UPLOAD_MAX_FILES must be an integer between 1/ },
    SLIPWAY_INSECURE_GIT_HOSTS: { value: "git.local:80,http://git.local", says: /SLIPWAY_INSECURE_GIT_HOSTS: insecure git host 'http:\/\/git\.local' must be host or host:port/ },
    SLIPWAY_BUILD_CONCURRENCY: { value: "0", says: /SLIPWAY_BUILD_CONCURRENCY must be a whole number from 1 to 64, got "0"/ },
    SLIPWAY_BUILD_TIMEOUT_S: { value: "30m", says: /SLIPWAY_BUILD_TIMEOUT_S must be a whole number from 1 to 86400/ },
    SLIPWAY_BUILD_MEMORY: { value: "4 gigs", says: /SLIPWAY_BUILD_MEMORY: / },
    SLIPWAY_BUILD_CPUS: { value: "10m", says: /SLIPWAY_BUILD_CPUS must be from 100m/ },
    SLIPWAY_BUILD_PIDS: { value: "8", says: /SLIPWAY_BUILD_PIDS must be a whole number from 64/ },
    SLIPWAY_BUILD_DISK: { value: "1Mi", says: /SLIPWAY_BUILD_DISK must be at least/ },
    SLIPWAY_BUILD_CACHE_MAX: { value: "-1Gi", says: /SLIPWAY_BUILD_CACHE_MAX/ },
    SLIPWAY_BUILD_KEEP_IMAGES: { value: "0", says: /SLIPWAY_BUILD_KEEP_IMAGES must be a whole number from 1 to 100/ }
  }
}

/** The variables of the README's settings tables: rows that start with a backquoted upper-case name. */
const readmeSettings = (): Array<string> => [...readFileSync(join(root, "README.md"), "utf8").matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((m) => m[1]!)

/** Every file under `dir` (no node_modules), recursively. */
const filesUnder = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (name === "node_modules" || name === "dist") return []
    return statSync(path).isDirectory() ? filesUnder(path) : [path]
  })

describe("the table of known settings", () => {
  it("holds every variable the server, the key tool, the CLI and the host setup read", () => {
    const system = new Set(["PATH", "TMPDIR", "HOME", "XDG_CONFIG_HOME"])
    const read = new Map<string, string>()
    for (const dir of ["server", "cli", "bin", "core", "scripts"]) {
      for (const file of filesUnder(join(root, dir))) {
        if (!/\.(ts|js|sh)$/.test(file)) continue
        const text = readFileSync(file, "utf8")
        const names = [
          ...[...text.matchAll(/\bSLIPWAY_[A-Z0-9_]*[A-Z0-9]\b/g)].map((m) => m[0]),
          ...[...text.matchAll(/(?:process\.env|\benv)(?:\.([A-Z][A-Z0-9_]*)\b|\["([A-Z][A-Z0-9_]*)"\])|pick\("([A-Z][A-Z0-9_]*)"\)/g)].map((m) => m[1] ?? m[2] ?? m[3]!)
        ]
        for (const name of names) if (!system.has(name)) read.set(name, file.slice(root.length + 1))
      }
    }
    const unknown = [...read].filter(([name]) => !isKnownSetting(name)).map(([name, file]) => `${name} (${file})`)
    expect(unknown).toEqual([])
    expect(read.size).toBeGreaterThan(35)
  })

  it("has each name once, and the README's settings tables name only known settings", () => {
    const names = knownSettings.map((setting) => setting.name)
    expect(new Set(names).size).toBe(names.length)
    const documented = readmeSettings()
    expect(documented.length).toBeGreaterThan(20)
    expect(documented.filter((name) => !isKnownSetting(name))).toEqual([])
  })

  it("warns about an unknown SLIPWAY_* name with the closest known one, and says nothing of others", () => {
    expect(unknownSettings({ SLIPWAY_EXEC_HELPR: "off", SLIPWAY_URL: "http://x", HOME: "/root", SLIPWAY_API_KEY: "k" })).toEqual([
      "unknown setting SLIPWAY_EXEC_HELPR (ignored); did you mean SLIPWAY_EXEC_HELPER?"
    ])
    expect(closestSetting("SLIPWAY_PUBLICURL")).toBe("SLIPWAY_PUBLIC_URL")
    expect(closestSetting("SLIPWAY_REGISTRY_MIRRORS")).toBe("SLIPWAY_REGISTRY_MIRROR")
    expect(closestSetting("SLIPWAY_RUNTMIE")).toBe("SLIPWAY_RUNTIME")
  })

  it("checks the values read outside configFromEnv; unset and empty mean the default", () => {
    expect(settingProblem({ SLIPWAY_EXEC_HELPER: "of" })).toBe('SLIPWAY_EXEC_HELPER must be "on" or "off", got "of"')
    expect(settingProblem({ SLIPWAY_EXEC_HELPER: "off", SLIPWAY_SANDBOX_SWEEP_MS: "", SLIPWAY_REGISTRY_MIRROR: "127.0.0.1:5000" })).toBeUndefined()
    expect(settingProblem({})).toBeUndefined()
  })
})

describe("node server/main.ts with a bad setting", () => {
  it("refuses every setting of the README's tables with one line naming it, within seconds", { timeout: 600_000 }, async () => {
    const bad = await badValues()
    const server = readmeSettings().filter((name) => knownSettings.find((setting) => setting.name === name)!.readBy.includes("server"))
    expect(server.filter((name) => bad[name] === undefined), "README settings without a bad value in this test").toEqual([])
    const names = Object.keys(bad)
    const results = new Map<string, Run>()
    // Two at a time: the machine has two cores.
    const queue = [...names]
    await Promise.all(
      [0, 1].map(async () => {
        for (let name = queue.shift(); name !== undefined; name = queue.shift()) results.set(name, await start({ [name]: bad[name]!.value }))
      })
    )
    const wrong = names.flatMap((name) => {
      const run = results.get(name)!
      const ok = !run.killed && run.code !== 0 && run.lines.length === 1 && bad[name]!.says.test(run.lines[0]!) && run.lines[0]!.startsWith("slipway: ")
      return ok ? [] : [`${name}=${JSON.stringify(bad[name]!.value)}: exit ${run.code}${run.killed ? " (killed: it started or hung)" : ""}, output ${JSON.stringify(run.lines)}`]
    })
    expect(wrong).toEqual([])
    // The password of DATABASE_URL is never printed.
    expect(results.get("DATABASE_URL")!.lines.join("\n")).not.toContain("secret")
  })

  it("starts with a warning line for an unknown SLIPWAY_* name", { timeout: 60_000 }, async () => {
    const run = await start({ SLIPWAY_EXEC_HELPR: "off", LOG_LEVEL: "silent" }, 50_000, /listening on/)
    expect(run.killed).toBe(true)
    expect(run.lines[0]).toBe("slipway: warning: unknown setting SLIPWAY_EXEC_HELPR (ignored); did you mean SLIPWAY_EXEC_HELPER?")
    expect(run.lines.some((line) => line.startsWith("slipway: listening on "))).toBe(true)
  })
})
