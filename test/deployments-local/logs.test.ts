/**
 * The log store's contract, on both backends (files for a server on SQLite, PostgreSQL for servers
 * on PostgreSQL), and the reads behind the langgraph CLI's log endpoints, on the test clock.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Result, Scope } from "effect"
import { TestClock } from "effect/testing"
import { logEndpoints, LogsRequest } from "../../core/api/logs.ts"
import { decodeWithIssues } from "../../core/api/validation.ts"
import { buildLogs, deployLogs, levelOfLine, type LogLimits, type LogStore, makeFileLogStore, makePostgresLogStore, sweepOrphanLogs } from "../../server/deployments/logs/index.ts"
import { PostgresDatabase, PostgresDatabaseLive } from "../../server/store/postgres/PostgresDatabase.ts"
import { type PostgresServer, startPostgres } from "../support/postgres.ts"

const DEP = "6f1c2f0e-8a47-4c43-9c2a-4f3c2e1d0b01"
const R1 = "a1000000-0000-4000-8000-000000000001"
const R2 = "a2000000-0000-4000-8000-000000000002"

const START = Date.parse("2026-03-08T10:00:00.000Z")

type Store = LogStore["Service"]
/** Opens a store over one storage (the same files, the same database): opened twice, it is a restart, or a second replica. */
type Storage = (limits?: LogLimits) => Effect.Effect<Store, never, Scope.Scope>

/** A backend: fresh, empty storage for one test, gone with the test's scope. */
interface LogBackend {
  readonly name: string
  readonly storage: Effect.Effect<Storage, never, Scope.Scope>
}

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "slipway-logs-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const files: LogBackend = {
  name: "files",
  storage: Effect.map(tempDir, (root): Storage => (limits) => makeFileLogStore({ root, ...limits }))
}

let postgresServer: PostgresServer | undefined
/** A fresh, migrated database on the file's PostgreSQL server, closed with the scope. */
const freshDatabase = Effect.gen(function* () {
  if (postgresServer === undefined) return yield* Effect.die(new Error("the PostgreSQL server did not start (see beforeAll)"))
  const url = yield* Effect.promise(() => postgresServer!.createDatabase())
  return Context.get(yield* Effect.orDie(Layer.build(PostgresDatabaseLive({ url }))), PostgresDatabase)
})
const postgres: LogBackend = {
  name: "PostgreSQL",
  storage: Effect.map(freshDatabase, (kit): Storage => (limits) => makePostgresLogStore(kit, limits))
}

const tick = (ms = 1000) => TestClock.adjust(ms)
const now = Effect.clockWith((clock) => clock.currentTimeMillis)
const messages = (r: { readonly logs: ReadonlyArray<{ readonly message: string }> }) => r.logs.map((e) => e.message)

describe("LogsRequest (what the langgraph CLI sends)", () => {
  const decode = decodeWithIssues(LogsRequest, ["body"])
  it("accepts every body the CLI sends", () => {
    for (const body of [
      { order: "asc", limit: 50 },
      { order: "asc", limit: 50, offset: "WzEsIngiLDAsMV0" },
      { order: "desc", limit: 30 },
      { limit: 100, order: "desc", level: "ERROR", query: "boom", start_time: "2026-03-08T00:00:00Z", end_time: "2026-03-09T00:00:00Z" },
      // Python's datetime.isoformat() while following.
      { limit: 100, order: "asc", start_time: "2026-03-08T10:00:01.123000+00:00" },
      {}
    ]) {
      expect(Result.isSuccess(decode(body)), JSON.stringify(body)).toBe(true)
    }
  })
  it("rejects bad values with 422 issues", () => {
    const r = decode({ limit: 0, order: "up", level: "LOUD", start_time: "yesterday" })
    expect(Result.isFailure(r)).toBe(true)
    const locs = (Result.isFailure(r) ? r.failure : []).map((i) => i.loc.join("."))
    expect(locs).toEqual(expect.arrayContaining(["body.limit", "body.order", "body.level", "body.start_time"]))
    expect(Result.isFailure(decode({ limit: 1001 }))).toBe(true)
  })
  it("describes the three endpoints at the CLI's paths", () => {
    expect(Object.values(logEndpoints).map((e) => `${e.method} ${e.path}`)).toEqual([
      "POST /v1/projects/{deployment_id}/revisions/{revision_id}/build_logs",
      "POST /v1/projects/{deployment_id}/deploy_logs",
      "POST /v1/projects/{deployment_id}/revisions/{revision_id}/deploy_logs"
    ])
  })
})

