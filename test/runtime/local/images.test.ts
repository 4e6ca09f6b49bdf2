/**
 * The image store against a real registry (Debian docker-registry) with images built by the tests
 * themselves (umoci + static busybox), pulled with the real skopeo and umoci.
 */
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync as readdir, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs"
import { execFileSync, spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { gunzipSync } from "node:zlib"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { Effect, Fiber } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ImageStore, ImagePullError, makeImageStore as makeStore, type ImageStoreOptions } from "../../../server/runtime/local/ImageStore.ts"
import { ProcessRunnerLive } from "../../../server/runtime/ProcessRunner.ts"
import { authFileContent, startRegistry, type TestRegistry } from "../../support/registry.ts"
import { processesMentioning, startSilentRegistry } from "../../support/silent.ts"
import { pushTestImages, removeTestImages, type TestImageRefs } from "../../support/images.ts"
import { runCommand } from "../../support/run.ts"

let registry: TestRegistry
let privateRegistry: TestRegistry
let refs: TestImageRefs
let privateRefs: TestImageRefs
const roots: Array<string> = []

const newRoot = (): string => {
  const root = mkdtempSync(join(tmpdir(), "slipway-images-test-"))
  roots.push(root)
  return root
}
/** The real store (made as the runtime's layer makes it), its calls as Promises. */
const makeImageStore = (options: ImageStoreOptions) => {
  const ready = Effect.runPromise(Effect.provide(makeStore(options), ProcessRunnerLive))
  let made: ImageStore["Service"] | undefined
  void ready.then((store) => (made = store), () => undefined)
  const use = <A>(f: (store: ImageStore["Service"]) => Effect.Effect<A, unknown>) => ready.then((store) => Effect.runPromise(f(store)))
  return {
    root: resolve(options.root),
    pull: (reference: string, pullOptions: { readonly onProgress?: (message: string) => void } = {}) =>
      use((store) => store.pull(reference, pullOptions.onProgress ? { onProgress: (message) => Effect.sync(() => pullOptions.onProgress!(message)) } : {})),
    lookup: (digest: string) => use((store) => store.lookup(digest)),
    list: () => use((store) => store.list),
    remove: (digest: string) => use((store) => store.remove(digest)),
    importOciLayout: (layout: string, tag: string, reference: string, onProgress?: (message: string) => void) =>
      use((store) => store.importOciLayout(layout, tag, { reference, ...(onProgress ? { onProgress: (message) => Effect.sync(() => onProgress(message)) } : {}) })),
    gc: (keep: ReadonlySet<string>) => use((store) => store.gc(keep)),
    stats: () => made!.stats()
  }
}
const store = (options: Partial<ImageStoreOptions> = {}) =>
  makeImageStore({ root: newRoot(), insecureRegistries: [registry.host, privateRegistry.host], ...options })

const pullError = async (promise: Promise<unknown>): Promise<ImagePullError> => {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(ImagePullError)
    return error as ImagePullError
  }
  throw new Error("expected the pull to fail")
}

/** A loopback port with nothing listening on it. */
const closedPort = (): Promise<number> =>
  new Promise((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })

beforeAll(async () => {
  ;[registry, privateRegistry] = await Promise.all([startRegistry(), startRegistry({ auth: { username: "slipway", password: "correct horse" } })])
  ;[refs, privateRefs] = await Promise.all([
    pushTestImages(registry.host),
    pushTestImages(privateRegistry.host, { authFile: privateRegistry.authFile, only: ["busybox"] })
  ])
})

afterAll(async () => {
  await Promise.all([registry?.stop(), privateRegistry?.stop()])
  removeTestImages()
  for (const root of roots) rmSync(root, { recursive: true, force: true })
})

/** The image config of the http-ok test image, as the store parses it. */
const HTTP_OK_CONFIG = {
  entrypoint: [],
  cmd: ["/bin/sh", "-c", "exec httpd -f -p ${PORT:-8000} -h /www"],
  env: ["PATH=/bin"],
  workingDir: "/www",
  user: "",
  exposedPorts: [{ port: 8000, protocol: "tcp" }]
}

