/**
 * The registry Slipway fronts (docs/registry.md): the CNCF distribution registry (Debian
 * `docker-registry`), run as Slipway's child process on its own address (or one Slipway is
 * given by URL), with token authentication where Slipway is the token server.
 *
 * - `pushToken(tenant, deployment)` answers a push token: the password of `oauth2accesstoken`
 *   in the Docker token flow, and `registry_url` = `<registry host>/<tenant>/<deployment>`.
 * - The registry answers a client without a token `401 WWW-Authenticate: Bearer realm=...`; the
 *   client calls the realm (`handleTokenRequest`, mounted by the server at
 *   `REGISTRY_TOKEN_PATH`) with Basic auth, and gets a short-lived registry token (ES256 JWT,
 *   keys.ts) whose `access` grants push and pull only on the deployment's repositories, never
 *   past the push token's expiry.
 * - `pullCredentials` are Slipway's own, pull only, for the image store.
 * - `removeRepository` deletes a deleted deployment's manifests through the registry API (delete
 *   is enabled), and for the registry Slipway runs, the repository's directory; garbage
 *   collection (`docker-registry garbage-collect`) then frees the blobs. It runs on a schedule
 *   (`SLIPWAY_REGISTRY_GC`) in a read-only window: the registry is restarted read-only (pulls
 *   go on, pushes are refused), collected, and restarted writable.
 */
import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, rmdirSync, rmSync, writeFileSync } from "node:fs"
import { mkdir } from "node:fs/promises"
import { createServer } from "node:net"
import { join } from "node:path"
import { Clock, Context, Deferred, Effect, Fiber, Layer, Schedule, type Scope, Semaphore } from "effect"
import YAML from "yaml"
import { BadRequest, MethodNotAllowed, Unauthorized } from "../../core/index.ts"
import { stateDir } from "../dataDir.ts"
import { header, type NeutralRequest, type NeutralResponse, jsonResponse } from "../http/neutral.ts"
import type { Logger } from "../log.ts"
import { ServerEnv } from "../module.ts"
import type { RegistryAuth } from "../runtime/local/images/model.ts"
import { parseReference } from "../runtime/local/reference.ts"
import { which } from "../runtime/local/tools.ts"
import { ProcessRunner, ProcessRunnerLive } from "../runtime/ProcessRunner.ts"
import { RuntimeChoice } from "../runtime/select.ts"
import { DeploymentStore } from "../store/DeploymentStore.ts"
import { unexpired } from "../signedTokens.ts"
import { CREDENTIALS_USERNAME, grant, isUnder, makeCredentialTokens, parseScopes, repositoryOf, type RepositoryAction } from "./access.ts"
import { loadOrCreateSigningKey, RegistryError, type ResourceAccess, signRegistryToken } from "./keys.ts"
import { type Child, describeExit, spawnChild } from "./process.ts"
import { registrySettingsFromEnv, type RegistrySettings } from "./settings.ts"

export { RegistryError } from "./keys.ts"

/** Where the server mounts the token endpoint (the registry's `realm`), under its public URL. */
export const REGISTRY_TOKEN_PATH = "/v2/registry/token"

/** What `POST /v2/deployments/{id}/push-token` answers. */
export interface PushToken {
  readonly token: string
  /** `<registry host>/<tenant>/<deployment>`: the CLI pushes `<registry_url>/<name>:<tag>`. */
  readonly registry_url: string
  /** ISO 8601. */
  readonly expires_at: string
}

/** Credentials for one registry host, as the image store's pull takes them. */
export interface PullCredentials extends RegistryAuth {
  readonly registry: string
}

export interface RemovedImages {
  readonly repositories: number
  readonly manifests: number
}

export interface GcReport {
  /** Blobs still referenced by a manifest. */
  readonly blobsMarked: number
  /** Blobs freed. */
  readonly blobsDeleted: number
}

