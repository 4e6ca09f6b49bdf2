/**
 * Commands running in one box: each is a session keyed by its `command_id`, holding the process,
 * a bounded output ring per stream, and the timers the protocol defines (command timeout, idle
 * timeout with no client attached, session ttl after exit). WebSocket clients and the HTTP execute
 * endpoint are both just listeners on a session.
 */
import { randomUUID } from "node:crypto"
import { constants } from "node:os"
import type { Readable } from "node:stream"
import { execShellIn, shellLaunchArgv, type BoxExec, type BoxCommand } from "./box.ts"
import { DataplaneError } from "./errors.ts"
import { OutputLog, splitUtf8, type OutputChunk } from "./output.ts"
import type { CommandSpec } from "./requests.ts"

export interface CommandLimits {
  /** Bytes of output retained per stream per command for replay (default 1 MiB). */
  readonly ringBytes: number
  /** Live and retained commands per box (default 64). */
  readonly maxSessions: number
  /** Largest `data` in one frame, in bytes (default 64 KiB). */
  readonly maxFrameBytes: number
  /** Expired command ids remembered per box, to answer SessionExpired rather than CommandNotFound (default 1024). */
  readonly maxExpiredIds: number
  /** Upper bound for timeout, idle timeout and ttl, in seconds (default 86400). */
  readonly maxSeconds: number
  /** How long to wait for a command's pipes to drain after it exited, in ms (default 500). */
  readonly drainGraceMs: number
}

export type SessionEvent =
  | { readonly type: "stdout" | "stderr"; readonly chunk: OutputChunk }
  | { readonly type: "exit"; readonly exitCode: number }
  | { readonly type: "error"; readonly errorType: string; readonly message: string }

export type Listener = (event: SessionEvent) => void

export interface StartOptions {
  readonly spec: CommandSpec
  readonly commandId?: string | undefined
  readonly timeoutSeconds?: number | undefined
  readonly idleTimeoutSeconds?: number | undefined
  readonly ttlSeconds?: number | undefined
  readonly killOnDisconnect?: boolean
  readonly closeStdin?: boolean
}

/** The busybox launcher's argv for a command (boxes without `execShell`; see runtime/BoxProcess.ts). */
export const launchArgv = (spec: CommandSpec): ReadonlyArray<string> => shellLaunchArgv(spec)

export const exitCodeOf = (code: number | null, signal: NodeJS.Signals | null): number =>
  code ?? (signal ? 128 + ((constants.signals as Record<string, number>)[signal] ?? 0) : -1)

export class CommandSession {
  readonly id: string
  /** Resolves once the process's pid is known (the box's exec helper reports it a moment after the start). */
  readonly started: Promise<void>
  readonly stdout: OutputLog
  readonly stderr: OutputLog
  readonly process: BoxCommand
  /** Set once the process exited and its output drained. */
  final: SessionEvent | undefined
  private readonly listeners = new Set<Listener>()
  private readonly timers: Record<"timeout" | "idle" | "ttl", NodeJS.Timeout | undefined> = { timeout: undefined, idle: undefined, ttl: undefined }
  private reason: "timeout" | "idle" | "kill" | "shutdown" | undefined
  private disposed = false
  /** Output streams not yet ended (counted as their events fire, before any promise reaction). */
  private openStreams = 2
  private readonly options: StartOptions
  private readonly onExpire: (session: CommandSession) => void
  private readonly limits: CommandLimits