describe("pull", () => {
  it("pulls, unpacks and parses the image config", async () => {
    const images = store()
    const progress: Array<string> = []
    const image = await images.pull(refs.httpOk, { onProgress: (m) => progress.push(m) })

    expect(image.reference).toBe(refs.httpOk)
    expect(image.digest).toMatch(/^sha256:[a-f0-9]{64}$/)
    expect(image.rootfs.startsWith(images.root)).toBe(true)
    expect(readFileSync(join(image.rootfs, "www", "ok"), "utf8")).toBe("ok")
    expect(statSync(join(image.rootfs, "bin", "busybox")).isFile()).toBe(true)
    expect(lstatSync(join(image.rootfs, "bin", "sh")).isSymbolicLink()).toBe(true)
    expect(readlinkSync(join(image.rootfs, "bin", "sh"))).toBe("busybox")
    expect(readFileSync(join(image.rootfs, "bin", "bash"), "utf8")).toContain('exec /bin/sh "$@"')
    // unpacked as root: ownership kept (root:root), the sticky world-writable /tmp kept
    expect(statSync(join(image.rootfs, "bin", "busybox")).uid).toBe(0)
    expect(statSync(join(image.rootfs, "tmp")).mode & 0o7777).toBe(0o1777)

    expect(image.config).toEqual(HTTP_OK_CONFIG)
    expect(progress[0]).toBe(`resolving ${refs.httpOk}`)
    expect(progress).toContain(`pulling ${refs.httpOk}`)
    expect(progress).toContain(`unpacking ${image.digest.slice(0, 19)}`)
    expect(progress[progress.length - 1]).toBe(`ready ${image.digest.slice(0, 19)}`)
    expect(images.stats()).toEqual({ resolves: 1, copies: 1, unpacks: 1, cacheHits: 0 })

    // Nothing but the image directory is left behind.
    expect(readFileSync(join(images.root, "images", image.digest.replace(":", "-"), "image.json"), "utf8")).toContain(image.digest)
    expect(existsSync(join(images.root, "tmp"))).toBe(true)
    expect(readdir(join(images.root, "tmp"))).toEqual([])
  })

  it("parses the config of every test image", async () => {
    const images = store()
    const [busybox, crash, never] = await Promise.all([images.pull(refs.busybox), images.pull(refs.crash), images.pull(refs.neverHealthy)])
    expect(busybox.config).toMatchObject({ cmd: ["/bin/sh"], env: ["PATH=/bin"], workingDir: "/", exposedPorts: [] })
    expect(crash.config.cmd).toEqual(["/bin/sh", "-c", "echo crash: exiting at once >&2; exit 1"])
    expect(never.config.cmd).toEqual(["/bin/sleep", "2147483647"])
    expect(statSync(join(busybox.rootfs, "home", "user")).isDirectory()).toBe(true)
  })
})

describe("test images", () => {
  /** Runs an image's cmd with its env in a chroot of its rootfs (root only; boxes come in their own tests). */
  const start = (image: { rootfs: string; config: { cmd: ReadonlyArray<string>; env: ReadonlyArray<string>; workingDir: string } }, env: Record<string, string> = {}) =>
    spawn("chroot", [image.rootfs, "/bin/env", "-i", ...image.config.env, ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...image.config.cmd], {
      cwd: "/",
      stdio: ["ignore", "pipe", "pipe"]
    })
  const exit = (child: ReturnType<typeof spawn>) =>
    new Promise<number | null>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(child.exitCode) : child.once("exit", (code) => resolve(code))))

  it("http-ok answers GET /ok with 200 ok on $PORT; crash exits 1; never-healthy keeps sleeping", async () => {
    const images = store()
    const [httpOk, crash, never] = await Promise.all([images.pull(refs.httpOk), images.pull(refs.crash), images.pull(refs.neverHealthy)])
    const port = await closedPort()
    const server = start(httpOk, { PORT: String(port) })
    const sleeper = start(never)
    try {
      let response: Response | undefined
      for (let i = 0; i < 100 && response === undefined; i++) {
        response = await fetch(`http://127.0.0.1:${port}/ok`).catch(() => undefined)
        if (response === undefined) await new Promise((r) => setTimeout(r, 50))
      }
      expect(response?.status).toBe(200)
      expect(await response!.text()).toBe("ok")
      expect(await exit(start(crash))).toBe(1)
      await new Promise((r) => setTimeout(r, 200))
      expect(sleeper.exitCode).toBeNull()
    } finally {
      server.kill("SIGKILL")
      sleeper.kill("SIGKILL")
      await Promise.all([exit(server), exit(sleeper)])
    }
  })
})

