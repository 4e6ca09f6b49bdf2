/**
 * A revision's source becomes an image in the image store: the build pipeline the local
 * deployment driver runs for `gitrepo` (and `internal_source`) revisions. In order:
 *
 *   1. the build's turn (`ImageBuilder.reserve`): the deployment's previous build, then a build
 *      slot (SLIPWAY_BUILD_CONCURRENCY); `hooks.started` tells the caller it has come (BUILDING);
 *   2. the source into a fresh workspace: one commit of the repository (`GitSource.checkout`,
 *      with the integration's read token when it has one), or the uploaded tarball
 *      (`SourceUploads.extract`);
 *   3. the tree (every file of the checkout, `.git` aside) and the files `filesToRead` names, the
 *      config at `configPath` parsed, and core's `langgraphDockerfile` (the langgraph CLI's
 *      Dockerfile, install/build commands as the CLI takes them);
 *   4. `ImageBuilder.build` in the build sandbox, base images pulled with the tenant's stored
 *      registry credentials for their host;
 *   5. `ImageStore.importOciLayout`: the image in the store the replicas run from.
 *
 * Every step, its output and its duration go to `hooks.log` as they happen. A failure is a
 * `BuildFailed` whose message names the step and its last output lines (an invalid
 * langgraph.json is the CLI's message). Interrupting the build (a superseded revision) kills
 * what runs and removes the workspace, the partial image and the build's layout.
 */
import { chmodSync, lstatSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Clock, Context, Data, Effect, Layer, Result } from "effect"
import { filesToRead, langgraphDockerfile, parseConfigText } from "../../core/index.ts"
import { ServerEnv } from "../module.ts"
import { parseReference } from "../runtime/local/reference.ts"
import { ImageStore, type PulledImage } from "../runtime/local/ImageStore.ts"
import { makeSecretBox } from "../secrets/secrets.ts"
import { makeRegistryCredentials } from "../sandboxes/access/registries.ts"
import { RegistryStore } from "../store/RegistryStore.ts"
import { SourceUploads } from "../uploads/SourceUploads.ts"
import { type BuildLogEvent, formatBuildLogEvent } from "./buildLog.ts"
import type { BuildInput, BuildSource } from "./BuildSource.ts"
import { GitSource } from "./GitSource.ts"
import { builtImageName, ImageBuilder, type RegistryCredential } from "./ImageBuilder.ts"

export type { BuildInput, BuildSource } from "./BuildSource.ts"

/** The step a build failed in. */
export type BuildStep = "source" | "config" | "build" | "image"

/** A build that made no image; `message` is the revision's `status_message`. */
export class BuildFailed extends Data.TaggedError("BuildFailed")<{ readonly step: BuildStep; readonly message: string }> {}

export interface BuildLogLine {
  readonly message: string
  /** Default: read from the line (an output line saying ERROR is one). */
  readonly level?: "INFO" | "WARNING" | "ERROR" | undefined
  /** The build's own output (a RUN step's), not Slipway's line. */
  readonly output?: boolean | undefined
}

export interface BuildHooks {
  /** A line of the build log, as it happens. */
  readonly log: (line: BuildLogLine) => Effect.Effect<void>
  /** The build's turn has come: it starts (the revision is BUILDING). */
  readonly started: Effect.Effect<void>
}

export interface BuildOutcome {
  /** In the image store (`lookup(image.digest)` finds it). */
  readonly image: PulledImage
  /** The commit built (git sources). */
  readonly commitSha: string | undefined
  /** From the turn to the image in the store. */
  readonly durationMs: number
}