export class Registry extends Context.Service<
  Registry,
  {
    /** False when no registry runs (`SLIPWAY_REGISTRY=off`, or `auto` without `docker-registry`): push tokens are refused. */
    readonly enabled: boolean
    /** `host[:port]` clients push to and Slipway pulls from. */
    readonly host: string
    /** The registry is reached over plain HTTP (list `host` as an insecure registry for pulls). */
    readonly insecure: boolean
    readonly pushToken: (tenantId: string, deploymentId: string) => Effect.Effect<PushToken, RegistryError>
    /** Pull-only credentials on one deployment's repositories, for Slipway's own pulls of what was pushed there. */
    readonly pullCredentials: (tenantId: string, deploymentId: string) => Effect.Effect<PullCredentials, RegistryError>
    /** Whether `reference` names an image in this registry under the deployment's path (an `image_uri` the CLI may send). */
    readonly isDeploymentImage: (reference: string, tenantId: string, deploymentId: string) => boolean
    /** Deletes the deployment's images (its blobs go at the next garbage collection). */
    readonly removeRepository: (tenantId: string, deploymentId: string) => Effect.Effect<RemovedImages, RegistryError>
    /** Runs garbage collection now, in a read-only window (the registry Slipway runs only). */
    readonly garbageCollect: Effect.Effect<GcReport, RegistryError>
    /** The token endpoint (the registry's realm), framework-neutral. */
    readonly handleTokenRequest: (request: NeutralRequest) => Effect.Effect<NeutralResponse>
  }
>()("slipway/Registry") {}

export interface RegistryOptions {
  readonly settings: RegistrySettings
  /** The database path: the key and certificate live beside it, the registry's storage in `<its dir>/registry`. */
  readonly databasePath: string
  readonly secretsKey: string
  /** The token endpoint's public URL (`<public url>` + `REGISTRY_TOKEN_PATH`). */
  readonly realm: string
  readonly log: Logger
  /** Whether the deployment still exists: a push token of a deleted deployment gets no registry token. */
  readonly isLive?: (tenantId: string, deploymentId: string) => Effect.Effect<boolean>
  /** `service` and `issuer` of the tokens (default `slipway-registry`, `slipway`). */
  readonly service?: string
  readonly issuer?: string
}

const MANIFEST_TYPES = [
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.docker.distribution.manifest.v2+json"
]
const INDEX_TYPES = new Set(MANIFEST_TYPES.slice(0, 2))

/** How long the registry may take to answer after it starts, and to finish requests when stopped. */
const START_TIMEOUT_MS = 15_000
const DRAIN_SECONDS = 10

const lastLines = (text: string, count = 3) => text.trim().split("\n").slice(-count).join(" | ")

const disabled = (reason: string): Registry["Service"] => {
  const off = Effect.fail(new RegistryError({ message: `no registry runs on this server (${reason})` }))
  return {
    enabled: false,
    host: "",
    insecure: false,
    pushToken: () => off,
    pullCredentials: () => off,
    isDeploymentImage: () => false,
    removeRepository: () => Effect.succeed({ repositories: 0, manifests: 0 }),
    garbageCollect: off,
    handleTokenRequest: () => Effect.succeed(registryError(404, "NOT_FOUND", `no registry runs on this server (${reason})`))
  }
}

/** An error of the token endpoint, in the registry API's shape (what docker and skopeo print). */
const registryError = (status: number, code: string, message: string, headers: Readonly<Record<string, string>> = {}): NeutralResponse =>
  jsonResponse(status, { errors: [{ code, message, detail: null }] }, headers)

const isWildcard = (host: string) => host === "" || host === "0.0.0.0" || host === "[::]" || host === "::"

/** Fails unless `host:port` can be listened on now (a clear error instead of a registry that exits at once). */
const checkFree = (hostname: string, port: number): Effect.Effect<void, RegistryError> =>
  Effect.callback<void, RegistryError>((resume) => {
    const server = createServer()
    server.once("error", (error: NodeJS.ErrnoException) =>
      resume(Effect.fail(new RegistryError({ message: `the registry cannot listen on ${hostname}:${port}: ${error.code === "EADDRINUSE" ? "the address is in use (set SLIPWAY_REGISTRY_ADDR)" : error.message}` })))
    )
    server.listen(port, hostname === "" ? undefined : hostname.replace(/^\[|\]$/g, ""), () => server.close(() => resume(Effect.void)))
  })