  constructor(id: string, process: BoxCommand, options: StartOptions, limits: CommandLimits, onExpire: (session: CommandSession) => void) {
    this.id = id
    this.process = process
    this.started = process.started
    this.options = options
    this.limits = limits
    this.onExpire = onExpire
    this.stdout = new OutputLog(limits.ringBytes)
    this.stderr = new OutputLog(limits.ringBytes)
    process.stdin.on("error", () => {}) // a command that exits before reading its stdin: EPIPE is expected
    if (options.closeStdin) process.stdin.end()
    const drained = Promise.all([this.pipe(process.stdout, "stdout"), this.pipe(process.stderr, "stderr")])
    if (options.timeoutSeconds !== undefined) {
      this.timers.timeout = setTimeout(() => this.kill("timeout"), options.timeoutSeconds * 1000)
    }
    void process.exited.then(async ({ code, signal }) => {
      // Output still in the pipes is delivered; a background process holding them open is not waited for.
      // Usually both streams have ended by now (the exec helper sends their ends with the exit): no timer then.
      if (this.openStreams > 0) {
        let grace: NodeJS.Timeout | undefined
        await Promise.race([drained, new Promise<void>((resolve) => (grace = setTimeout(resolve, limits.drainGraceMs)))])
        clearTimeout(grace)
      }
      process.stdout.destroy()
      process.stderr.destroy()
      this.flush("stdout")
      this.flush("stderr")
      this.finish(
        this.reason === "timeout"
          ? { type: "error", errorType: "CommandTimeout", message: `Command timed out after ${options.timeoutSeconds} seconds` }
          : { type: "exit", exitCode: exitCodeOf(code, signal) }
      )
    })
  }

  get pid(): number {
    return this.process.pid
  }

  get running(): boolean {
    return this.final === undefined
  }

  private pipe(stream: Readable, name: "stdout" | "stderr"): Promise<void> {
    const log = name === "stdout" ? this.stdout : this.stderr
    return new Promise((resolve) => {
      let done = false
      const end = () => {
        if (done) return
        done = true
        this.openStreams--
        resolve()
      }
      stream.on("data", (raw: Buffer) => {
        const chunk = log.append(raw)
        if (chunk) this.emit({ type: name, chunk })
      })
      stream.on("end", end)
      stream.on("close", end)
      stream.on("error", end)
    })
  }

  private flush(name: "stdout" | "stderr"): void {
    const chunk = (name === "stdout" ? this.stdout : this.stderr).finish()
    if (chunk) this.emit({ type: name, chunk })
  }

  private emit(event: SessionEvent): void {
    for (const listener of [...this.listeners]) listener(event)
  }

  private finish(event: SessionEvent): void {
    this.final = event
    clearTimeout(this.timers.timeout)
    clearTimeout(this.timers.idle)
    this.emit(event)
    this.listeners.clear()
    const ttl = this.options.ttlSeconds
    if (ttl === undefined || this.disposed) return
    // ttl 0 (every HTTP execute): forgotten at once, without a timer and a wake-up of its own.
    if (ttl === 0) this.onExpire(this)
    else this.timers.ttl = setTimeout(() => this.onExpire(this), ttl * 1000).unref()
  }

  /**
   * Attaches a listener: replays retained output from the offsets (or from the earliest retained
   * byte), then the final event if the command is done, else live events. Synchronous, so nothing
   * is lost or repeated between replay and live output.
   */
  attach(listener: Listener, stdoutOffset = 0, stderrOffset = 0): () => void {
    for (const [type, log, offset] of [["stdout", this.stdout, stdoutOffset], ["stderr", this.stderr, stderrOffset]] as const) {
      for (const chunk of log.readFrom(offset, this.limits.maxFrameBytes)) listener({ type, chunk })
    }
    if (this.final) {
      listener(this.final)
      return () => {}
    }
    this.listeners.add(listener)
    clearTimeout(this.timers.idle)
    this.timers.idle = undefined
    return () => this.detach(listener)
  }

  private detach(listener: Listener): void {
    if (!this.listeners.delete(listener) || this.listeners.size > 0 || !this.running) return
    if (this.options.killOnDisconnect) return this.kill("kill")
    const idle = this.options.idleTimeoutSeconds
    if (idle !== undefined) this.timers.idle = setTimeout(() => this.kill("idle"), idle * 1000)
  }

  write(data: string): void {
    if (this.running && this.process.stdin.writable) this.process.stdin.write(data)
  }

  closeStdin(): void {
    if (this.process.stdin.writable) this.process.stdin.end()
  }

  kill(reason: "timeout" | "idle" | "kill" | "shutdown"): void {
    if (!this.running) return
    this.reason ??= reason
    try {
      this.process.kill("SIGKILL")
    } catch {
      // already gone
    }
  }

