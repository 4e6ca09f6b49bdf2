/** The on-disk log store and the reads behind the langgraph CLI's log endpoints, on the test clock. */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Result, Scope } from "effect"
import { TestClock } from "effect/testing"
import { logEndpoints, LogsRequest } from "../../core/api/logs.ts"
import { decodeWithIssues } from "../../core/api/validation.ts"
import { buildLogs, deployLogs, levelOfLine, type LogStore, makeLogStore } from "../../server/deployments/local/logs.ts"

const DEP = "6f1c2f0e-8a47-4c43-9c2a-4f3c2e1d0b01"
const R1 = "a1000000-0000-4000-8000-000000000001"
const R2 = "a2000000-0000-4000-8000-000000000002"

const START = Date.parse("2026-03-08T10:00:00.000Z")

/** A store over a fresh directory, the test clock at START; the directory goes with the test. */
const withStore = <A, E>(test: (store: LogStore["Service"], root: string) => Effect.Effect<A, E, Scope.Scope>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const root = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "slipway-logs-"))),
        (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
      )
      yield* TestClock.setTime(START)
      return yield* test(yield* makeLogStore({ root }), root)
    })
  )

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

describe("log store", () => {
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
        yield* store.append(DEP, R1, "build", { message: "pulling image" })
        yield* tick()
        yield* store.append(DEP, R1, "build", { message: "pull failed: manifest unknown", level: "ERROR" })
        const r = yield* buildLogs(store, DEP, R1, { order: "desc", limit: 30 })
        const clock = yield* now
        expect(r.logs).toEqual([
          { id: `${R1}:build:2`, timestamp: clock, level: "ERROR", message: "pull failed: manifest unknown", revision_id: R1, stream: "system" },
          { id: `${R1}:build:1`, timestamp: clock - 1000, level: "INFO", message: "pulling image", revision_id: R1, stream: "system" }
        ])
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
      })
    )
  )

  it.effect("keeps the newest bytes within the bound per revision and log", () =>
    withStore((_, root) =>
      Effect.gen(function* () {
        const small = yield* makeLogStore({ root: path.join(root, "small"), maxBytesPerLog: 8192 })
        for (let i = 1; i <= 2000; i++) yield* small.append(DEP, R1, "deploy", { message: `line ${i} ${"x".repeat(40)}` })
        const dir = path.join(root, "small", DEP, R1)
        const bytes = fs.readdirSync(dir).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0)
        expect(bytes).toBeLessThanOrEqual(8192)
        const kept = (yield* small.read(DEP, { kind: "deploy", order: "asc", limit: 1000 })).logs
        expect(kept.length).toBeGreaterThan(50)
        expect(kept[kept.length - 1]!.message).toMatch(/^line 2000 /)
        // Contiguous: the newest lines, none missing in between.
        const numbers = kept.map((e) => Number(/^line (\d+)/.exec(e.message)![1]))
        expect(numbers).toEqual(numbers.map((_, i) => numbers[0]! + i))
        expect(fs.existsSync(path.join(dir, "deploy.jsonl.1"))).toBe(true)
      })
    )
  )

  it.effect("continues ids after a restart instead of reusing them", () =>
    withStore((_, root) =>
      Effect.gen(function* () {
        const first = yield* Scope.make()
        const before = yield* Scope.provide(first)(makeLogStore({ root }))
        yield* before.append(DEP, R1, "deploy", { message: "before" })
        yield* Scope.close(first, Exit.void)
        const store = yield* makeLogStore({ root })
        const e = yield* store.append(DEP, R1, "deploy", { message: "after" })
        expect(e.id).toBe(`${R1}:deploy:2`)
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
        expect(yield* Effect.flip(store.append("../etc", R1, "deploy", { message: "x" }))).toMatchObject({ _tag: "LogStoreError" })
        expect((yield* Effect.flip(store.read(DEP, { kind: "deploy", revisionId: "a/b" }))).message).toMatch(/invalid revision id/)
        expect((yield* Effect.flip(store.read(DEP, { kind: "deploy", offset: "not-a-cursor" }))).message).toMatch(/not a next_offset/)
        expect(yield* store.read("0b0e6a8e-0000-4000-8000-000000000000", { kind: "deploy" })).toEqual({ logs: [], next_offset: null })
      })
    )
  )

  it("reads levels from common line formats", () => {
    expect(levelOfLine("WARNING: low disk")).toBe("WARNING")
    expect(levelOfLine("[error] x")).toBe("ERROR")
    expect(levelOfLine('{"levelname": "CRITICAL"}')).toBe("CRITICAL")
    expect(levelOfLine("ts=1 level=debug msg=x")).toBe("DEBUG")
    expect(levelOfLine("information only")).toBeUndefined()
  })

  it.effect("removes a revision's or a deployment's logs", () =>
    withStore((store, root) =>
      Effect.gen(function* () {
        yield* store.append(DEP, R1, "deploy", { message: "a" })
        yield* store.append(DEP, R2, "deploy", { message: "b" })
        yield* store.removeRevision(DEP, R1)
        expect(yield* store.revisions(DEP)).toEqual([R2])
        yield* store.removeDeployment(DEP)
        expect(yield* store.revisions(DEP)).toEqual([])
        expect(fs.existsSync(path.join(root, DEP))).toBe(false)
      })
    )
  )
})
