/**
 * The README's offline quick start, run as written: the ```sh block after `<!-- quick-start -->`,
 * in the checkout, by bash, with an older system Node first on PATH (as on a newcomer's machine),
 * only the two ports the README says to pick replaced by free ones (and a first line that reports
 * its scratch directory, removed afterwards). It starts a real registry, builds and pushes a real image, starts
 * `npm start` with the local runtime, deploys and curls, runs a command in a box through the CLI
 * and the official `langsmith` client, and stops everything it started.
 */
import { spawn, spawnSync } from "node:child_process"
import { existsSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { isKnownSetting } from "../../server/settings.ts"

const root = join(import.meta.dirname, "..", "..")

/** The quick start's commands, exactly as the README has them. */
const quickStart = (): string => {
  const readme = readFileSync(join(root, "README.md"), "utf8")
  const match = /<!-- quick-start -->\s*```sh\n([\s\S]*?)```/.exec(readme)
  if (!match) throw new Error("README.md has no quick start (a ```sh block after <!-- quick-start -->)")
  return match[1]!
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

/** Replaces the port of each line the README marks "pick a free port". */
const withPorts = (script: string, ports: ReadonlyArray<number>): string => {
  const free = [...ports]
  const replaced = script
    .split("\n")
    .map((line) => (line.includes("# pick a free port") ? line.replace(/(?<=[=:])\d{2,5}(?=\s)/, () => String(free.shift())) : line))
    .join("\n")
  if (free.length !== 0) throw new Error(`the quick start marks ${ports.length - free.length} lines "pick a free port", expected ${ports.length}`)
  return replaced
}

const tools: ReadonlyArray<readonly [string, string]> = [
  ["docker-registry", "docker-registry"],
  ["umoci", "umoci"],
  ["skopeo", "skopeo"],
  ["bwrap", "bubblewrap"],
  ["curl", "curl"],
  ["openssl", "openssl"],
  ["redis-server", "redis-server"]
]

beforeAll(() => {
  if (process.getuid?.() !== 0) throw new Error("the quick start runs boxes under bubblewrap as root: run this test as root")
  for (const [tool, pkg] of tools) {
    if (spawnSync("sh", ["-c", `command -v ${tool}`]).status !== 0) throw new Error(`${tool} not found: install Debian package ${pkg}`)
  }
  if (!existsSync("/bin/busybox")) throw new Error("/bin/busybox not found: install Debian package busybox-static")
})

/** The quick start's scratch directory (its `mktemp -d` in /tmp), removed after the run. */
let scratch: string | undefined
afterAll(() => {
  if (scratch?.startsWith("/tmp/tmp.")) rmSync(scratch, { recursive: true, force: true })
})

describe("the README's offline quick start", () => {
  it("runs as written: registry, image, npm start, deploy and curl, a box, the langsmith client, stop", { timeout: 300_000 }, async () => {
    const [registryPort, port] = [await freePort(), await freePort()]
    // The one line the harness adds: say where the scratch directory is, so the test can remove it.
    const script = `trap 'echo "quick-start-dir=$QS"' EXIT\n${withPorts(quickStart(), [registryPort, port])}`
    // A newcomer's shell: Debian's (older) Node first on PATH, none of this test run's settings.
    const env: NodeJS.ProcessEnv = {}
    for (const [name, value] of Object.entries(process.env)) {
      if (!isKnownSetting(name) && !name.startsWith("SLIPWAY_") && !name.startsWith("npm_") && !name.startsWith("LANGSMITH_")) env[name] = value
    }
    env.PATH = `/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${process.env.PATH}`
    delete env.TMPDIR
    // In a fresh checkout `npm install` compiles lib/, which the CLI runs; here lib/ may be older than the sources.
    env.SLIPWAY_CLI_SOURCES = "1"
    const child = spawn("bash", ["-e", "-c", script], { cwd: root, env, detached: true, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => process.kill(-child.pid!, "SIGTERM"), 240_000)
      child.on("exit", (exit) => {
        clearTimeout(timer)
        resolve(exit)
      })
    })
    // Whatever the script left running (it should be nothing) goes with its process group.
    const leftover = spawnSync("pgrep", ["-g", String(child.pid)], { encoding: "utf8" }).stdout.trim()
    if (leftover !== "") {
      process.kill(-child.pid!, "SIGTERM")
      await new Promise((resolve) => setTimeout(resolve, 5_000))
    }
    scratch = /^quick-start-dir=(.*)$/m.exec(output)?.[1]
    const log = (name: string) => (scratch && existsSync(join(scratch, name)) ? readFileSync(join(scratch, name), "utf8").slice(-3000) : "")
    expect(code, `${output}\n--- slipway.log\n${log("slipway.log")}`).toBe(0)
    expect(output).toContain('{"status":"ok"}')
    expect(output).toMatch(/^hello: created, revision [0-9a-f-]{36} DEPLOYED/m)
    expect(output).toMatch(/^hello from slipway$/m)
    expect(output).toMatch(new RegExp(`^hello +READY +http://127\\.0\\.0\\.1:${port}/d/hello +external_container hello:1$`, "m"))
    expect(output).toMatch(/^template: 201$/m)
    expect(output).toMatch(/^box1\nhello from box1\nindex\.html\nok$/m)
    expect(output).toMatch(/^box1 +ready +hello /m)
    expect(output).toMatch(/^hello from the langsmith client$/m)
    expect(output).not.toContain("EBADENGINE")
    expect(leftover, "processes the quick start left running").toBe("")
  })
})
