/**
 * Builds an image from a Dockerfile text and a context directory with `buildah bud --isolation
 * chroot`, in the build sandbox (sandbox.ts), and exports it as an OCI layout for the image store.
 *
 * A build, in order:
 *   1. waits for its deployment's previous build (one per cache key) and a build slot
 *      (SLIPWAY_BUILD_CONCURRENCY, default 1: a queue);
 *   2. mounts the deployment's cache (cache.ts) and makes the build's cgroup (memory, CPU, pids);
 *   3. pulls the Dockerfile's base images (dockerfile.ts) with the registry settings and the
 *      request's credentials (an auth file only these pulls see, removed right after), in the
 *      sandbox with the host's network;
 *   4. runs `buildah bud --layers --pull=never` in the sandbox without a network but the egress
 *      proxy (egressProxy.ts), with the package managers' cache directories mounted into every RUN
 *      step (`--volume`; the Dockerfile's text is not changed), streaming each step, its output
 *      and its duration to `onLog`;
 *   5. exports the image (skopeo, uncompressed layers) into the deployment's OCI layout, writing
 *      only the layers it lacks, and hard-links it out as an OCI layout directory of its own,
 *      which lives until the caller's scope closes (the caller imports it into the image store);
 *   6. keeps the newest SLIPWAY_BUILD_KEEP_IMAGES images of the deployment in its cache and export
 *      layout (older ones, their dangling layers and blobs are removed), then trims all caches to SLIPWAY_BUILD_CACHE_MAX,
 *      least recently used first.
 * The whole build (not the wait) is limited by SLIPWAY_BUILD_TIMEOUT_S. Interrupting it (a
 * superseded revision) kills the sandbox, removes buildah's working containers (the partial
 * image) and frees everything; the layers of completed steps stay in the cache.
 */
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { randomBytes } from "node:crypto"
import { join, resolve } from "node:path"
import { Clock, Context, Data, Duration, Effect, Fiber, Layer, Queue, Semaphore, type Scope } from "effect"
import { type CommandFailed, HOST_ENV, ProcessRunner } from "../runtime/ProcessRunner.ts"
import { createCgroup, detectLimitsMode, type LimitsMode, listCgroups, removeCgroup, removeCgroupParent } from "../runtime/local/cgroups.ts"
import { unsearchableAncestor } from "../runtime/local/host.ts"
import { socketDirectory } from "../runtime/local/RuntimeRoot.ts"
import { which } from "../runtime/local/tools.ts"
import { BuildLogParser, type BuildLogEvent, type StepInfo, type StepSummary } from "./buildLog.ts"
import { BUILD_UID_RANGE, type CacheInfo, isCacheKey, listCaches, type MountedCache, mountCache, removeCache } from "./cache.ts"
import { baseImages, DockerfileError } from "./dockerfile.ts"
import { serveEgressProxy } from "./egressProxy.ts"
import { runStreaming } from "./process.ts"
import { authFileContent, CONTAINERS_CONF, POLICY_JSON, type RegistryCredential, registriesConf, storageConf } from "./registries.ts"
import { extractImage, gcLayout } from "./layout.ts"
import { EGRESS_SOCKET, type SandboxBind, sandboxArgv } from "./sandbox.ts"
import { type BuildConfig, BuildSettings } from "./settings.ts"

export type { BuildLogEvent, StepSummary } from "./buildLog.ts"
export type { RegistryCredential } from "./registries.ts"

export type BuildErrorKind =
  | "invalid_request"
  | "dockerfile"
  | "pull"
  | "step_failed"
  | "timeout"
  | "out_of_memory"
  | "out_of_disk"
  | "export"
  | "sandbox"

/** A build that did not produce an image. `message` fits a revision's `status_message`. */
export class BuildError extends Data.TaggedError("BuildError")<{
  readonly kind: BuildErrorKind
  readonly message: string
  /** The step that failed, when one did. */
  readonly step?: StepInfo | undefined
  /** Its last output lines (or the tool's). */
  readonly lastLines: ReadonlyArray<string>
}> {}

export interface BuildRequest {
  /** The deployment: its layer cache, package caches and kept images are shared by its builds. Lower-case letters, digits, `.`, `_`, `-`. */
  readonly cacheKey: string
  /** The revision: the image's tag in the cache and in the OCI layout. */
  readonly tag: string
  /** The Dockerfile's text. */
  readonly dockerfile: string
  /** The build context (a checkout). It and its ancestors must be readable by others. */
  readonly contextDir: string
  /** Extra build contexts (`--build-context name=dir`, for `COPY --from=name`). */
  readonly buildContexts?: Readonly<Record<string, string>> | undefined
  readonly buildArgs?: Readonly<Record<string, string>> | undefined
  /** Credentials for the registries of the base images (with the server's auth file). */
  readonly registryCredentials?: ReadonlyArray<RegistryCredential> | undefined
  /** Hears the build's log as it happens (queued, pulls, steps, output, durations). */
  readonly onLog?: ((event: BuildLogEvent) => Effect.Effect<void>) | undefined
  /** The turn taken with `reserve` for this cache key: the build runs at once instead of queueing. */
  readonly reservation?: BuildReservation | undefined
}