const withStorage = <A, E>(backend: LogBackend, test: (store: Store, storage: Storage) => Effect.Effect<A, E, Scope.Scope>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const storage = yield* backend.storage
      yield* TestClock.setTime(START)
      return yield* test(yield* storage(), storage)
    })
  )

beforeAll(async () => {
  postgresServer = await startPostgres()
}, 120_000)
afterAll(() => postgresServer?.stop())

describe.each([files, postgres])("log store on $name", (backend) => {
  const withStore = <A, E>(test: (store: Store, storage: Storage) => Effect.Effect<A, E, Scope.Scope>) => withStorage(backend, test)

  it.effect("follows a build as the CLI does: asc pages with next_offset, then only new lines", () =>
    withStore((store) =>
      Effect.gen(function* () {
        for (let i = 1; i <= 7; i++) {
          yield* store.append(DEP, R1, "build", { message: `step ${i}` })
          yield* tick()
        }
        const seen: string[] = []
        let offset: string | null = null
        for (let poll = 0; poll < 4; poll++) {
          const body: LogsRequest = offset === null ? { order: "asc", limit: 3 } : { order: "asc", limit: 3, offset }
          const r = yield* buildLogs(store, DEP, R1, body)
          seen.push(...messages(r))
          offset = r.next_offset ?? offset
        }
        expect(seen).toEqual(["step 1", "step 2", "step 3", "step 4", "step 5", "step 6", "step 7"])
        // Exhausted: the same offset comes back, and the next poll sees only what was appended since.
        expect(yield* buildLogs(store, DEP, R1, { order: "asc", limit: 3, offset: offset! })).toEqual({ logs: [], next_offset: offset })
        yield* store.append(DEP, R1, "build", { message: "step 8" })
        expect(messages(yield* buildLogs(store, DEP, R1, { order: "asc", limit: 3, offset: offset! }))).toEqual(["step 8"])
      })
    )
  )

  it.effect("answers the last lines newest first (the CLI's failure tail) with the entry shape it prints", () =>
    withStore((store) =>
      Effect.gen(function* () {
        const first = yield* store.append(DEP, R1, "build", { message: "pulling image" })
        yield* tick()
        const second = yield* store.append(DEP, R1, "build", { message: "pull failed: manifest unknown", level: "ERROR" })
        const r = yield* buildLogs(store, DEP, R1, { order: "desc", limit: 30 })
        const clock = yield* now
        expect(r.logs).toEqual([
          { id: second.id, timestamp: clock, level: "ERROR", message: "pull failed: manifest unknown", revision_id: R1, stream: "system" },
          { id: first.id, timestamp: clock - 1000, level: "INFO", message: "pulling image", revision_id: R1, stream: "system" }
        ])
        expect(first.id).toMatch(new RegExp(`^${R1}:build:\\d+$`))
        expect(second.id).not.toBe(first.id)
        // Build and deploy logs are separate.
        expect((yield* deployLogs(store, DEP, { limit: 10 })).logs).toEqual([])
      })
    )
  )

  it.effect("filters by minimum level, text and time, and merges revisions for deploy logs", () =>
    withStore((store) =>
      Effect.gen(function* () {
        const t0 = yield* now
        yield* store.append(DEP, R1, "deploy", { message: "r1 started", stream: "stdout", replica: "r1-0" })
        yield* tick()
        yield* store.append(DEP, R1, "deploy", { message: "r1 Boom happened", level: "ERROR", stream: "stderr", replica: "r1-0" })
        yield* tick()
        yield* store.append(DEP, R2, "deploy", { message: "r2 warming up", level: "WARNING" })
        yield* tick()
        yield* store.append(DEP, R2, "deploy", { message: "r2 fatal boom", level: "CRITICAL" })
        const all = yield* deployLogs(store, DEP, { order: "asc", limit: 100 })
        expect(messages(all)).toEqual(["r1 started", "r1 Boom happened", "r2 warming up", "r2 fatal boom"])
        expect(all.logs[0]).toMatchObject({ stream: "stdout", replica: "r1-0", revision_id: R1 })
        expect((yield* deployLogs(store, DEP, { level: "ERROR", order: "asc" })).logs.map((e) => e.level)).toEqual(["ERROR", "CRITICAL"])
        expect(messages(yield* deployLogs(store, DEP, { query: "BOOM", order: "asc" }))).toEqual(["r1 Boom happened", "r2 fatal boom"])
        expect(messages(yield* deployLogs(store, DEP, { start_time: new Date(t0 + 1000).toISOString().replace("Z", "+00:00"), end_time: t0 + 2000, order: "asc" }))).toEqual([
          "r1 Boom happened",
          "r2 warming up"
        ])
        expect(messages(yield* deployLogs(store, DEP, { order: "asc" }, R2))).toEqual(["r2 warming up", "r2 fatal boom"])
        // Paging newest first across revisions.
        const p1 = yield* deployLogs(store, DEP, { order: "desc", limit: 3 })
        const p2 = yield* deployLogs(store, DEP, { order: "desc", limit: 3, offset: p1.next_offset })
        expect([...messages(p1), ...messages(p2)]).toEqual(["r2 fatal boom", "r2 warming up", "r1 Boom happened", "r1 started"])
        expect(new Set(all.logs.map((e) => e.id)).size).toBe(4)
        // Lines of the same millisecond keep the order they were written in.
        for (let i = 0; i < 20; i++) yield* store.append(DEP, R2, "deploy", { message: `same ms ${i}` })
        const same = messages(yield* deployLogs(store, DEP, { order: "asc", query: "same ms", limit: 100 }))
        expect(same).toEqual(Array.from({ length: 20 }, (_, i) => `same ms ${i}`))
        expect(messages(yield* deployLogs(store, DEP, { order: "desc", query: "same ms", limit: 3 }))).toEqual(["same ms 19", "same ms 18", "same ms 17"])
      })
    )
  )

  it.effect("keeps the newest lines within the bound per revision and log", () =>
    withStore((_, storage) =>
      Effect.gen(function* () {
        const small = yield* storage({ maxBytesPerLog: 8192 })
        for (let i = 1; i <= 2000; i++) yield* small.append(DEP, R1, "deploy", { message: `line ${i} ${"x".repeat(40)}` })
        // Another log of the same deployment is bounded on its own.
        yield* small.append(DEP, R2, "deploy", { message: "the other revision" })
        const kept = (yield* small.read(DEP, { kind: "deploy", revisionId: R1, order: "asc", limit: 1000 })).logs
        expect(kept.reduce((n, e) => n + Buffer.byteLength(e.message), 0)).toBeLessThanOrEqual(8192)
        // At least half the bound, in lines of at most 128 bytes as stored.
        expect(kept.length).toBeGreaterThanOrEqual(4096 / 128)
        expect(kept[kept.length - 1]!.message).toMatch(/^line 2000 /)
        // Contiguous: the newest lines, none missing in between.
        const numbers = kept.map((e) => Number(/^line (\d+)/.exec(e.message)![1]))
        expect(numbers).toEqual(numbers.map((_, i) => numbers[0]! + i))
        expect(messages(yield* small.read(DEP, { kind: "deploy", revisionId: R2 }))).toEqual(["the other revision"])
      })
    )
  )

  it.effect("continues ids after a restart instead of reusing them", () =>
    withStore((_, storage) =>
      Effect.gen(function* () {
        const first = yield* Scope.make()
        const before = yield* Scope.provide(first)(storage())
        const old = yield* before.append(DEP, R1, "deploy", { message: "before" })
        yield* Scope.close(first, Exit.void)
        const store = yield* storage()
        const e = yield* store.append(DEP, R1, "deploy", { message: "after" })
        expect(e.id).not.toBe(old.id)
        expect(messages(yield* store.read(DEP, { kind: "deploy", order: "asc" }))).toEqual(["before", "after"])
      })
    )
  )

  it.effect("pipes a real process's stdout and stderr line by line, with levels read from the lines", () =>
    withStore((store) =>
      Effect.gen(function* () {
        const child = spawn("sh", ["-c", `echo 'server listening'; echo 'ERROR: db unreachable' 1>&2; printf 'pull 10%%\\rpull 100%%\\n'; echo '{"level":"warning","event":"slow"}'; printf 'no newline at end'`])
        yield* Effect.all(
          [store.pipe(child.stdout, DEP, R1, "deploy", { stream: "stdout", replica: "r1-0" }), store.pipe(child.stderr, DEP, R1, "deploy", { stream: "stderr", replica: "r1-0" })],
          { concurrency: 2 }
        )
        const logs = (yield* store.read(DEP, { kind: "deploy", order: "asc" })).logs
        const byMessage = Object.fromEntries(logs.map((e) => [e.message, [e.stream, e.level]]))
        expect(byMessage).toEqual({
          "server listening": ["stdout", "INFO"],
          "ERROR: db unreachable": ["stderr", "ERROR"],
          "pull 10%": ["stdout", "INFO"],
          "pull 100%": ["stdout", "INFO"],
          '{"level":"warning","event":"slow"}': ["stdout", "WARNING"],
          "no newline at end": ["stdout", "INFO"]
        })
      })
    )
  )

  it.effect("keeps every line of a chatty process, in order, by the time the pipe completes", () =>
    withStore((store) =>
      Effect.gen(function* () {
        const child = spawn("sh", ["-c", "i=1; while [ $i -le 3000 ]; do echo \"line $i\"; i=$((i+1)); done"])
        yield* store.pipe(child.stdout, DEP, R1, "deploy", { stream: "stdout" })
        const read = (offset?: string | null) => store.read(DEP, { kind: "deploy", order: "asc", limit: 1000, ...(offset ? { offset } : {}) })
        const seen: Array<string> = []
        let page = yield* read()
        while (page.logs.length > 0) {
          seen.push(...messages(page))
          page = yield* read(page.next_offset)
        }
        expect(seen).toEqual(Array.from({ length: 3000 }, (_, i) => `line ${i + 1}`))
      })
    )
  )

  it.effect("stops reading a process's output when the pipe is interrupted", () =>
    withStore((store) =>
      Effect.gen(function* () {
        const child = spawn("sh", ["-c", "echo first; sleep 0.3; echo second"])
        const piping = yield* Effect.forkChild(store.pipe(child.stdout, DEP, R1, "deploy", { stream: "stdout" }))
        // Real time for the process: the first line arrives, then the pipe is interrupted.
        yield* TestClock.withLive(Effect.sleep(150))
        yield* Fiber.interrupt(piping)
        yield* Effect.callback<void>((resume) => void child.once("exit", () => resume(Effect.void)))
        expect(messages(yield* store.read(DEP, { kind: "deploy", order: "asc" }))).toEqual(["first"])
      })
    )
  )

  it.effect("cuts overlong lines and rejects unsafe ids and foreign offsets", () =>
    withStore((store) =>
      Effect.gen(function* () {
        const long = yield* store.append(DEP, R1, "deploy", { message: "é".repeat(20_000) })
        expect(Buffer.byteLength(long.message)).toBeLessThan(16 * 1024 + 32)
        expect(long.message.endsWith(" …[truncated]")).toBe(true)
        expect((yield* store.read(DEP, { kind: "deploy" })).logs[0]!.message).toBe(long.message)
        expect(yield* Effect.flip(store.append("../etc", R1, "deploy", { message: "x" }))).toMatchObject({ _tag: "LogStoreError" })
        expect(yield* Effect.flip(store.appendText(DEP, "a b", "deploy", "x", { stream: "stdout" }))).toMatchObject({ _tag: "LogStoreError" })
        expect((yield* Effect.flip(store.read(DEP, { kind: "deploy", revisionId: "a/b" }))).message).toMatch(/invalid revision id/)
        expect((yield* Effect.flip(store.read(DEP, { kind: "deploy", offset: "not-a-cursor" }))).message).toMatch(/not a next_offset/)
        expect(yield* store.read("0b0e6a8e-0000-4000-8000-000000000000", { kind: "deploy" })).toEqual({ logs: [], next_offset: null })
      })
    )
  )

  it.effect("appends text line by line, whatever the line breaks", () =>
    withStore((store) =>
      Effect.gen(function* () {
        yield* store.appendText(DEP, R1, "build", "step 1\r\nstep 2\rstep 3\n\n   \nstep 4", { stream: "stderr", replica: "builder" })
        const logs = (yield* store.read(DEP, { kind: "build", order: "asc" })).logs
        expect(messages({ logs })).toEqual(["step 1", "step 2", "step 3", "step 4"])
        expect(logs.every((e) => e.stream === "stderr" && e.replica === "builder")).toBe(true)
      })
    )
  )

  it.effect("removes a revision's or a deployment's logs", () =>
    withStore((store) =>
      Effect.gen(function* () {
        yield* store.append(DEP, R1, "deploy", { message: "a" })
        yield* store.append(DEP, R2, "deploy", { message: "b" })
        expect(yield* store.revisions(DEP)).toEqual([R1, R2])
        yield* store.removeRevision(DEP, R1)
        expect(yield* store.revisions(DEP)).toEqual([R2])
        expect(messages(yield* store.read(DEP, { kind: "deploy" }))).toEqual(["b"])
        yield* store.removeDeployment(DEP)
        expect(yield* store.revisions(DEP)).toEqual([])
        expect(yield* store.read(DEP, { kind: "deploy" })).toEqual({ logs: [], next_offset: null })
      })
    )
  )
})

