/**
 * A Redis per deployment: one `redis-server` (Debian package) run as the `redis` system user on a
 * loopback port with `requirepass`, `maxmemory` (`redis_memory_mb`) and a `maxmemory-policy`,
 * its RDB snapshots, log and pid file in `<deployment dir>/redis/`. The server daemonizes
 * (it is not Slipway's child: a crash of Slipway leaves it running and `ensure` re-attaches to
 * it); its pid file finds it again even when the state that named it was never written.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Data, type Duration, Effect, Schedule } from "effect"
import { PortAllocator } from "../../runtime/PortAllocator.ts"
import { ProcessRunner } from "../../runtime/ProcessRunner.ts"
import { assertReachable, DatabaseProvisionError, portFree, processAlive, requireFile, runAs, systemUser, writeFileAtomic } from "./daemons.ts"
import { redisAnswers } from "./resp.ts"

export interface RedisOptions {
  /** Default `/usr/bin/redis-server`. */
  readonly serverPath?: string
  /** Default `volatile-lru`: evict only keys that expire, never silently drop the rest. */
  readonly maxmemoryPolicy?: string
  readonly log: (message: string) => void
}

/** A deployment's Redis as recorded in its state file. */
export interface RedisState {
  readonly port: number
  readonly password: string
  readonly memoryMb: number
  readonly pid: number | null
}

export interface RedisServers {
  /** Re-attaches to the Redis in `dir` when it runs and answers, else starts it; answers the state to record. */
  readonly ensure: (dir: string, state: RedisState) => Effect.Effect<RedisState, DatabaseProvisionError>
  /** Stops it (SIGTERM: it saves its snapshot; SIGKILL after 10 s). */
  readonly stop: (dir: string, state: RedisState) => Effect.Effect<void>
}

const NAME = "redis-server"

/** Another program took the port between the check and the start. */
class PortTaken extends Data.TaggedError("PortTaken")<{ readonly message: string }> {}
/** How long a started server has to answer. */
const START_TIMEOUT = "10 seconds"

const conf = (dir: string, port: number, password: string, memoryMb: number, policy: string): string =>
  [
    "# Written by Slipway for one deployment; rewritten on every start.",
    "bind 127.0.0.1",
    "protected-mode yes",
    `port ${port}`,
    `requirepass ${password}`,
    `maxmemory ${memoryMb}mb`,
    `maxmemory-policy ${policy}`,
    `dir ${dir}`,
    "dbfilename dump.rdb",
    "save 300 1 60 1000",
    "appendonly no",
    "daemonize yes",
    `pidfile ${path.join(dir, "redis.pid")}`,
    `logfile ${path.join(dir, "redis.log")}`,
    "databases 16",
    "enable-protected-configs no",
    "enable-debug-command no",
    "enable-module-command no",
    ""
  ].join("\n")

const readPid = (dir: string): number | null => {
  try {
    const pid = Number(fs.readFileSync(path.join(dir, "redis.pid"), "utf8").trim())
    return Number.isInteger(pid) && pid > 0 ? pid : null
  } catch {
    return null
  }
}

const logTail = (dir: string): string => {
  try {
    return fs.readFileSync(path.join(dir, "redis.log"), "utf8").split("\n").slice(-6).join("\n").trim()
  } catch {
    return ""
  }
}

/** Polls a process until it is gone, for at most `within`; answers whether it is gone. */
const gone = (pid: number, within: Duration.Input) =>
  Effect.sync(() => !processAlive(pid, NAME)).pipe(
    Effect.repeat({ schedule: Schedule.spaced("25 millis"), until: (isGone) => isGone }),
    Effect.timeoutOption(within),
    Effect.map((result) => result._tag === "Some")
  )

const signal = (pid: number, name: NodeJS.Signals) =>
  Effect.sync(() => {
    try {
      process.kill(pid, name)
    } catch {
      /* already gone */
    }
  })