export class BuildPipeline extends Context.Service<
  BuildPipeline,
  {
    /** Builds the input's source into an image in the image store. */
    readonly build: (input: BuildInput, hooks: BuildHooks) => Effect.Effect<BuildOutcome, BuildFailed>
    /**
     * The image a build of this revision made, for serving it again (a restart, a redeploy): from
     * the image store when it is there, else from the deployment's build cache (the newest
     * SLIPWAY_BUILD_KEEP_IMAGES images), else undefined (build it again).
     */
    readonly built: (input: BuildInput, hooks: BuildHooks) => Effect.Effect<PulledImage | undefined>
    /**
     * Removes from the image store the images built for this deployment that its build cache no
     * longer keeps (older than the newest SLIPWAY_BUILD_KEEP_IMAGES), except those `inUse`.
     */
    readonly prune: (deploymentId: string, inUse: ReadonlySet<string>) => Effect.Effect<void>
    /** A deleted deployment: its build cache and every image built for it go. */
    readonly forget: (deploymentId: string) => Effect.Effect<void>
  }
>()("slipway/BuildPipeline") {}

const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/

/** The repository's name, as `git clone` names its directory (`agent` for `…/acme/agent.git`). */
export const repositoryName = (repoUrl: string): string => {
  const path = repoUrl.replace(/[?#].*$/, "").replace(/\/+$/, "").replace(/\.git$/, "")
  const name = path.slice(Math.max(path.lastIndexOf("/"), path.lastIndexOf(":")) + 1)
  return /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name) ? name : "source"
}

/** Every file under `dir` (relative, `/`-separated), the top-level `.git` aside; a symlink counts as a file (as git lists it). */
export const listFiles = (dir: string): Array<string> =>
  (readdirSync(dir, { recursive: true, withFileTypes: true }) as Array<import("node:fs").Dirent>)
    .filter((entry) => !entry.isDirectory())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .filter((path) => path !== ".git" && !path.startsWith(".git/"))
    .sort()

/**
 * Makes an unpacked source readable by the build's unprivileged user (a tarball may hold files of
 * mode 0600, which the build could not read through its bind mount): a+r, and a+x on directories
 * and on files executable by their owner. Symbolic links are left alone (never followed).
 */
export const readableByBuilds = (dir: string): void => {
  const open = (path: string) => {
    const info = lstatSync(path)
    if (info.isSymbolicLink()) return
    const mode = info.mode & 0o7777
    const wanted = mode | 0o444 | (info.isDirectory() || mode & 0o100 ? 0o111 : 0)
    if (wanted !== mode) chmodSync(path, wanted)
  }
  open(dir)
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true }) as Array<import("node:fs").Dirent>) open(join(entry.parentPath, entry.name))
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

const lastLines = (lines: ReadonlyArray<string>) => lines.slice(-3).join(" | ")

