/**
 * With an older system Node first on PATH (Debian's, /usr/bin/node), what the README tells a
 * newcomer to run works with the Node 24 that `npm install` brings (the `node` dev dependency):
 * `npm install` prints no EBADENGINE noise (.npmrc), `npx slipway` and `npm run slipway --` run the
 * CLI, and bin/slipway.js started by the old Node runs itself again with node_modules/.bin/node.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "..", "..")
const OLD_NODE = "/usr/bin/node"
const version = JSON.parse(execFileSync(process.execPath, ["-p", "JSON.stringify(require('./package.json').version)"], { cwd: root, encoding: "utf8" }))

/** PATH with the system's directories first: `node` and `npm` are Debian's, as on a newcomer's machine. */
const oldPath = `/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${process.env.PATH}`
const oldEnv: NodeJS.ProcessEnv = { ...process.env, PATH: oldPath, npm_config_update_notifier: "false", npm_config_audit: "false", npm_config_fund: "false" }
for (const name of Object.keys(oldEnv)) if (name.startsWith("npm_") && !name.startsWith("npm_config_")) delete oldEnv[name]

let oldVersion: string
let scratch: string

beforeAll(() => {
  if (!existsSync(OLD_NODE)) throw new Error(`${OLD_NODE} is missing: this test needs Debian's (older) Node.js, install Debian packages nodejs and npm`)
  oldVersion = execFileSync(OLD_NODE, ["--version"], { encoding: "utf8" }).trim()
  if (Number(oldVersion.slice(1).split(".")[0]) >= 22) throw new Error(`${OLD_NODE} is ${oldVersion}: this test needs a Node.js older than 22 there`)
  if (!existsSync("/usr/bin/npm")) throw new Error("/usr/bin/npm is missing: install Debian package npm")
  scratch = mkdtempSync(join(tmpdir(), "slipway-node-"))
})

afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe(`with an older Node first on PATH`, () => {
  it("npm install prints no EBADENGINE line (the .npmrc), where it printed hundreds", { timeout: 120_000 }, () => {
    for (const file of ["package.json", "package-lock.json", ".npmrc"]) copyFileSync(join(root, file), join(scratch, file))
    // The ideal tree from the lockfile, checked against the engines of every package as a real install does; nothing written.
    const install = (extra: ReadonlyArray<string>) =>
      spawnSync("npm", ["install", "--dry-run", "--offline", "--ignore-scripts", ...extra], { cwd: scratch, env: oldEnv, encoding: "utf8" })
    const quiet = install([])
    expect(quiet.status, quiet.stderr).toBe(0)
    expect(quiet.stdout + quiet.stderr).not.toContain("EBADENGINE")
    // What the .npmrc's setting silences: one warning per package that needs a newer Node than npm's.
    const loud = install(["--loglevel=warn"])
    expect((loud.stdout + loud.stderr).match(/EBADENGINE Unsupported engine/g)?.length ?? 0).toBeGreaterThan(30)
  })

  it("runs the CLI as the README writes it: npx slipway, npm run slipway --", { timeout: 120_000 }, () => {
    expect(execFileSync("node", ["--version"], { env: oldEnv, encoding: "utf8" }).trim()).toBe(oldVersion)
    for (const [command, args] of [
      ["npx", ["slipway", "--version"]],
      ["npm", ["run", "--silent", "slipway", "--", "--version"]]
    ] as const) {
      const run = spawnSync(command, args, { cwd: root, env: oldEnv, encoding: "utf8" })
      expect(run.status, `${command} ${args.join(" ")}: ${run.stderr}`).toBe(0)
      expect(run.stdout.trim()).toBe(version)
      expect(run.stderr).not.toContain("EBADENGINE")
    }
  })

  it("bin/slipway.js started by the old Node runs itself again with the Node 24 of node_modules/.bin", { timeout: 60_000 }, () => {
    const run = spawnSync(OLD_NODE, [join(root, "bin/slipway.js"), "--version"], { cwd: root, env: oldEnv, encoding: "utf8" })
    expect(run.status, run.stderr).toBe(0)
    expect(run.stdout.trim()).toBe(version)
    // The same with arguments and an exit code of its own: a usage error is 2.
    const usage = spawnSync(OLD_NODE, [join(root, "bin/slipway.js"), "no-such-command"], { cwd: root, env: oldEnv, encoding: "utf8" })
    expect(usage.status).toBe(2)
  })
})
