/**
 * A stand-in for `langchain/langgraphjs-api` (Docker Hub, not reachable here), built by the tests
 * without Docker: umoci + a root filesystem holding
 *
 *   /usr/local/bin/node          the Node 24 binary of node_modules/node, with the glibc libraries `ldd` names
 *   /bin/*                        Debian's static busybox and its applets (sh, ls, ps, nc, …); /usr/bin/env
 *   /usr/local/lib/node_modules/npm, /usr/local/bin/{npm,npx}   the host's npm
 *   /api/node_modules             @langchain/langgraph-api (+ its peers), installed from npm
 *   /api/entrypoint.mjs           serves the graphs of LANGSERVE_GRAPHS (JSON, paths relative to the
 *                                 working directory) on PORT (8000) with /ok, as the real image does
 *
 * Entrypoint `node /api/entrypoint.mjs`, PATH /usr/local/bin:/usr/bin:/bin, exposes 8000/tcp. The
 * host's CA bundle is at /etc/ssl/certs/ca-certificates.crt with NODE_EXTRA_CA_CERTS pointing at it
 * (networks that inspect TLS sign with their own authority; node's bundled list lacks it).
 *
 * Building it takes a while (an npm install of the API, a 280 MB layer), so the OCI layout is
 * cached across test files and runs under SLIPWAY_TEST_CACHE (default <tmp>/slipway-test-cache),
 * keyed by what goes in; `pushLanggraphBase(host)` copies it into a registry.
 */
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { createHash } from "node:crypto"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { type Duration, Effect } from "effect"
import { HOST_ENV, processRunner } from "../../server/runtime/ProcessRunner.ts"
import { isStaticElf, which } from "../../server/runtime/local/tools.ts"

export const LANGGRAPH_API_VERSION = "1.5.1"
export const LANGGRAPH_VERSION = "1.7.3"
const PEERS = [`@langchain/langgraph-api@${LANGGRAPH_API_VERSION}`, `@langchain/langgraph@${LANGGRAPH_VERSION}`, "@langchain/core@1", "@langchain/langgraph-checkpoint@1", "@langchain/langgraph-sdk@1"]

const ENTRYPOINT = `// Serves the graphs named in LANGSERVE_GRAPHS on PORT, as langchain/langgraphjs-api does.
import { register } from "node:module"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
const graphs = JSON.parse(process.env.LANGSERVE_GRAPHS ?? "{}")
const cwd = process.cwd()
const files = Object.values(graphs).map((g) => (typeof g === "string" ? g : g.path).split(":")[0])
// The API's own imports of @langchain/langgraph resolve from the project (as its CLI does).
register(pathToFileURL("/api/node_modules/@langchain/langgraph-api/dist/graph/load.hooks.mjs"), import.meta.url, {
  parentURL: "data:",
  data: { parentURL: pathToFileURL(join(cwd, files[0] ?? "index.mts")).toString() }
})
const { startServer } = await import("@langchain/langgraph-api/server")
const port = Number(process.env.PORT ?? 8000)
await startServer({ port, nWorkers: 1, host: process.env.HOST ?? "0.0.0.0", cwd, graphs })
`

const tool = (name: string, pkg: string): string => {
  const path = which(name)
  if (path === null) throw new Error(`${name} not found: install Debian package ${pkg}`)
  return path
}

const run = (argv: ReadonlyArray<string>, options: { cwd?: string; env?: Record<string, string>; timeout?: Duration.Input } = {}) =>
  Effect.runPromise(processRunner.run(argv, { cleanEnv: true, env: { ...HOST_ENV, HOME: "/root", ...options.env }, cwd: options.cwd, timeout: options.timeout ?? "10 minutes" })).then((r) => r.stdout)

const nodeBinary = () => realpathSync(join(process.cwd(), "node_modules/node/bin/node"))
const npmDir = () => {
  const npm = which("npm")
  if (npm === null) throw new Error("npm not found: install Debian package npm")
  return dirname(dirname(realpathSync(npm)))
}

export const cacheRoot = () => process.env.SLIPWAY_TEST_CACHE ?? join(tmpdir(), "slipway-test-cache")

/** What goes into the image, hashed: a change builds a new one. */
const recipeKey = () => {
  const npmVersion = JSON.parse(readFileSync(join(npmDir(), "package.json"), "utf8")).version as string
  return createHash("sha256").update(JSON.stringify({ node: process.versions.node, npmVersion, PEERS, ENTRYPOINT, v: 3 })).digest("hex").slice(0, 16)
}