export const makeBuildPipeline = Effect.gen(function* () {
  const git = yield* GitSource
  const builder = yield* ImageBuilder
  const images = yield* ImageStore
  const uploads = yield* SourceUploads
  const registryStore = yield* RegistryStore
  const { config, log: serverLog } = yield* ServerEnv
  const box = makeSecretBox(config.secretsKey, config.previousSecretsKeys)
  const credentialsFor = makeRegistryCredentials(registryStore, box, (message, fields) => serverLog.warn(message, fields))

  /** Checks out or unpacks the source into `dir`; answers the commit built (git). */
  const fetchSource = (source: BuildSource, dir: string, say: (message: string) => Effect.Effect<void>) =>
    Effect.gen(function* () {
      if (source._tag === "Tarball") {
        yield* say(`unpacking the uploaded source ${source.objectPath}`)
        const summary = yield* uploads.extract(source.tenantId, source.deploymentId, source.objectPath, dir).pipe(
          Effect.mapError((error) => new BuildFailed({ step: "source", message: `unpacking the source: ${error.message}` }))
        )
        yield* Effect.try({ try: () => readableByBuilds(dir), catch: (error) => new BuildFailed({ step: "source", message: `unpacking the source: ${messageOf(error)}` }) })
        yield* say(`unpacked ${summary.entries} entries (${summary.fileBytes} bytes)`)
        return undefined
      }
      const pinned = source.commitSha?.trim().toLowerCase() || undefined
      const ref = source.ref?.trim() || undefined
      const byId = pinned !== undefined && FULL_SHA.test(pinned)
      yield* say(`checking out ${byId ? `commit ${pinned}` : `${ref ?? "?"}${pinned ? ` (expecting commit ${pinned})` : ""}`} of ${source.repoUrl}`)
      const checkout = yield* git
        .checkout({ repoUrl: source.repoUrl, ref, commitSha: byId ? pinned : undefined, token: source.token, dir })
        .pipe(Effect.mapError((error) => new BuildFailed({ step: "source", message: error.message })))
      // An abbreviated pin cannot be fetched by id: it must be the ref's tip.
      if (pinned !== undefined && !byId && !checkout.commitSha.startsWith(pinned)) {
        return yield* new BuildFailed({
          step: "source",
          message: `commit ${pinned} is not the tip of ${ref} (the tip is ${checkout.commitSha.slice(0, 12)}): pin the full 40-digit commit sha to build an older commit`
        })
      }
      yield* say(`checked out commit ${checkout.commitSha}`)
      return checkout.commitSha
    })

  /** The Dockerfile the langgraph CLI writes for the source in `dir`. */
  const dockerfileFor = (input: BuildInput, dir: string, rootName: string) =>
    Effect.gen(function* () {
      const configPath = input.configPath?.trim() || "langgraph.json"
      const configError = (message: string) => new BuildFailed({ step: "config", message: `${configPath}: ${message}` })
      const files = yield* Effect.try({ try: () => listFiles(dir), catch: (error) => configError(`reading the source: ${messageOf(error)}`) })
      const fileSet = new Set(files)
      const contents: Record<string, string> = {}
      for (const path of [configPath, ...filesToRead(configPath)]) {
        if (!fileSet.has(path)) continue
        const text = yield* Effect.try({ try: () => readFileSync(join(dir, path), "utf8"), catch: (error) => configError(`reading ${path}: ${messageOf(error)}`) })
        contents[path] = text
      }
      if (contents[configPath] === undefined) return yield* configError(`Could not find the config file ${configPath} in the source.`)
      const parsed = parseConfigText(contents[configPath]!, configPath)
      if (Result.isFailure(parsed)) return yield* configError(parsed.failure.message)
      const generated = langgraphDockerfile({
        config: parsed.success,
        configPath,
        rootName,
        tree: { files, contents },
        installCommand: input.installCommand,
        buildCommand: input.buildCommand
      })
      if (Result.isFailure(generated)) return yield* configError(generated.failure.message)
      return generated.success
    })

  const build = (input: BuildInput, hooks: BuildHooks): Effect.Effect<BuildOutcome, BuildFailed> =>
    Effect.scoped(
      Effect.gen(function* () {
        const say = (message: string, level?: BuildLogLine["level"]) => hooks.log({ message, level: level ?? "INFO" })
        const onLog = (event: BuildLogEvent) => hooks.log({ message: formatBuildLogEvent(event), output: event._tag === "Output" })
        const buildFailed = (step: BuildStep) => (error: { readonly message: string }) => new BuildFailed({ step, message: error.message })

        // 1. The turn: this deployment's previous build, then a slot.
        const reservation = yield* builder.reserve(input.deploymentId, onLog).pipe(Effect.mapError(buildFailed("build")))
        yield* hooks.started
        const started = yield* Clock.currentTimeMillis
        const elapsed = Effect.map(Clock.currentTimeMillis, (now) => now - started)

        // 2. The source, in a workspace the build's user can read.
        const workspace = yield* builder.workspace.pipe(Effect.mapError(buildFailed("source")))
        const rootName = input.source._tag === "Git" ? repositoryName(input.source.repoUrl) : input.source.rootName || "source"
        const dir = join(workspace, rootName)
        const commitSha = yield* fetchSource(input.source, dir, say)
        yield* say(`source ready after ${seconds(yield* elapsed)}`)

        // 3. The Dockerfile, as the langgraph CLI writes it.
        const docker = yield* dockerfileFor(input, dir, rootName)
        for (const warning of docker.warnings) yield* say(`warning: ${warning}`, "WARNING")
        yield* say(`Dockerfile (context ${docker.context}${docker.additionalContexts.map((c) => `, --build-context ${c.name}=${c.path}`).join("")}):`)
        for (const line of docker.dockerfile.trimEnd().split("\n")) yield* say(`  ${line}`)

        // 4. The build, base images pulled with the tenant's credentials for their registry.
        const credentials = yield* credentialsFor(input.tenantId, docker.baseImage)
        const registryCredentials: Array<RegistryCredential> = []
        if (credentials) {
          const domain = yield* Effect.try(() => parseReference(docker.baseImage).domain).pipe(Effect.orElseSucceed(() => undefined))
          if (domain) registryCredentials.push({ registry: domain, username: credentials.username, password: credentials.password })
        }
        const built = yield* builder
          .build({
            cacheKey: input.deploymentId,
            tag: input.revisionId,
            dockerfile: docker.dockerfile,
            contextDir: join(dir, docker.context),
            buildContexts: Object.fromEntries(docker.additionalContexts.map((c) => [c.name, join(dir, c.path)])),
            registryCredentials,
            onLog,
            reservation
          })
          .pipe(
            Effect.tapError((error) =>
              Effect.andThen(
                error.lastLines.length > 0 ? say(`last output: ${lastLines(error.lastLines)}`, "ERROR") : Effect.void,
                say(`build failed: ${error.message}`, "ERROR")
              )
            ),
            Effect.mapError(buildFailed("build"))
          )

        // 5. Into the image store.
        const image = yield* images
          .importOciLayout(built.layout, built.layoutTag, { reference: built.reference, onProgress: (message) => say(message) })
          .pipe(Effect.mapError((error) => new BuildFailed({ step: "image", message: `storing the image: ${error.message}` })))
        const durationMs = yield* elapsed
        yield* say(`image ${image.reference} (${image.digest}) ready after ${seconds(durationMs)}`)
        return { image, commitSha, durationMs } satisfies BuildOutcome
      })
    ).pipe(Effect.tapError((error) => hooks.log({ message: `BUILD FAILED (${error.step}): ${error.message}`, level: "ERROR" })))

  const built = (input: BuildInput, hooks: BuildHooks): Effect.Effect<PulledImage | undefined> =>
    Effect.scoped(
      Effect.gen(function* () {
        const kept = yield* builder.keptImage(input.deploymentId, input.revisionId)
        if (kept === undefined) return undefined
        const stored = yield* Effect.orElseSucceed(images.lookup(kept.manifestDigest), () => null)
        if (stored) return stored
        yield* hooks.log({ message: `importing the image built for revision ${input.revisionId} from the build cache` })
        return yield* images.importOciLayout(kept.layout, kept.layoutTag, { reference: `${builtImageName(input.deploymentId)}:${input.revisionId}` })
      })
    ).pipe(Effect.orElseSucceed(() => undefined))

  /** The images in the store built for a deployment. */
  const imagesOf = (deploymentId: string) =>
    Effect.map(Effect.orElseSucceed(images.list, () => []), (all) => all.filter((image) => image.reference.startsWith(`${builtImageName(deploymentId)}:`)))

  const removeImages = (digests: ReadonlyArray<string>) =>
    Effect.forEach(digests, (digest) => Effect.ignore(images.remove(digest)), { discard: true })

  const prune = (deploymentId: string, inUse: ReadonlySet<string>) =>
    Effect.gen(function* () {
      const kept = yield* builder.keptDigests(deploymentId)
      const stale = (yield* imagesOf(deploymentId)).filter((image) => !kept.has(image.digest) && !inUse.has(image.digest))
      yield* removeImages(stale.map((image) => image.digest))
      if (stale.length > 0) serverLog.info("built images removed", { deployment_id: deploymentId, images: stale.length })
    })

  const forget = (deploymentId: string) =>
    Effect.gen(function* () {
      yield* builder.removeCache(deploymentId).pipe(Effect.catch((error) => Effect.sync(() => serverLog.warn("build cache not removed", { deployment_id: deploymentId, error: error.message }))))
      yield* removeImages((yield* imagesOf(deploymentId)).map((image) => image.digest))
    })

  return BuildPipeline.of({ build, built, prune, forget })
})

export const BuildPipelineLive = Layer.effect(BuildPipeline, makeBuildPipeline)
