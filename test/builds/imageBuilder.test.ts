/**
 * The ImageBuilder with real buildah, in its sandbox, on small Dockerfiles FROM a busybox image
 * pushed to a loopback registry: logs, the exported OCI layout, failures naming their step,
 * interruption, the timeout, memory and disk limits, the queue, GC and the cache cap.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BuildError, ImageBuilder, type BuildRequest } from "../../server/builds/ImageBuilder.ts"
import { pushTestImages } from "../support/images.ts"
import { startRegistry, type TestRegistry } from "../support/registry.ts"
import { type BuildEnv, collectLog, host, processesOfCache, startBuildEnv, unpackLayout } from "../support/builds.ts"

let registry: TestRegistry
let env: BuildEnv
let busybox: string
let context: string
let scratch: string

const build = (request: Omit<BuildRequest, "contextDir"> & { contextDir?: string }, target: BuildEnv = env) =>
  target.run(
    Effect.gen(function*() {
      const builder = yield* ImageBuilder
      return yield* Effect.scoped(
        Effect.gen(function*() {
          const image = yield* builder.build({ contextDir: context, ...request })
          // The layout lives until the scope closes: look at it now.
          const dir = mkdtempSync(join(scratch, "unpack-"))
          const rootfs = yield* Effect.promise(() => unpackLayout(image.layout, image.layoutTag, join(dir, "bundle")))
          return { image, rootfs, layoutFiles: readdirSync(image.layout) }
        })
      )
    })
  )

const buildError = (request: Omit<BuildRequest, "contextDir"> & { contextDir?: string }, target: BuildEnv = env) =>
  target.run(
    Effect.gen(function*() {
      const builder = yield* ImageBuilder
      return yield* Effect.flip(Effect.scoped(builder.build({ contextDir: context, ...request })))
    })
  )

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "slipway-builds-test-"))
  // Builds run as an unprivileged user: the context must be reachable by others.
  chmodSync(scratch, 0o755)
  registry = await startRegistry()
  busybox = (await pushTestImages(registry.host, { only: ["busybox"] })).busybox
  env = await startBuildEnv({ registries: { insecureRegistries: [registry.host] } })
  context = join(scratch, "context")
  mkdirSync(context)
  writeFileSync(join(context, "hello.txt"), "hello from the context\n")
}, 120_000)

afterAll(async () => {
  await env?.stop()
  await registry?.stop()
  if (scratch) rmSync(scratch, { recursive: true, force: true })
})

describe("ImageBuilder", () => {
  it("builds a Dockerfile FROM the loopback registry, streams every step with its duration, and exports an OCI layout", async () => {
    const log = collectLog()
    const dockerfile = [
      `FROM ${busybox}`,
      "ARG REV=0",
      'RUN echo "building $REV" && mkdir -p /app && echo built > /app/built && chown 1000:1000 /app/built',
      "COPY hello.txt /app/hello.txt",
      "RUN cat /app/hello.txt"
    ].join("\n")
    const { image, rootfs, layoutFiles } = await build({ cacheKey: "basic", tag: "r1", dockerfile, onLog: log.onLog })
    expect(image.reference).toBe("localhost/slipway/basic:r1")
    expect(image.manifestDigest).toMatch(/^sha256:[a-f0-9]{64}$/)
    expect(layoutFiles.sort()).toEqual(["blobs", "index.json", "oci-layout"])
    // The image's files, with their owners as the Dockerfile set them (not the build's host uids).
    expect(readFileSync(join(rootfs, "app/built"), "utf8")).toBe("built\n")
    expect(statSync(join(rootfs, "app/built")).uid).toBe(1000)
    expect(statSync(join(rootfs, "app/hello.txt")).uid).toBe(0)
    expect(readFileSync(join(rootfs, "app/hello.txt"), "utf8")).toBe("hello from the context\n")
    // The package caches were mounted into the RUN steps, not copied into the image.
    expect(readdirSync(join(rootfs, "root/.npm"))).toEqual([])

    const steps = log.events.filter((e) => e._tag === "Step")
    expect(steps.map((s) => (s._tag === "Step" ? `${s.index}/${s.total} ${s.instruction}` : ""))).toEqual([
      `1/5 FROM ${busybox}`,
      "2/5 ARG REV=0",
      '3/5 RUN echo "building $REV" && mkdir -p /app && echo built > /app/built && chown 1000:1000 /app/built',
      "4/5 COPY hello.txt /app/hello.txt",
      "5/5 RUN cat /app/hello.txt"
    ])
    const done = log.events.filter((e) => e._tag === "StepDone")
    expect(done.map((d) => (d._tag === "StepDone" ? d.index : 0))).toEqual([1, 2, 3, 4, 5])
    expect(done.every((d) => d._tag === "StepDone" && d.durationMs >= 0)).toBe(true)
    const text = log.text()
    expect(text).toContain(`pulling ${busybox}`)
    expect(text).toContain("building 0")
    expect(text).toContain("hello from the context")
    expect(text).toMatch(/STEP 3\/5 done in \d+\.\d s/)
    // Output lines belong to their step.
    const output = log.events.find((e) => e._tag === "Output" && e.line === "hello from the context")
    expect(output?._tag === "Output" && output.step).toBe(5)
    expect(image.steps).toHaveLength(5)

    // The same build again is answered by the layer cache.
    const again = collectLog()
    const second = await build({ cacheKey: "basic", tag: "r2", dockerfile, onLog: again.onLog })
    expect(second.image.steps.filter((s) => s.index > 1).every((s) => s.cached)).toBe(true)
    expect(again.text()).toContain("(cached)")
  }, 120_000)

  it("a failing step fails the build naming the step and its last output lines", async () => {
    const error = await buildError({ cacheKey: "failing", tag: "r1", dockerfile: `FROM ${busybox}\nRUN echo first line && echo second line && exit 3\n` })
    expect(error).toBeInstanceOf(BuildError)
    expect(error.kind).toBe("step_failed")
    expect(error.step?.index).toBe(2)
    expect(error.message).toBe("STEP 2/2: RUN echo first line && echo second line && exit 3 failed (exit status 3): first line | second line")
    expect(error.lastLines).toEqual(["first line", "second line"])

    const noFrom = await buildError({ cacheKey: "failing", tag: "r2", dockerfile: "RUN echo hi\n" })
    expect(noFrom.kind).toBe("dockerfile")
    const missing = await buildError({ cacheKey: "failing", tag: "r3", dockerfile: `FROM ${registry.host}/nobody/nothing:1\n` })
    expect(missing.kind).toBe("pull")
    expect(missing.message).toContain(`pulling base image ${registry.host}/nobody/nothing:1`)
    const badKey = await buildError({ cacheKey: "../etc", tag: "r1", dockerfile: `FROM ${busybox}\n` })
    expect(badKey.kind).toBe("invalid_request")
  }, 120_000)

  it("interrupting a build kills it, discards its partial image and frees its mount and cgroup", async () => {
    const program = Effect.gen(function*() {
      const builder = yield* ImageBuilder
      const sleeping = yield* Deferred.make<void>()
      const fiber = yield* Effect.forkChild(
        Effect.scoped(
          builder.build({
            cacheKey: "interrupted",
            tag: "r1",
            contextDir: context,
            dockerfile: `FROM ${busybox}\nRUN echo going-to-sleep && sleep 300\n`,
            onLog: (e) => (e._tag === "Output" && e.line === "going-to-sleep" ? Deferred.succeed(sleeping, undefined).pipe(Effect.asVoid) : Effect.void)
          })
        )
      )
      yield* Deferred.await(sleeping).pipe(Effect.timeout("60 seconds"))
      const before = yield* Effect.promise(() => processesOfCache(env, "interrupted"))
      yield* Fiber.interrupt(fiber)
      const exit = yield* Fiber.await(fiber)
      return { exit, before }
    })
    const { exit, before } = await env.run(program)
    expect(before).toContain("sleep 300")
    expect(Exit.hasInterrupts(exit)).toBe(true)
    // No process of the build is left (its processes run as its cache's uids).
    expect(await processesOfCache(env, "interrupted")).toEqual([])
    // Nothing left: no mount, no cgroup, no work directory.
    const mnt = join(env.root, "caches", "interrupted", "mnt")
    expect((await host(["findmnt", "-n", "--mountpoint", mnt]).catch(() => "")).trim()).toBe("")
    for (const c of ["memory", "pids", "cpu"]) {
      const dir = join("/sys/fs/cgroup", c, env.settings.cgroupParent)
      if (existsSync(dir)) expect(readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name)).toEqual([])
    }
    expect(readdirSync(join(env.root, "work"))).toEqual([])
    // No image and no working container of the interrupted build in the cache.
    const images = await env.run(Effect.gen(function*() {
      return yield* (yield* ImageBuilder).images("interrupted")
    }))
    expect(images).toEqual([])
    const ro = join(scratch, "ro-interrupted")
    mkdirSync(ro)
    await host(["mount", "-o", "loop,ro", join(env.root, "caches", "interrupted", "disk.img"), ro])
    try {
      expect(JSON.parse(readFileSync(join(ro, "storage/overlay-containers/containers.json"), "utf8"))).toEqual([])
    } finally {
      await host(["umount", ro])
    }
  }, 120_000)

  it("keeps the newest three images of a deployment, in its cache and its export layout", async () => {
    const dockerfile = `FROM ${busybox}\nARG REV\nRUN echo "$REV" > /rev\n`
    for (const rev of ["1", "2", "3", "4", "5"]) await build({ cacheKey: "gc", tag: `rev${rev}`, dockerfile, buildArgs: { REV: rev } })
    const images = await env.run(Effect.gen(function*() {
      return yield* (yield* ImageBuilder).images("gc")
    }))
    expect(images.map((i) => i.tag)).toEqual(["rev5", "rev4", "rev3"])
    const index = JSON.parse(readFileSync(join(env.root, "caches", "gc", "export", "index.json"), "utf8")) as { manifests: Array<{ annotations: Record<string, string> }> }
    expect(index.manifests.map((m) => m.annotations["org.opencontainers.image.ref.name"]).sort()).toEqual(["rev3", "rev4", "rev5"])
  }, 240_000)

  it("runs builds one at a time: a second build waits for a slot", async () => {
    const first = collectLog()
    const second = collectLog()
    const dockerfile = (n: string) => `FROM ${busybox}\nRUN echo queue-${n} && sleep 1\n`
    await Promise.all([
      build({ cacheKey: "queue-a", tag: "r1", dockerfile: dockerfile("a"), onLog: first.onLog }),
      new Promise((r) => setTimeout(r, 200)).then(() => build({ cacheKey: "queue-b", tag: "r1", dockerfile: dockerfile("b"), onLog: second.onLog }))
    ])
    expect(second.text()).toContain("waiting for a build slot (1 build ahead)")
    const firstEnd = first.events.find((e) => e._tag === "Phase" && e.message.startsWith("built "))!.at
    const secondStart = second.events.find((e) => e._tag === "Phase" && e.message.startsWith("pulling "))!.at
    expect(secondStart).toBeGreaterThanOrEqual(firstEnd)
  }, 120_000)

  it("a push for a deployment whose build runs waits for it; interrupted while waiting, it never runs", async () => {
    const result = await env.run(
      Effect.gen(function*() {
        const builder = yield* ImageBuilder
        const first = collectLog()
        const queued = collectLog()
        const running = yield* Effect.forkChild(
          Effect.scoped(builder.build({ cacheKey: "same", tag: "r1", contextDir: context, dockerfile: `FROM ${busybox}\nRUN echo first && sleep 3\n`, onLog: first.onLog }))
        )
        yield* Effect.sleep("500 millis")
        const waiting = yield* Effect.forkChild(
          Effect.scoped(builder.build({ cacheKey: "same", tag: "r2", contextDir: context, dockerfile: `FROM ${busybox}\nRUN echo second\n`, onLog: queued.onLog }))
        )
        yield* Effect.sleep("500 millis")
        const during = builder.activity()
        yield* Fiber.interrupt(waiting)
        yield* Fiber.join(running)
        return { during, after: builder.activity(), queued: queued.text(), first: first.text() }
      })
    )
    expect(result.during).toEqual({ running: 1, waiting: 1 })
    expect(result.queued).toBe("waiting for a build slot (1 build ahead)")
    expect(result.first).toContain("first")
    expect(result.after).toEqual({ running: 0, waiting: 0 })
  }, 120_000)

  it("a build that runs too long fails with a timeout", async () => {
    const quick = await startBuildEnv({ registries: { insecureRegistries: [registry.host] }, timeoutMs: 8000 })
    try {
      const error = await buildError({ cacheKey: "slow", tag: "r1", dockerfile: `FROM ${busybox}\nRUN sleep 120\n` }, quick)
      expect(error.kind).toBe("timeout")
      expect(error.message).toBe("the build took longer than 8s (SLIPWAY_BUILD_TIMEOUT_S)")
      expect(await processesOfCache(quick, "slow")).toEqual([])
    } finally {
      await quick.stop()
    }
  }, 120_000)

  it("memory and disk limits hold: a step over them fails saying which", async () => {
    const small = await startBuildEnv({
      registries: { insecureRegistries: [registry.host] },
      limits: { memoryBytes: 384 * 1024 ** 2, cpuMillis: 1000, pids: 512, diskBytes: 512 * 1024 ** 2 }
    })
    try {
      const memory = await buildError({ cacheKey: "memory", tag: "r1", dockerfile: `FROM ${busybox}\nRUN dd if=/dev/zero of=/dev/null bs=600M count=1\n` }, small)
      expect(memory.kind).toBe("out_of_memory")
      expect(memory.message).toBe("STEP 2/2: RUN dd if=/dev/zero of=/dev/null bs=600M count=1 ran out of memory (limit 384 MiB, SLIPWAY_BUILD_MEMORY)")
      const disk = await buildError({ cacheKey: "disk", tag: "r1", dockerfile: `FROM ${busybox}\nRUN dd if=/dev/zero of=/big bs=1M count=700\n` }, small)
      expect(disk.kind).toBe("out_of_disk")
      expect(disk.message).toBe("STEP 2/2: RUN dd if=/dev/zero of=/big bs=1M count=700 ran out of disk (the deployment's build disk is 512 MiB, SLIPWAY_BUILD_DISK)")
      // The host file holds what the cache uses, not the 700 MiB the step tried to write.
      expect(statSync(join(small.root, "caches", "disk", "disk.img")).blocks * 512).toBeLessThan(300 * 1024 ** 2)
    } finally {
      await small.stop()
    }
  }, 180_000)

  it("pulls base images with the build's registry credentials (gone before any step runs, on no disk after) and Docker Hub images through the mirror", async () => {
    const password = "s3cret-pull-password"
    const secured = await startRegistry({ auth: { username: "puller", password } })
    // A small build disk: the test reads all of it looking for the password.
    const mirrored = await startBuildEnv({
      registries: { insecureRegistries: [secured.host, registry.host], mirror: `http://${registry.host}` },
      limits: { ...env.settings.limits, diskBytes: 512 * 1024 ** 2 }
    })
    try {
      const refs = await pushTestImages(secured.host, { authFile: secured.authFile, only: ["busybox"] })
      const denied = await buildError({ cacheKey: "private", tag: "r1", dockerfile: `FROM ${refs.busybox}\n` }, mirrored)
      expect(denied.kind).toBe("pull")
      expect(denied.message).toMatch(new RegExp(`^pulling base image ${refs.busybox.replace(/[.:/]/g, "\\$&")}: .*(unauthorized|authentication required)`, "i"))

      const authFiles: Array<string> = []
      const log = collectLog()
      await build(
        {
          cacheKey: "private",
          tag: "r2",
          dockerfile: `FROM ${refs.busybox}\nRUN echo with-credentials\n`,
          registryCredentials: [{ registry: secured.host, username: "puller", password }],
          onLog: (event) =>
            Effect.sync(() => {
              // When the first step starts, the pulls' auth file is already gone.
              if (event._tag === "Step" && event.index === 1)
                for (const dir of readdirSync(join(mirrored.root, "work"))) if (existsSync(join(mirrored.root, "work", dir, "auth", "auth.json"))) authFiles.push(dir)
            }).pipe(Effect.andThen(log.onLog(event)))
        },
        mirrored
      )
      expect(log.text()).toContain("with-credentials")
      expect(authFiles).toEqual([])
      expect(log.text()).not.toContain(password)
      // Nowhere under the builds' directory (caches, their filesystems, export layouts).
      expect(await host(["grep", "-r", "-l", "-a", password, mirrored.root]).catch(() => "")).toBe("")

      // A Docker Hub reference goes to the mirror (which holds busybox as library/python:3.12-slim).
      const viaMirror = collectLog()
      await build({ cacheKey: "mirror", tag: "r1", dockerfile: "FROM python:3.12-slim\nRUN echo through-the-mirror\n", onLog: viaMirror.onLog }, mirrored)
      expect(viaMirror.text()).toContain("pulling docker.io/library/python:3.12-slim")
      expect(viaMirror.text()).toContain("through-the-mirror")
    } finally {
      await mirrored.stop()
      await secured.stop()
    }
  }, 180_000)

  it("keeps all caches under the cap, removing the least recently used", async () => {
    const capped = await startBuildEnv({ registries: { insecureRegistries: [registry.host] }, cacheMaxBytes: 1 })
    try {
      await build({ cacheKey: "lru-a", tag: "r1", dockerfile: `FROM ${busybox}\nRUN echo a\n` }, capped)
      const log = collectLog()
      await build({ cacheKey: "lru-b", tag: "r1", dockerfile: `FROM ${busybox}\nRUN echo b\n`, onLog: log.onLog }, capped)
      expect(log.text()).toMatch(/removed the build cache of lru-a \(.+, least recently used\) to stay under SLIPWAY_BUILD_CACHE_MAX/)
      const caches = await capped.run(Effect.gen(function*() {
        return yield* (yield* ImageBuilder).caches
      }))
      expect(caches.map((c) => c.key)).toEqual(["lru-b"])
      expect(existsSync(join(capped.root, "caches", "lru-a"))).toBe(false)
    } finally {
      await capped.stop()
    }
  }, 180_000)
})
