/**
 * The `local` deployment driver: a revision runs on this machine (its image pulled, or built from its source).
 *
 * A rollout: CREATING → QUEUED → AWAITING_DEPLOY (the deployment's PostgreSQL database and
 * Redis are provisioned meanwhile: the deployment is AWAITING_DATABASE until they are, then
 * READY) → DEPLOYING ("pulling image …" with the image store's progress, "starting N replicas",
 * "waiting for health") → DEPLOYED once every replica answers its health check; then the
 * deployment URL's proxy switches to the new replicas in one assignment, and the replicas of the
 * revision that served before drain and stop (zero downtime). A pull error, a replica that exits
 * before it is healthy (with its last log lines) or a health timeout is DEPLOY_FAILED, and the
 * previous revision keeps serving.
 *
 * A revision in progress or serving is a fiber in a `FiberMap` keyed by its id, and everything
 * it runs is acquired in that fiber's `Scope` with its release: superseding or stopping it
 * (`stop`), tearing its deployment down, a failure or the server's stop interrupt the fiber, and
 * closing the scope undoes exactly what was done, in reverse order. The switch of the proxy to a
 * new revision interrupts the previous revision's fiber, whose first release drains it
 * (`drainMs`, on the `Clock`) before its replicas stop.
 *
 * A replica is a box (`BoxRunner`) on the image's root filesystem, with the CPU and memory limits
 * of the effective resource spec, its `emptyDir` volumes, the image's entrypoint + cmd as main
 * process with the deployment's secrets and the predefined variables (`PORT`, `DATABASE_URI`,
 * `REDIS_URI`, `LANGSMITH_HOST_*`) as environment; the database and Redis are reachable on the
 * box's own loopback (`Egress`), its port from the host through `forward`. Init containers run to
 * completion first, sidecars alongside (each in a box of its own image, sharing the replica's
 * emptyDir volumes). A main process that exits after the revision deployed is restarted on a
 * growing `Schedule`; the deploy log says so (a crash loop).
 *
 * The driver reports on the `DeploymentObservations` channel; a state change waits for the
 * controller's answer, and one not applied (the revision was superseded meanwhile) ends the fiber.
 *
 * Where the image comes from is the revision's image source: `external_container` pulls
 * `image_uri`; `internal_docker` pulls `image_uri` from the server's registry with the server's
 * own pull-only credentials (`Registry.pullCredentials`); `gitrepo` (one commit of its
 * repository) and `internal_source` (an uploaded tarball, `langgraph deploy --remote`) are built
 * by the build pipeline (server/builds/BuildPipeline.ts): QUEUED (behind the deployment's rollouts
 * under way: pushes queue) → AWAITING_BUILD (a build slot) → BUILDING → AWAITING_DEPLOY with the
 * commit built, or BUILD_FAILED; the build log streams into the revision's build log. At start
 * (`serve` with `restore`) the active revision of every deployment is started again (fresh boxes;
 * replicas left by a previous process are removed first; a built image is taken from the image
 * store or the build cache), without a new revision. See docs/deployments-local.md.
 */
import { randomBytes } from "node:crypto"
import { mkdirSync, rmSync } from "node:fs"
import { join } from "node:path"
import { Data, Deferred, Duration, Effect, Fiber, FiberMap, FiberSet, Layer, Redacted, Schedule, Scope } from "effect"
import { effectiveResourceSpec, type PodVolumeMount, type ResourceSpec, type RevisionStatus } from "../../../core/index.ts"
import { ServerEnv } from "../../module.ts"
import type { BoxProcess, ExitStatus } from "../../runtime/BoxProcess.ts"
import { BoxRunner, type BoxSpec, type BoxVolume, type Forward, type RunningBox } from "../../runtime/local/BoxRunner.ts"
import { Egress } from "../../runtime/local/egress.ts"
import { imageEnvironment, ImageStore, type PulledImage } from "../../runtime/local/ImageStore.ts"
import type { PullOptions } from "../../runtime/local/images/model.ts"
import { RuntimeRoot } from "../../runtime/local/RuntimeRoot.ts"
import { type DatabaseObservation, DeploymentDriver, DeploymentObservations, type Observation, type RevisionWork, ServeError } from "../Driver.ts"
import { DeploymentDatabases, type ProvisionedDatabases } from "../local/databases.ts"
import { checkHealth, type HealthMode, type HealthResult, pollHealth } from "../local/health.ts"
import { type LogKind, LogStore } from "../logs/LogStore.ts"
import { DeploymentProxy, deploymentUrl, type ProxyTarget } from "../local/proxy.ts"
import { type BuildFailed, type BuildInput, type BuildLogLine, BuildPipeline } from "../../builds/BuildPipeline.ts"
import { Registry } from "../../registry/Registry.ts"
import { makeSecretBox } from "../../secrets/secrets.ts"
import { IntegrationStore } from "../../store/IntegrationStore.ts"

export interface LocalDeploymentOptions {
  /** Time every replica has to become healthy (`SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS`, default 300 000). */
  readonly healthTimeoutMs: number
  /** `auto` (GET /ok, else TCP), `http` or `tcp` (`SLIPWAY_DEPLOY_HEALTH_CHECK`). */
  readonly healthMode: HealthMode
  /** Path of the HTTP check (`SLIPWAY_DEPLOY_HEALTH_PATH`, default `/ok`). */
  readonly healthPath: string
  /** How long old replicas may finish their requests after a switch (`SLIPWAY_DEPLOY_DRAIN_MS`, default 30 000). */
  readonly drainMs: number
  /** Port the main process listens on inside its box (`PORT`); 8000 like the agent server. */
  readonly port: number
}

