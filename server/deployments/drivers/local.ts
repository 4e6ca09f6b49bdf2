/**
 * The `local` deployment driver: an `external_container` revision runs on this machine.
 *
 * A rollout: CREATING → QUEUED → AWAITING_DEPLOY (the deployment's PostgreSQL database and
 * Redis are provisioned meanwhile: the deployment is AWAITING_DATABASE until they are, then
 * READY) → DEPLOYING ("pulling image …" with the image store's progress, "starting N replicas",
 * "waiting for health") → DEPLOYED once every replica answers its health check; then the
 * deployment URL's proxy switches to the new replicas in one assignment, and the replicas of the
 * revision that served before drain and stop (zero downtime). A pull error, a replica that exits
 * before it is healthy (with its last log lines) or a health timeout is DEPLOY_FAILED, and the
 * previous revision keeps serving. A revision superseded mid-rollout (`stop`) is stopped.
 *
 * A replica is a box (server/runtime/local/boxes.ts) on the image's root filesystem, with the
 * CPU and memory limits of the effective resource spec, its `emptyDir` volumes, the image's
 * entrypoint + cmd as main process (`exec`) with the deployment's secrets and the predefined
 * variables (`PORT`, `DATABASE_URI`, `REDIS_URI`, `LANGSMITH_HOST_*`) as environment; the
 * database and Redis are reachable on the box's own loopback (`egress.ts`), its port from the
 * host through `forward`. Init containers run to completion first, sidecars alongside (each in a
 * box of its own image, sharing the replica's emptyDir volumes). A replica that exits after the
 * revision deployed is restarted with a growing delay; the deploy log says so (a crash loop).
 *
 * `gitrepo` revisions are cloud-only in the spec: they walk the simulated driver's states.
 * At start (`serve` with `restore`) the active revision of every deployment is started again
 * (fresh boxes; replicas left running by a crashed server are removed first), without a new
 * revision. See docs/deployments-local.md.
 */
import { randomBytes } from "node:crypto"
import { mkdirSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { effectiveResourceSpec, type PodVolumeMount, type ResourceSpec, type RevisionStatus } from "../../../core/index.ts"
import { ServerEnv } from "../../module.ts"
import { type BoxProcess, type BoxVolume, type Egress, exposeToBox, type Forward, imageEnvironment, LocalHost, type PulledImage, type RunningBox } from "../../runtime/local/legacy.ts"
import { type DatabaseObservation, DeploymentDriver, type Observation, type ObservationSink, type RevisionWork } from "../Driver.ts"
import { type DeploymentDatabases, makeDeploymentDatabases, type ProvisionedDatabases } from "../local/databases.ts"
import { checkHealth, type HealthMode } from "../local/health.ts"
import type { LogKind } from "../local/logs.ts"
import { deploymentUrl, type ProxyTarget } from "../local/proxy.ts"
import { DeploymentServing } from "../local/services.ts"
import { makeSimulatedDriver } from "./simulated.ts"

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
  /** Where deployments get their databases (`SLIPWAY_DEPLOYMENT_POSTGRES_URL`); unset: Slipway runs its own. */
  readonly postgresUrl: string | undefined
  /** Simulated step time for gitrepo revisions. */
  readonly stepMs: number
}