describe("cache", () => {
  it("a second pull of the same reference resolves the digest and reuses the rootfs without unpacking", async () => {
    const images = store()
    let t = performance.now()
    const first = await images.pull(refs.busybox)
    const firstMs = performance.now() - t
    const before = statSync(first.rootfs)
    const marker = join(first.rootfs, "..", "image.json")
    const markerBefore = statSync(marker).mtimeMs

    t = performance.now()
    const progress: Array<string> = []
    const second = await images.pull(refs.busybox, { onProgress: (m) => progress.push(m) })
    const secondMs = performance.now() - t

    expect(second).toEqual(first)
    expect(images.stats()).toEqual({ resolves: 2, copies: 1, unpacks: 1, cacheHits: 1 })
    expect(progress).toEqual([`resolving ${refs.busybox}`, `cached ${first.digest.slice(0, 19)}`])
    expect(statSync(second.rootfs).ino).toBe(before.ino)
    expect(statSync(marker).mtimeMs).toBe(markerBefore)
    expect(secondMs).toBeLessThan(firstMs)
  })

  it("survives a restart: a new store on the same root reuses the cache; a pinned digest needs no network", async () => {
    const root = newRoot()
    const first = await makeImageStore({ root, insecureRegistries: [registry.host] }).pull(refs.busybox)

    const restarted = makeImageStore({ root, insecureRegistries: [registry.host] })
    const again = await restarted.pull(refs.busybox)
    expect(again.rootfs).toBe(first.rootfs)
    expect(restarted.stats()).toMatchObject({ copies: 0, unpacks: 0, cacheHits: 1 })

    // By digest: answered from the cache without even resolving (the registry is not asked).
    const name = refs.busybox.slice(0, refs.busybox.lastIndexOf(":"))
    const pinned = await restarted.pull(`${name}@${first.digest}`)
    expect(pinned.rootfs).toBe(first.rootfs)
    expect(pinned.reference).toBe(`${name}@${first.digest}`)
    expect(restarted.stats()).toEqual({ resolves: 1, copies: 0, unpacks: 0, cacheHits: 2 })
    expect(await restarted.lookup(first.digest)).toMatchObject({ digest: first.digest, rootfs: first.rootfs })
  })

  it("concurrent pulls of one reference, or of references to one digest, share one copy and one unpack", async () => {
    const images = store()
    const progress: Array<Array<string>> = [[], [], [], []]
    const pulls = [refs.busybox, refs.busybox, refs.busybox, refs.python].map((ref, i) => images.pull(ref, { onProgress: (m) => progress[i]!.push(m) }))
    const results = await Promise.all(pulls)
    // busybox and library/python are the same image pushed under two names.
    expect(new Set(results.map((r) => r.digest)).size).toBe(1)
    expect(new Set(results.map((r) => r.rootfs)).size).toBe(1)
    expect(results[3]!.reference).toBe(refs.python)
    const stats = images.stats()
    expect(stats.copies).toBe(1)
    expect(stats.unpacks).toBe(1)
    expect(stats.resolves).toBeLessThanOrEqual(2) // one per distinct reference
    // every caller hears how it ends
    for (const p of progress) expect(p[p.length - 1]).toMatch(/^(ready|cached) sha256:/)
  })

  it("a leftover without its image.json (a crash mid-way) is not taken for a complete image", async () => {
    const root = newRoot()
    const probe = await makeImageStore({ root: newRoot(), insecureRegistries: [registry.host] }).pull(refs.crash)
    const half = join(root, "images", probe.digest.replace(":", "-"))
    mkdirSync(join(half, "rootfs", "bin"), { recursive: true })
    // and a work directory of a process that died
    mkdirSync(join(root, "tmp", "2147483646-abc", "bundle"), { recursive: true })

    const images = makeImageStore({ root, insecureRegistries: [registry.host] })
    const image = await images.pull(refs.crash)
    expect(images.stats()).toMatchObject({ copies: 1, unpacks: 1, cacheHits: 0 })
    expect(statSync(join(image.rootfs, "bin", "busybox")).isFile()).toBe(true)
    expect(readdir(join(root, "tmp"))).toEqual([])
  })

  it("remove and gc free the disk", async () => {
    const images = store()
    const [a, b, c] = await Promise.all([images.pull(refs.busybox), images.pull(refs.crash), images.pull(refs.neverHealthy)])
    expect((await images.list()).map((i) => i.digest).sort()).toEqual([a.digest, b.digest, c.digest].sort())

    expect(await images.remove(b.digest)).toBe(true)
    expect(await images.remove(b.digest)).toBe(false)
    expect(existsSync(b.rootfs)).toBe(false)
    expect(await images.lookup(b.digest)).toBeNull()

    expect(await images.gc(new Set([a.digest]))).toEqual([c.digest])
    expect(existsSync(c.rootfs)).toBe(false)
    expect(existsSync(a.rootfs)).toBe(true)
    expect((await images.list()).map((i) => i.digest)).toEqual([a.digest])
    await expect(images.remove("sha256:nope")).rejects.toThrow(/invalid image digest/)

    // pulling a removed image unpacks it again
    await images.pull(refs.crash)
    expect(images.stats().unpacks).toBe(4)
  })
})

