/**
 * Test images, built here without Docker (umoci + Debian's static busybox) and pushed with skopeo.
 *
 *   busybox        /bin/busybox with every applet linked in /bin (and /bin/bash, a script running busybox sh: the
 *                  clients' default shell; Debian's busybox has no bash applet), PATH=/bin,
 *                  /home/user, /tmp, /etc/passwd; cmd /bin/sh
 *   http-ok        busybox + `httpd -f -p ${PORT:-8000} -h /www`: GET /ok answers 200 with body "ok";
 *                  workingDir /www, exposes 8000/tcp
 *   crash          exits 1 at once (after one line on stderr)
 *   never-healthy  runs `sleep` forever and never listens
 *
 * The OCI layout is built once per process into a temporary directory and reused: `pushTestImages(host)`
 * only copies. Call `removeTestImages()` in `afterAll`. Note: Debian's static busybox `wget` segfaults;
 * use `nc` in images.
 */
import { chmodSync, existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { runCommand } from "./run.ts"
import { isStaticElf, which } from "../../server/runtime/local/tools.ts"
import { sweepDeadDirectories } from "./sweep.ts"

export type TestImageName = "busybox" | "http-ok" | "crash" | "never-healthy"
export const TEST_IMAGE_NAMES: ReadonlyArray<TestImageName> = ["busybox", "http-ok", "crash", "never-healthy"]

export interface TestImageRefs {
  readonly busybox: string
  readonly httpOk: string
  readonly crash: string
  readonly neverHealthy: string
  /** The busybox image also pushed as `<host>/library/python:3.12-slim`: the registry can act as a Docker Hub mirror. */
  readonly python: string
}

/** Where `pushTestImages(host)` puts each image. */
export const testImageRefs = (host: string): TestImageRefs => ({
  busybox: `${host}/slipway-test/busybox:1`,
  httpOk: `${host}/slipway-test/http-ok:1`,
  crash: `${host}/slipway-test/crash:1`,
  neverHealthy: `${host}/slipway-test/never-healthy:1`,
  python: `${host}/library/python:3.12-slim`
})

const tool = (name: string, pkg: string): string => {
  const path = which(name)
  if (path === null) throw new Error(`${name} not found: install Debian package ${pkg}`)
  return path
}

const staticBusybox = (): string => {
  const path = which("busybox")
  if (path === null || !isStaticElf(path)) throw new Error("a statically linked busybox is needed: install Debian package busybox-static")
  return path
}

let built: Promise<string> | undefined

const BUILD_PREFIX = "slipway-test-images-"

const sweepDeadBuilds = () => sweepDeadDirectories(BUILD_PREFIX)

/** Builds the four images into one OCI layout (once per process); resolves to the layout's path. */
export const buildTestImages = (): Promise<string> =>
  (built ??= build().catch((error) => {
    built = undefined
    throw error
  }))

let buildDir: string | undefined

/**
 * Removes this process's build (call it in `afterAll`): vitest may end a worker without running
 * "exit" handlers. A later build also sweeps the directories of dead processes.
 */
export const removeTestImages = (): void => {
  if (buildDir !== undefined) rmSync(buildDir, { recursive: true, force: true })
  buildDir = undefined
  built = undefined
}

const build = async (): Promise<string> => {
  const umoci = tool("umoci", "umoci")
  const busybox = staticBusybox()
  sweepDeadBuilds()
  const dir = join(tmpdir(), `${BUILD_PREFIX}${process.pid}-${Date.now().toString(36)}`)
  mkdirSync(dir, { recursive: true })
  buildDir = dir
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }))
  const layout = join(dir, "oci")
  const bundle = join(dir, "bundle")
  const run = (...args: Array<string>) => runCommand([umoci, ...args], { timeoutMs: 60_000 })

  await run("init", "--layout", layout)
  await run("new", "--image", `${layout}:busybox`)
  await run("unpack", "--image", `${layout}:busybox`, bundle)

  const rootfs = join(bundle, "rootfs")
  for (const d of ["bin", "etc", "home/user", "root", "tmp", "www", "proc", "sys", "dev"]) mkdirSync(join(rootfs, d), { recursive: true })
  chmodSync(join(rootfs, "tmp"), 0o1777)
  const { stdout } = await runCommand([busybox, "--list"], { timeoutMs: 10_000 })
  await runCommand(["cp", busybox, join(rootfs, "bin", "busybox")], { timeoutMs: 10_000 })
  for (const applet of new Set(stdout.split("\n").map((s) => s.trim()))) {
    if (applet === "" || applet === "busybox" || applet.includes("/")) continue
    const link = join(rootfs, "bin", applet)
    if (!existsSync(link)) symlinkSync("busybox", link)
  }
  writeFileSync(join(rootfs, "bin", "bash"), '#!/bin/sh\nexec /bin/sh "$@"\n', { mode: 0o755 })
  writeFileSync(join(rootfs, "etc", "passwd"), "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n")
  writeFileSync(join(rootfs, "etc", "group"), "root:x:0:\nuser:x:1000:\n")
  writeFileSync(join(rootfs, "www", "ok"), "ok")
  await run("repack", "--image", `${layout}:busybox`, bundle)
  rmSync(bundle, { recursive: true, force: true })

  await run("config", "--image", `${layout}:busybox`, "--clear=config.env", "--config.env", "PATH=/bin", "--clear=config.cmd", "--config.cmd", "/bin/sh")
  await run(
    "config",
    "--image", `${layout}:busybox`,
    "--tag", "http-ok",
    "--config.workingdir", "/www",
    "--config.exposedports", "8000/tcp",
    "--clear=config.cmd",
    "--config.cmd", "/bin/sh", "--config.cmd", "-c", "--config.cmd", "exec httpd -f -p ${PORT:-8000} -h /www"
  )
  await run("config", "--image", `${layout}:busybox`, "--tag", "crash", "--clear=config.cmd", "--config.cmd", "/bin/sh", "--config.cmd", "-c", "--config.cmd", "echo crash: exiting at once >&2; exit 1")
  await run("config", "--image", `${layout}:busybox`, "--tag", "never-healthy", "--clear=config.cmd", "--config.cmd", "/bin/sleep", "--config.cmd", "2147483647")
  await run("gc", "--layout", layout)
  return layout
}

/**
 * Pushes the test images to `host` (plain HTTP) and returns their references. With `authFile`
 * (a docker-config JSON) for a registry that requires credentials.
 */
export const pushTestImages = async (host: string, options: { readonly authFile?: string; readonly only?: ReadonlyArray<TestImageName> } = {}): Promise<TestImageRefs> => {
  const skopeo = tool("skopeo", "skopeo")
  const layout = await buildTestImages()
  const refs = testImageRefs(host)
  const targets: Array<[TestImageName, string]> = [
    ["busybox", refs.busybox],
    ["http-ok", refs.httpOk],
    ["crash", refs.crash],
    ["never-healthy", refs.neverHealthy],
    ["busybox", refs.python]
  ]
  const wanted = options.only ? targets.filter(([name]) => options.only!.includes(name)) : targets
  await Promise.all(
    wanted.map(([name, ref]) =>
      runCommand(
        [
          skopeo,
          "--insecure-policy",
          "copy",
          "--quiet",
          "--dest-tls-verify=false",
          ...(options.authFile ? ["--dest-authfile", options.authFile] : ["--dest-no-creds"]),
          `oci:${layout}:${name}`,
          `docker://${ref}`
        ],
        { timeoutMs: 120_000 }
      )
    )
  )
  return refs
}