export const makeRedisServers = (options: RedisOptions): Effect.Effect<RedisServers, never, ProcessRunner | PortAllocator> =>
  Effect.gen(function* () {
    const runner = yield* ProcessRunner
    const ports = yield* PortAllocator
    const server = options.serverPath ?? "/usr/bin/redis-server"
    const policy = options.maxmemoryPolicy ?? "volatile-lru"

    const stop = (dir: string, state: RedisState) =>
      Effect.gen(function* () {
        const pid = readPid(dir) ?? state.pid
        if (pid === null || !processAlive(pid, NAME)) return
        yield* signal(pid, "SIGTERM")
        if (yield* gone(pid, "10 seconds")) return
        yield* signal(pid, "SIGKILL")
        yield* gone(pid, "2 seconds")
      })

    /** One start on `port`: "ready" once it answers, "in-use" when the port was taken meanwhile. */
    const startOn = (dir: string, state: RedisState, port: number) =>
      Effect.gen(function* () {
        const user = yield* systemUser("redis", NAME)
        const file = path.join(dir, "redis.conf")
        writeFileAtomic(file, conf(dir, port, state.password, state.memoryMb, policy))
        fs.chownSync(file, user.uid, user.gid)
        fs.rmSync(path.join(dir, "redis.pid"), { force: true })
        fs.writeFileSync(path.join(dir, "redis.log"), "", { mode: 0o600 })
        fs.chownSync(path.join(dir, "redis.log"), user.uid, user.gid)
        yield* runAs(runner, "redis", [server, file], NAME, 30_000)
        // It answers once it listens; it logs "aborting" when it cannot (a port taken meanwhile).
        const probe = Effect.gen(function* () {
          if (yield* redisAnswers(port, state.password)) return readPid(dir) === null ? ("starting" as const) : ("ready" as const)
          return /aborting|Fatal/i.test(logTail(dir)) ? ("failed" as const) : ("starting" as const)
        })
        const outcome = yield* probe.pipe(Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: (s) => s !== "starting" }), Effect.timeoutOption(START_TIMEOUT))
        if (outcome._tag === "Some" && outcome.value === "ready") return { ...state, port, pid: readPid(dir) }
        const tail = logTail(dir)
        // What may still run of it (no answer in time) is stopped before another try.
        const pid = readPid(dir)
        if (pid !== null) yield* stop(dir, { ...state, pid })
        const message = `${NAME} in ${dir} did not start: ${tail || "no output"}`
        return yield* Effect.fail(/Address already in use/i.test(tail) ? new PortTaken({ message }) : new DatabaseProvisionError({ message }))
      })

    const start = (dir: string, state: RedisState) =>
      Effect.gen(function* () {
        yield* requireFile(server, NAME)
        const user = yield* systemUser("redis", NAME)
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
        fs.chownSync(dir, user.uid, user.gid)
        fs.chmodSync(dir, 0o700)
        yield* assertReachable(dir, user)
        let attempt = 0
        // The recorded port first (URIs handed out stay valid), then free ones: a port taken
        // between the check and the start is tried again on another, up to three times.
        const once = Effect.scoped(
          Effect.gen(function* () {
            const port = attempt++ === 0 && (yield* portFree(state.port)) ? state.port : yield* Effect.orDie(ports.reserve())
            return yield* startOn(dir, state, port)
          })
        )
        const next = yield* Effect.retry(once, { times: 2, while: (e) => e._tag === "PortTaken" }).pipe(
          Effect.catchTag("PortTaken", (e) => Effect.fail(new DatabaseProvisionError({ message: e.message })))
        )
        options.log(`redis ${path.basename(path.dirname(dir))}: started on 127.0.0.1:${next.port} (pid ${next.pid})`)
        return next
      })

    const ensure = (dir: string, state: RedisState) =>
      Effect.gen(function* () {
        const pid = readPid(dir) ?? state.pid
        if (pid !== null && processAlive(pid, NAME)) {
          if (yield* redisAnswers(state.port, state.password)) return { ...state, pid }
          yield* stop(dir, { ...state, pid })
        }
        return yield* start(dir, state)
      })

    return { ensure, stop }
  })
