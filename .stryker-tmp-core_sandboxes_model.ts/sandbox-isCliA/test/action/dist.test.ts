/**
 * check-dist: the committed bundle must be what `npm run build:action` makes from the current
 * sources. The bundle is built from lib/ (tsc's output, which `npm test` refreshes first through
 * `pretest`); this check bundles lib/action/main.js again with the same ncc options into a
 * temporary directory and compares byte for byte. It does not write lib/ itself, since other
 * test files read it concurrently; when lib/ is older than a source it says so instead.
 */
// @ts-nocheck

import { execFileSync, spawnSync } from "node:child_process"
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, relative } from "node:path"
import { afterAll, describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "../..")
const out = mkdtempSync(join(tmpdir(), "slipway-dist-"))

afterAll(() => rmSync(out, { recursive: true, force: true }))

const sources = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [join(dir, entry.name)] : []
  )

/** Sources the bundle may include whose lib/ output is missing or older than they are. */
const staleOutputs = () =>
  [...sources(join(root, "action")), ...sources(join(root, "core"))].filter((source) => {
    const output = join(root, "lib", relative(root, source)).replace(/\.ts$/, ".js")
    return !existsSync(output) || statSync(output).mtimeMs < statSync(source).mtimeMs
  })

describe("dist/", () => {
  it("build:action runs the same commands as this check", () => {
    const scripts = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts
    expect(scripts["build:action"]).toBe("tsc -p action/tsconfig.json && ncc build lib/action/main.js --minify -o dist --license licenses.txt")
  })

  it("is up to date with the sources (otherwise run `npm run build:action` and commit dist/)", { timeout: 180_000 }, () => {
    const stale = staleOutputs().map((source) => relative(root, source))
    expect(stale, "lib/ is older than these sources: run `npm run build` (npm test does) before this check").toEqual([])
    execFileSync(join(root, "node_modules/.bin/ncc"), ["build", "lib/action/main.js", "--minify", "-o", out, "--license", "licenses.txt"], {
      cwd: root,
      stdio: "pipe"
    })
    for (const file of ["index.js", "licenses.txt", "package.json"]) {
      const committed = join(root, "dist", file)
      expect(existsSync(committed), `dist/${file} is missing: run \`npm run build:action\` and commit dist/`).toBe(true)
      const same = readFileSync(join(out, file)).equals(readFileSync(committed))
      expect(same, `dist/${file} differs from a fresh build: run \`npm run build:action\` and commit dist/`).toBe(true)
    }
  })

  it("is an ES module bundle that runs on its own, without node_modules", () => {
    expect(JSON.parse(readFileSync(join(root, "dist/package.json"), "utf8"))).toEqual({ type: "module" })
    // A copy of dist/ alone, far from the repository's node_modules, as in an action checkout stripped to dist/.
    const alone = join(out, "alone")
    cpSync(join(root, "dist"), alone, { recursive: true })
    const result = spawnSync(process.execPath, [join(alone, "index.js")], { cwd: alone, env: { PATH: process.env.PATH ?? "" }, encoding: "utf8" })
    expect(result.stderr).toBe("")
    expect(result.status).toBe(1)
    expect(result.stdout).toContain("::error title=Slipway%3A input api-url::api-url: is required")
  })
})