/** A build's turn in the queue (`reserve`), held until its scope closes. */
export interface BuildReservation {
  readonly cacheKey: string
}

export interface BuiltImage {
  /** The image's name in the deployment's cache (`localhost/slipway/<key>:<tag>`). */
  readonly reference: string
  /** buildah's image id (the config digest, hex). */
  readonly imageId: string
  /** An OCI image layout directory holding the image under `layoutTag`; removed when the build's scope closes. */
  readonly layout: string
  readonly layoutTag: string
  /** The manifest digest in the layout (`sha256:…`). */
  readonly manifestDigest: string
  /** Time of the build itself (without the wait for a slot). */
  readonly durationMs: number
  readonly steps: ReadonlyArray<StepSummary>
  /** Connections the build's RUN steps made through the egress proxy, and those it refused. */
  readonly egress: { readonly allowed: number; readonly refused: number }
}

export interface KeptImage {
  readonly manifestDigest: string
  readonly layout: string
  readonly layoutTag: string
}

export interface CachedImage {
  readonly reference: string
  readonly tag: string
  readonly id: string
  /** Creation time (epoch ms). */
  readonly created: number
}

export class ImageBuilder extends Context.Service<
  ImageBuilder,
  {
    /** Builds the request's image; the OCI layout it answers lives until the scope closes. */
    readonly build: (request: BuildRequest) => Effect.Effect<BuiltImage, BuildError, Scope.Scope>
    /**
     * Takes a build's turn ahead of the build: waits for the deployment's previous build and a
     * build slot (telling `onLog` when it has to wait) and holds both until the scope closes, so
     * the caller can prepare the build (check out its source) once its turn has come. A `build`
     * given the reservation runs at once.
     */
    readonly reserve: (cacheKey: string, onLog?: BuildRequest["onLog"]) => Effect.Effect<BuildReservation, BuildError, Scope.Scope>
    /**
     * An image a build of this deployment made and its cache still keeps (the newest
     * SLIPWAY_BUILD_KEEP_IMAGES), by its tag: its manifest digest and an OCI layout of its own
     * (hard links into the cache's export layout), removed when the scope closes. Undefined when
     * the cache no longer holds it.
     */
    readonly keptImage: (cacheKey: string, tag: string) => Effect.Effect<KeptImage | undefined, never, Scope.Scope>
    /** The manifest digests of the images a deployment's cache keeps (none when it has no cache). */
    readonly keptDigests: (cacheKey: string) => Effect.Effect<ReadonlySet<string>>
    /** The images kept in a deployment's cache, newest first. */
    readonly images: (cacheKey: string) => Effect.Effect<ReadonlyArray<CachedImage>, BuildError>
    /** Every deployment's build cache with its size and last use. */
    readonly caches: Effect.Effect<ReadonlyArray<CacheInfo>>
    /** Deletes a deployment's cache (after its deployment is deleted); waits for its build. */
    readonly removeCache: (cacheKey: string) => Effect.Effect<void, BuildError>
    /**
     * A fresh directory for a build's sources (a checkout), readable by builds, removed when the
     * scope closes. (A context elsewhere must be readable by others along its whole path.)
     */
    readonly workspace: Effect.Effect<string, BuildError, Scope.Scope>
    /** Builds waiting and running now. */
    readonly activity: () => { readonly running: number; readonly waiting: number }
  }
>()("slipway/ImageBuilder") {}

const TAG_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/
const REPO_KEY_RE = /^[a-z0-9]+(?:[._-][a-z0-9]+)*$/
const CONTEXT_NAME_RE = /^[a-z0-9][a-z0-9_.-]{0,63}$/
const BUILD_ARG_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/
const SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/** Where the package managers keep their caches as root, each mounted from the deployment's cache. */
export const PACKAGE_CACHE_MOUNTS: ReadonlyArray<readonly [string, string]> = [
  ["pkg/npm", "/root/.npm"],
  ["pkg/yarn", "/usr/local/share/.cache/yarn"],
  ["pkg/pnpm", "/root/.local/share/pnpm/store"],
  ["pkg/pip", "/root/.cache/pip"],
  ["pkg/uv", "/root/.cache/uv"]
]

/** What a deployment's built images are called in its build cache (and the image store): `<name>:<tag>`. */
export const builtImageName = (key: string) => `localhost/slipway/${key}`

const fail = (kind: BuildErrorKind, message: string, lastLines: ReadonlyArray<string> = [], step?: StepInfo) => new BuildError({ kind, message, lastLines, step })

