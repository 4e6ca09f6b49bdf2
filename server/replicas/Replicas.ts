/**
 * This replica among the others sharing its database (docs/replicas.md): who it is (its id and
 * the internal address it advertises), whether ownership applies (`shared`: PostgreSQL), how to
 * hand a request to the replica that runs its workload (`forwarder`), and how to tell another
 * replica to look at its work now (`nudge`, answered by the controllers' `listen`).
 *
 * Building it joins the cluster: the secrets key is checked against the database's check value
 * (one key for every replica: a replica whose key cannot open it refuses to start), this replica
 * is recorded with a lease it renews every third of `SLIPWAY_LEASE_MS`, and what a previous
 * process on the same data directory ran is adopted. A replica whose lease expired is dead: the
 * controllers of the others take its deployments over and fail its boxes.
 *
 * On SQLite (`shared: false`) the one process runs everything: nothing is recorded, forwarded or
 * nudged, only the secrets key is checked.
 */
import type { IncomingMessage } from "node:http"
import { Context, Data, Effect, FiberSet, Layer, Schedule, type Scope } from "effect"
import { sharedRuntimeNeeds } from "../config.ts"
import { ServerEnv } from "../module.ts"
import { RuntimeChoice } from "../runtime/select.ts"
import { checkSecretsKey } from "../secrets/check.ts"
import { ClusterStore, type ReplicaRecord } from "../store/ClusterStore.ts"
import { FORWARDED_BY_HEADER, type Forwarder, makeForwarder, type Peer, TOKEN_HEADER } from "./forward.ts"
import type { ReplicaIdentity } from "./identity.ts"

/** What a nudge asks a replica to look at. */
export type NudgeTopic = "boxes" | "deployments"

/** Where replicas ask each other things (with the shared secret); never open to clients. */
export const INTERNAL_PREFIX = "/internal/replicas/"
/** The path replicas nudge each other on. */
export const NUDGE_PATH = `${INTERNAL_PREFIX}nudge`

export class Replicas extends Context.Service<
  Replicas,
  {
    /** This replica's id (also its revision leases' owner) and the address others reach it at. */
    readonly self: Peer
    /** Several replicas share the database: each workload runs on one of them, which the others forward to. */
    readonly shared: boolean
    readonly leaseMs: number
    /** The process that used this data directory before, when it died: its work was adopted. */
    readonly predecessor: string | undefined
    /** Forwards requests to peers; undefined without `SLIPWAY_INTERNAL_TOKEN`. */
    readonly forwarder: Forwarder | undefined
    /** The replica with this id as a peer to forward to, with whether its lease is current; undefined when it is gone. */
    readonly peer: (replicaId: string) => Effect.Effect<(Peer & { readonly alive: boolean }) | undefined>
    /** Asks a replica (in the background) to look at its work now; a replica that does not answer finds it at its next round. */
    readonly nudge: (replicaId: string, topic: NudgeTopic) => Effect.Effect<void>
    /** Every live peer. */
    readonly nudgeAll: (topic: NudgeTopic) => Effect.Effect<void>
    /**
     * Asks a live peer to do something only it can (its disk holds a volume): `POST` (or
     * `DELETE`) of `path` under `/internal/replicas/` with a JSON body, authenticated with the
     * shared secret; answers its status and JSON body, or fails saying why it could not.
     */
    readonly call: (
      replicaId: string,
      method: "POST" | "DELETE",
      path: string,
      body?: unknown
    ) => Effect.Effect<{ readonly status: number; readonly body: unknown }, ReplicaCallError>
    /** Runs `effect` (in the background) whenever another replica nudges this one on `topic`, until the scope closes. */
    readonly listen: (topic: NudgeTopic, effect: Effect.Effect<void>) => Effect.Effect<void, never, Scope.Scope>
    /** Whether a request was forwarded by a peer (its shared secret checked): it is served here, never forwarded again. */
    readonly isForwarded: (request: IncomingMessage) => boolean
    /** Marks a request a peer forwarded (the replicas' HTTP hook, once it has checked the secret). */
    readonly markForwarded: (request: IncomingMessage) => void
    /** A nudge arrived on `topic`. */
    readonly nudged: (topic: NudgeTopic) => void
  }
>()("slipway/Replicas") {}