/**
 * Rewrites an OCI layout's gzip layers uncompressed (`application/vnd.oci.image.layer.v1.tar`), as
 * a build exports them (skopeo's `--dest-oci-accept-uncompressed-layers`); the config is unchanged
 * (its diff_ids are the uncompressed digests already).
 */
const decompressLayout = (layout: string) => {
  const blob = (digest: string) => join(layout, "blobs", "sha256", digest.slice("sha256:".length))
  const put = (bytes: Buffer) => {
    const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`
    writeFileSync(blob(digest), bytes)
    return { digest, size: bytes.length }
  }
  const index = JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as { manifests: Array<{ digest: string; size: number }> }
  for (const entry of index.manifests) {
    const manifest = JSON.parse(readFileSync(blob(entry.digest), "utf8")) as { layers: Array<{ mediaType: string; digest: string; size: number }> }
    manifest.layers = manifest.layers.map((layer) =>
      layer.mediaType.endsWith("+gzip") ? { ...layer, mediaType: "application/vnd.oci.image.layer.v1.tar", ...put(gunzipSync(readFileSync(blob(layer.digest)))) } : layer
    )
    Object.assign(entry, put(Buffer.from(JSON.stringify(manifest))))
  }
  writeFileSync(join(layout, "index.json"), JSON.stringify(index))
}

/** Adds to an OCI layout the image `tag` with one more (uncompressed) layer holding what `fill` writes, as `newTag`. */
const appendLayer = (layout: string, tag: string, newTag: string, fill: (dir: string) => void) => {
  const blob = (digest: string) => join(layout, "blobs", "sha256", digest.slice("sha256:".length))
  const put = (bytes: Buffer) => {
    const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`
    writeFileSync(blob(digest), bytes)
    return { digest, size: bytes.length }
  }
  const tree = mkdtempSync(join(tmpdir(), "slipway-layer-"))
  fill(tree)
  const tar = execFileSync("tar", ["-c", "--numeric-owner", "--owner=0", "--group=0", "-C", tree, "."])
  rmSync(tree, { recursive: true, force: true })
  const layer = put(tar)
  const index = JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as { manifests: Array<{ digest: string; size: number; annotations: Record<string, string> }> }
  const entry = index.manifests.find((m) => m.annotations["org.opencontainers.image.ref.name"] === tag)!
  const manifest = JSON.parse(readFileSync(blob(entry.digest), "utf8")) as { config: { digest: string; size: number }; layers: Array<unknown> }
  const config = JSON.parse(readFileSync(blob(manifest.config.digest), "utf8")) as { rootfs: { diff_ids: Array<string> } }
  config.rootfs.diff_ids.push(layer.digest)
  const newConfig = put(Buffer.from(JSON.stringify(config)))
  const newManifest = put(Buffer.from(JSON.stringify({ ...manifest, config: { ...manifest.config, ...newConfig }, layers: [...manifest.layers, { mediaType: "application/vnd.oci.image.layer.v1.tar", ...layer }] })))
  index.manifests.push({ ...entry, ...newManifest, annotations: { "org.opencontainers.image.ref.name": newTag } })
  writeFileSync(join(layout, "index.json"), JSON.stringify(index))
}