export interface LanggraphBase {
  /** OCI layout holding the image under tag `base`. */
  readonly layout: string
  /** Seconds the build took (0 when it came from the cache). */
  readonly buildSeconds: number
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The cached base image's OCI layout, built first when missing (one builder at a time across processes). */
export const langgraphBase = async (): Promise<LanggraphBase> => {
  const dir = join(cacheRoot(), `langgraphjs-base-${recipeKey()}`)
  const layout = join(dir, "oci")
  if (existsSync(join(dir, "done"))) return { layout, buildSeconds: 0 }
  mkdirSync(cacheRoot(), { recursive: true })
  const lock = `${dir}.lock`
  const deadline = Date.now() + 15 * 60_000
  for (;;) {
    try {
      mkdirSync(lock)
      break
    } catch {
      // Another process is building it: wait for it (or take over a lock older than 15 minutes).
      if (existsSync(join(dir, "done"))) return { layout, buildSeconds: 0 }
      if (Date.now() > deadline) rmSync(lock, { recursive: true, force: true })
      await sleep(500)
    }
  }
  try {
    if (existsSync(join(dir, "done"))) return { layout, buildSeconds: 0 }
    const started = Date.now()
    const staging = `${dir}.staging-${process.pid}`
    rmSync(staging, { recursive: true, force: true })
    await build(staging)
    rmSync(dir, { recursive: true, force: true })
    renameSync(staging, dir)
    writeFileSync(join(dir, "done"), new Date().toISOString())
    return { layout, buildSeconds: (Date.now() - started) / 1000 }
  } finally {
    rmSync(lock, { recursive: true, force: true })
  }
}

const build = async (dir: string) => {
  const umoci = tool("umoci", "umoci")
  const busybox = tool("busybox", "busybox-static")
  if (!isStaticElf(busybox)) throw new Error(`${busybox} is not statically linked: install Debian package busybox-static`)
  const layout = join(dir, "oci")
  const bundle = join(dir, "bundle")
  const api = join(dir, "api")
  mkdirSync(api, { recursive: true })

  // The API and its peers, from npm.
  writeFileSync(join(api, "package.json"), JSON.stringify({ name: "langgraphjs-api", private: true, type: "module" }, null, 2))
  await run(["npm", "install", "--no-audit", "--no-fund", "--omit=dev", "--no-package-lock", ...PEERS], { cwd: api, env: { npm_config_cache: join(cacheRoot(), "npm") } })

  await run([umoci, "init", "--layout", layout])
  await run([umoci, "new", "--image", `${layout}:base`])
  await run([umoci, "unpack", "--image", `${layout}:base`, bundle])
  const rootfs = join(bundle, "rootfs")
  for (const d of ["bin", "etc", "root", "tmp", "usr/bin", "usr/local/bin", "usr/local/lib/node_modules", "deps", "proc", "sys", "dev"]) mkdirSync(join(rootfs, d), { recursive: true })
  chmodSync(join(rootfs, "tmp"), 0o1777)

  // busybox and its applets.
  copyFileSync(busybox, join(rootfs, "bin/busybox"))
  chmodSync(join(rootfs, "bin/busybox"), 0o755)
  for (const applet of new Set((await run([busybox, "--list"])).split("\n").map((s) => s.trim()))) {
    if (applet === "" || applet === "busybox" || applet.includes("/")) continue
    const link = join(rootfs, "bin", applet)
    if (!existsSync(link)) symlinkSync("busybox", link)
  }
  symlinkSync("/bin/busybox", join(rootfs, "usr/bin/env"))

  // node and the libraries it links.
  const node = nodeBinary()
  copyFileSync(node, join(rootfs, "usr/local/bin/node"))
  chmodSync(join(rootfs, "usr/local/bin/node"), 0o755)
  for (const line of (await run(["ldd", node])).split("\n")) {
    const m = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line)
    if (!m) continue
    const target = join(rootfs, m[1]!)
    mkdirSync(dirname(target), { recursive: true })
    copyFileSync(realpathSync(m[1]!), target)
  }

  // npm.
  cpSync(npmDir(), join(rootfs, "usr/local/lib/node_modules/npm"), { recursive: true })
  symlinkSync("../lib/node_modules/npm/bin/npm-cli.js", join(rootfs, "usr/local/bin/npm"))
  symlinkSync("../lib/node_modules/npm/bin/npx-cli.js", join(rootfs, "usr/local/bin/npx"))

  // The API.
  cpSync(api, join(rootfs, "api"), { recursive: true })
  writeFileSync(join(rootfs, "api/entrypoint.mjs"), ENTRYPOINT)

  writeFileSync(join(rootfs, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000:node:/home/node:/bin/sh\n")
  writeFileSync(join(rootfs, "etc/group"), "root:x:0:\nnode:x:1000:\n")
  writeFileSync(join(rootfs, "etc/hosts"), "127.0.0.1 localhost\n::1 localhost\n")
  // The host's trusted certificates (this network may inspect TLS with its own authority), for node and npm.
  mkdirSync(join(rootfs, "etc/ssl/certs"), { recursive: true })
  copyFileSync(realpathSync("/etc/ssl/certs/ca-certificates.crt"), join(rootfs, "etc/ssl/certs/ca-certificates.crt"))

  await run([umoci, "repack", "--image", `${layout}:base`, bundle], { timeout: "15 minutes" })
  rmSync(bundle, { recursive: true, force: true })
  rmSync(api, { recursive: true, force: true })
  await run([
    umoci, "config", "--image", `${layout}:base`,
    "--clear=config.env", "--config.env", "PATH=/usr/local/bin:/usr/bin:/bin", "--config.env", "PORT=8000", "--config.env", "NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt",
    "--clear=config.cmd", "--config.entrypoint", "/usr/local/bin/node", "--config.entrypoint", "/api/entrypoint.mjs",
    "--config.workingdir", "/deps",
    "--config.exposedports", "8000/tcp"
  ])
  await run([umoci, "gc", "--layout", layout])
}

/** Pushes the base image to `<host>/langchain/langgraphjs-api:<tag>` (plain HTTP); answers the reference. */
export const pushLanggraphBase = async (host: string, tag = "24"): Promise<string> => {
  const skopeo = tool("skopeo", "skopeo")
  const { layout } = await langgraphBase()
  const ref = `${host}/langchain/langgraphjs-api:${tag}`
  await run([skopeo, "--insecure-policy", "copy", "--quiet", "--dest-tls-verify=false", "--dest-no-creds", `oci:${layout}:base`, `docker://${ref}`], { timeout: "5 minutes" })
  return ref
}