  dispose(): void {
    this.disposed = true
    this.kill("shutdown")
    clearTimeout(this.timers.ttl)
    clearTimeout(this.timers.idle)
  }
}

/** Frames one event for the wire, splitting output at character boundaries. */
export const framesOf = (event: SessionEvent, maxFrameBytes: number): Array<Record<string, unknown>> => {
  switch (event.type) {
    case "stdout":
    case "stderr":
      return splitUtf8(event.chunk, maxFrameBytes).map((piece) => ({ type: event.type, data: piece.data.toString("utf8"), offset: piece.offset }))
    case "exit":
      return [{ type: "exit", exit_code: event.exitCode }]
    case "error":
      return [{ type: "error", error_type: event.errorType, error: event.message }]
  }
}

const commandIdPattern = /^[A-Za-z0-9_.:-]{1,128}$/

/** The commands of one box. */
export class CommandRegistry {
  private readonly sessions = new Map<string, CommandSession>()
  private readonly expired = new Map<string, true>()
  private box: BoxExec
  private readonly limits: CommandLimits
  closed = false

  constructor(box: BoxExec, limits: CommandLimits) {
    this.box = box
    this.limits = limits
  }

  /** New commands run in the box most recently handed over (a caller may wrap the same box anew per request). */
  useBox(box: BoxExec): void {
    this.box = box
  }

  get size(): number {
    return this.sessions.size
  }

  /** Get-or-create on `commandId` (execute is idempotent); `SessionExpired` if that command's session is gone. */
  start(options: StartOptions): { session: CommandSession; created: boolean } {
    if (this.closed) throw new DataplaneError(503, "ServiceUnavailable", "The sandbox is shutting down")
    const wanted = options.commandId
    if (wanted !== undefined) {
      if (!commandIdPattern.test(wanted)) throw new DataplaneError(422, "ValidationError", "command_id must be 1-128 characters of [A-Za-z0-9_.:-]")
      const existing = this.sessions.get(wanted)
      if (existing) return { session: existing, created: false }
      if (this.expired.has(wanted)) throw new DataplaneError(410, "SessionExpired", `Session expired: ${wanted}`)
    }
    this.makeRoom()
    const id = wanted ?? randomUUID().replaceAll("-", "")
    const process = execShellIn(this.box, options.spec, { env: options.spec.env })
    const session = new CommandSession(id, process, options, this.limits, (s) => this.expire(s))
    this.sessions.set(id, session)
    return { session, created: true }
  }

  /** The session for a reconnect, or the protocol's error for a gone or unknown one. */
  find(commandId: string): CommandSession {
    const session = this.sessions.get(commandId)
    if (session) return session
    if (this.expired.has(commandId)) throw new DataplaneError(410, "SessionExpired", `Session expired: ${commandId}`)
    throw new DataplaneError(404, "CommandNotFound", `Command not found: ${commandId}`)
  }

  private makeRoom(): void {
    if (this.sessions.size < this.limits.maxSessions) return
    for (const session of this.sessions.values()) {
      if (!session.running) return this.expire(session)
    }
    throw new DataplaneError(429, "TooManyCommands", `This sandbox already runs ${this.limits.maxSessions} commands; wait for one to finish`)
  }

  expire(session: CommandSession): void {
    if (this.sessions.get(session.id) !== session) return
    session.dispose()
    this.sessions.delete(session.id)
    this.expired.set(session.id, true)
    if (this.expired.size > this.limits.maxExpiredIds) this.expired.delete(this.expired.keys().next().value!)
  }

  /** Kills every command (their listeners still get the exit) and waits up to `waitMs` for them to end. */
  async close(waitMs = 2000): Promise<void> {
    this.closed = true
    const all = [...this.sessions.values()]
    for (const session of all) session.dispose()
    this.sessions.clear()
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      Promise.all(all.map((s) => s.process.exited.catch(() => undefined))),
      new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))
    ])
    clearTimeout(timer)
  }
}