describe("importOciLayout", () => {
  it("imports a built image's OCI layout (uncompressed layers) by its manifest digest, with its config, as a pull would", async () => {
    const images = store()
    const layout = join(newRoot(), "layout")
    // A build's export: the image under a revision's tag, layers uncompressed, beside another image.
    for (const [ref, tag] of [[refs.httpOk, "r1"], [refs.crash, "r0"]] as const) {
      await runCommand(["skopeo", "--insecure-policy", "copy", "--quiet", "--src-tls-verify=false", `docker://${ref}`, `oci:${layout}:${tag}`])
    }
    decompressLayout(layout)
    const index = JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as { manifests: Array<{ digest: string; annotations: Record<string, string> }> }
    const manifest = index.manifests.find((m) => m.annotations["org.opencontainers.image.ref.name"] === "r1")!
    const layers = (JSON.parse(readFileSync(join(layout, "blobs", "sha256", manifest.digest.slice(7)), "utf8")) as { layers: Array<{ mediaType: string }> }).layers
    expect(layers.map((l) => l.mediaType)).toEqual(layers.map(() => "application/vnd.oci.image.layer.v1.tar"))

    const progress: Array<string> = []
    const image = await images.importOciLayout(layout, "r1", "localhost/slipway/d:r1", (m) => progress.push(m))
    expect(image.digest).toBe(manifest.digest)
    expect(image.reference).toBe("localhost/slipway/d:r1")
    expect(readFileSync(join(image.rootfs, "www", "ok"), "utf8")).toBe("ok")
    expect(statSync(join(image.rootfs, "bin", "busybox")).uid).toBe(0)
    expect(image.config).toEqual(HTTP_OK_CONFIG)
    expect(progress).toEqual([`unpacking ${image.digest.slice(0, 19)}`])
    // The runner finds it like a pulled image; nothing of the work is left behind.
    expect(await images.lookup(image.digest)).toEqual({ ...image })
    expect(readdir(join(images.root, "tmp"))).toEqual([])

    // Imported again (another revision of the same image): found in the cache, nothing unpacked.
    const again: Array<string> = []
    const second = await images.importOciLayout(layout, "r1", "localhost/slipway/d:r2", (m) => again.push(m))
    expect(second).toEqual({ ...image, reference: "localhost/slipway/d:r2" })
    expect(again).toEqual([`cached ${image.digest.slice(0, 19)}`])
    expect(images.stats().copies).toBe(0)

    await expect(images.importOciLayout(layout, "r9", "localhost/slipway/d:r9")).rejects.toThrow(/importing localhost\/slipway\/d:r9: the image layout holds no image tagged "r9"/)
    await expect(images.importOciLayout(join(layout, "missing"), "r1", "x")).rejects.toThrow(/importing x: /)
  })

  it("assembles a rebuilt image from the layers it shares with an earlier one (hard links, nothing unpacked twice), with its whiteouts; removing images removes unused layers", async () => {
    const images = store()
    const layout = join(newRoot(), "layout")
    await runCommand(["skopeo", "--insecure-policy", "copy", "--quiet", "--src-tls-verify=false", `docker://${refs.httpOk}`, `oci:${layout}:r1`])
    decompressLayout(layout)
    // r2: r1 plus a layer that whites out /www/ok, makes /home opaque (emptied) and adds files.
    appendLayer(layout, "r1", "r2", (dir) => {
      mkdirSync(join(dir, "www"), { recursive: true })
      writeFileSync(join(dir, "www", ".wh.ok"), "")
      writeFileSync(join(dir, "www", "new"), "new\n")
      mkdirSync(join(dir, "home"), { recursive: true })
      writeFileSync(join(dir, "home", ".wh..wh..opq"), "")
      writeFileSync(join(dir, "home", "only"), "only\n")
    })
    const layersDir = join(images.root, "layers")
    const r1 = await images.importOciLayout(layout, "r1", "localhost/slipway/d:r1")
    const unpacked = readdir(layersDir).filter((entry) => !entry.endsWith(".json"))
    const r2 = await images.importOciLayout(layout, "r2", "localhost/slipway/d:r2")
    // One more layer unpacked; the shared files are the same inodes.
    expect(readdir(layersDir).filter((entry) => !entry.endsWith(".json"))).toHaveLength(unpacked.length + 1)
    expect(statSync(join(r2.rootfs, "bin", "busybox")).ino).toBe(statSync(join(r1.rootfs, "bin", "busybox")).ino)
    expect(readFileSync(join(r1.rootfs, "www", "ok"), "utf8")).toBe("ok")
    expect(existsSync(join(r2.rootfs, "www", "ok"))).toBe(false)
    expect(readFileSync(join(r2.rootfs, "www", "new"), "utf8")).toBe("new\n")
    expect(readdir(join(r2.rootfs, "home"))).toEqual(["only"])
    expect(readdir(join(r1.rootfs, "home"))).toEqual(["user"])
    expect(readdir(join(r2.rootfs, "www")).filter((name) => name.startsWith(".wh."))).toEqual([])
    expect(r2.config).toEqual(r1.config)
    // Removing r1 keeps the layers r2 links to; removing r2 too leaves none.
    expect(await images.remove(r1.digest)).toBe(true)
    expect(readFileSync(join(r2.rootfs, "bin", "busybox")).length).toBeGreaterThan(0)
    expect(readdir(layersDir).filter((entry) => !entry.endsWith(".json"))).toHaveLength(unpacked.length + 1)
    expect(await images.remove(r2.digest)).toBe(true)
    expect(readdir(layersDir)).toEqual([])
  })
})