/** A peer could not be asked (gone, not answering, or no shared secret here). */
export class ReplicaCallError extends Data.TaggedError("ReplicaCallError")<{ readonly message: string }> {}

/** A replica as a peer, for messages: its id and address. */
export const describeReplica = (replica: Pick<ReplicaRecord, "id" | "internal_url">): string => `${replica.id} (${replica.internal_url})`

export interface ReplicasOptions {
  readonly identity: ReplicaIdentity
  readonly internalUrl: string
}

export const makeReplicas = (options: ReplicasOptions) =>
  Effect.gen(function* () {
    const { config, log } = yield* ServerEnv
    const cluster = yield* ClusterStore
    const runtime = yield* RuntimeChoice
    const { identity } = options
    const leaseMs = config.leaseMs
    yield* checkSecretsKey(cluster, config.secretsKey, config.previousSecretsKeys)
    const shared = cluster.shared
    const token = config.internalToken
    if (shared && runtime.name === "local") {
      if (token === undefined) return yield* Effect.die(new Error(sharedRuntimeNeeds("SLIPWAY_INTERNAL_TOKEN")))
      if (!process.env["SLIPWAY_DEPLOYMENT_POSTGRES_URL"]) return yield* Effect.die(new Error(sharedRuntimeNeeds("SLIPWAY_DEPLOYMENT_POSTGRES_URL")))
      if (identity.sharedWith !== undefined) {
        return yield* Effect.die(
          new Error(`another Slipway (pid ${identity.sharedWith}) runs on this data directory (${config.databasePath}): give each replica a data directory of its own (DATABASE_PATH)`)
        )
      }
    }
    const self: Peer = { id: identity.id, url: options.internalUrl }
    const forwarder = token === undefined ? undefined : makeForwarder({ token, selfId: self.id })
    if (forwarder) yield* Effect.addFinalizer(() => Effect.sync(forwarder.close))

    /** Listeners by topic; nudges run them in the background, in this layer's scope. */
    const listeners = new Map<NudgeTopic, Set<Effect.Effect<void>>>()
    const background = yield* FiberSet.make()
    const runFork = yield* FiberSet.runtime(background)<never>()
    const forwarded = new WeakSet<IncomingMessage>()

    if (shared) {
      yield* Effect.orDie(cluster.register(self.id, self.url, leaseMs))
      if (identity.predecessor !== undefined && identity.predecessor !== self.id) {
        yield* Effect.orDie(cluster.adopt(identity.predecessor, self.id))
        log.info("replica took over from the previous process on its data directory", { replica: self.id, previous: identity.predecessor })
      }
      log.info("replica", { id: self.id, internal_url: self.url, lease_ms: leaseMs })
      const host = new URL(self.url).hostname
      if (host === "127.0.0.1" || host === "localhost" || host === "[::1]" || host === "0.0.0.0" || host === "[::]") {
        log.info("this replica's internal URL reaches this machine only: replicas on other machines need SLIPWAY_INTERNAL_URL (docs/replicas.md)", { internal_url: self.url })
      }
      // The lease: renewed every third of it; a replica that stops renewing is dead to the others.
      const every = Math.max(50, Math.floor(leaseMs / 3))
      const renew = Effect.gen(function* () {
        if (!(yield* cluster.heartbeat(self.id, leaseMs))) {
          // A peer took this replica for dead and removed it: record it again (its work was taken over).
          log.warn("this replica's record was gone (taken for dead): recording it again", { replica: self.id })
          yield* cluster.register(self.id, self.url, leaseMs)
        }
      }).pipe(Effect.catch((error) => Effect.sync(() => log.warn("replica heartbeat failed", { error: error.message }))))
      yield* Effect.forkScoped(renew.pipe(Effect.delay(every), Effect.repeat(Schedule.spaced(every))))
      // Rows of replicas dead for a day that own nothing any more.
      yield* Effect.forkScoped(Effect.ignore(cluster.forgetDead(86_400_000)).pipe(Effect.repeat(Schedule.spaced("1 hour"))))
    }

    const peer = (replicaId: string) =>
      Effect.map(
        Effect.orElseSucceed(cluster.replica(replicaId), () => undefined),
        (replica) => replica && { id: replica.id, url: replica.internal_url, alive: replica.alive }
      )

    const send = (target: Peer, topic: NudgeTopic) =>
      Effect.tryPromise(() =>
        fetch(`${target.url}${NUDGE_PATH}?topic=${topic}`, {
          method: "POST",
          headers: { [TOKEN_HEADER]: token!, [FORWARDED_BY_HEADER]: self.id },
          signal: AbortSignal.timeout(2000)
        }).then((response) => response.body?.cancel())
      ).pipe(Effect.catch((error) => Effect.sync(() => log.debug("nudge not delivered", { replica: target.id, topic, error: String(error.cause ?? error) }))))

    const nudge = (replicaId: string, topic: NudgeTopic) =>
      !shared || token === undefined || replicaId === self.id
        ? Effect.void
        : Effect.asVoid(FiberSet.run(background, Effect.flatMap(peer(replicaId), (target) => (target?.alive ? send(target, topic) : Effect.void))))

    const nudgeAll = (topic: NudgeTopic) =>
      !shared || token === undefined
        ? Effect.void
        : Effect.asVoid(
            FiberSet.run(
              background,
              Effect.flatMap(Effect.orElseSucceed(cluster.liveReplicas, () => []), (live) =>
                Effect.forEach(
                  live.filter((replica) => replica.id !== self.id),
                  (replica) => send({ id: replica.id, url: replica.internal_url }, topic),
                  { concurrency: "unbounded", discard: true }
                )
              )
            )
          )

    const call = (replicaId: string, method: "POST" | "DELETE", path: string, body?: unknown) =>
      Effect.gen(function* () {
        if (token === undefined) return yield* new ReplicaCallError({ message: "this replica has no SLIPWAY_INTERNAL_TOKEN to ask another one" })
        const target = yield* peer(replicaId)
        if (!target) return yield* new ReplicaCallError({ message: `replica ${replicaId} is gone` })
        if (!target.alive) return yield* new ReplicaCallError({ message: `replica ${describeReplica({ id: target.id, internal_url: target.url })} is not answering (its lease expired)` })
        return yield* Effect.tryPromise({
          try: async (signal) => {
            const response = await fetch(`${target.url}${INTERNAL_PREFIX}${path}`, {
              method,
              headers: { [TOKEN_HEADER]: token, [FORWARDED_BY_HEADER]: self.id, "content-type": "application/json" },
              ...(body === undefined ? {} : { body: JSON.stringify(body) }),
              signal: AbortSignal.any([signal, AbortSignal.timeout(120_000)])
            })
            const text = await response.text()
            return { status: response.status, body: text === "" ? undefined : (JSON.parse(text) as unknown) }
          },
          catch: (error) => new ReplicaCallError({ message: `replica ${describeReplica({ id: target.id, internal_url: target.url })} did not answer: ${String((error as Error)?.cause ?? error)}` })
        })
      })

    return Replicas.of({
      self,
      shared,
      leaseMs,
      predecessor: identity.predecessor,
      forwarder,
      peer,
      nudge,
      nudgeAll,
      call,
      listen: (topic, effect) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            let set = listeners.get(topic)
            if (!set) listeners.set(topic, (set = new Set()))
            set.add(effect)
          }),
          () => Effect.sync(() => void listeners.get(topic)?.delete(effect))
        ),
      isForwarded: (request) => forwarded.has(request),
      markForwarded: (request) => void forwarded.add(request),
      nudged: (topic) => {
        for (const effect of listeners.get(topic) ?? []) runFork(effect)
      }
    })
  })

export const layerReplicas = (options: ReplicasOptions) => Layer.effect(Replicas, makeReplicas(options))

/**
 * This process as the only replica, without joining anything (no secrets check, no record):
 * for compositions that build a controller on their own stores (tests).
 */
export const layerSingleReplica = (id = "this-process") =>
  Layer.succeed(
    Replicas,
    Replicas.of({
      self: { id, url: "http://127.0.0.1" },
      shared: false,
      leaseMs: 15_000,
      predecessor: undefined,
      forwarder: undefined,
      peer: () => Effect.succeed(undefined),
      nudge: () => Effect.void,
      nudgeAll: () => Effect.void,
      call: () => Effect.fail(new ReplicaCallError({ message: "this replica is the only one" })),
      listen: () => Effect.void,
      isForwarded: () => false,
      markForwarded: () => undefined,
      nudged: () => undefined
    })
  )