export const makeRegistry = (options: RegistryOptions): Effect.Effect<Registry["Service"], RegistryError, ProcessRunner | Scope.Scope> =>
  Effect.gen(function* () {
    const runner = yield* ProcessRunner
    const { settings, log } = options
    const service = options.service ?? "slipway-registry"
    const issuer = options.issuer ?? "slipway"
    if (settings.mode === "off") return disabled("SLIPWAY_REGISTRY=off")
    const binary = settings.url === undefined ? which("docker-registry") : null
    if (settings.url === undefined && binary === null) {
      if (settings.mode === "on") return yield* new RegistryError({ message: "docker-registry not found: install Debian package docker-registry (or set SLIPWAY_REGISTRY_URL)" })
      log.info("registry off: docker-registry is not installed (apt-get install docker-registry)")
      return disabled("docker-registry is not installed")
    }
    const key = yield* loadOrCreateSigningKey(options.databasePath, yield* Clock.currentTimeMillis)
    const credentials = makeCredentialTokens(options.secretsKey)
    const managed = settings.url === undefined
    const [, addrHost = "", addrPort = ""] = /^(.*):(\d+)$/.exec(settings.addr) ?? []
    const apiUrl = settings.url ?? `http://${isWildcard(addrHost) ? "127.0.0.1" : addrHost}:${addrPort}`
    const host = settings.publicHost ?? (managed ? (isWildcard(addrHost) ? `${new URL(options.realm).hostname}:${addrPort}` : settings.addr) : new URL(apiUrl).host)
    const insecure = settings.publicHost === undefined && apiUrl.startsWith("http://")
    const storage = stateDir(options.databasePath, "registry")
    const configPath = join(storage, "config.yml")
    const scope = yield* Effect.scope

    const nowSeconds = Effect.map(Clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))

    /** A registry token Slipway gives itself (removals), valid one minute. */
    const ownToken = (access: ReadonlyArray<ResourceAccess>) =>
      Effect.map(nowSeconds, (now) => signRegistryToken(key, { issuer, service, subject: "slipway", nowSeconds: now, expiresAtSeconds: now + 60, access }))

    /** A request to the registry's API with Slipway's own token. */
    const api = (path: string, init: { readonly method?: string; readonly access: ReadonlyArray<ResourceAccess>; readonly accept?: string }) =>
      Effect.flatMap(ownToken(init.access), (token) =>
        Effect.tryPromise({
          try: async (signal) => {
            const response = await fetch(`${apiUrl}${path}`, {
              method: init.method ?? "GET",
              headers: { authorization: `Bearer ${token}`, ...(init.accept ? { accept: init.accept } : {}) },
              signal: AbortSignal.any([signal, AbortSignal.timeout(30_000)])
            })
            const body = await response.text()
            return { status: response.status, headers: response.headers, body }
          },
          catch: (error) => new RegistryError({ message: `the registry at ${apiUrl} did not answer ${path}: ${error instanceof Error ? error.message : String(error)}` })
        })
      )

    const unexpectedAnswer = (what: string, answer: { readonly status: number; readonly body: string }) =>
      new RegistryError({ message: `the registry answered ${answer.status} to ${what}: ${answer.body.slice(0, 300)}` })

    // --- the child process (the registry Slipway runs) ---

    const writeConfig = (readOnly: boolean, secret: string) =>
      Effect.tryPromise({
        try: async () => {
          await mkdir(storage, { recursive: true, mode: 0o700 })
          const config = {
            version: 0.1,
            log: { level: "warn", formatter: "text", accesslog: { disabled: true } },
            storage: {
              filesystem: { rootdirectory: join(storage, "data") },
              delete: { enabled: true },
              maintenance: { uploadpurging: { enabled: true, age: "168h", interval: "24h", dryrun: false }, readonly: { enabled: readOnly } }
            },
            http: { addr: settings.addr, secret, draintimeout: `${DRAIN_SECONDS}s`, headers: { "X-Content-Type-Options": ["nosniff"] } },
            auth: { token: { realm: options.realm, service, issuer, rootcertbundle: key.certificatePath } }
          }
          writeFileSync(configPath, YAML.stringify(config), { mode: 0o600 })
        },
        catch: (error) => new RegistryError({ message: `cannot write ${configPath}: ${String(error)}` })
      })

    /** Waits until the child answers HTTP (401 to `/v2/`: token auth is on); fails if it exits first. */
    const awaitReady = (child: Child) =>
      Effect.gen(function* () {
        const probe = Effect.tryPromise({
          try: (signal) => fetch(`${apiUrl}/v2/`, { signal: AbortSignal.any([signal, AbortSignal.timeout(1000)]) }).then((response) => response.status),
          catch: () => new RegistryError({ message: "not answering yet" })
        })
        const exited = Effect.flatMap(child.exited, (exit) =>
          Effect.fail(new RegistryError({ message: `docker-registry exited while starting (${describeExit(exit)}): ${lastLines(child.output())}` }))
        )
        yield* Effect.raceFirst(Effect.retry(probe, Schedule.spaced("50 millis")), exited).pipe(
          Effect.timeoutOrElse({
            duration: START_TIMEOUT_MS,
            orElse: () => Effect.fail(new RegistryError({ message: `docker-registry did not answer on ${apiUrl} within ${START_TIMEOUT_MS / 1000} s: ${lastLines(child.output())}` }))
          })
        )
      })

    // The registry signs its upload sessions with this; one per server start.
    const secret = randomBytes(32).toString("hex")
    let current: Fiber.Fiber<never, never> | undefined

    /** Runs the registry until the scope ends: restarted (after a pause that grows) whenever it stops. */
    const supervise = (readOnly: boolean, started: Deferred.Deferred<void, RegistryError>) => {
      let failures = 0
      const once = Effect.scoped(
        Effect.gen(function* () {
          yield* checkFree(addrHost, Number(addrPort))
          yield* writeConfig(readOnly, secret)
          const child = yield* spawnChild(runner, [binary!, "serve", configPath], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, cwd: storage, graceMs: (DRAIN_SECONDS + 5) * 1000 })
          yield* awaitReady(child)
          failures = 0
          log.info("registry serving", { addr: settings.addr, host, readOnly })
          yield* Deferred.succeed(started, undefined)
          const exit = yield* child.exited
          return yield* new RegistryError({ message: `docker-registry stopped unexpectedly (${describeExit(exit)}): ${lastLines(child.output())}` })
        })
      )
      return once.pipe(
        Effect.catch((error) =>
          Effect.gen(function* () {
            failures++
            yield* Deferred.fail(started, error)
            const pauseMs = Math.min(60_000, 1000 * 2 ** Math.min(failures - 1, 6))
            log.warn("registry not serving: restarting", { error: error.message, inMs: pauseMs })
            yield* Effect.sleep(pauseMs)
          })
        ),
        Effect.forever
      )
    }

    /** (Re)starts the registry, writable or read-only, and waits until it serves. */
    const start = (readOnly: boolean) =>
      Effect.gen(function* () {
        if (current) yield* Fiber.interrupt(current)
        const started = yield* Deferred.make<void, RegistryError>()
        current = yield* Effect.forkIn(supervise(readOnly, started), scope)
        yield* Deferred.await(started)
      })

    const maintenance = yield* Semaphore.make(1)

    if (managed) {
      // `auto` runs the registry when it can: one that cannot start (its address taken) leaves it off, with a warning.
      const failed = yield* start(false).pipe(
        Effect.as(undefined),
        Effect.catch((error) => (settings.mode === "on" ? Effect.fail(error) : Effect.succeed(error)))
      )
      if (failed !== undefined) {
        if (current) yield* Fiber.interrupt(current)
        current = undefined
        log.warn("registry off: it could not start (SLIPWAY_REGISTRY=on makes this an error)", { error: failed.message })
        return disabled(`it could not start: ${failed.message}`)
      }
    } else {
      const answer = yield* Effect.tryPromise({
        try: (signal) => fetch(`${apiUrl}/v2/`, { signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]) }),
        catch: (error) => new RegistryError({ message: `the registry at ${apiUrl} (SLIPWAY_REGISTRY_URL) does not answer: ${String(error)}` })
      })
      const challenge = answer.headers.get("www-authenticate") ?? ""
      if (answer.status !== 401 || !challenge.includes(`realm="${options.realm}"`)) {
        log.warn("the registry at SLIPWAY_REGISTRY_URL does not send clients to Slipway's token endpoint: configure its auth.token (docs/registry.md)", { status: answer.status, challenge })
      }
      log.info("registry: using an external registry", { url: apiUrl, host })
    }

    // --- tokens ---

    const repositoryFor = (tenantId: string, deploymentId: string) => {
      const repository = repositoryOf(tenantId, deploymentId)
      return repository === undefined
        ? Effect.fail(new RegistryError({ message: `tenant ${JSON.stringify(tenantId)} / deployment ${JSON.stringify(deploymentId)} cannot name a repository (ids must be lower-case UUIDs)` }))
        : Effect.succeed(repository)
    }

    const credential = (tenantId: string, deploymentId: string, actions: ReadonlyArray<RepositoryAction>, ttlSeconds: number) =>
      Effect.gen(function* () {
        const repository = yield* repositoryFor(tenantId, deploymentId)
        const e = (yield* nowSeconds) + ttlSeconds
        return { repository, e, token: credentials.sign({ t: tenantId.toLowerCase(), d: deploymentId.toLowerCase(), a: actions, e }) }
      })

    const pushToken = (tenantId: string, deploymentId: string) =>
      Effect.map(credential(tenantId, deploymentId, ["push", "pull"], settings.pushTokenTtlSeconds), ({ repository, e, token }) => ({
        token,
        registry_url: `${host}/${repository}`,
        expires_at: new Date(e * 1000).toISOString()
      }))

    const pullCredentials = (tenantId: string, deploymentId: string) =>
      Effect.map(credential(tenantId, deploymentId, ["pull"], settings.pullTokenTtlSeconds), ({ token }) => ({ registry: host, username: CREDENTIALS_USERNAME, password: token }))

    const isDeploymentImage = (reference: string, tenantId: string, deploymentId: string) => {
      const repository = repositoryOf(tenantId, deploymentId)
      if (repository === undefined) return false
      try {
        const parsed = parseReference(reference)
        return parsed.domain === host && isUnder(parsed.path, repository)
      } catch {
        return false
      }
    }

    const tokenResponse = Effect.fnUntraced(function* (request: NeutralRequest) {
      if (request.method !== "GET") return yield* new MethodNotAllowed({ message: "the token endpoint answers GET" })
      const authorization = header(request, "authorization") ?? ""
      const basic = /^basic\s+(\S+)$/i.exec(authorization)
      if (!basic) return yield* new Unauthorized({ message: `log in with user ${CREDENTIALS_USERNAME} and the push token as password` })
      const decoded = Buffer.from(basic[1]!, "base64").toString("utf8")
      const colon = decoded.indexOf(":")
      const username = colon < 0 ? decoded : decoded.slice(0, colon)
      if (username !== CREDENTIALS_USERNAME) return yield* new Unauthorized({ message: `unknown user ${JSON.stringify(username.slice(0, 64))}: log in as ${CREDENTIALS_USERNAME} with the push token as password` })
      const claims = credentials.verify(decoded.slice(colon + 1).trim())
      if (!claims) return yield* new Unauthorized({ message: "the password is not a valid push token of this server" })
      const nowMs = yield* Clock.currentTimeMillis
      if (!unexpired(claims.e, nowMs)) return yield* new Unauthorized({ message: "the push token has expired: ask for a new one (POST /v2/deployments/{id}/push-token)" })
      const asked = request.query.get("service")
      if (asked !== null && asked !== service) return yield* new BadRequest({ message: `this token endpoint serves the registry ${JSON.stringify(service)}, not ${JSON.stringify(asked.slice(0, 100))}` })
      if (options.isLive && !(yield* options.isLive(claims.t, claims.d))) return yield* new Unauthorized({ message: `deployment ${claims.d} no longer exists` })
      const repository = yield* Effect.orDie(repositoryFor(claims.t, claims.d))
      const access = grant(repository, claims.a, parseScopes(request.query.getAll("scope")))
      const now = Math.floor(nowMs / 1000)
      const expires = Math.min(now + settings.accessTokenTtlSeconds, claims.e)
      const token = signRegistryToken(key, { issuer, service, subject: `${claims.t}/${claims.d}`, nowSeconds: now, expiresAtSeconds: expires, access })
      return jsonResponse(200, { token, access_token: token, expires_in: Math.max(1, expires - now), issued_at: new Date(now * 1000).toISOString() })
    })

    const handleTokenRequest = (request: NeutralRequest): Effect.Effect<NeutralResponse> =>
      tokenResponse(request).pipe(
        Effect.catchTags({
          Unauthorized: (error) => Effect.succeed(registryError(401, "UNAUTHORIZED", error.message, { "www-authenticate": 'Basic realm="Slipway registry"' })),
          BadRequest: (error) => Effect.succeed(registryError(400, "DENIED", error.message)),
          MethodNotAllowed: (error) => Effect.succeed(registryError(405, "UNSUPPORTED", error.message, { allow: "GET" }))
        })
      )

    // --- removal and garbage collection ---

    /** Repository names of the catalog at or below `repository`. */
    const repositoriesUnder = (repository: string) =>
      Effect.gen(function* () {
        const found: Array<string> = []
        let path: string | undefined = "/v2/_catalog?n=1000"
        while (path !== undefined) {
          const answer: { readonly status: number; readonly headers: Headers; readonly body: string } = yield* api(path, {
            access: [{ type: "registry", name: "catalog", actions: ["*"] }]
          })
          if (answer.status !== 200) return yield* unexpectedAnswer("the catalog", answer)
          const names = (JSON.parse(answer.body) as { readonly repositories?: ReadonlyArray<string> | null }).repositories ?? []
          found.push(...names.filter((name) => isUnder(name, repository)))
          const next: string | undefined = /<([^>]+)>;\s*rel="next"/.exec(answer.headers.get("link") ?? "")?.[1]
          path = next === undefined ? undefined : next.startsWith("/") ? next : new URL(next).pathname + new URL(next).search
        }
        return found
      })

    /** Deletes every tagged manifest of `name` (and the manifests an index lists); answers how many went. */
    const deleteManifests = (name: string) =>
      Effect.gen(function* () {
        const access = [{ type: "repository", name, actions: ["pull", "delete"] }]
        const tags = yield* api(`/v2/${name}/tags/list`, { access })
        if (tags.status === 404) return 0
        if (tags.status !== 200) return yield* unexpectedAnswer(`the tags of ${name}`, tags)
        const digests = new Set<string>()
        for (const tag of (JSON.parse(tags.body) as { readonly tags?: ReadonlyArray<string> | null }).tags ?? []) {
          const manifest = yield* api(`/v2/${name}/manifests/${encodeURIComponent(tag)}`, { access, accept: MANIFEST_TYPES.join(", ") })
          if (manifest.status === 404) continue
          if (manifest.status !== 200) return yield* unexpectedAnswer(`the manifest ${name}:${tag}`, manifest)
          const digest = manifest.headers.get("docker-content-digest")
          if (digest) digests.add(digest)
          const parsed = JSON.parse(manifest.body) as { readonly mediaType?: string; readonly manifests?: ReadonlyArray<{ readonly digest: string }> }
          if (INDEX_TYPES.has(parsed.mediaType ?? manifest.headers.get("content-type") ?? "")) for (const child of parsed.manifests ?? []) digests.add(child.digest)
        }
        let deleted = 0
        for (const digest of digests) {
          const answer = yield* api(`/v2/${name}/manifests/${digest}`, { method: "DELETE", access })
          if (answer.status === 202) deleted++
          else if (answer.status !== 404) return yield* unexpectedAnswer(`deleting ${name}@${digest}`, answer)
        }
        return deleted
      })

    const removeRepository = (tenantId: string, deploymentId: string) =>
      Effect.gen(function* () {
        const repository = yield* repositoryFor(tenantId, deploymentId)
        const names = yield* repositoriesUnder(repository)
        let manifests = 0
        for (const name of names) manifests += yield* deleteManifests(name)
        if (managed) {
          // Untagged manifests (an overwritten tag's) are not reachable through the API: the
          // repository's directory goes too, so garbage collection frees every blob it held.
          yield* maintenance.withPermits(1)(
            Effect.sync(() => {
              const directory = join(storage, "data", "docker", "registry", "v2", "repositories", ...repository.split("/"))
              rmSync(directory, { recursive: true, force: true })
              try {
                rmdirSync(join(directory, ".."))
              } catch {
                // the tenant has other repositories
              }
            })
          )
        }
        log.info("registry: deployment images removed", { repository, repositories: names.length, manifests })
        return { repositories: names.length, manifests }
      })

    const garbageCollect: Effect.Effect<GcReport, RegistryError> = managed
      ? maintenance.withPermits(1)(
          Effect.gen(function* () {
            const v2 = join(storage, "data", "docker", "registry", "v2")
            // Nothing was ever pushed: nothing to collect (and garbage-collect fails on a registry without blobs).
            if (!existsSync(join(v2, "blobs"))) return { blobsMarked: 0, blobsDeleted: 0 }
            mkdirSync(join(v2, "repositories"), { recursive: true })
            log.info("registry garbage collection: read-only window starts")
            yield* start(true)
            const result = yield* runner.run([binary!, "garbage-collect", configPath], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, cleanEnv: true, maxStdoutBytes: 256 * 1024 * 1024 }).pipe(
              Effect.mapError((error) => new RegistryError({ message: `registry garbage collection failed: ${error.message}` })),
              Effect.ensuring(
                start(false).pipe(
                  Effect.catch((error) => Effect.sync(() => log.error("registry: could not restart writable after garbage collection (retrying)", { error: error.message })))
                )
              )
            )
            const counts = /(\d+) blobs marked, (\d+) blobs and \d+ manifests eligible for deletion/.exec(result.stdout)
            const report = { blobsMarked: Number(counts?.[1] ?? 0), blobsDeleted: Number(counts?.[2] ?? 0) }
            log.info("registry garbage collection: read-only window ends", { ...report })
            return report
          })
        )
      : Effect.fail(new RegistryError({ message: "garbage collection of a registry Slipway does not run (SLIPWAY_REGISTRY_URL) is its operator's job" }))

    if (managed && settings.gcSchedule !== undefined) {
      const run = garbageCollect.pipe(Effect.catch((error) => Effect.sync(() => log.error("registry garbage collection failed", { error: error.message }))))
      yield* Effect.forkIn(Effect.schedule(run, Schedule.cron(settings.gcSchedule, "UTC")), scope)
    }

    return { enabled: true, host, insecure, pushToken, pullCredentials, isDeploymentImage, removeRepository, garbageCollect, handleTokenRequest } satisfies Registry["Service"]
  })