describe("registries", () => {
  it("serves Docker Hub names from the mirror (python:3.12-slim through the test registry)", async () => {
    const direct = await store().pull(refs.python)
    const images = makeImageStore({ root: newRoot(), mirror: registry.host, insecureRegistries: [registry.host] })
    const progress: Array<string> = []
    const image = await images.pull("python:3.12-slim", { onProgress: (m) => progress.push(m) })
    expect(image.reference).toBe("docker.io/library/python:3.12-slim")
    expect(image.digest).toBe(direct.digest)
    expect(progress).toContain(`pulling docker.io/library/python:3.12-slim from ${registry.host}`)

    // An http:// mirror URL counts as insecure by itself; the explicit docker.io/library form maps the same way.
    const viaUrl = makeImageStore({ root: newRoot(), mirror: `http://${registry.host}/` })
    expect((await viaUrl.pull("docker.io/library/python:3.12-slim")).digest).toBe(direct.digest)
    // Only Docker Hub names go to the mirror.
    const other = await pullError(viaUrl.pull(`${privateRegistry.host}/slipway-test/busybox:1`))
    expect(other.registry).toBe(privateRegistry.host)
    expect(other.message).not.toContain("mirror")
    // A Docker Hub name the mirror does not have: the failure names the mirror it went through.
    const missing = await pullError(images.pull("nosuchimage:1"))
    expect(missing.kind).toBe("not_found")
    expect(missing.message).toMatch(new RegExp(`^pull docker.io/library/nosuchimage:1: (manifest unknown|not found) \\(through the Docker Hub mirror ${registry.host.replace(/\./g, "\\.")}\\)$`))
  })

  it("verifies TLS unless the registry is listed as insecure", async () => {
    const strict = makeImageStore({ root: newRoot() })
    const error = await pullError(strict.pull(refs.busybox))
    expect(error.kind).toBe("tls")
    expect(error.message).toBe(`registry ${registry.host} answers plain HTTP, not HTTPS (list it in SLIPWAY_INSECURE_REGISTRIES to allow that)`)

    const otherListed = makeImageStore({ root: newRoot(), insecureRegistries: [privateRegistry.host] })
    expect((await pullError(otherListed.pull(refs.busybox))).kind).toBe("tls")
    // The mirror being insecure does not make other registries insecure.
    const mirrorOnly = makeImageStore({ root: newRoot(), mirror: `http://${privateRegistry.host}` })
    expect((await pullError(mirrorOnly.pull(refs.busybox))).kind).toBe("tls")
  })

  it("an HTTPS registry with an untrusted certificate fails unless listed as insecure", async () => {
    const secure = await startRegistry({ tls: true })
    try {
      const pushed = await pushTestImages(secure.host, { only: ["busybox"] })
      const strict = await pullError(makeImageStore({ root: newRoot() }).pull(pushed.busybox))
      expect(strict.kind).toBe("tls")
      expect(strict.message).toBe(`registry ${secure.host}: TLS failed (x509: certificate signed by unknown authority)`)
      const image = await makeImageStore({ root: newRoot(), insecureRegistries: [secure.host] }).pull(pushed.busybox)
      expect(statSync(join(image.rootfs, "bin", "busybox")).isFile()).toBe(true)
    } finally {
      await secure.stop()
    }
  })

  it("pulls a private image only with the auth file", async () => {
    const anonymous = store()
    const denied = await pullError(anonymous.pull(privateRefs.busybox))
    expect(denied.kind).toBe("unauthorized")
    expect(denied.message).toBe(`pull ${privateRefs.busybox}: unauthorized (no credentials for ${privateRegistry.host} are configured)`)

    const wrongFile = join(newRoot(), "auth.json")
    writeFileSync(wrongFile, authFileContent(privateRegistry.host, { username: "slipway", password: "wrong" }))
    const wrong = await pullError(store({ authFile: wrongFile }).pull(privateRefs.busybox))
    expect(wrong.kind).toBe("unauthorized")
    expect(wrong.message).toBe(`pull ${privateRefs.busybox}: unauthorized`)

    // a missing or broken auth file is said, not silently replaced by anonymous access
    const missing = await pullError(store({ authFile: join(newRoot(), "absent.json") }).pull(privateRefs.busybox))
    expect(missing.message).toMatch(/^registry auth file \/.*absent\.json is not readable \(ENOENT\)$/)
    const brokenFile = join(newRoot(), "broken.json")
    writeFileSync(brokenFile, '{"auths": secret')
    const broken = await pullError(store({ authFile: brokenFile }).pull(privateRefs.busybox))
    expect(broken.message).toBe(`registry auth file ${brokenFile} is not valid JSON`)

    const image = await store({ authFile: privateRegistry.authFile }).pull(privateRefs.busybox)
    expect(statSync(join(image.rootfs, "bin", "busybox")).isFile()).toBe(true)
  })

  it("the host user's credentials are never used implicitly", async () => {
    // skopeo would read $XDG_RUNTIME_DIR/containers/auth.json and ~/.docker/config.json by default.
    const home = newRoot()
    mkdirSync(join(home, ".docker"))
    writeFileSync(join(home, ".docker", "config.json"), authFileContent(privateRegistry.host, privateRegistry.credentials!))
    mkdirSync(join(home, "containers"))
    writeFileSync(join(home, "containers", "auth.json"), authFileContent(privateRegistry.host, privateRegistry.credentials!))
    const saved = { HOME: process.env.HOME, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR }
    process.env.HOME = home
    process.env.XDG_RUNTIME_DIR = home
    try {
      expect((await pullError(store().pull(privateRefs.busybox))).kind).toBe("unauthorized")
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k]
        else process.env[k] = v
      }
    }
  })
})

