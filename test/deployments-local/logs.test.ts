/** The on-disk log store and the handlers of the langgraph CLI's log endpoints. */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Result } from "effect"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { logEndpoints, LogsRequest } from "../../core/api/logs.ts"
import { decodeWithIssues } from "../../core/api/validation.ts"
import { buildLogs, deployLogs, levelOfLine, LogStoreError, makeLogStore, type LogStore } from "../../server/deployments/local/logs.ts"

const DEP = "6f1c2f0e-8a47-4c43-9c2a-4f3c2e1d0b01"
const R1 = "a1000000-0000-4000-8000-000000000001"
const R2 = "a2000000-0000-4000-8000-000000000002"

let root: string
let clock: number
let store: LogStore

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "slipway-logs-"))
  clock = Date.parse("2026-03-08T10:00:00.000Z")
  store = makeLogStore({ root, now: () => clock })
})

afterEach(() => {
  store.close()
  fs.rmSync(root, { recursive: true, force: true })
})

const tick = (ms = 1000) => (clock += ms)

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
  it("follows a build as the CLI does: asc pages with next_offset, then only new lines", () => {
    for (let i = 1; i <= 7; i++) {
      store.append(DEP, R1, "build", { message: `step ${i}` })
      tick()
    }
    const seen: string[] = []
    let offset: string | null = null
    for (let poll = 0; poll < 4; poll++) {
      const body = offset === null ? { order: "asc" as const, limit: 3 } : { order: "asc" as const, limit: 3, offset }
      const r = buildLogs(store, DEP, R1, body)
      seen.push(...r.logs.map((e) => e.message))
      offset = r.next_offset ?? offset
    }
    expect(seen).toEqual(["step 1", "step 2", "step 3", "step 4", "step 5", "step 6", "step 7"])
    // Exhausted: the same offset comes back, and the next poll sees only what was appended since.
    expect(buildLogs(store, DEP, R1, { order: "asc", limit: 3, offset: offset! })).toEqual({ logs: [], next_offset: offset })
    store.append(DEP, R1, "build", { message: "step 8" })
    expect(buildLogs(store, DEP, R1, { order: "asc", limit: 3, offset: offset! }).logs.map((e) => e.message)).toEqual(["step 8"])
  })

  it("answers the last lines newest first (the CLI's failure tail) with the entry shape it prints", () => {
    store.append(DEP, R1, "build", { message: "pulling image" })
    tick()
    store.append(DEP, R1, "build", { message: "pull failed: manifest unknown", level: "ERROR" })
    const r = buildLogs(store, DEP, R1, { order: "desc", limit: 30 })
    expect(r.logs).toEqual([
      { id: `${R1}:build:2`, timestamp: clock, level: "ERROR", message: "pull failed: manifest unknown", revision_id: R1, stream: "system" },
      { id: `${R1}:build:1`, timestamp: clock - 1000, level: "INFO", message: "pulling image", revision_id: R1, stream: "system" }
    ])
    // Build and deploy logs are separate.
    expect(deployLogs(store, DEP, { limit: 10 }).logs).toEqual([])
  })

  it("filters by minimum level, text and time, and merges revisions for deploy logs", () => {
    const t0 = clock
    store.append(DEP, R1, "deploy", { message: "r1 started", stream: "stdout", replica: "r1-0" })
    tick()
    store.append(DEP, R1, "deploy", { message: "r1 Boom happened", level: "ERROR", stream: "stderr", replica: "r1-0" })
    tick()
    store.append(DEP, R2, "deploy", { message: "r2 warming up", level: "WARNING" })
    tick()
    store.append(DEP, R2, "deploy", { message: "r2 fatal boom", level: "CRITICAL" })
    const all = deployLogs(store, DEP, { order: "asc", limit: 100 })
    expect(all.logs.map((e) => e.message)).toEqual(["r1 started", "r1 Boom happened", "r2 warming up", "r2 fatal boom"])
    expect(all.logs[0]).toMatchObject({ stream: "stdout", replica: "r1-0", revision_id: R1 })
    expect(deployLogs(store, DEP, { level: "ERROR", order: "asc" }).logs.map((e) => e.level)).toEqual(["ERROR", "CRITICAL"])
    expect(deployLogs(store, DEP, { query: "BOOM", order: "asc" }).logs.map((e) => e.message)).toEqual(["r1 Boom happened", "r2 fatal boom"])
    expect(deployLogs(store, DEP, { start_time: new Date(t0 + 1000).toISOString().replace("Z", "+00:00"), end_time: t0 + 2000, order: "asc" }).logs.map((e) => e.message)).toEqual([
      "r1 Boom happened",
      "r2 warming up"
    ])
    expect(deployLogs(store, DEP, { order: "asc" }, R2).logs.map((e) => e.message)).toEqual(["r2 warming up", "r2 fatal boom"])
    // Paging newest first across revisions.
    const p1 = deployLogs(store, DEP, { order: "desc", limit: 3 })
    const p2 = deployLogs(store, DEP, { order: "desc", limit: 3, offset: p1.next_offset })
    expect([...p1.logs, ...p2.logs].map((e) => e.message)).toEqual(["r2 fatal boom", "r2 warming up", "r1 Boom happened", "r1 started"])
    expect(new Set(all.logs.map((e) => e.id)).size).toBe(4)
  })

  it("keeps the newest bytes within the bound per revision and log", () => {
    const small = makeLogStore({ root: path.join(root, "small"), maxBytesPerLog: 8192, now: () => clock })
    for (let i = 1; i <= 2000; i++) small.append(DEP, R1, "deploy", { message: `line ${i} ${"x".repeat(40)}` })
    const dir = path.join(root, "small", DEP, R1)
    const bytes = fs.readdirSync(dir).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0)
    expect(bytes).toBeLessThanOrEqual(8192)
    const kept = small.read(DEP, { kind: "deploy", order: "asc", limit: 1000 }).logs
    expect(kept.length).toBeGreaterThan(50)
    expect(kept[kept.length - 1]!.message).toMatch(/^line 2000 /)
    // Contiguous: the newest lines, none missing in between.
    const numbers = kept.map((e) => Number(/^line (\d+)/.exec(e.message)![1]))
    expect(numbers).toEqual(numbers.map((_, i) => numbers[0]! + i))
    expect(fs.existsSync(path.join(dir, "deploy.jsonl.1"))).toBe(true)
    small.close()
  })

  it("continues ids after a restart instead of reusing them", () => {
    store.append(DEP, R1, "deploy", { message: "before" })
    store.close()
    store = makeLogStore({ root, now: () => clock })
    const e = store.append(DEP, R1, "deploy", { message: "after" })
    expect(e.id).toBe(`${R1}:deploy:2`)
    expect(store.read(DEP, { kind: "deploy", order: "asc" }).logs.map((x) => x.message)).toEqual(["before", "after"])
  })

  it("pipes a real process's stdout and stderr line by line, with levels read from the lines", async () => {
    const child = spawn("sh", ["-c", `echo 'server listening'; echo 'ERROR: db unreachable' 1>&2; printf 'pull 10%%\\rpull 100%%\\n'; echo '{"level":"warning","event":"slow"}'; printf 'no newline at end'`])
    await Promise.all([
      store.pipe(child.stdout, DEP, R1, "deploy", { stream: "stdout", replica: "r1-0" }),
      store.pipe(child.stderr, DEP, R1, "deploy", { stream: "stderr", replica: "r1-0" })
    ])
    const logs = store.read(DEP, { kind: "deploy", order: "asc" }).logs
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

  it("delivers live entries to subscribers", () => {
    const got: string[] = []
    const off = store.subscribe(DEP, (e, kind) => got.push(`${kind}:${e.message}`))
    store.append(DEP, R1, "build", { message: "a" })
    store.appendText(DEP, R2, "deploy", "b\nc\n", { stream: "stdout" })
    off()
    store.append(DEP, R1, "build", { message: "d" })
    expect(got).toEqual(["build:a", "deploy:b", "deploy:c"])
  })

  it("cuts overlong lines and rejects unsafe ids and foreign offsets", () => {
    const long = store.append(DEP, R1, "deploy", { message: "é".repeat(20_000) })
    expect(Buffer.byteLength(long.message)).toBeLessThan(16 * 1024 + 32)
    expect(long.message.endsWith(" …[truncated]")).toBe(true)
    expect(() => store.append("../etc", R1, "deploy", { message: "x" })).toThrow(LogStoreError)
    expect(() => store.read(DEP, { kind: "deploy", revisionId: "a/b" })).toThrow(/invalid revision id/)
    expect(() => store.read(DEP, { kind: "deploy", offset: "not-a-cursor" })).toThrow(/not a next_offset/)
    expect(store.read("0b0e6a8e-0000-4000-8000-000000000000", { kind: "deploy" })).toEqual({ logs: [], next_offset: null })
  })

  it("reads levels from common line formats", () => {
    expect(levelOfLine("WARNING: low disk")).toBe("WARNING")
    expect(levelOfLine("[error] x")).toBe("ERROR")
    expect(levelOfLine('{"levelname": "CRITICAL"}')).toBe("CRITICAL")
    expect(levelOfLine("ts=1 level=debug msg=x")).toBe("DEBUG")
    expect(levelOfLine("information only")).toBeUndefined()
  })

  it("removes a revision's or a deployment's logs", () => {
    store.append(DEP, R1, "deploy", { message: "a" })
    store.append(DEP, R2, "deploy", { message: "b" })
    store.removeRevision(DEP, R1)
    expect(store.revisions(DEP)).toEqual([R2])
    store.removeDeployment(DEP)
    expect(store.revisions(DEP)).toEqual([])
    expect(fs.existsSync(path.join(root, DEP))).toBe(false)
  })
})