/**
 * The registry as the server runs it: settings from the environment, realm under the public URL,
 * a push token valid only while its deployment exists (not being deleted). `auto` runs it where
 * deployments run images (the local runtime); `on` everywhere.
 */
export const RegistryLive = Layer.effect(
  Registry,
  Effect.gen(function* () {
    const { config, log, publicUrl } = yield* ServerEnv
    const runtime = yield* RuntimeChoice
    const deploymentStore = yield* DeploymentStore
    const settings = registrySettingsFromEnv()
    if (settings.mode === "auto" && runtime.name !== "local") return disabled(`the ${runtime.name} runtime runs no images; SLIPWAY_REGISTRY=on runs the registry anyway`)
    const secretsKey = config.secretsKey ?? (yield* Effect.die(new Error("the registry needs the secrets key")))
    const isLive = (tenantId: string, deploymentId: string) =>
      deploymentStore.deployment(tenantId, deploymentId).pipe(
        Effect.map((deployment) => deployment !== undefined && deployment.status !== "AWAITING_DELETE"),
        Effect.orElseSucceed(() => false)
      )
    return yield* makeRegistry({ settings, databasePath: config.databasePath, secretsKey, realm: `${publicUrl}${REGISTRY_TOKEN_PATH}`, log, isLive })
  })
).pipe(Layer.provide(ProcessRunnerLive))