/** The meaningful last lines of a failed command (buildah's own noise dropped). */
const cleanTail = (lines: ReadonlyArray<string>, n: number) =>
  lines.filter((l) => l.trim() !== "" && !/^(Error: )?(error )?building at STEP|^subprocess exited with status \d+$/i.test(l.trim())).slice(-n)

const toError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)))

/** The memory cgroup's OOM kills of a build (0 when unknown). */
const oomKills = (mode: LimitsMode, parent: string, id: string): number => {
  const file = mode === "cgroup-v2" ? join("/sys/fs/cgroup", parent, id, "memory.events") : mode === "cgroup-v1" ? join("/sys/fs/cgroup/memory", parent, id, "memory.oom_control") : undefined
  if (!file) return 0
  try {
    const m = /^oom_kill (\d+)$/m.exec(readFileSync(file, "utf8"))
    return m ? Number(m[1]) : 0
  } catch {
    return 0
  }
}

/** The host tools a build runs, with the Debian package of each. */
const BUILD_TOOLS: ReadonlyArray<readonly [string, string]> = [
  ["buildah", "buildah"],
  ["skopeo", "skopeo"],
  ["bwrap", "bubblewrap"],
  ["perl", "perl-base"],
  ["mkfs.btrfs", "btrfs-progs"],
  ["btrfs", "btrfs-progs"],
  ["fstrim", "util-linux"],
  ["findmnt", "util-linux"],
  ["mount", "mount"]
]

/** Which build tools this host lacks, as a message naming their packages; undefined when none. */
export const missingBuildTools = (): string | undefined => {
  const missing = BUILD_TOOLS.filter(([tool]) => which(tool) === null)
  if (missing.length === 0) return undefined
  return `missing ${missing.map(([t]) => t).join(", ")}: install Debian package${missing.length > 1 ? "s" : ""} ${[...new Set(missing.map(([, p]) => p))].join(" ")}`
}

const formatBytes = (bytes: number) => (bytes >= 1024 ** 3 ? `${+(bytes / 1024 ** 3).toFixed(1)} GiB` : `${Math.round(bytes / 1024 ** 2)} MiB`)