describe("errors", () => {
  it("refuses bad references before any process runs", async () => {
    // A skopeo that does not exist: running anything would fail with tool_missing instead.
    const images = makeImageStore({ root: newRoot(), skopeo: "/nonexistent/skopeo", umoci: "/nonexistent/umoci" })
    for (const bad of ["--privileged", "a b", "busybox\n:1", "-x", "", " busybox", "busybox\t", "Busybox", "team/App", "busybox@sha256:abc", "docker://busybox", "a/../b", "x:-tag", "registry.example.com/-a"]) {
      const error = await pullError(images.pull(bad))
      expect(error.kind, bad).toBe("invalid_reference")
      expect(error.message, bad).toMatch(/^invalid image reference ".*": /)
      expect(error.message, bad).not.toContain("\n")
    }
    expect(images.stats()).toEqual({ resolves: 0, copies: 0, unpacks: 0, cacheHits: 0 })
    // a valid reference does reach the (missing) tool, and says which package to install
    const missing = await pullError(images.pull("busybox"))
    expect(missing.kind).toBe("tool_missing")
    expect(missing.message).toContain("install Debian package skopeo")
  })

  it("an unknown image fails with a short message naming it", async () => {
    const images = store()
    const error = await pullError(images.pull(`${registry.host}/slipway-test/busybox:404`))
    expect(error.kind).toBe("not_found")
    expect(error.message).toBe(`pull ${registry.host}/slipway-test/busybox:404: manifest unknown`)
    const repo = await pullError(images.pull(`${registry.host}/nobody/nothing`))
    expect(repo.kind).toBe("not_found")
    expect(repo.message).toMatch(new RegExp(`^pull ${registry.host}/nobody/nothing:latest: (manifest unknown|not found)$`))
    expect(repo.message.length).toBeLessThan(200)
  })

  it("an unreachable registry is named in the message", async () => {
    const port = await closedPort()
    const error = await pullError(store({ insecureRegistries: [`127.0.0.1:${port}`] }).pull(`127.0.0.1:${port}/team/app:1`))
    expect(error.kind).toBe("unreachable")
    expect(error.registry).toBe(`127.0.0.1:${port}`)
    expect(error.message).toBe(`registry 127.0.0.1:${port} unreachable (connection refused)`)
    // a name that does not resolve (.invalid never does, RFC 6761)
    const dns = await pullError(store().pull("registry.invalid/team/app:1"))
    expect(dns.kind).toBe("unreachable")
    expect(dns.message).toMatch(/^registry registry\.invalid unreachable \((no such host|server misbehaving|i\/o timeout|connection refused)\)$/)
    // the same when it is the mirror that is down
    const viaMirror = await pullError(makeImageStore({ root: newRoot(), mirror: `http://127.0.0.1:${port}` }).pull("python:3.12-slim"))
    expect(viaMirror.message).toBe(`registry 127.0.0.1:${port} unreachable (connection refused)`)
  })

  it("a pull two callers wait on goes on while one of them is interrupted, and ends when the last one is", async () => {
    const silent = await startSilentRegistry()
    const host = silent.host
    const skopeoFor = () => processesMentioning(`${host}/team/shared`)
    try {
      const service = await Effect.runPromise(Effect.provide(makeStore({ root: newRoot(), insecureRegistries: [host] }), ProcessRunnerLive))
      const first = Effect.runFork(service.pull(`${host}/team/shared:1`))
      const second = Effect.runFork(service.pull(`${host}/team/shared:1`))
      for (let i = 0; i < 100 && skopeoFor().length === 0; i++) await new Promise((r) => setTimeout(r, 20))
      expect(skopeoFor().length).toBe(1)
      await Effect.runPromise(Fiber.interrupt(first))
      await new Promise((r) => setTimeout(r, 100))
      expect(skopeoFor().length).toBe(1)
      expect(service.stats().resolves).toBe(1)
      await Effect.runPromise(Fiber.interrupt(second))
      expect(skopeoFor()).toEqual([])
    } finally {
      await silent.stop()
    }
  })

  it("a registry that never answers times out", async () => {
    const silent = await startSilentRegistry()
    const host = silent.host
    try {
      const images = store({ insecureRegistries: [host], timeouts: { resolveMs: 1500 } })
      const started = Date.now()
      const error = await pullError(images.pull(`${host}/team/app:1`))
      expect(error.kind).toBe("timeout")
      expect(error.message).toBe(`pull ${host}/team/app:1: resolving the tag timed out`)
      expect(Date.now() - started).toBeLessThan(10_000)
    } finally {
      await silent.stop()
    }
  })
})