describe("log store on files: what only the files do", () => {
  it.effect("rotates into one older file, so the disk holds at most the bound", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const root = yield* tempDir
        const small = yield* makeFileLogStore({ root, maxBytesPerLog: 8192 })
        for (let i = 1; i <= 2000; i++) yield* small.append(DEP, R1, "deploy", { message: `line ${i} ${"x".repeat(40)}` })
        const dir = path.join(root, DEP, R1)
        expect(fs.readdirSync(dir).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0)).toBeLessThanOrEqual(8192)
        expect(fs.existsSync(path.join(dir, "deploy.jsonl.1"))).toBe(true)
      })
    )
  )

  it.effect("numbers a log's lines from 1 and goes on after a restart; removing a deployment removes its directory", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const root = yield* tempDir
        const first = yield* Scope.make()
        const before = yield* Scope.provide(first)(makeFileLogStore({ root }))
        expect((yield* before.append(DEP, R1, "deploy", { message: "before" })).id).toBe(`${R1}:deploy:1`)
        yield* Scope.close(first, Exit.void)
        const store = yield* makeFileLogStore({ root })
        expect((yield* store.append(DEP, R1, "deploy", { message: "after" })).id).toBe(`${R1}:deploy:2`)
        yield* store.removeDeployment(DEP)
        expect(fs.existsSync(path.join(root, DEP))).toBe(false)
      })
    )
  )
})