export const makeImageBuilder = Effect.gen(function*() {
  const runner = yield* ProcessRunner
  const settings: BuildConfig = yield* BuildSettings
  const root = resolve(settings.root)
  const workRoot = join(root, "work")
  const cgroupParent = settings.cgroupParent
  yield* Effect.sync(() => {
    mkdirSync(workRoot, { recursive: true })
    chmodSync(root, 0o711)
    chmodSync(workRoot, 0o711)
    // Work directories of builds a previous server process left behind.
    for (const entry of readdirSync(workRoot)) {
      const pid = Number(entry.split("-")[0])
      let alive = false
      try {
        process.kill(pid, 0)
        alive = true
      } catch (error) {
        alive = (error as NodeJS.ErrnoException).code === "EPERM"
      }
      if (!alive) rmSync(join(workRoot, entry), { recursive: true, force: true })
    }
  })
  const blocked = unsearchableAncestor(join(workRoot, "x"))
  if (blocked) return yield* Effect.die(new Error(`build directory ${workRoot}: ${blocked} must be searchable by others (chmod o+x ${blocked})`))
  const limitsMode = yield* Effect.sync(() => detectLimitsMode(cgroupParent))
  // Cgroups of builds a previous server process left (their processes are killed).
  yield* Effect.forEach(listCgroups(limitsMode, cgroupParent), (id) => removeCgroup(limitsMode, cgroupParent, id), { discard: true })
  // The builds' cgroup parent goes with the builder (each build removes its own cgroup first).
  yield* Effect.addFinalizer(() => Effect.sync(() => void removeCgroupParent(limitsMode, cgroupParent)))

  const slots = yield* Semaphore.make(settings.concurrency)
  const allocation = yield* Semaphore.make(1)
  const keyLocks = new Map<string, Semaphore.Semaphore>()
  const lockOf = (key: string) => {
    let lock = keyLocks.get(key)
    if (!lock) {
      lock = Semaphore.makeUnsafe(1)
      keyLocks.set(key, lock)
    }
    return lock
  }
  let running = 0
  let waiting = 0
  /** Turns taken with `reserve` and not yet given back. */
  const reservations = new Set<BuildReservation>()

  /** The argv running `argv` (buildah, skopeo) in the sandbox of a mounted cache. */
  const sandboxed = (
    cache: MountedCache,
    work: string,
    argv: ReadonlyArray<string>,
    options: { readonly network: "host" | "none" | { readonly egressDir: string }; readonly binds?: ReadonlyArray<SandboxBind>; readonly cgroupProcs?: ReadonlyArray<string> }
  ) =>
    sandboxArgv({
      hostUid: cache.hostUid,
      uidRange: BUILD_UID_RANGE,
      cgroupProcs: options.cgroupProcs ?? [],
      network: options.network,
      binds: [
        { source: cache.path, target: "/store" },
        { source: join(cache.path, "tmp"), target: "/var/tmp" },
        { source: join(work, "containers"), target: "/etc/containers", readOnly: true },
        ...(options.binds ?? [])
      ],
      env: {
        PATH: SANDBOX_PATH,
        HOME: "/store/home",
        TMPDIR: "/var/tmp",
        LC_ALL: "C",
        BUILDAH_ISOLATION: "chroot",
        CONTAINERS_CONF: "/etc/containers/containers.conf",
        CONTAINERS_STORAGE_CONF: "/etc/containers/storage.conf",
        CONTAINERS_REGISTRIES_CONF: "/etc/containers/registries.conf"
      },
      argv
    })

  /** A short buildah command on a mounted cache (no network), its output collected. */
  const quick = (cache: MountedCache, work: string, argv: ReadonlyArray<string>) =>
    runner.run(sandboxed(cache, work, argv, { network: "none" }), { cleanEnv: true, env: HOST_ENV, timeout: "10 minutes" })

  /** The images of a deployment in its (mounted) cache, newest first. */
  const listImages = (cache: MountedCache, work: string) =>
    quick(cache, work, ["buildah", "images", "--json", "--filter", `reference=${builtImageName(cache.key)}`]).pipe(
      Effect.map((r): ReadonlyArray<CachedImage> => {
        const text = r.stdout.trim()
        const items = text === "" || text === "null" ? [] : (JSON.parse(text) as Array<{ id: string; names?: Array<string> | null; createdatraw?: string; created?: number }>)
        const out: Array<CachedImage> = []
        for (const item of items) {
          for (const name of item.names ?? []) {
            if (!name.startsWith(`${builtImageName(cache.key)}:`)) continue
            const created = item.created !== undefined ? item.created * 1000 : Date.parse(item.createdatraw ?? "")
            out.push({ reference: name, tag: name.slice(builtImageName(cache.key).length + 1), id: item.id, created })
          }
        }
        return out.sort((a, b) => b.created - a.created || b.tag.localeCompare(a.tag))
      })
    )

  /** Writes the per-build container configuration; answers the work directory's paths. */
  const prepareWork = (work: string, hostUid: number, request: BuildRequest) =>
    Effect.try({
      try: () => {
        const containers = join(work, "containers")
        mkdirSync(containers, { mode: 0o755 })
        writeFileSync(join(containers, "registries.conf"), registriesConf(settings.registries), { mode: 0o644 })
        writeFileSync(join(containers, "policy.json"), POLICY_JSON, { mode: 0o644 })
        writeFileSync(join(containers, "storage.conf"), storageConf("/store/storage", "/run/storage"), { mode: 0o644 })
        writeFileSync(join(containers, "containers.conf"), CONTAINERS_CONF, { mode: 0o644 })
        mkdirSync(join(containers, "registries.d"), { mode: 0o755 })
        writeFileSync(join(work, "Dockerfile"), request.dockerfile, { mode: 0o644 })
        for (const sub of ["out", "auth"]) {
          mkdirSync(join(work, sub), { mode: 0o700 })
          chownSync(join(work, sub), hostUid, hostUid)
        }
      },
      catch: (e) => fail("sandbox", `preparing the build: ${toError(e).message}`)
    })

  const validate = (request: BuildRequest) =>
    Effect.gen(function*() {
      const missing = missingBuildTools()
      if (missing !== undefined) return yield* fail("sandbox", `builds cannot run on this host: ${missing}`)
      if (!isCacheKey(request.cacheKey) || !REPO_KEY_RE.test(request.cacheKey))
        return yield* fail("invalid_request", `build cache key ${JSON.stringify(request.cacheKey.slice(0, 80))} must be lower-case letters and digits separated by . _ -`)
      if (!TAG_RE.test(request.tag)) return yield* fail("invalid_request", `build tag ${JSON.stringify(request.tag.slice(0, 80))} must be letters, digits, . _ - (128 at most)`)
      const dirs: Array<readonly [string, string]> = [["the build context", request.contextDir]]
      for (const [name, dir] of Object.entries(request.buildContexts ?? {})) {
        if (!CONTEXT_NAME_RE.test(name)) return yield* fail("invalid_request", `build context name ${JSON.stringify(name.slice(0, 80))} must be lower-case letters, digits, . _ -`)
        dirs.push([`build context ${name}`, dir])
      }
      for (const [what, dir] of dirs) {
        let isDir = false
        try {
          isDir = statSync(dir).isDirectory()
        } catch {
          isDir = false
        }
        if (!isDir) return yield* fail("invalid_request", `${what} ${dir} is not a directory`)
        const blockedAt = unsearchableAncestor(join(resolve(dir), "x"))
        if (blockedAt) return yield* fail("invalid_request", `${what} ${dir}: ${blockedAt} must be searchable by others (the build runs as an unprivileged user)`)
      }
      for (const name of Object.keys(request.buildArgs ?? {}))
        if (!BUILD_ARG_RE.test(name)) return yield* fail("invalid_request", `build argument name ${JSON.stringify(name.slice(0, 80))} is not valid`)
      try {
        return baseImages(request.dockerfile, { buildArgs: request.buildArgs, buildContexts: Object.keys(request.buildContexts ?? {}) })
      } catch (error) {
        return yield* fail("dockerfile", error instanceof DockerfileError ? error.message : `reading the Dockerfile: ${toError(error).message}`)
      }
    })

  /** The build's log: events are made synchronously (buildah's lines) and delivered in order by one fiber. */
  const makeLog = (onLog: BuildRequest["onLog"]) =>
    Effect.gen(function*() {
      const clock = yield* Clock.Clock
      const queue = yield* Queue.unbounded<BuildLogEvent, import("effect").Cause.Done>()
      const deliver = onLog ?? (() => Effect.void)
      const fiber = yield* Effect.forkScoped(
        Effect.forever(Queue.takeAll(queue).pipe(Effect.flatMap((events) => Effect.forEach(events, deliver, { discard: true })))).pipe(Effect.catch(() => Effect.void))
      )
      const now = () => clock.currentTimeMillisUnsafe()
      return {
        now,
        emit: (event: BuildLogEvent) => void Queue.offerUnsafe(queue, event),
        phase: (message: string) => void Queue.offerUnsafe(queue, { _tag: "Phase", at: now(), message }),
        /** Delivers what is queued and stops. */
        flush: Queue.end(queue).pipe(Effect.andThen(Fiber.join(fiber)), Effect.ignore)
      }
    })

  const runBuild = (request: BuildRequest, work: string, images: ReadonlyArray<string>, log: Effect.Success<ReturnType<typeof makeLog>>) =>
    Effect.gen(function*() {
      const started = log.now()
      const cache = yield* mountCache(runner, root, request.cacheKey, settings.limits.diskBytes, allocation.withPermits(1)).pipe(
        Effect.mapError((e) => fail("sandbox", `mounting the build cache: ${e.message}`))
      )
      yield* prepareWork(work, cache.hostUid, request)
      const cgroupId = `build-${request.cacheKey.slice(0, 40)}-${randomBytes(4).toString("hex")}`
      const cgroupProcs = yield* Effect.acquireRelease(
        Effect.try({
          try: () =>
            createCgroup(limitsMode, cgroupParent, cgroupId, {
              memoryBytes: settings.limits.memoryBytes,
              cpuMillis: settings.limits.cpuMillis,
              pids: settings.limits.pids
            }),
          catch: (e) => fail("sandbox", `creating the build's cgroup: ${toError(e).message}`)
        }),
        () => removeCgroup(limitsMode, cgroupParent, cgroupId)
      )

      // 3. Base images, with credentials only these pulls see.
      const auth = join(work, "auth", "auth.json")
      const authContent = yield* Effect.try({
        try: () => authFileContent(settings.registries.authFile, request.registryCredentials ?? []),
        catch: (e) => fail("pull", `reading registry credentials: ${toError(e).message}`)
      })
      yield* Effect.acquireUseRelease(
        Effect.sync(() => {
          if (authContent === undefined) return
          writeFileSync(auth, authContent, { mode: 0o600 })
          chownSync(auth, cache.hostUid, cache.hostUid)
        }),
        () =>
          Effect.forEach(
            images,
            (image) =>
              Effect.gen(function*() {
                log.phase(`pulling ${image}`)
                const argv = ["buildah", "pull", "--policy", "always", "--retry", "2", "--quiet", ...(authContent ? ["--authfile", "/run/slipway-auth/auth.json"] : []), image]
                const result = yield* runStreaming(
                  runner,
                  sandboxed(cache, work, argv, { network: "host", cgroupProcs, binds: authContent ? [{ source: join(work, "auth"), target: "/run/slipway-auth", readOnly: true }] : [] }),
                  () => undefined
                ).pipe(Effect.mapError((e: CommandFailed) => fail("sandbox", `pulling ${image}: ${e.message}`)))
                if (result.code !== 0) {
                  const lines = cleanTail(result.tail, 5)
                  const reason = (lines[lines.length - 1] ?? `exit status ${result.code}`).replace(/^Error: /, "")
                  return yield* fail("pull", `pulling base image ${image}: ${reason}`, lines)
                }
              }),
            { discard: true }
          ),
        () => Effect.sync(() => rmSync(auth, { force: true }))
      )

      // 4. The build, with only the egress proxy for a network.
      const egress = { allowed: 0, refused: 0 }
      // The proxy's socket in a short directory of its own (a socket path has at most 107 bytes,
      // which a deep data directory would exceed), searchable, its inner directory the build's.
      const egressDir = yield* socketDirectory.pipe(
        Effect.flatMap((base) =>
          Effect.try({
            try: () => {
              chmodSync(base, 0o711)
              const dir = join(base, "egress")
              mkdirSync(dir, { mode: 0o700 })
              chownSync(dir, cache.hostUid, cache.hostUid)
              return dir
            },
            catch: (e) => fail("sandbox", `preparing the egress proxy: ${toError(e).message}`)
          })
        )
      )
      yield* serveEgressProxy(join(egressDir, EGRESS_SOCKET), {
        owner: cache.hostUid,
        onDecision: (d) => {
          if (d.allowed) egress.allowed++
          else egress.refused++
          if (!d.allowed) log.emit({ _tag: "Output", at: log.now(), step: undefined, line: `egress refused: ${d.target} (${d.reason})` })
        }
      }).pipe(Effect.mapError((e) => fail("sandbox", `starting the egress proxy: ${e.message}`)))

      const contexts = Object.entries(request.buildContexts ?? {})
      const reference = `${builtImageName(request.cacheKey)}:${request.tag}`
      const budArgv = [
        "buildah", "bud",
        "--isolation", "chroot",
        "--layers",
        "--pull=never",
        "--format", "oci",
        "--jobs", "1",
        "-f", "/build/Dockerfile",
        "-t", reference,
        "--iidfile", "/build/out/iid",
        ...contexts.flatMap(([name], i) => ["--build-context", `${name}=/build/contexts/${i}`]),
        ...Object.entries(request.buildArgs ?? {}).flatMap(([k, v]) => ["--build-arg", `${k}=${v}`]),
        ...PACKAGE_CACHE_MOUNTS.flatMap(([sub, target]) => ["--volume", `/store/${sub}:${target}`]),
        "/build/context"
      ]
      const parser = new BuildLogParser()
      const status = yield* runStreaming(
        runner,
        sandboxed(cache, work, budArgv, {
          network: { egressDir },
          cgroupProcs,
          binds: [
            { source: join(work, "Dockerfile"), target: "/build/Dockerfile", readOnly: true },
            { source: resolve(request.contextDir), target: "/build/context", readOnly: true },
            { source: join(work, "out"), target: "/build/out" },
            ...contexts.map(([, dir], i) => ({ source: resolve(dir), target: `/build/contexts/${i}`, readOnly: true }))
          ]
        }),
        (line) => {
          for (const event of parser.line(line, log.now())) log.emit(event)
        }
      ).pipe(
        Effect.mapError((e: CommandFailed) => fail("sandbox", `running buildah: ${e.message}`)),
        Effect.onExit((exit) =>
          exit._tag === "Success" && exit.value.code === 0
            ? Effect.void
            : // The partial image: buildah's working containers of this cache (one build at a time per cache).
              quick(cache, work, ["buildah", "rm", "--all"]).pipe(Effect.ignore)
        )
      )
      for (const event of parser.finish(log.now())) log.emit(event)
      if (status.code !== 0) {
        const failed = parser.failed
        const tail = cleanTail(failed?.tail ?? status.tail, 20)
        const exitStatus = /exit status (\d+)/.exec(status.tail.filter((l) => /building at STEP/i.test(l)).join("\n"))?.[1]
        const where = failed ? `STEP ${failed.index}/${failed.total}: ${failed.instruction}` : "the build"
        const step = failed ? { index: failed.index, total: failed.total, stage: failed.stage, instruction: failed.instruction } : undefined
        if (oomKills(limitsMode, cgroupParent, cgroupId) > 0)
          return yield* fail("out_of_memory", `${where} ran out of memory (limit ${formatBytes(settings.limits.memoryBytes)}, SLIPWAY_BUILD_MEMORY)`, tail, step)
        if (status.tail.concat(tail).some((l) => /no space left on device/i.test(l)))
          return yield* fail("out_of_disk", `${where} ran out of disk (the deployment's build disk is ${formatBytes(settings.limits.diskBytes)}, SLIPWAY_BUILD_DISK)`, tail, step)
        const last = tail.slice(-3).join(" | ")
        return yield* fail("step_failed", `${where} failed${exitStatus ? ` (exit status ${exitStatus})` : ""}${last ? `: ${last}` : ""}`, tail, step)
      }

      // 5. The image as an OCI layout for the image store: exported into the deployment's layout
      // (uncompressed; only the layers it lacks are written), then hard-linked out.
      log.phase("exporting the image")
      const exportArgv = ["skopeo", "copy", "--quiet", "--dest-oci-accept-uncompressed-layers", `containers-storage:${reference}`, `oci:/export:${request.tag}`]
      const exportedRun = yield* runStreaming(
        runner,
        sandboxed(cache, work, exportArgv, { network: "none", cgroupProcs, binds: [{ source: cache.exportLayout, target: "/export" }] }),
        () => undefined
      ).pipe(Effect.mapError((e: CommandFailed) => fail("export", `exporting the image: ${e.message}`)))
      if (exportedRun.code !== 0) return yield* fail("export", `exporting the image: ${cleanTail(exportedRun.tail, 1)[0] ?? `exit status ${exportedRun.code}`}`, cleanTail(exportedRun.tail, 5))
      const layout = join(work, "out", "layout")
      const exported = yield* Effect.try({
        try: () => {
          const manifest = extractImage(cache.exportLayout, request.tag, layout)
          const iid = readFileSync(join(work, "out", "iid"), "utf8").trim().replace(/^sha256:/, "")
          return { manifestDigest: manifest.digest, imageId: iid }
        },
        catch: (e) => fail("export", `reading the exported image: ${toError(e).message}`)
      })

      // 6. Keep the newest images of this deployment; drop the rest and their dangling layers.
      yield* Effect.gen(function*() {
        const kept = yield* listImages(cache, work)
        const old = kept.slice(settings.keepImages).map((i) => i.reference)
        if (old.length > 0) yield* quick(cache, work, ["buildah", "rmi", ...old])
        yield* quick(cache, work, ["buildah", "rmi", "--prune"])
        yield* Effect.try(() => gcLayout(cache.exportLayout, new Set(kept.slice(0, settings.keepImages).map((i) => i.tag)), cache.hostUid))
        if (old.length > 0) log.phase(`removed ${old.length} older image${old.length > 1 ? "s" : ""} of this deployment from the build cache`)
      }).pipe(Effect.ignore)

      const durationMs = log.now() - started
      log.phase(`built ${reference} in ${(durationMs / 1000).toFixed(1)} s`)
      return { reference, imageId: exported.imageId, layout, layoutTag: request.tag, manifestDigest: exported.manifestDigest, durationMs, steps: parser.steps(), egress } satisfies BuiltImage
    })

  /** Removes least recently used caches (not `current`, none in use) until all fit under the cap. */
  const trimCaches = (current: string, log: (m: string) => void) =>
    Effect.gen(function*() {
      const caches = [...listCaches(root)].sort((a, b) => a.lastUsed - b.lastUsed)
      let total = caches.reduce((sum, c) => sum + c.diskBytes, 0)
      for (const cache of caches) {
        if (total <= settings.cacheMaxBytes) break
        if (cache.key === current) continue
        const removed = yield* lockOf(cache.key).withPermitsIfAvailable(1)(Effect.sync(() => removeCache(root, cache.key)))
        if (removed._tag === "Some") {
          total -= cache.diskBytes
          log(`removed the build cache of ${cache.key} (${formatBytes(cache.diskBytes)}, least recently used) to stay under SLIPWAY_BUILD_CACHE_MAX`)
        }
      }
    })

  const build = (request: BuildRequest): Effect.Effect<BuiltImage, BuildError, Scope.Scope> =>
    Effect.gen(function*() {
      const images = yield* validate(request)
      const log = yield* makeLog(request.onLog)
      const work = yield* Effect.acquireRelease(
        Effect.try({
          try: () => {
            // Its pid first: the work directories of dead server processes are removed at start.
            const dir = join(workRoot, `${process.pid}-${randomBytes(6).toString("hex")}`)
            mkdirSync(dir, { mode: 0o711 })
            return dir
          },
          catch: (e) => fail("sandbox", `creating the build's work directory: ${toError(e).message}`)
        }),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
      const reservation = request.reservation
      if (reservation !== undefined && (reservation.cacheKey !== request.cacheKey || !reservations.has(reservation)))
        return yield* fail("invalid_request", `the build's reservation is not held for ${JSON.stringify(request.cacheKey.slice(0, 80))}`)
      const timeout = Duration.millis(settings.timeoutMs)
      return yield* Effect.scoped(
        Effect.gen(function*() {
          // The queue: this deployment's previous build, then a slot (a reservation holds both already).
          if (reservation === undefined) yield* takeTurn(request.cacheKey, (message) => Effect.sync(() => log.phase(message)))
          return yield* Effect.scoped(runBuild(request, work, images, log)).pipe(
            Effect.timeoutOrElse({
              duration: timeout,
              orElse: () => Effect.fail(fail("timeout", `the build took longer than ${Duration.format(timeout)} (SLIPWAY_BUILD_TIMEOUT_S)`))
            }),
            Effect.tap(() => trimCaches(request.cacheKey, log.phase))
          )
        })
      ).pipe(Effect.ensuring(log.flush))
    }).pipe(Effect.withSpan("ImageBuilder.build"))

  /**
   * Waits for the deployment's previous build (one per cache key) and a build slot, and holds
   * both until the scope closes. Interrupted while waiting, it takes nothing.
   */
  const takeTurn = (cacheKey: string, phase: (message: string) => Effect.Effect<void>) =>
    Effect.gen(function*() {
      const ahead = running + waiting
      if (ahead >= settings.concurrency) yield* phase(`waiting for a build slot (${ahead} build${ahead === 1 ? "" : "s"} ahead)`)
      waiting++
      yield* Semaphore.takeScoped(lockOf(cacheKey), 1).pipe(
        Effect.andThen(Semaphore.takeScoped(slots, 1)),
        Effect.ensuring(Effect.sync(() => void waiting--))
      )
      running++
      yield* Effect.addFinalizer(() => Effect.sync(() => void running--))
    })

  const reserve = (cacheKey: string, onLog?: BuildRequest["onLog"]) =>
    Effect.gen(function*() {
      if (!isCacheKey(cacheKey) || !REPO_KEY_RE.test(cacheKey))
        return yield* fail("invalid_request", `build cache key ${JSON.stringify(cacheKey.slice(0, 80))} must be lower-case letters and digits separated by . _ -`)
      yield* takeTurn(cacheKey, (message) =>
        onLog ? Effect.flatMap(Clock.currentTimeMillis, (at) => onLog({ _tag: "Phase", at, message })) : Effect.void
      )
      const reservation: BuildReservation = { cacheKey }
      reservations.add(reservation)
      yield* Effect.addFinalizer(() => Effect.sync(() => void reservations.delete(reservation)))
      return reservation
    })

  const withCache = <A>(cacheKey: string, f: (cache: MountedCache, work: string) => Effect.Effect<A, BuildError | CommandFailed>) =>
    lockOf(cacheKey).withPermits(1)(
      Effect.scoped(
        Effect.gen(function*() {
          const work = yield* Effect.acquireRelease(
            Effect.sync(() => {
              const dir = join(workRoot, `${process.pid}-${randomBytes(6).toString("hex")}`)
              mkdirSync(dir, { mode: 0o711 })
              return dir
            }),
            (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
          )
          const cache = yield* mountCache(runner, root, cacheKey, settings.limits.diskBytes, allocation.withPermits(1)).pipe(
            Effect.mapError((e) => fail("sandbox", `mounting the build cache: ${e.message}`))
          )
          yield* prepareWork(work, cache.hostUid, { cacheKey, tag: "x", dockerfile: "", contextDir: work })
          return yield* f(cache, work)
        })
      )
    ).pipe(Effect.mapError((e) => (e instanceof BuildError ? e : fail("sandbox", e.message))))

  const images = (cacheKey: string) =>
    Effect.gen(function*() {
      if (!isCacheKey(cacheKey) || !REPO_KEY_RE.test(cacheKey)) return yield* fail("invalid_request", `invalid build cache key ${JSON.stringify(cacheKey.slice(0, 80))}`)
      if (!existsSync(join(root, "caches", cacheKey, "disk.img"))) return []
      return yield* withCache(cacheKey, (cache, work) => listImages(cache, work))
    })

  const keptImage = (cacheKey: string, tag: string): Effect.Effect<KeptImage | undefined, never, Scope.Scope> =>
    Effect.gen(function*() {
      if (!isCacheKey(cacheKey) || !TAG_RE.test(tag)) return undefined
      const exportLayout = join(root, "caches", cacheKey, "export")
      if (!existsSync(join(exportLayout, "index.json"))) return undefined
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => join(workRoot, `${process.pid}-kept-${randomBytes(6).toString("hex")}`)),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
      // No lock: a build's GC removing the image meanwhile fails the extraction (the caller builds again).
      return yield* Effect.try(() => {
        const manifest = extractImage(exportLayout, tag, dir)
        return { manifestDigest: manifest.digest, layout: dir, layoutTag: tag }
      }).pipe(Effect.orElseSucceed(() => undefined))
    })

  const keptDigests = (cacheKey: string): Effect.Effect<ReadonlySet<string>> =>
    Effect.sync(() => {
      const index = join(root, "caches", cacheKey, "export", "index.json")
      if (!isCacheKey(cacheKey) || !existsSync(index)) return new Set<string>()
      try {
        return new Set((JSON.parse(readFileSync(index, "utf8")) as { manifests?: Array<{ digest: string }> }).manifests?.map((m) => m.digest) ?? [])
      } catch {
        return new Set<string>()
      }
    })

  const removeCacheOf = (cacheKey: string) =>
    Effect.gen(function*() {
      if (!isCacheKey(cacheKey)) return yield* fail("invalid_request", `invalid build cache key ${JSON.stringify(cacheKey.slice(0, 80))}`)
      yield* lockOf(cacheKey).withPermits(1)(Effect.sync(() => removeCache(root, cacheKey)))
    })

  const workspace = Effect.acquireRelease(
    Effect.try({
      try: () => {
        const dir = join(workRoot, `${process.pid}-src-${randomBytes(6).toString("hex")}`)
        mkdirSync(dir, { mode: 0o755 })
        return dir
      },
      catch: (e) => fail("sandbox", `creating a workspace: ${toError(e).message}`)
    }),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

  return ImageBuilder.of({
    build,
    reserve,
    workspace,
    images,
    keptImage,
    keptDigests,
    caches: Effect.sync(() => listCaches(root)),
    removeCache: removeCacheOf,
    activity: () => ({ running, waiting })
  })
})

export const ImageBuilderLive = Layer.effect(ImageBuilder, makeImageBuilder)