const positive = (name: string, raw: string | undefined, fallback: number): number => {
  if (raw === undefined || raw === "") return fallback
  const n = Number(raw)
  if (!/^\d+$/.test(raw.trim()) || n < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`)
  return n
}

export const localDeploymentOptionsFromEnv = (env: NodeJS.ProcessEnv): LocalDeploymentOptions => {
  const mode = (env["SLIPWAY_DEPLOY_HEALTH_CHECK"] || "auto").toLowerCase()
  if (mode !== "auto" && mode !== "http" && mode !== "tcp") throw new Error(`SLIPWAY_DEPLOY_HEALTH_CHECK must be auto, http or tcp, got "${mode}"`)
  const path = env["SLIPWAY_DEPLOY_HEALTH_PATH"] || "/ok"
  if (!path.startsWith("/") || /[\s#]/.test(path)) throw new Error(`SLIPWAY_DEPLOY_HEALTH_PATH must be a path starting with "/", got "${path}"`)
  return {
    healthTimeoutMs: positive("SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS", env["SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS"], 300_000),
    healthMode: mode,
    healthPath: path,
    drainMs: positive("SLIPWAY_DEPLOY_DRAIN_MS", env["SLIPWAY_DEPLOY_DRAIN_MS"], 30_000),
    port: 8000
  }
}

const MiB = 1024 * 1024
/** Limits when the resource spec sets none (LangSmith's defaults: 1 CPU and 1024 MB requested, limits twice that). */
const DEFAULT_CPU_LIMIT = 2
const DEFAULT_MEMORY_LIMIT_MB = 2048
const PIDS = 1024
const STORAGE_BYTES = 2048 * MiB
/** Ports the database and Redis answer on inside every box. */
const BOX_POSTGRES_PORT = 5432
const BOX_REDIS_PORT = 6379

/** Health checks: often at first (most servers are up within a second), then every 200 ms. */
export const HEALTH_SCHEDULE = Schedule.concat(Schedule.spaced("50 millis").pipe(Schedule.upTo({ duration: "2 seconds" })), Schedule.spaced("200 millis"))

/** Restarts of a main process that exited after its revision deployed: 0.5 s, doubling, at most 30 s. */
export const RESTART_SCHEDULE = Schedule.exponential("500 millis").pipe(
  Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.seconds(30))))
)

const messageOf = (error: unknown) => String((error as Error)?.message ?? error).split("\n")[0]!.slice(0, 500)

/** A rollout failure, with the message for `status_message` and the state it ends in (default DEPLOY_FAILED). */
class RolloutFailed extends Data.TaggedError("RolloutFailed")<{ readonly message: string; readonly status?: "BUILD_FAILED" | undefined }> {}

const failed = (message: string) => new RolloutFailed({ message: messageOf(message) })

/** A build that failed: BUILD_FAILED, with the pipeline's message (the step and its last lines). */
const buildFailed = (error: BuildFailed) => new RolloutFailed({ message: error.message.slice(0, 1000), status: "BUILD_FAILED" })

/** The URI as a box sees it: the same credentials at 127.0.0.1:<port> on its own loopback. */
const inBox = (uri: string, port: number): { readonly uri: string; readonly host: string; readonly port: number } => {
  const url = new URL(uri)
  const host = url.hostname.replace(/^\[|\]$/g, "")
  const hostPort = Number(url.port || (url.protocol.startsWith("redis") ? 6379 : 5432))
  url.hostname = "127.0.0.1"
  url.port = String(port)
  return { uri: url.toString(), host, port: hostPort }
}

const describeExit = (exit: ExitStatus) => exit.signal ?? `exit code ${exit.code}`

/**
 * A replica's box id: its revision, its index and a suffix of its own run, so a revision started
 * again (a redeploy) never shares an id with the boxes of its previous run, which may still be
 * draining. Short: it names the box's state directory and cgroup.
 */
export const replicaBoxId = (revisionId: string, index: number, run: string = randomBytes(3).toString("hex")): string =>
  `${replicaBoxPrefix(revisionId)}${index}-${run}`

/** What every replica box id of a revision starts with. */
export const replicaBoxPrefix = (revisionId: string): string => `d-${revisionId.replace(/-/g, "").slice(0, 16)}-`

/** Where a revision's image comes from: a pull of `image_uri`, or a build of its source. */
type ImageSource =
  | { readonly _tag: "Pull"; readonly reference: string; readonly options?: Pick<PullOptions, "auth" | "insecure"> }
  | { readonly _tag: "Build"; readonly input: BuildInput }

/** One run of a revision: a rollout, or a DEPLOYED revision brought back (`serve`). */
interface Run {
  readonly work: RevisionWork
  /** The state it is in (as last reported and applied). */
  status: RevisionStatus
  /** Its fiber (set right after it is forked). */
  fiber: Fiber.Fiber<void> | undefined
  /** The replicas the proxy reaches once it serves. */
  targets: ReadonlyArray<ProxyTarget>
  /** Healthy and switched to: its crashes are restarted, not failures. */
  live: boolean
  /** Its scope is closing: it serves nothing any more. */
  closing: boolean
  /** Completed by a teardown: its release stops at once, without (more) draining. */
  readonly cut: Deferred.Deferred<void>
  /** Completed once it no longer holds its deployment's rollouts back: it serves, or it ended. */
  readonly settled: Deferred.Deferred<void>
  /** Rollouts of its deployment under way when it was handed over: it builds after them (pushes queue). */
  readonly behind: ReadonlyArray<Run>
  /** The image its replicas run, once known. */
  image: PulledImage | undefined
  /** Completed when the URL switches to it; failed with why when it ends first (`awaitServing`). */
  readonly switched: Deferred.Deferred<void, ServeError>
}

/** A started replica: its box, the forward the proxy and health checks use, its main process's first exit. */
interface Replica {
  readonly name: string
  readonly box: RunningBox
  readonly forward: Forward
  /** Completed when the main process exits while the revision is not live yet. */
  readonly exitedEarly: Deferred.Deferred<ExitStatus>
}

/** The replica as the proxy reaches it: through its bridge's unix socket (health checks use the host port). */
const targetOf = (forward: Forward): ProxyTarget => ({ host: forward.host, port: forward.port, socketPath: forward.socketPath })

type ContainerEnv = { readonly env?: ReadonlyArray<{ readonly name: string; readonly value?: string | null | undefined }> | null | undefined }
const containerEnv = (c: ContainerEnv) => {
  const out: Record<string, string> = {}
  for (const e of c.env ?? []) if (e.value != null) out[e.name] = e.value
  return out
}

const argvOf = (image: PulledImage, command?: ReadonlyArray<string> | null, args?: ReadonlyArray<string> | null): Array<string> => [
  ...(command ?? image.config.entrypoint),
  ...(args ?? (command ? [] : image.config.cmd))
]

export const makeLocalDeploymentDriver = (options: LocalDeploymentOptions) =>
  Effect.gen(function* () {
    const boxes = yield* BoxRunner
    const images = yield* ImageStore
    const egress = yield* Egress
    const { root } = yield* RuntimeRoot
    const databases = yield* DeploymentDatabases
    const logs = yield* LogStore
    const proxy = yield* DeploymentProxy
    const registry = yield* Registry
    const channel = yield* DeploymentObservations
    const { log, publicUrl, config } = yield* ServerEnv
    const pipeline = yield* BuildPipeline
    const integrations = yield* IntegrationStore
    const secretBox = makeSecretBox(config.secretsKey, config.previousSecretsKeys)

    /** Every revision in progress or serving (or draining), by revision id. */
    const revisions = yield* FiberMap.make<string>()
    /** Interruptions of replaced revisions under way (each drains before it stops). */
    const retiring = yield* FiberSet.make()
    /** The run of each revision in `revisions`. */
    const runs = new Map<string, Run>()
    /** The run each deployment's URL sends new requests to. */
    const serving = new Map<string, Run>()
    /** Rollouts not settled yet (neither serving nor ended), in the order they were handed over. */
    const rollouts = new Set<Run>()
    const volumesRoot = join(root, "deployment-volumes")

    const append = (work: RevisionWork, kind: LogKind, message: string, level?: "INFO" | "WARNING" | "ERROR" | "CRITICAL", replica?: string) =>
      logs
        .append(work.deploymentId, work.revisionId, kind, { message, ...(level ? { level } : {}), ...(replica ? { replica } : {}) })
        .pipe(Effect.catch((error) => Effect.sync(() => log.warn("deployment log append failed", { error: error.message }))))

    /** The last lines a replica printed, for a failure message. */
    const lastLines = (work: RevisionWork, replica: string, n = 5) =>
      logs.read(work.deploymentId, { kind: "deploy", revisionId: work.revisionId, limit: 200, order: "desc" }).pipe(
        Effect.map((read) =>
          read.logs
            .filter((entry) => entry.replica === replica && entry.stream !== "system")
            .slice(0, n)
            .reverse()
            .map((entry) => entry.message)
            .join(" | ")
        ),
        Effect.orElseSucceed(() => "")
      )

    /** Its stdout and stderr into the deploy log, until they end (or the scope closes). */
    const pipeLogs = (work: RevisionWork, p: BoxProcess, label: string) =>
      Effect.forkScoped(
        Effect.all(
          [
            logs.pipe(p.stdout, work.deploymentId, work.revisionId, "deploy", { stream: "stdout", replica: label }),
            logs.pipe(p.stderr, work.deploymentId, work.revisionId, "deploy", { stream: "stderr", replica: label })
          ],
          { concurrency: 2, discard: true }
        ).pipe(Effect.ignore)
      )

    // ---- the image source --------------------------------------------------------------------

    /** The read token of the deployment's integration, opened for one checkout (never logged). */
    const readTokenOf = (work: RevisionWork) =>
      Effect.gen(function* () {
        const integrationId = work.sourceConfig.integration_id
        if (!integrationId) return undefined
        const sealed = yield* integrations.readToken(work.tenantId, integrationId)
        return sealed === undefined ? undefined : Redacted.make(secretBox.open(sealed))
      }).pipe(
        Effect.catch((error) => Effect.andThen(append(work, "build", `the integration's read token could not be read (${error.message}): cloning without it`, "WARNING"), Effect.succeed(undefined))),
        Effect.catchDefect(() => Effect.andThen(append(work, "build", "the integration's read token does not open with the secrets key: cloning without it", "WARNING"), Effect.succeed(undefined)))
      )

    /**
     * Where a revision's image comes from (its image source): `external_container` pulls
     * `image_uri`; `internal_docker` pulls `image_uri` from the server's registry with the
     * server's pull-only credentials; `gitrepo` builds one commit of `repo_url` (`repo_commit_sha`
     * when pinned, else the tip of `repo_ref`) with the integration's read token;
     * `internal_source` builds the uploaded tarball `source_tarball_path`.
     */
    const imageSourceOf = (work: RevisionWork): Effect.Effect<ImageSource, RolloutFailed> =>
      Effect.gen(function* () {
        if (work.source === "internal_source") {
          // An uploaded tarball (`langgraph deploy --remote`), unpacked by the pipeline with `SourceUploads.extract`.
          const input: BuildInput = {
            tenantId: work.tenantId,
            deploymentId: work.deploymentId,
            revisionId: work.revisionId,
            source: { _tag: "Tarball", tenantId: work.tenantId, deploymentId: work.deploymentId, objectPath: work.sourceRevisionConfig.source_tarball_path ?? "" },
            configPath: work.sourceRevisionConfig.graph_config_path,
            installCommand: work.sourceConfig.install_command,
            buildCommand: work.sourceConfig.build_command
          }
          return { _tag: "Build", input } as const
        }
        if (work.source === "internal_docker") {
          // What `langgraph deploy` pushed to the server's registry, pulled with the server's own pull-only credentials.
          const auth = yield* Effect.mapError(registry.pullCredentials(work.tenantId, work.deploymentId), (error) => failed(error.message))
          return { _tag: "Pull", reference: work.sourceRevisionConfig.image_uri ?? "", options: { auth, insecure: registry.insecure } } as const
        }
        if (work.source === "gitrepo") {
          const input: BuildInput = {
            tenantId: work.tenantId,
            deploymentId: work.deploymentId,
            revisionId: work.revisionId,
            source: {
              _tag: "Git",
              repoUrl: work.sourceConfig.repo_url ?? "",
              ref: work.sourceRevisionConfig.repo_ref,
              commitSha: work.sourceRevisionConfig.repo_commit_sha,
              token: yield* readTokenOf(work)
            },
            configPath: work.sourceRevisionConfig.graph_config_path,
            installCommand: work.sourceConfig.install_command,
            buildCommand: work.sourceConfig.build_command
          }
          return { _tag: "Build", input } as const
        }
        return { _tag: "Pull", reference: work.sourceRevisionConfig.image_uri ?? "" } as const
      })

    /** The build log's lines from the pipeline. */
    const buildLog = (work: RevisionWork) => (line: BuildLogLine) =>
      logs
        .append(work.deploymentId, work.revisionId, "build", { message: line.message, ...(line.level ? { level: line.level } : {}), ...(line.output ? { stream: "stdout" as const } : {}) })
        .pipe(Effect.catch((error) => Effect.sync(() => log.warn("deployment log append failed", { error: error.message }))))

    // ---- boxes ---------------------------------------------------------------------------------

    /**
     * A box in the current scope, its disk freed after it stopped. Its id is new (each run of a
     * revision has its own suffix; what a previous process left is removed at start).
     */
    const startBox = (spec: BoxSpec) =>
      Effect.gen(function* () {
        // Registered first, so it runs after the box's own release (which keeps its files).
        yield* Effect.addFinalizer(() => Effect.ignore(boxes.destroy(spec.id)))
        return yield* Effect.mapError(boxes.start(spec), (error) => failed(error.message))
      })

    const boxSpecOf = (id: string, image: PulledImage, spec: ResourceSpec, volumes: ReadonlyArray<BoxVolume>, hostname: string): BoxSpec => ({
      id,
      rootfs: image.rootfs,
      env: imageEnvironment(image.config.env),
      workingDir: image.config.workingDir || "/",
      hostname,
      storageBytes: STORAGE_BYTES,
      resources: {
        memoryBytes: (spec.memory_limit_mb ?? DEFAULT_MEMORY_LIMIT_MB) * MiB,
        cpuMillis: Math.round((spec.cpu_limit ?? DEFAULT_CPU_LIMIT) * 1000),
        pids: PIDS
      },
      volumes,
      // SLIPWAY_DEPLOYMENT_ISOLATION (default bwrap: a deployment runs its owner's own code).
      isolation: boxes.isolationOf.deployments.isolation
    })

    /** The replica's emptyDir directories, made empty in its scope and removed with it. */
    const emptyDirsOf = (spec: ResourceSpec, replicaId: string) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          const dirs = new Map<string, string>()
          for (const volume of spec.volumes ?? []) {
            if (volume.emptyDir == null) continue
            const dir = join(volumesRoot, replicaId, volume.name)
            rmSync(dir, { recursive: true, force: true })
            mkdirSync(dir, { recursive: true })
            dirs.set(volume.name, dir)
          }
          return dirs
        }),
        () => Effect.sync(() => rmSync(join(volumesRoot, replicaId), { recursive: true, force: true }))
      )

    const volumesOf = (dirs: ReadonlyMap<string, string>, mounts: ReadonlyArray<PodVolumeMount> | null | undefined): Array<BoxVolume> =>
      (mounts ?? []).flatMap((mount) => {
        const hostPath = dirs.get(mount.name)
        return hostPath === undefined ? [] : [{ hostPath, mountPath: mount.mountPath, readOnly: mount.readOnly === true }]
      })

    // ---- one replica ---------------------------------------------------------------------------

    interface ReplicaPlan {
      readonly run: Run
      readonly id: string
      readonly name: string
      readonly image: PulledImage
      readonly spec: ResourceSpec
      readonly env: Record<string, string>
      readonly dbs: ProvisionedDatabases
    }

    /**
     * Starts a replica in the current scope: its init containers (to completion), its box, its
     * sidecars and its main process, which is supervised from then on (see `superviseMain`).
     */
    const startReplica = Effect.fnUntraced(function* (plan: ReplicaPlan) {
      const { run, id, name, image, spec, env, dbs } = plan
      const { work } = run
      const hostname = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(work.deploymentName) ? work.deploymentName : "replica"
      const pg = inBox(dbs.databaseUri, BOX_POSTGRES_PORT)
      const redis = inBox(dbs.redisUri, BOX_REDIS_PORT)
      const withEgress = (box: RunningBox) =>
        Effect.mapError(
          egress.exposeToBox(
            box,
            [
              { boxPort: BOX_POSTGRES_PORT, host: pg.host, port: pg.port },
              { boxPort: BOX_REDIS_PORT, host: redis.host, port: redis.port }
            ]
          ),
          (error) => failed(error.message)
        )
      const imageOf = (reference: string) =>
        reference === work.sourceRevisionConfig.image_uri ? Effect.succeed(image) : Effect.mapError(images.pull(reference), (error) => failed(error.message))
      const dirs = yield* emptyDirsOf(spec, id)

      // Init containers: in order, each to completion, each box stopped once it is done.
      for (const [index, container] of (spec.init_containers ?? []).entries()) {
        const label = `${name}/${container.name}`
        yield* append(work, "deploy", `init container ${container.name}: starting (${container.image})`, "INFO", label)
        const initImage = yield* imageOf(container.image)
        const argv = argvOf(initImage, container.command, container.args)
        if (argv.length === 0) return yield* failed(`init container ${container.name}: no command and its image has no entrypoint or cmd`)
        const exit = yield* Effect.scoped(
          Effect.gen(function* () {
            const box = yield* startBox(boxSpecOf(`${id}-i${index}`, initImage, spec, volumesOf(dirs, container.volumeMounts), hostname))
            yield* withEgress(box)
            const p = yield* Effect.mapError(box.exec(argv, { env: { ...env, ...containerEnv(container) }, ...(container.workingDir ? { cwd: container.workingDir } : {}) }), (e) => failed(e.message))
            const pipes = yield* pipeLogs(work, p, label)
            const exit = yield* p.exited
            // A failure quotes its last lines: they are in the log first.
            if (exit.code !== 0) yield* Effect.timeoutOption(Fiber.await(pipes), 500)
            return exit
          })
        )
        if (exit.code !== 0) {
          const tail = yield* lastLines(work, label)
          return yield* failed(`init container ${container.name} of replica ${name} failed (${describeExit(exit)})${tail ? `: ${tail}` : ""}`)
        }
        yield* append(work, "deploy", `init container ${container.name}: completed`, "INFO", label)
      }

      // Sidecars: alongside the main process, each in a box of its own image.
      for (const [index, container] of (spec.sidecars ?? []).entries()) {
        const label = `${name}/${container.name}`
        const sideImage = yield* imageOf(container.image)
        const argv = argvOf(sideImage, container.command, container.args)
        if (argv.length === 0) return yield* failed(`sidecar ${container.name}: no command and its image has no entrypoint or cmd`)
        const box = yield* startBox(boxSpecOf(`${id}-s${index}`, sideImage, spec, volumesOf(dirs, container.volumeMounts), hostname))
        yield* withEgress(box)
        const p = yield* Effect.mapError(box.exec(argv, { env: { ...env, ...containerEnv(container) }, ...(container.workingDir ? { cwd: container.workingDir } : {}) }), (e) => failed(e.message))
        yield* pipeLogs(work, p, label)
        yield* append(work, "deploy", `sidecar ${container.name}: started (${container.image})`, "INFO", label)
      }

      const argv = argvOf(image)
      if (argv.length === 0) return yield* failed("the image has no entrypoint or cmd to run")
      const box = yield* startBox(boxSpecOf(id, image, spec, volumesOf(dirs, spec.volume_mounts), hostname))
      // The database bridge and the port forward start side by side (each is a process).
      const [, forward] = yield* Effect.all([withEgress(box), Effect.mapError(box.forward(options.port), (e) => failed(e.message))], { concurrency: 2 })
      const replica: Replica = { name, box, forward, exitedEarly: yield* Deferred.make<ExitStatus>() }
      yield* Effect.forkScoped(superviseMain(run, replica, argv, env))
      yield* append(work, "deploy", `replica ${name}: started ${JSON.stringify(argv)}`, "INFO", name)
      return replica
    })

    /**
     * The main process of a replica: one run in a scope of its own (the process is killed when it
     * closes). An exit before the revision is live completes `exitedEarly` (the rollout fails);
     * after, the process is started again on `RESTART_SCHEDULE` while its box runs.
     */
    const superviseMain = (run: Run, replica: Replica, argv: ReadonlyArray<string>, env: Record<string, string>) => {
      const { work } = run
      const once = Effect.scoped(
        Effect.gen(function* () {
          const p = yield* replica.box.exec(argv, { env })
          const pipes = yield* pipeLogs(work, p, replica.name)
          const exit = yield* p.exited
          if (!run.live) {
            yield* Effect.timeoutOption(Fiber.await(pipes), 500)
            yield* Deferred.succeed(replica.exitedEarly, exit)
          }
          return exit
        })
      ).pipe(
        Effect.catch((error) =>
          Effect.as(append(work, "deploy", `replica ${replica.name} could not be started: ${error.message}`, "ERROR", replica.name), {
            code: null,
            signal: null
          } satisfies ExitStatus)
        )
      )
      // Not live yet: the first exit ends the replica (the rollout fails); live: restarts while its box runs.
      const restarts = RESTART_SCHEDULE.pipe(
        Schedule.setInputType<ExitStatus>(),
        Schedule.while(() => run.live && !run.closing && replica.box.isRunning()),
        Schedule.tap(({ input: exit, attempt, duration }) =>
          append(
            work,
            "deploy",
            `replica ${replica.name} exited (${describeExit(exit)})${attempt >= 3 ? `: crash loop, ${attempt} restarts` : ""}; restarting in ${Duration.toMillis(duration)} ms`,
            attempt >= 3 ? "CRITICAL" : "ERROR",
            replica.name
          )
        )
      )
      return Effect.repeat(once, restarts)
    }

    /** Waits until the replica answers its health check; fails on an early exit or the deadline. */
    const waitHealthy = (run: Run, replica: Replica) => {
      const { work } = run
      let lastDetail = ""
      const check = Effect.gen(function* () {
        const result: HealthResult = !(yield* replica.box.listening(options.port))
          ? { healthy: false, via: "tcp", ms: 0, detail: `nothing listens on port ${options.port} yet` }
          : yield* checkHealth(targetOf(replica.forward), { mode: options.healthMode, path: options.healthPath, attemptTimeoutMs: 2000 })
        if (result.detail !== lastDetail) {
          lastDetail = result.detail
          yield* append(work, "deploy", `health ${replica.name}: ${result.detail}`, result.healthy ? "INFO" : "WARNING", replica.name)
        }
        return result
      })
      const healthy = pollHealth(`replica ${replica.name}`, check, { timeoutMs: options.healthTimeoutMs, schedule: HEALTH_SCHEDULE }).pipe(
        Effect.mapError((error) =>
          error._tag === "HealthTimeoutError"
            ? failed(`replica ${replica.name} not healthy after ${Math.round(options.healthTimeoutMs / 1000)} s: ${error.last?.detail ?? lastDetail}`)
            : failed(error.message)
        )
      )
      const exited = Effect.flatMap(Deferred.await(replica.exitedEarly), (exit) =>
        Effect.flatMap(lastLines(work, replica.name), (tail) => Effect.fail(failed(`replica ${replica.name} exited (${describeExit(exit)}) before it was healthy${tail ? `: ${tail}` : ""}`)))
      )
      return Effect.raceFirst(healthy, exited)
    }

    // ---- a build -------------------------------------------------------------------------------

    /**
     * The image of a revision built from source. A rollout that has not built yet waits in QUEUED
     * for the rollouts of its deployment handed over before it (a push queues behind a build
     * under way), then goes AWAITING_BUILD (waiting for a build slot) → BUILDING (the build's turn
     * came) → AWAITING_DEPLOY with the commit it built; a failure is BUILD_FAILED with the
     * pipeline's message. A revision past its build (a restart in DEPLOYING, or a DEPLOYED one
     * served again) takes the image its build made (the image store, else the build cache), or is
     * built again without a state change.
     */
    const buildImage = Effect.fnUntraced(function* (
      run: Run,
      input: BuildInput,
      mode: "rollout" | "serve",
      advance: (to: RevisionStatus, message: string | null, commitSha?: string) => Effect.Effect<void>,
      progress: (message: string) => Effect.Effect<void>
    ) {
      const { work } = run
      const hooks = (started: Effect.Effect<void>) => ({ log: buildLog(work), started })
      if (mode === "rollout" && (run.status === "QUEUED" || run.status === "AWAITING_BUILD" || run.status === "BUILDING")) {
        if (run.status === "QUEUED") {
          const ahead = run.behind.filter((other) => !Deferred.isDoneUnsafe(other.settled))
          if (ahead.length > 0) {
            const names = ahead.map((other) => other.work.revisionId.slice(0, 8)).join(", ")
            yield* progress(`Queued behind revision ${names}`)
            yield* append(work, "build", `queued behind the rollout of revision ${names}`)
            yield* Effect.forEach(ahead, (other) => Deferred.await(other.settled), { discard: true })
          }
          yield* advance("AWAITING_BUILD", "Waiting for a build slot")
        }
        const resumed = run.status === "BUILDING"
        const outcome = yield* pipeline
          .build(input, hooks(resumed ? progress("Building (again: the server restarted during the build)") : advance("BUILDING", "Building")))
          .pipe(Effect.mapError(buildFailed))
        yield* advance("AWAITING_DEPLOY", `Built in ${(outcome.durationMs / 1000).toFixed(1)} s; provisioning the database and cache`, outcome.commitSha)
        yield* pruneImages(work.deploymentId, outcome.image)
        return outcome.image
      }
      const kept = yield* pipeline.built(input, hooks(Effect.void))
      if (kept !== undefined) return kept
      yield* append(work, "build", "the image built for this revision is no longer kept: building it again")
      yield* progress("Building the revision's image again")
      const outcome = yield* pipeline.build(input, hooks(Effect.void)).pipe(Effect.mapError(buildFailed))
      yield* pruneImages(work.deploymentId, outcome.image)
      return outcome.image
    })

    /** After a build: the deployment's built images its cache no longer keeps leave the image store, unless a run uses them. */
    const pruneImages = (deploymentId: string, built: PulledImage) =>
      Effect.suspend(() => {
        const inUse = new Set([built.digest])
        for (const run of runs.values()) if (run.work.deploymentId === deploymentId && run.image) inUse.add(run.image.digest)
        return pipeline.prune(deploymentId, inUse)
      })

    // ---- a revision ----------------------------------------------------------------------------

    /**
     * Rolls `run.work` out (`mode: "rollout"`, reporting every state) or brings a DEPLOYED
     * revision back (`"serve"`: after a restart or a redeploy, no state is reported). Either way,
     * once its replicas are healthy the proxy switches to them and the previous run is retired.
     * Runs in the scope of the revision's fiber.
     */
    const rollout = Effect.fnUntraced(function* (run: Run, mode: "rollout" | "serve") {
      const { work } = run
      const ids = { tenantId: work.tenantId, deploymentId: work.deploymentId, revisionId: work.revisionId }
      /** A state change; one the controller did not apply (superseded meanwhile) interrupts the fiber. */
      const advance = (to: RevisionStatus, message: string | null, commitSha?: string) =>
        mode === "serve"
          ? Effect.void
          : Effect.flatMap(channel.report([{ ...ids, from: run.status, to, message, ...(commitSha ? { commitSha } : {}) }]), ([applied]) => {
              if (!applied) return Effect.interrupt
              run.status = to
              return Effect.void
            })
      /** Progress within a state: the status message (or, serving again, the deploy log). */
      const progress = (message: string) => (mode === "serve" ? append(work, "deploy", message) : advance(run.status, message))

      const scope = yield* Scope.Scope
      const spec = effectiveResourceSpec(work.sourceConfig.resource_spec)
      const route = { name: work.deploymentName, url: deploymentUrl(publicUrl, work.deploymentName, work.sourceConfig.custom_url) }
      yield* Effect.mapError(proxy.setRoute(work.deploymentId, route), (error) => failed(error.message))
      if (run.status === "CREATING") yield* advance("QUEUED", "Queued")
      const source = yield* imageSourceOf(work)
      const built = source._tag === "Build" ? yield* buildImage(run, source.input, mode, advance, progress) : undefined
      if (run.status === "QUEUED") yield* advance("AWAITING_DEPLOY", "Provisioning the database and cache")
      // The database and cache are provisioned while the image is pulled.
      const provisioning = yield* Effect.forkScoped(
        databases.provision(work.deploymentId, { redisMemoryMb: spec.redis_memory_mb ?? null }).pipe(
          Effect.tap(() => channel.tell([{ _tag: "Database", tenantId: work.tenantId, deploymentId: work.deploymentId, ready: true } satisfies DatabaseObservation])),
          Effect.mapError((error) => failed(`database and cache: ${error.message}`))
        )
      )
      const deploying = (message: string) => (run.status === "AWAITING_DEPLOY" ? advance("DEPLOYING", message) : progress(message))
      let image: PulledImage
      if (built !== undefined) {
        image = built
        run.image = image
        yield* deploying(`starting image ${image.reference}`)
      } else {
        const reference = source._tag === "Pull" ? source.reference : ""
        yield* deploying(`pulling image ${reference}`)
        yield* append(work, "build", `pulling image ${reference}`)
        image = yield* images
          .pull(reference, {
            ...(source._tag === "Pull" ? source.options : {}),
            onProgress: (message) =>
              Effect.andThen(
                append(work, "build", message),
                mode === "rollout" ? channel.tell([{ ...ids, from: run.status, to: run.status, message } satisfies Observation]) : Effect.void
              )
          })
          .pipe(
            Effect.tapError((error) => append(work, "build", `pull failed: ${error.message}`, "ERROR")),
            Effect.mapError((error) => failed(error.message))
          )
        yield* append(work, "build", `image ${image.reference} (${image.digest}) ready`)
        run.image = image
      }
      const dbs = yield* Fiber.join(provisioning)
      const secrets = yield* Effect.try({
        try: () => Object.fromEntries(work.secrets().map(({ name, value }) => [name, value])),
        catch: (error) => failed(`secrets could not be opened: ${messageOf(error)}`)
      })
      const env: Record<string, string> = {
        DATABASE_URI: inBox(dbs.databaseUri, BOX_POSTGRES_PORT).uri,
        POSTGRES_URI: inBox(dbs.databaseUri, BOX_POSTGRES_PORT).uri,
        REDIS_URI: inBox(dbs.redisUri, BOX_REDIS_PORT).uri,
        LANGSMITH_HOST_PROJECT_ID: work.deploymentId,
        LANGSMITH_HOST_PROJECT_NAME: work.deploymentName,
        LANGSMITH_HOST_REVISION_ID: work.revisionId,
        LANGGRAPH_DEPLOYMENT_URL: route.url,
        ...secrets,
        PORT: String(options.port)
      }
      const count = Math.max(1, spec.min_scale ?? 1)
      yield* progress(`starting ${count} replica${count === 1 ? "" : "s"}`)
      // Each replica in a scope of its own; they stop side by side when the revision's closes.
      const replicasScope = yield* Scope.fork(scope, "parallel")
      const suffix = randomBytes(3).toString("hex")
      const replicas = yield* Effect.forEach(
        Array.from({ length: count }, (_, index) => index),
        (index) =>
          Effect.flatMap(Scope.fork(replicasScope, "sequential"), (replicaScope) =>
            Scope.provide(replicaScope)(
              startReplica({ run, id: replicaBoxId(work.revisionId, index, suffix), name: `${work.revisionId.slice(0, 8)}-${index}`, image, spec, env, dbs })
            )
          ),
        { concurrency: "unbounded" }
      )
      yield* progress("waiting for health")
      yield* Effect.forEach(replicas, (replica) => waitHealthy(run, replica), { concurrency: "unbounded", discard: true })

      // Released first when the fiber ends: a run switched away from drains before its replicas stop.
      yield* Effect.addFinalizer(() =>
        Effect.gen(function* () {
          run.closing = true
          if (serving.get(work.deploymentId) === run) {
            serving.delete(work.deploymentId)
            return
          }
          if (!run.live || Deferred.isDoneUnsafe(run.cut)) return
          const drained = yield* Effect.raceFirst(proxy.drain(run.targets, options.drainMs), Effect.as(Deferred.await(run.cut), true))
          yield* append(work, "deploy", drained ? "replaced: drained, stopping" : `replaced: still busy after ${options.drainMs} ms, stopping`)
        })
      )

      // The switch: new requests go to the new replicas from here on.
      const previous = serving.get(work.deploymentId)
      run.targets = replicas.map((replica) => targetOf(replica.forward))
      yield* proxy.setTargets(work.deploymentId, run.targets)
      serving.set(work.deploymentId, run)
      run.live = true
      yield* settle(run)
      const [applied] = mode === "serve" ? [true] : yield* channel.report([{ ...ids, from: run.status, to: "DEPLOYED", message: `Deployed: ${count} replica${count === 1 ? "" : "s"} healthy` }])
      if (!applied) {
        // Superseded at the last moment: the previous revision serves again.
        run.live = false
        if (previous && !previous.closing) {
          yield* proxy.setTargets(work.deploymentId, previous.targets)
          serving.set(work.deploymentId, previous)
        } else {
          yield* proxy.setTargets(work.deploymentId, [])
          serving.delete(work.deploymentId)
        }
        return yield* Effect.interrupt
      }
      yield* Deferred.succeed(run.switched, undefined)
      yield* append(work, "deploy", `serving: ${count} replica${count === 1 ? "" : "s"} at ${route.url}`)
      // The previous run drains and stops in its own fiber's release.
      if (previous && previous !== run && previous.fiber) yield* FiberSet.run(retiring, Fiber.interrupt(previous.fiber))
      // Serving until interrupted (replaced, torn down, stopped with the server).
      return yield* Effect.never
    })

    /** The fiber of one run: its scope holds everything it started; a failure is reported once that is undone. */
    const runRevision = (run: Run, mode: "rollout" | "serve") => {
      const { work } = run
      return Effect.andThen(
        // Forked while the caller runs on: a `stop` right after `apply` finds nothing reported yet.
        Effect.yieldNow,
        Effect.scoped(rollout(run, mode))
      ).pipe(
        Effect.catchTag("RolloutFailed", ({ message, status }) =>
          Effect.gen(function* () {
            yield* Deferred.fail(run.switched, new ServeError({ message }))
            yield* append(work, status === "BUILD_FAILED" ? "build" : "deploy", message, "ERROR")
            log.warn("deployment revision failed", { deployment_id: work.deploymentId, revision_id: work.revisionId, error: message })
            if (mode === "rollout") {
              yield* channel.tell([{ tenantId: work.tenantId, deploymentId: work.deploymentId, revisionId: work.revisionId, from: run.status, to: status ?? "DEPLOY_FAILED", message }])
            }
          })
        ),
        // Superseded (by the controller's answer, or `stop`): what it started is undone.
        Effect.onInterrupt(() => (run.live ? Effect.void : append(work, "deploy", "stopped: superseded"))),
        Effect.catchDefect((defect) => Effect.sync(() => log.error("deployment revision crashed", { revision_id: work.revisionId, error: messageOf(defect) }))),
        Effect.ensuring(
          Effect.all(
            [
              // Ended before it served (stopped, superseded, torn down): whoever waits is told.
              Deferred.fail(run.switched, new ServeError({ message: "it was stopped before it served (superseded, deleted, or the server stopped)" })),
              settle(run),
              Effect.sync(() => {
                if (runs.get(work.revisionId) === run) runs.delete(work.revisionId)
              })
            ],
            { discard: true }
          )
        )
      )
    }

    /** The run no longer holds its deployment's later rollouts back (it serves, or it ended). */
    const settle = (run: Run) =>
      Effect.andThen(
        Effect.sync(() => rollouts.delete(run)),
        Deferred.succeed(run.settled, undefined)
      )

    const launch = (work: RevisionWork, mode: "rollout" | "serve") =>
      Effect.gen(function* () {
        // A rollout goes after the rollouts of its deployment under way (a push queued behind a build).
        const behind = mode === "serve" ? [] : [...rollouts].filter((other) => other.work.deploymentId === work.deploymentId && other.work.revisionId !== work.revisionId)
        const run: Run = {
          work,
          status: work.status,
          fiber: undefined,
          targets: [],
          live: false,
          closing: false,
          cut: yield* Deferred.make<void>(),
          switched: yield* Deferred.make<void, ServeError>(),
          settled: yield* Deferred.make<void>(),
          behind,
          image: undefined
        }
        if (mode === "rollout") rollouts.add(run)
        runs.set(work.revisionId, run)
        run.fiber = yield* FiberMap.run(revisions, work.revisionId, runRevision(run, mode))
      })

    return DeploymentDriver.of({
      name: "local",
      apply: (work) => launch(work, "rollout"),
      stop: (revisionId) =>
        Effect.suspend(() => {
          const run = runs.get(revisionId)
          // A revision that deployed is never superseded; only a newer one replaces it.
          if (run === undefined || (run.live && serving.get(run.work.deploymentId) === run)) return Effect.void
          return FiberMap.remove(revisions, revisionId)
        }),
      serve: (active, { restore }) =>
        Effect.gen(function* () {
          if (restore) {
            // Boxes of replicas a previous process left (running or not) are removed first: the
            // active revisions start again on fresh boxes, unfinished ones when resumed.
            // Only the deployments served here keep their Redis running (another replica may serve the rest).
            yield* databases
              .recover(new Set(active.map((work) => work.deploymentId)))
              .pipe(Effect.catch((error) => Effect.sync(() => log.error("deployment databases could not be recovered", { error: error.message }))))
            const stale = (yield* boxes.list).filter((spec) => spec.id.startsWith("d-"))
            yield* Effect.forEach(stale, (spec) => Effect.ignore(boxes.destroy(spec.id)), { concurrency: "unbounded", discard: true })
            rmSync(volumesRoot, { recursive: true, force: true })
            if (active.length > 0 || stale.length > 0) log.info("deployments restored", { active: active.length, stale_boxes: stale.length })
          }
          for (const work of active) {
            const current = serving.get(work.deploymentId)
            if (current && current.work.revisionId === work.revisionId && !current.closing) continue
            // Already on its way (a redeploy asked again while it starts): that run goes on.
            const started = runs.get(work.revisionId)
            if (started && !started.closing) continue
            yield* launch(work, "serve")
          }
        }),
      awaitServing: (work) =>
        Effect.suspend(() => {
          const current = serving.get(work.deploymentId)
          if (current && current.work.revisionId === work.revisionId && current.live && !current.closing) return Effect.void
          const run = runs.get(work.revisionId)
          return run && !run.closing ? Deferred.await(run.switched) : Effect.fail(new ServeError({ message: "nothing runs it on this server" }))
        }),
      release: (deploymentId) =>
        Effect.gen(function* () {
          const run = serving.get(deploymentId)
          if (run === undefined) return
          // Not serving any more: its release drains what is in flight (the proxy sends new
          // requests to the replica that serves the deployment now), then its replicas stop.
          serving.delete(deploymentId)
          yield* FiberSet.run(
            retiring,
            Effect.gen(function* () {
              if (run.fiber) yield* Fiber.interrupt(run.fiber)
              // Its Redis here too, unless a rollout of the deployment still runs here.
              if ([...runs.values()].every((other) => other.work.deploymentId !== deploymentId)) {
                yield* databases.detach(deploymentId).pipe(Effect.catch((error) => Effect.sync(() => log.warn("deployment cache not stopped", { deployment_id: deploymentId, error: error.message }))))
              }
            })
          )
          log.info("deployment released: another replica serves it", { deployment_id: deploymentId, revision_id: run.work.revisionId })
        }),
      teardown: (_tenantId, deploymentId) =>
        Effect.gen(function* () {
          yield* proxy.remove(deploymentId)
          serving.delete(deploymentId)
          const mine = [...runs.values()].filter((run) => run.work.deploymentId === deploymentId)
          // Nothing to drain for: the URL answers nothing any more.
          yield* Effect.forEach(mine, (run) => Deferred.succeed(run.cut, undefined), { discard: true })
          yield* Effect.forEach(mine, (run) => (run.fiber ? Fiber.interrupt(run.fiber) : Effect.void), { concurrency: "unbounded", discard: true })
          yield* databases.release(deploymentId).pipe(
            Effect.catch((error) => Effect.sync(() => log.error("deployment databases could not be released", { deployment_id: deploymentId, error: error.message })))
          )
          yield* Effect.ignore(logs.removeDeployment(deploymentId))
          yield* pipeline.forget(deploymentId)
        })
    })
  })

export const LocalDeploymentDriver = (options: LocalDeploymentOptions) => Layer.effect(DeploymentDriver, makeLocalDeploymentDriver(options))
