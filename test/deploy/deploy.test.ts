/**
 * deploy/: the systemd units and the Containerfile cannot run here (no systemd as init, no
 * container engine), so this checks what can be checked: systemd's own verifier accepts the
 * units; every file they and the Containerfile name exists in the package; the image holds every
 * file the server and the CLI import, and every package they import is a production dependency
 * (the image installs with --omit=dev); the settings they pass are ones the server reads.
 */
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { builtinModules } from "node:module"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { slipway } from "../cli/run.ts"

const root = join(import.meta.dirname, "../..")
const deploy = join(root, "deploy")
const installRoot = "/opt/slipway/"
const packageJson = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))

/** `Key=value` lines of a unit file, in order (repeated keys kept). */
const unit = (name: string): Array<[string, string]> =>
  readFileSync(join(deploy, name), "utf8")
    .split("\n")
    .filter((line) => /^\w+=/.test(line))
    .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)])

/** Paths under the install root that a unit's line names, mapped to this checkout. */
const packagePaths = (text: string) => [...text.matchAll(/\/opt\/slipway\/[\w./-]*/g)].map((match) => join(root, match[0].slice(installRoot.length)))

/** Variables the server, the CLI and the key tool read from the environment. */
const knownVariables = (() => {
  const sources = ["server/config.ts", "cli/config.ts", "cli/backup.ts", "cli/keys.ts", "server/keys.ts"].map((path) => readFileSync(join(root, path), "utf8")).join("\n")
  return new Set([...sources.matchAll(/"([A-Z][A-Z0-9_]+)"/g), ...sources.matchAll(/env\.([A-Z][A-Z0-9_]+)/g)].map((match) => match[1]!).concat(["NODE_ENV"]))
})()

describe("deploy/slipway.service", () => {
  it("passes systemd-analyze verify (the units and the timer)", () => {
    if (!existsSync("/usr/bin/systemd-analyze")) throw new Error("systemd-analyze is missing: install Debian package systemd")
    const files = ["slipway.service", "slipway-backup.service", "slipway-backup.timer"].map((name) => join(deploy, name))
    expect(() => execFileSync("/usr/bin/systemd-analyze", ["verify", ...files], { encoding: "utf8", stdio: "pipe" })).not.toThrow()
  })

  it("starts the server's entry point from the install root, with settings the server reads", () => {
    const lines = unit("slipway.service")
    const get = (key: string) => lines.filter(([name]) => name === key).map(([, value]) => value)
    expect(get("WorkingDirectory")).toEqual(["/opt/slipway"])
    const [execStart] = get("ExecStart")
    expect(execStart).toBe("/usr/bin/node /opt/slipway/server/main.ts")
    for (const path of packagePaths(execStart!)) expect(existsSync(path), path).toBe(true)
    // npm start runs the same file.
    expect(packageJson.scripts.start).toContain("server/main.ts")
    for (const setting of get("Environment")) {
      const name = setting.split("=")[0]!
      expect(knownVariables.has(name), `${name} is not read by the server`).toBe(true)
    }
    // The database lives in the unit's state directory, and the stop timeout exceeds the server's grace period.
    expect(get("Environment")).toContain("DATABASE_PATH=/var/lib/slipway/slipway.db")
    expect(get("StateDirectory")).toEqual(["slipway"])
    expect(Number(get("TimeoutStopSec")[0])).toBeGreaterThan(10)
  })

  it("backs up with a command the CLI has", async () => {
    const execStart = unit("slipway-backup.service").find(([key]) => key === "ExecStart")![1]
    const paths = packagePaths(execStart)
    expect(paths).toEqual([join(root, "bin/slipway.js")])
    expect(existsSync(paths[0]!)).toBe(true)
    expect(execStart).toMatch(/slipway\.js backup /)
    const help = await slipway(["backup", "--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("Usage: slipway backup [options] <file>")
  })
})

describe("deploy/Containerfile", () => {
  const instructions = readFileSync(join(deploy, "Containerfile"), "utf8")
    .replace(/\\\n\s*/g, " ")
    .split("\n")
    .filter((line) => /^[A-Z]+\s/.test(line))
    .map((line) => ({ op: line.split(/\s+/, 1)[0]!, args: line.slice(line.indexOf(" ") + 1).trim() }))

  const copied = instructions
    .filter((instruction) => instruction.op === "COPY")
    .flatMap(({ args }) => {
      const parts = args.split(/\s+/).filter((part) => !part.startsWith("--"))
      return parts.slice(0, -1)
    })

  it("uses Node 24 and copies only files that exist", () => {
    expect(instructions[0]).toEqual({ op: "FROM", args: "docker.io/library/node:24-bookworm-slim" })
    expect(packageJson.engines.node).toBe(">=24")
    expect(copied.length).toBeGreaterThan(3)
    for (const source of copied) expect(existsSync(join(root, source)), source).toBe(true)
    expect(copied).toContain("package-lock.json")
    expect(instructions.find((instruction) => instruction.op === "RUN" && instruction.args.includes("npm ci"))?.args).toContain("--omit=dev")
  })

  it("runs a file the image holds, with settings the server reads", () => {
    const cmd = JSON.parse(instructions.find((instruction) => instruction.op === "CMD")!.args) as Array<string>
    expect(cmd).toEqual(["node", "server/main.ts"])
    expect(copied.some((source) => cmd[1]!.startsWith(`${source}/`))).toBe(true)
    const env = instructions.find((instruction) => instruction.op === "ENV")!.args
    for (const [, name] of env.matchAll(/([A-Z_]+)=/g)) expect(knownVariables.has(name!), `${name} is not read by the server`).toBe(true)
    expect(instructions.find((instruction) => instruction.op === "VOLUME")!.args).toContain("/var/lib/slipway")
    expect(env).toContain("DATABASE_PATH=/var/lib/slipway/slipway.db")
  })

  it("holds every file the server and the CLI import, and installs every package they import", () => {
    const inImage = (path: string) => copied.some((source) => path === join(root, source) || path.startsWith(join(root, source) + "/"))
    const dependencies = new Set(Object.keys(packageJson.dependencies))
    const builtins = new Set(builtinModules)
    const files = (dir: string): Array<string> =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name)
        return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") && !path.endsWith(".d.ts") ? [path] : []
      })
    const outside: Array<string> = []
    const undeclared = new Set<string>()
    const seen = new Set<string>()
    let relativeImports = 0
    for (const file of ["server", "cli", "core"].flatMap((dir) => files(join(root, dir)))) {
      const text = readFileSync(file, "utf8")
      // Value imports only: `import type` is erased when Node strips the types.
      for (const match of text.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;"]*?from\s+"([^"]+)"|import\("([^"]+)"\)|createRequire\([^)]*\)\.resolve\("([^"]+)"\)/gm)) {
        const specifier = (match[1] ?? match[2] ?? match[3])!
        if (specifier.startsWith(".")) {
          relativeImports++
          const target = resolve(dirname(file), specifier)
          if (!inImage(target)) outside.push(`${relative(root, file)} → ${specifier}`)
        } else if (!specifier.startsWith("node:") && !builtins.has(specifier)) {
          const name = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!
          seen.add(name)
          if (!dependencies.has(name)) undeclared.add(`${name} (${relative(root, file)})`)
        }
      }
    }
    // The scan sees the imports it checks.
    expect(relativeImports).toBeGreaterThan(200)
    expect([...seen]).toEqual(expect.arrayContaining(["effect", "better-sqlite3", "commander", "swagger-ui-dist", "prom-client"]))
    expect(outside).toEqual([])
    expect([...undeclared]).toEqual([])
  })
})
