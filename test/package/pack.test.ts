/**
 * The package as a user installs it: `npm pack` (which runs the `prepare` build into lib/), the
 * tarball installed offline into a scratch project (every dependency from the npm cache), the
 * library example of docs/library.md run there as written, one copy of effect, the `slipway` bin, and a
 * clear error (not a crash) when an old Node.js imports it.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "../..")
const OLD_NODE = "/usr/bin/node"
let dir: string
let scratch: string
let tarball: string
let packed: { filename: string; integrity: string; files: Array<{ path: string }> }

/** The library example of docs/library.md: the js block after the `<!-- library-example -->` marker. */
const libraryExample = () => {
  const readme = readFileSync(join(root, "docs/library.md"), "utf8")
  const match = /<!-- library-example -->\s*```js\n([\s\S]*?)```/.exec(readme)
  if (!match) throw new Error("docs/library.md has no library example (a ```js block after <!-- library-example -->)")
  return match[1]!
}

/** npm with this process's node first on PATH (the node devDependency, 24). */
const npm = (args: ReadonlyArray<string>, cwd: string) =>
  execFileSync("npm", [...args], {
    cwd,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, PATH: `${join(process.execPath, "..")}:${process.env.PATH}`, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" }
  })

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "slipway-pack-"))
  scratch = join(dir, "scratch")
  mkdirSync(scratch)
}, 10_000)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("the packed package", () => {
  it("packs with its compiled lib/ (the prepare build), sources, bin and console", { timeout: 400_000 }, () => {
    const output = JSON.parse(npm(["pack", "--json", "--pack-destination", dir], root))
    packed = output[0]
    tarball = join(dir, packed.filename)
    expect(existsSync(tarball)).toBe(true)
    const files = packed.files.map((file) => file.path)
    for (const path of ["package.json", "README.md", "lib/core/index.js", "lib/core/index.d.ts", "lib/core/nodeVersion.js", "lib/server/index.js", "lib/server/index.d.ts", "lib/cli/main.js", "bin/slipway.js", "console/dist/index.html"]) {
      expect(files, path).toContain(path)
    }
    expect(files.some((path) => path.startsWith("test/") || path.startsWith("node_modules/") || path.startsWith("bench/"))).toBe(false)
    const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
    expect(manifest.scripts.prepare).toBe("tsc -p tsconfig.build.json")
    expect(manifest.dependencies.effect).toMatch(/^\^4\./)
  })

  it("installs offline into a scratch project, with one copy of effect", { timeout: 300_000 }, () => {
    // Offline, npm can only take what its cache holds. Tarballs are cached by integrity, but a
    // project installed from a lockfile (as this checkout is) never fetched the registry's package
    // documents that resolving a range needs. So the scratch project gets a lockfile, as a
    // reproducible install has: the tarball, and the package's production dependencies at the
    // versions this checkout locks (their entries from package-lock.json, with the registry URL).
    const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"))
    const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
    const spec = `file:../${packed.filename}`
    const packages: Record<string, any> = {
      "": { name: "scratch", version: "1.0.0", dependencies: { slipway: spec } },
      "node_modules/slipway": { version: manifest.version, resolved: spec, integrity: packed.integrity, dependencies: manifest.dependencies, bin: manifest.bin, engines: manifest.engines }
    }
    for (const [path, entry] of Object.entries<any>(lock.packages)) {
      if (path === "" || entry.dev || entry.link) continue
      const name = path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length)
      packages[path] = { resolved: `https://registry.npmjs.org/${name}/-/${name.split("/").pop()}-${entry.version}.tgz`, ...entry }
    }
    writeFileSync(join(scratch, "package.json"), JSON.stringify({ name: "scratch", version: "1.0.0", type: "module", private: true, dependencies: { slipway: spec } }))
    writeFileSync(join(scratch, "package-lock.json"), JSON.stringify({ name: "scratch", version: "1.0.0", lockfileVersion: 3, requires: true, packages }))
    npm(["ci", "--offline", "--no-audit", "--no-fund"], scratch)
    expect(existsSync(join(scratch, "node_modules/slipway/lib/core/index.js"))).toBe(true)
    const tree = JSON.parse(npm(["ls", "effect", "--all", "--json"], scratch))
    const versions = new Set<string>()
    const walk = (node: any) => {
      for (const [name, child] of Object.entries<any>(node.dependencies ?? {})) {
        if (name === "effect") versions.add(child.version)
        walk(child)
      }
    }
    walk(tree)
    expect([...versions]).toHaveLength(1)
    expect([...versions][0]).toMatch(/^4\./)
  })

  it("runs the library example of docs/library.md: client, call, wait for a revision, typed errors, embedded server", { timeout: 120_000 }, () => {
    writeFileSync(join(scratch, "example.mjs"), libraryExample())
    const run = spawnSync(process.execPath, ["example.mjs"], { cwd: scratch, encoding: "utf8", timeout: 100_000 })
    expect(run.status, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/^deployed: agent revision [0-9a-f-]{36} is DEPLOYED$/m)
    expect(run.stdout).toMatch(/^not found: Deployment 00000000-0000-4000-8000-00000000abcd not found$/m)
    expect(run.stdout).toMatch(/^refused: body\.name: /m)
    // Resolved from the installed package, not this checkout.
    const resolved = spawnSync(process.execPath, ["-e", 'console.log(import.meta.resolve("slipway"), import.meta.resolve("slipway/server"))', "--input-type=module"], { cwd: scratch, encoding: "utf8" })
    expect(resolved.stdout).toContain(join(scratch, "node_modules/slipway/lib/core/index.js"))
    expect(resolved.stdout).toContain(join(scratch, "node_modules/slipway/lib/server/index.js"))
  })

  it("ships the slipway command", { timeout: 60_000 }, () => {
    const run = spawnSync(process.execPath, [join(scratch, "node_modules/slipway/bin/slipway.js"), "--version"], { cwd: scratch, encoding: "utf8" })
    expect(run.status, run.stderr).toBe(0)
    expect(run.stdout.trim()).toBe("0.1.0")
  })

  it("fails with a clear message, not a crash, when an old Node.js imports it", { timeout: 60_000 }, () => {
    if (!existsSync(OLD_NODE)) throw new Error(`${OLD_NODE} is missing: this test needs Debian's (older) Node.js, install Debian package nodejs`)
    const version = execFileSync(OLD_NODE, ["--version"], { encoding: "utf8" }).trim()
    if (Number(version.slice(1).split(".")[0]) >= 22) throw new Error(`${OLD_NODE} is ${version}: this test needs a Node.js older than 22 there (Debian 12's nodejs is 18)`)
    for (const entry of ["slipway", "slipway/server"]) {
      const run = spawnSync(OLD_NODE, ["--input-type=module", "-e", `import ${JSON.stringify(entry)}`], { cwd: scratch, encoding: "utf8" })
      expect(run.signal, entry).toBeNull()
      expect(run.status, entry).toBe(1)
      expect(run.stderr, entry).toContain(`slipway needs Node.js 22.12 or later (24 recommended); this is Node.js ${version.slice(1)}`)
    }
    // Without the check the server's native SQLite addon crashes this Node outright: the check is what stands between.
    const crash = spawnSync(OLD_NODE, ["-e", `require(${JSON.stringify(join(scratch, "node_modules/better-sqlite3"))})(":memory:")`], { cwd: scratch, encoding: "utf8" })
    expect(crash.status === 0 && crash.signal === null).toBe(false)
  })
})