describe("log store on PostgreSQL: what only the database does", () => {
  it.effect("two replicas on one database: each reads what the other wrote, in one order, with distinct ids", () =>
    withStorage(postgres, (a, storage) =>
      Effect.gen(function* () {
        const b = yield* storage()
        yield* a.append(DEP, R1, "build", { message: "built on a" })
        yield* tick()
        // The revision moved to b (a takeover): its deploy log goes on there.
        yield* a.append(DEP, R1, "deploy", { message: "started on a" })
        yield* tick()
        yield* b.append(DEP, R1, "deploy", { message: "started again on b" })
        const child = spawn("sh", ["-c", "echo from the process on b"])
        yield* b.pipe(child.stdout, DEP, R1, "deploy", { stream: "stdout", replica: "b-0" })
        for (const store of [a, b]) {
          expect(messages(yield* buildLogs(store, DEP, R1, {}))).toEqual(["built on a"])
          const deploy = (yield* deployLogs(store, DEP, { order: "asc" })).logs
          expect(messages({ logs: deploy })).toEqual(["started on a", "started again on b", "from the process on b"])
          expect(new Set(deploy.map((e) => e.id)).size).toBe(3)
        }
      })
    )
  )

  it.effect("sweeps the lines of deployments that no longer exist, and only those", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const kit = yield* freshDatabase
        const store = yield* makePostgresLogStore(kit)
        const LIVE = "6f1c2f0e-8a47-4c43-9c2a-4f3c2e1d0b02"
        yield* Effect.orDie(
          kit.client.execute(
            `INSERT INTO organizations (id, name, created_at) VALUES ('o', 'o', now());
             INSERT INTO tenants (id, organization_id, name, created_at) VALUES ('t', 'o', 't', now());
             INSERT INTO deployments (id, tenant_id, name, source, source_config, source_revision_config, secrets, status, created_at, updated_at)
               VALUES ('${LIVE}', 't', 'live', 'external_container', '{}', '{}', '[]', 'READY', now(), now())`
          )
        )
        yield* store.append(LIVE, R1, "deploy", { message: "still deployed" })
        yield* store.append(DEP, R1, "deploy", { message: "deleted while its replica was down" })
        yield* store.append(DEP, R2, "build", { message: "deleted too" })
        expect(yield* sweepOrphanLogs(kit)).toBe(2)
        expect(yield* store.revisions(DEP)).toEqual([])
        expect(messages(yield* store.read(LIVE, { kind: "deploy" }))).toEqual(["still deployed"])
      })
    )
  )

  it.effect("a process faster than the database: lines past the queue's cap are dropped and counted in its log, the rest kept in order", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const kit = yield* freshDatabase
        const store = yield* makePostgresLogStore(kit, { maxBytesPerLog: 256 << 20 })
        const total = 200_000
        const child = spawn("seq", ["1", String(total)])
        yield* store.pipe(child.stdout, DEP, R1, "deploy", { stream: "stdout" })
        const rows = yield* Effect.orDie(kit.client.query<{ message: string; level: number }>("SELECT message, level FROM deployment_logs ORDER BY seq"))
        const notices = rows.filter((row) => / lines? of output dropped: the log database did not keep up$/.test(row.message))
        const kept = rows.filter((row) => /^\d+$/.test(row.message)).map((row) => Number(row.message))
        const droppedCount = notices.reduce((n, row) => n + Number(/^(\d+)/.exec(row.message)![1]), 0)
        // A burst of 200,000 lines outruns the inserts: some are dropped, and every line is either kept or counted.
        expect(droppedCount).toBeGreaterThan(0)
        expect(kept.length + droppedCount).toBe(total)
        expect(notices.every((row) => row.level === 30)).toBe(true)
        // What is kept is in the process's order, with no line twice.
        expect(kept.every((n, i) => i === 0 || n > kept[i - 1]!)).toBe(true)
      })
    ),
  { timeout: 60_000 }
  )

  it.effect("stores a line with a NUL (PostgreSQL's text has none: it becomes U+FFFD)", () =>
    withStorage(postgres, (store) =>
      Effect.gen(function* () {
        yield* store.append(DEP, R1, "deploy", { message: "before\u0000after" })
        expect(messages(yield* store.read(DEP, { kind: "deploy" }))).toEqual(["before\uFFFDafter"])
      })
    )
  )
})

describe("levels", () => {
  it("reads levels from common line formats", () => {
    expect(levelOfLine("WARNING: low disk")).toBe("WARNING")
    expect(levelOfLine("[error] x")).toBe("ERROR")
    expect(levelOfLine('{"levelname": "CRITICAL"}')).toBe("CRITICAL")
    expect(levelOfLine("ts=1 level=debug msg=x")).toBe("DEBUG")
    expect(levelOfLine("information only")).toBeUndefined()
  })
})