const positive = (name: string, raw: string | undefined, fallback: number): number => {
  if (raw === undefined || raw === "") return fallback
  const n = Number(raw)
  if (!/^\d+$/.test(raw.trim()) || n < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`)
  return n
}

export const localDeploymentOptionsFromEnv = (env: NodeJS.ProcessEnv, stepMs: number): LocalDeploymentOptions => {
  const mode = (env["SLIPWAY_DEPLOY_HEALTH_CHECK"] || "auto").toLowerCase()
  if (mode !== "auto" && mode !== "http" && mode !== "tcp") throw new Error(`SLIPWAY_DEPLOY_HEALTH_CHECK must be auto, http or tcp, got "${mode}"`)
  const path = env["SLIPWAY_DEPLOY_HEALTH_PATH"] || "/ok"
  if (!path.startsWith("/") || /[\s#]/.test(path)) throw new Error(`SLIPWAY_DEPLOY_HEALTH_PATH must be a path starting with "/", got "${path}"`)
  return {
    healthTimeoutMs: positive("SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS", env["SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS"], 300_000),
    healthMode: mode,
    healthPath: path,
    drainMs: positive("SLIPWAY_DEPLOY_DRAIN_MS", env["SLIPWAY_DEPLOY_DRAIN_MS"], 30_000),
    port: 8000,
    postgresUrl: env["SLIPWAY_DEPLOYMENT_POSTGRES_URL"] || undefined,
    stepMs
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

const messageOf = (error: unknown) => String((error as Error)?.message ?? error).split("\n")[0]!.slice(0, 500)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

class Superseded extends Error {
  constructor() {
    super("superseded")
  }
}
/** A rollout failure with the message for `status_message`. */
class RolloutFailed extends Error {}


/** Whether something listens on TCP `port` in the network namespace of process `pid`. */
const listening = (pid: number, port: number): boolean => {
  const hex = port.toString(16).toUpperCase().padStart(4, "0")
  for (const file of ["tcp", "tcp6"]) {
    let text: string
    try {
      text = readFileSync(`/proc/${pid}/net/${file}`, "utf8")
    } catch {
      continue
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/)
      if (cols.length > 3 && cols[3] === "0A" && cols[1]!.endsWith(`:${hex}`)) return true
    }
  }
  return false
}

/** The URI as a box sees it: the same credentials at 127.0.0.1:<port> on its own loopback. */
const inBox = (uri: string, port: number): { readonly uri: string; readonly host: string; readonly port: number } => {
  const url = new URL(uri)
  const host = url.hostname.replace(/^\[|\]$/g, "")
  const hostPort = Number(url.port || (url.protocol.startsWith("redis") ? 6379 : 5432))
  url.hostname = "127.0.0.1"
  url.port = String(port)
  return { uri: url.toString(), host, port: hostPort }
}

interface Replica {
  readonly id: string
  /** Label in logs: `<revision prefix>-<index>`. */
  readonly name: string
  readonly boxes: Array<RunningBox>
  readonly egress: Array<Egress>
  readonly dirs: Array<string>
  box?: RunningBox
  forward?: Forward
  main?: BoxProcess
  exit?: { readonly code: number | null; readonly signal: NodeJS.Signals | null }
  restarts: number
}

interface Run {
  readonly work: RevisionWork
  readonly abort: AbortController
  readonly replicas: Array<Replica>
  stopped: boolean
  /** Resolves when the rollout (or bring-back) has finished, whatever its outcome. */
  done: Promise<void>
}

/**
 * The box of replica `index` of a revision: short, because the box runner's unix sockets live
 * under its state directory and a socket path must fit in 108 bytes.
 */
/**
 * A replica's box id: its revision, its index and a suffix of its own run, so a revision started
 * again (a redeploy) never shares an id with the boxes of its previous run, which may still be
 * draining and whose late teardown would otherwise remove the new ones.
 */
export const replicaBoxId = (revisionId: string, index: number, run: string = randomBytes(3).toString("hex")): string =>
  `${replicaBoxPrefix(revisionId)}${index}-${run}`

/** What every replica box id of a revision starts with. */
export const replicaBoxPrefix = (revisionId: string): string => `d-${revisionId.replace(/-/g, "").slice(0, 16)}-`

/** The replica as the proxy reaches it: through its bridge's unix socket (health checks use the host port). */
const targetOf = (replica: Replica): ProxyTarget => ({ host: replica.forward!.host, port: replica.forward!.port, socketPath: replica.forward!.socketPath })

export const makeLocalDeploymentDriver = (options: LocalDeploymentOptions) =>
  Effect.gen(function* () {
    const host = yield* LocalHost
    const { logs, proxy } = yield* DeploymentServing
    const { log, publicUrl } = yield* ServerEnv
    const simulated = yield* makeSimulatedDriver({ stepMs: options.stepMs })
    const databases: DeploymentDatabases = makeDeploymentDatabases({
      dataDir: join(host.root, "deployment-data"),
      ...(options.postgresUrl ? { postgresUrl: options.postgresUrl } : {}),
      log: (message) => log.debug("deployment databases", { message })
    })
    yield* Effect.addFinalizer(() => Effect.promise(() => stopAll().then(() => databases.close())))

    let sink: ObservationSink = () => Effect.succeed([])
    const report = async (observation: Observation | DatabaseObservation): Promise<boolean> => {
      const [applied] = await Effect.runPromise(sink([observation]))
      return applied === true
    }

    const runs = new Map<string, Run>()
    /** The run the proxy sends each deployment's traffic to. */
    const serving = new Map<string, Run>()

    const append = (work: RevisionWork, kind: LogKind, message: string, level?: "INFO" | "WARNING" | "ERROR" | "CRITICAL", replica?: string) => {
      try {
        logs.append(work.deploymentId, work.revisionId, kind, { message, ...(level ? { level } : {}), ...(replica ? { replica } : {}) })
      } catch (error) {
        log.warn("deployment log append failed", { error: messageOf(error) })
      }
    }

    /** The last lines a replica printed, for a failure message. */
    const lastLines = (work: RevisionWork, replica: string, n = 5): string => {
      const read = logs.read(work.deploymentId, { kind: "deploy", revisionId: work.revisionId, limit: 200, order: "desc" })
      const lines = read.logs.filter((entry) => entry.replica === replica && entry.stream !== "system").slice(0, n).reverse()
      return lines.map((entry) => entry.message).join(" | ")
    }

    // ---- boxes -------------------------------------------------------------------------------

    const volumesOf = (spec: ResourceSpec, replica: Replica, mounts: ReadonlyArray<PodVolumeMount> | null | undefined): Array<BoxVolume> => {
      const emptyDirs = new Set((spec.volumes ?? []).filter((v) => v.emptyDir != null).map((v) => v.name))
      const out: Array<BoxVolume> = []
      for (const mount of mounts ?? []) {
        if (!emptyDirs.has(mount.name)) continue
        const dir = join(host.root, "deployment-volumes", replica.id, mount.name)
        if (!replica.dirs.includes(dir)) {
          rmSync(dir, { recursive: true, force: true })
          mkdirSync(dir, { recursive: true })
          replica.dirs.push(dir)
        }
        out.push({ hostPath: dir, mountPath: mount.mountPath, readOnly: mount.readOnly === true })
      }
      return out
    }

    const startBox = async (id: string, image: PulledImage, spec: ResourceSpec, volumes: Array<BoxVolume>, hostname: string): Promise<RunningBox> => {
      await host.boxes.destroy(id).catch(() => undefined)
      const cpuLimit = spec.cpu_limit ?? DEFAULT_CPU_LIMIT
      const box = await host.boxes.start({
        id,
        rootfs: image.rootfs,
        env: imageEnvironment(image.config.env),
        workingDir: image.config.workingDir || "/",
        hostname,
        storageBytes: STORAGE_BYTES,
        resources: { memoryBytes: (spec.memory_limit_mb ?? DEFAULT_MEMORY_LIMIT_MB) * MiB, cpuMillis: Math.round(cpuLimit * 1000), pids: PIDS },
        volumes
      })
      host.running.set(id, box)
      box.onExit(() => {
        if (host.running.get(id) === box) host.running.delete(id)
      })
      return box
    }

    const stopReplica = async (replica: Replica) => {
      replica.main?.kill()
      await Promise.allSettled(replica.egress.map((e) => e.close()))
      await replica.forward?.close().catch(() => undefined)
      await Promise.allSettled(
        replica.boxes.map(async (box) => {
          if (host.running.get(box.id) === box) host.running.delete(box.id)
          await box.destroy().catch((error) => log.warn("replica box destroy failed", { box: box.id, error: messageOf(error) }))
        })
      )
      for (const dir of replica.dirs) rmSync(dir, { recursive: true, force: true })
      rmSync(join(host.root, "deployment-volumes", replica.id), { recursive: true, force: true })
    }

    const stopRun = async (run: Run) => {
      run.stopped = true
      run.abort.abort(new Superseded())
      await Promise.allSettled(run.replicas.map(stopReplica))
      if (runs.get(run.work.revisionId) === run) runs.delete(run.work.revisionId)
    }

    const stopAll = async () => {
      const all = [...runs.values()]
      await Promise.allSettled(all.map(stopRun))
    }

    // ---- one replica ---------------------------------------------------------------------------

    const argvOf = (image: PulledImage, command?: ReadonlyArray<string> | null, args?: ReadonlyArray<string> | null): Array<string> => [
      ...(command ?? image.config.entrypoint),
      ...(args ?? (command ? [] : image.config.cmd))
    ]

    /** Starts a replica's init containers (to completion), box, sidecars and main process. */
    const startReplica = async (run: Run, replica: Replica, image: PulledImage, spec: ResourceSpec, env: Record<string, string>, dbs: ProvisionedDatabases) => {
      const { work } = run
      const hostname = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(work.deploymentName) ? work.deploymentName : "replica"
      const pg = inBox(dbs.databaseUri, BOX_POSTGRES_PORT)
      const redis = inBox(dbs.redisUri, BOX_REDIS_PORT)
      const withEgress = async (box: RunningBox) => {
        replica.egress.push(
          await exposeToBox(
            box,
            [
              { boxPort: BOX_POSTGRES_PORT, host: pg.host, port: pg.port },
              { boxPort: BOX_REDIS_PORT, host: redis.host, port: redis.port }
            ],
            join(host.root, "egress")
          )
        )
      }
      const check = () => {
        if (run.abort.signal.aborted) throw new Superseded()
      }
      const containerEnv = (c: { readonly env?: ReadonlyArray<{ readonly name: string; readonly value?: string | null | undefined }> | null | undefined }) => {
        const out: Record<string, string> = {}
        for (const e of c.env ?? []) if (e.value != null) out[e.name] = e.value
        return out
      }
      const pipeLogs = (p: BoxProcess, label: string) => {
        void logs.pipe(p.stdout, work.deploymentId, work.revisionId, "deploy", { stream: "stdout", replica: label })
        void logs.pipe(p.stderr, work.deploymentId, work.revisionId, "deploy", { stream: "stderr", replica: label })
      }

      // Init containers: in order, each to completion.
      for (const [index, container] of (spec.init_containers ?? []).entries()) {
        check()
        const label = `${replica.name}/${container.name}`
        append(work, "deploy", `init container ${container.name}: starting (${container.image})`, "INFO", label)
        const initImage = container.image === work.sourceRevisionConfig.image_uri ? image : await host.images.pull(container.image)
        const box = await startBox(`${replica.id}-i${index}`, initImage, spec, volumesOf(spec, replica, container.volumeMounts), hostname)
        replica.boxes.push(box)
        await withEgress(box)
        const argv = argvOf(initImage, container.command, container.args)
        if (argv.length === 0) throw new RolloutFailed(`init container ${container.name}: no command and its image has no entrypoint or cmd`)
        const p = box.exec(argv, { env: { ...env, ...containerEnv(container) }, ...(container.workingDir ? { cwd: container.workingDir } : {}) })
        pipeLogs(p, label)
        const onAbort = () => p.kill()
        run.abort.signal.addEventListener("abort", onAbort, { once: true })
        const exit = await p.exited
        run.abort.signal.removeEventListener("abort", onAbort)
        check()
        if (exit.code !== 0) {
          await sleep(50)
          const tail = lastLines(work, label)
          throw new RolloutFailed(`init container ${container.name} of replica ${replica.name} failed (${exit.signal ?? `exit code ${exit.code}`})${tail ? `: ${tail}` : ""}`)
        }
        append(work, "deploy", `init container ${container.name}: completed`, "INFO", label)
      }

      // Sidecars: alongside the main process, each in a box of its own image.
      for (const [index, container] of (spec.sidecars ?? []).entries()) {
        check()
        const label = `${replica.name}/${container.name}`
        const sideImage = container.image === work.sourceRevisionConfig.image_uri ? image : await host.images.pull(container.image)
        const box = await startBox(`${replica.id}-s${index}`, sideImage, spec, volumesOf(spec, replica, container.volumeMounts), hostname)
        replica.boxes.push(box)
        await withEgress(box)
        const argv = argvOf(sideImage, container.command, container.args)
        if (argv.length === 0) throw new RolloutFailed(`sidecar ${container.name}: no command and its image has no entrypoint or cmd`)
        const p = box.exec(argv, { env: { ...env, ...containerEnv(container) }, ...(container.workingDir ? { cwd: container.workingDir } : {}) })
        pipeLogs(p, label)
        append(work, "deploy", `sidecar ${container.name}: started (${container.image})`, "INFO", label)
      }

      check()
      const box = await startBox(replica.id, image, spec, volumesOf(spec, replica, spec.volume_mounts), hostname)
      replica.box = box
      replica.boxes.push(box)
      // The database bridge and the port forward start side by side (each is a process).
      const [, forward] = await Promise.all([withEgress(box), box.forward(options.port)])
      replica.forward = forward
      check()
      const argv = argvOf(image)
      if (argv.length === 0) throw new RolloutFailed("the image has no entrypoint or cmd to run")
      const launch = () => {
        const p = box.exec(argv, { env })
        replica.main = p
        replica.exit = undefined
        pipeLogs(p, replica.name)
        void p.exited.then((exit) => {
          if (replica.main === p) replica.exit = exit
          if (!run.stopped) void onMainExit(run, replica, exit, launch)
        })
      }
      launch()
      append(work, "deploy", `replica ${replica.name}: started ${JSON.stringify(argv)}`, "INFO", replica.name)
    }

    /** After the revision deployed, a replica whose main process exits is restarted with a growing delay. */
    const onMainExit = async (run: Run, replica: Replica, exit: { code: number | null; signal: NodeJS.Signals | null }, launch: () => void) => {
      if (!run.work || !isLive(run)) return
      replica.restarts++
      const delay = Math.min(30_000, 500 * 2 ** Math.min(replica.restarts - 1, 6))
      const crashLoop = replica.restarts >= 3
      append(
        run.work,
        "deploy",
        `replica ${replica.name} exited (${exit.signal ?? `exit code ${exit.code}`})${crashLoop ? `: crash loop, ${replica.restarts} restarts` : ""}; restarting in ${delay} ms`,
        crashLoop ? "CRITICAL" : "ERROR",
        replica.name
      )
      await sleep(delay)
      if (run.stopped || replica.box?.status() !== "running") return
      try {
        launch()
      } catch (error) {
        append(run.work, "deploy", `replica ${replica.name} could not be restarted: ${messageOf(error)}`, "ERROR", replica.name)
      }
    }

    /** A run past its health checks that still serves (its crashes are restarted, not failures). */
    const live = new WeakSet<Run>()
    const isLive = (run: Run) => live.has(run) && !run.stopped

    /** Waits until the replica answers its health check; fails on an exit or the deadline. */
    const waitHealthy = async (run: Run, replica: Replica) => {
      const deadline = Date.now() + options.healthTimeoutMs
      let lastDetail = ""
      for (;;) {
        if (run.abort.signal.aborted) throw new Superseded()
        if (replica.exit) {
          await sleep(100)
          const tail = lastLines(run.work, replica.name)
          const how = replica.exit.signal ?? `exit code ${replica.exit.code}`
          throw new RolloutFailed(`replica ${replica.name} exited (${how}) before it was healthy${tail ? `: ${tail}` : ""}`)
        }
        const result = !listening(replica.box!.pid, options.port)
          ? { healthy: false, detail: `nothing listens on port ${options.port} yet` }
          : await checkHealth(targetOf(replica), { mode: options.healthMode, path: options.healthPath, attemptTimeoutMs: 2000 })
        if (result.detail !== lastDetail) {
          append(run.work, "deploy", `health ${replica.name}: ${result.detail}`, result.healthy ? "INFO" : "WARNING", replica.name)
          lastDetail = result.detail
        }
        if (result.healthy) return
        if (Date.now() >= deadline) {
          throw new RolloutFailed(`replica ${replica.name} not healthy after ${Math.round(options.healthTimeoutMs / 1000)} s: ${result.detail}`)
        }
        // Often at first (most servers are up within a second), then every 200 ms.
        const started = deadline - options.healthTimeoutMs
        await sleep(Math.min(Date.now() - started < 2000 ? 50 : 200, Math.max(1, deadline - Date.now())))
      }
    }

    // ---- a revision ----------------------------------------------------------------------------

    /**
     * Rolls `work` out (`mode: "rollout"`, reporting every state) or brings a DEPLOYED revision
     * back (`"serve"`: after a restart or a redeploy, no state is reported). Either way, once its
     * replicas are healthy the proxy switches to them and the previous run drains and stops.
     */
    const launchRun = (work: RevisionWork, mode: "rollout" | "serve"): Run => {
      const run: Run = { work, abort: new AbortController(), replicas: [], stopped: false, done: Promise.resolve() }
      const previousOfRevision = runs.get(work.revisionId)
      runs.set(work.revisionId, run)
      let status: RevisionStatus = work.status
      const advance = async (to: RevisionStatus, message: string | null) => {
        if (mode === "serve") return
        if (run.abort.signal.aborted) throw new Superseded()
        const applied = await report({ tenantId: work.tenantId, deploymentId: work.deploymentId, revisionId: work.revisionId, from: status, to, message })
        if (!applied) throw new Superseded()
        status = to
      }
      const progress = async (message: string) => {
        if (mode === "serve") {
          append(work, "deploy", message)
          return
        }
        await advance(status, message)
      }

      const body = async () => {
        // Start on the next turn: a `stop` right after `apply` finds nothing reported yet.
        await new Promise((resolve) => setImmediate(resolve))
        if (previousOfRevision) await stopRun(previousOfRevision)
        const spec = effectiveResourceSpec(work.sourceConfig.resource_spec)
        const route = { name: work.deploymentName, url: deploymentUrl(publicUrl, work.deploymentName, work.sourceConfig.custom_url) }
        try {
          proxy.setRoute(work.deploymentId, route)
        } catch (error) {
          throw new RolloutFailed(messageOf(error))
        }
        if (status === "CREATING") await advance("QUEUED", "Queued")
        if (status === "QUEUED") await advance("AWAITING_DEPLOY", "Provisioning the database and cache")
        const provisioning = databases.provision(work.deploymentId, { redisMemoryMb: spec.redis_memory_mb ?? null }).then(async (dbs) => {
          await report({ _tag: "Database", tenantId: work.tenantId, deploymentId: work.deploymentId, ready: true })
          return dbs
        })
        provisioning.catch(() => undefined)
        const reference = work.sourceRevisionConfig.image_uri ?? ""
        if (status === "AWAITING_DEPLOY") await advance("DEPLOYING", `pulling image ${reference}`)
        else await progress(`pulling image ${reference}`)
        append(work, "build", `pulling image ${reference}`)
        let image: PulledImage
        try {
          image = await host.images.pull(reference, {
            onProgress: (message) => {
              append(work, "build", message)
              if (mode === "rollout" && !run.abort.signal.aborted) void report({ ...ids, from: status, to: status, message }).catch(() => undefined)
            }
          })
        } catch (error) {
          append(work, "build", `pull failed: ${messageOf(error)}`, "ERROR")
          throw new RolloutFailed(messageOf(error))
        }
        append(work, "build", `image ${image.reference} (${image.digest}) ready`)
        if (run.abort.signal.aborted) throw new Superseded()
        let dbs: ProvisionedDatabases
        try {
          dbs = await provisioning
        } catch (error) {
          throw new RolloutFailed(`database and cache: ${messageOf(error)}`)
        }
        let secrets: Record<string, string>
        try {
          secrets = Object.fromEntries(work.secrets().map(({ name, value }) => [name, value]))
        } catch (error) {
          throw new RolloutFailed(`secrets could not be opened: ${messageOf(error)}`)
        }
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
        await progress(`starting ${count} replica${count === 1 ? "" : "s"}`)
        const runSuffix = randomBytes(3).toString("hex")
        for (let i = 0; i < count; i++) {
          run.replicas.push({ id: replicaBoxId(work.revisionId, i, runSuffix), name: `${work.revisionId.slice(0, 8)}-${i}`, boxes: [], egress: [], dirs: [], restarts: 0 })
        }
        const started = await Promise.allSettled(run.replicas.map((replica) => startReplica(run, replica, image, spec, env, dbs)))
        const failed = started.find((r) => r.status === "rejected")
        if (failed) throw (failed as PromiseRejectedResult).reason
        await progress("waiting for health")
        const healthy = await Promise.allSettled(run.replicas.map((replica) => waitHealthy(run, replica)))
        const unhealthy = healthy.find((r) => r.status === "rejected")
        if (unhealthy) throw (unhealthy as PromiseRejectedResult).reason
        if (run.abort.signal.aborted) throw new Superseded()

        // The switch: new requests go to the new replicas from here on.
        const previous = serving.get(work.deploymentId)
        proxy.setTargets(work.deploymentId, run.replicas.map(targetOf))
        serving.set(work.deploymentId, run)
        live.add(run)
        try {
          await advance("DEPLOYED", `Deployed: ${count} replica${count === 1 ? "" : "s"} healthy`)
        } catch (error) {
          // Superseded at the last moment: the previous revision serves again.
          live.delete(run)
          if (previous && !previous.stopped) {
            proxy.setTargets(work.deploymentId, previous.replicas.map(targetOf))
            serving.set(work.deploymentId, previous)
          } else {
            proxy.setTargets(work.deploymentId, [])
            serving.delete(work.deploymentId)
          }
          throw error
        }
        append(work, "deploy", `serving: ${count} replica${count === 1 ? "" : "s"} at ${route.url}`)
        if (previous && previous !== run) {
          void (async () => {
            const drained = await proxy.drain(previous.replicas.map(targetOf), options.drainMs)
            append(previous.work, "deploy", drained ? "replaced: drained, stopping" : `replaced: still busy after ${options.drainMs} ms, stopping`)
            await stopRun(previous)
          })()
        }
      }
      const ids = { tenantId: work.tenantId, deploymentId: work.deploymentId, revisionId: work.revisionId }

      run.done = body().catch(async (error) => {
        const superseded = error instanceof Superseded || run.abort.signal.aborted
        await stopRun(run)
        if (superseded) {
          append(work, "deploy", "stopped: superseded")
          return
        }
        const message = error instanceof RolloutFailed ? error.message : `deploy failed: ${messageOf(error)}`
        append(work, "deploy", message, "ERROR")
        log.warn("deployment revision failed", { deployment_id: work.deploymentId, revision_id: work.revisionId, error: message })
        if (mode === "rollout") await report({ ...ids, from: status, to: "DEPLOY_FAILED", message }).catch(() => undefined)
      })
      return run
    }

    const isGitrepo = (work: RevisionWork) => work.source !== "external_container"
    const gitrepoRevisions = new Set<string>()

    return DeploymentDriver.of({
      name: "local",
      observe: (next) =>
        Effect.andThen(
          simulated.observe(next),
          Effect.sync(() => void (sink = next))
        ),
      apply: (work) =>
        isGitrepo(work)
          ? Effect.andThen(
              Effect.sync(() => gitrepoRevisions.add(work.revisionId)),
              simulated.apply(work)
            )
          : Effect.sync(() => void launchRun(work, "rollout")),
      stop: (revisionId) =>
        gitrepoRevisions.has(revisionId)
          ? simulated.stop(revisionId)
          : Effect.promise(async () => {
              const run = runs.get(revisionId)
              // A revision that deployed is never superseded; only a newer one replaces it.
              if (!run || (isLive(run) && serving.get(run.work.deploymentId) === run)) return
              run.abort.abort(new Superseded())
              await run.done
              await stopRun(run)
            }),
      serve: (active, { restore }) =>
        Effect.promise(async () => {
          if (restore) {
            // Boxes of replicas a previous process left (running or not) are removed first: the
            // active revisions start again on fresh boxes, unfinished ones when resumed.
            await databases.recover().catch((error) => log.error("deployment databases could not be recovered", { error: messageOf(error) }))
            const stale = host.boxes.list().filter((spec) => spec.id.startsWith("d-"))
            await Promise.allSettled(stale.map((spec) => host.boxes.destroy(spec.id)))
            rmSync(join(host.root, "deployment-volumes"), { recursive: true, force: true })
            if (active.length > 0 || stale.length > 0) log.info("deployments restored", { active: active.length, stale_boxes: stale.length })
          }
          for (const work of active) {
            if (isGitrepo(work)) continue
            const current = serving.get(work.deploymentId)
            if (current && current.work.revisionId === work.revisionId && !current.stopped) continue
            launchRun(work, "serve")
          }
        }),
      teardown: (_tenantId, deploymentId) =>
        Effect.promise(async () => {
          const mine = [...runs.values()].filter((run) => run.work.deploymentId === deploymentId)
          for (const run of mine) run.abort.abort(new Superseded())
          proxy.remove(deploymentId)
          serving.delete(deploymentId)
          await Promise.allSettled(mine.map((run) => run.done))
          await Promise.allSettled(mine.map(stopRun))
          await databases.release(deploymentId).catch((error) => log.error("deployment databases could not be released", { deployment_id: deploymentId, error: messageOf(error) }))
          try {
            logs.removeDeployment(deploymentId)
          } catch {
            /* an id that never had logs */
          }
        })
    })
  })

export const LocalDeploymentDriver = (options: LocalDeploymentOptions) => Layer.effect(DeploymentDriver, makeLocalDeploymentDriver(options))
