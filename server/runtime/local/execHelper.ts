/**
 * The box's exec helper (exec-helper.c): built once per host with gcc (static, so it runs on any
 * image's root filesystem), bound read-only into every box at `EXEC_HELPER`, and started once per
 * box inside it (under gVisor it is the sandbox's pid 1). `makeHelperChannel` speaks its frame
 * protocol over the socketpair the runner gave it and turns each command into a `BoxProcess`
 * (streams with backpressure, stdin with flow control, exit status, kill of the process group),
 * and each connection to or from a port on the box's loopback into a Duplex. See
 * docs/runtime-isolation.md.
 */
import { createHash } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs"
import { constants } from "node:os"
import path from "node:path"
import { Duplex, Readable, Writable } from "node:stream"
import { Deferred, Effect } from "effect"
import type { BoxProcess, ExitStatus } from "../BoxProcess.ts"
import { HOST_ENV, type ProcessRunner } from "../ProcessRunner.ts"
import { BoxError } from "./boxes/model.ts"

/** Where the helper is bound inside every box. */
export const EXEC_HELPER = "/.slipway/exec"

/** The C source: beside this module, or (compiled to lib/server/… in the npm package) in the package's server/ tree. */
const sourceFile = (): URL => {
  const candidates = [new URL("./exec-helper.c", import.meta.url), new URL("../../../../server/runtime/local/exec-helper.c", import.meta.url)]
  return candidates.find((candidate) => existsSync(candidate)) ?? candidates[0]!
}

/**
 * Builds the helper into `dir` (once per source version: the file name carries its hash) and
 * answers its path, or why it cannot be built (no gcc / static libc: Debian `gcc`, `libc6-dev`).
 */
export const buildExecHelper = (runner: ProcessRunner["Service"], dir: string): Effect.Effect<{ readonly path: string } | { readonly error: string }> =>
  Effect.suspend(() => {
    const file = sourceFile()
    if (!existsSync(file)) return Effect.succeed({ error: `the exec helper's source ${file.pathname} is missing` })
    const source = readFileSync(file)
    const hash = createHash("sha256").update(source).digest("hex").slice(0, 16)
    const target = path.join(dir, `exec-helper-${hash}`)
    if (existsSync(target)) return Effect.succeed({ path: target })
    if (!existsSync("/usr/bin/gcc")) return Effect.succeed({ error: "gcc is not installed (install Debian packages gcc and libc6-dev)" })
    mkdirSync(dir, { recursive: true, mode: 0o711 })
    chmodSync(dir, 0o711)
    const tmp = `${target}.${process.pid}.tmp`
    return runner.run(["/usr/bin/gcc", "-static", "-O2", "-Wall", "-o", tmp, "-x", "c", "-"], { input: source, cleanEnv: true, env: HOST_ENV, timeout: "120 seconds" }).pipe(
      Effect.map(() => {
        chmodSync(tmp, 0o555)
        renameSync(tmp, target)
        return { path: target }
      }),
      Effect.catch((error) =>
        Effect.sync(() => {
          rmSync(tmp, { force: true })
          return { error: `building the exec helper failed (install Debian packages gcc and libc6-dev): ${(error.stderrTail || error.message).trim().slice(0, 300)}` }
        })
      )
    )
  })

const signalNames = new Map<number, NodeJS.Signals>(Object.entries(constants.signals).map(([name, n]) => [n as number, name as NodeJS.Signals]))

/** Largest data frame we send (stdin) and the stdin bytes we let be in flight per command. */
const MAX_CHUNK = 256 * 1024
const STDIN_WINDOW = 2 * 1024 * 1024
/** The helper refuses frames above 8 MiB; we refuse its frames above this (it sends at most 64 KiB of data). */
const MAX_INCOMING = 1024 * 1024
/** Our ids stay below the helper's (it numbers the connections it accepts from 0x80000001). */
const LAST_ID = 0x7ffffff0

export interface HelperChannel {
  /** False once the helper is gone (the box stopped, it was killed): start another. */
  readonly alive: () => boolean
  /** Completes once the helper has said hello (it runs in the box); fails if it is gone first. */
  readonly hello: Effect.Effect<void, BoxError>
  readonly exec: (argv: ReadonlyArray<string>, env: Readonly<Record<string, string>>, cwd: string) => BoxProcess
  /**
   * `shell -c command` in `cwd` with the dataplane launcher's rules, done by the helper itself (one
   * exec in the box): /bin/bash falls back to /bin/sh when absent, a missing shell exits 127 with
   * "slipway: shell not found in the sandbox: <shell>", a missing cwd exits 1 with
   * "slipway: cannot change to directory: <cwd>".
   */
  readonly execShell: (shell: string, command: string, env: Readonly<Record<string, string>>, cwd: string) => BoxProcess
  /**
   * A connection the helper opens to 127.0.0.1:`port` in the box: ending it half-closes it,
   * destroying it closes it. Fails when nothing listens there.
   */
  readonly connect: (port: number) => Effect.Effect<Duplex, BoxError>
  /**
   * The helper listens on 127.0.0.1:`port` in the box and hands each connection a process of the
   * box makes to `onConnection`; until `close` (or the helper's end).
   */
  readonly listen: (port: number, onConnection: (connection: Duplex) => void) => Effect.Effect<{ readonly close: () => void }, BoxError>
  readonly close: () => void
}

/** Backpressure of one stream of ours: output paused in the helper, stdin bytes not yet taken. */
interface Flow {
  paused: boolean
  inFlight: number
  waiting: (() => void) | undefined
}

interface Command extends Flow {
  readonly kind: "command"
  readonly stdout: Readable
  readonly stderr: Readable
  readonly stdin: Writable
  pid: number
  exited: boolean
  open: number
  readonly resolveStarted: () => void
  readonly resolveExit: (exit: ExitStatus) => void
}

interface Connection extends Flow {
  readonly kind: "connection"
  readonly duplex: Duplex
  exited: boolean
  /** Undefined: connected; a message: could not connect. */
  readonly resolveStarted: (error?: string) => void
}

interface Listener {
  readonly kind: "listener"
  readonly onConnection: (connection: Duplex) => void
  readonly resolveStarted: (error?: string) => void
}

type Entry = Command | Connection | Listener

const u32 = (value: number) => {
  const b = Buffer.allocUnsafe(4)
  b.writeUInt32LE(value >>> 0)
  return b
}

/**
 * Frames over `channel` (fd 3 of the helper). `onGone` is called once when the channel closes:
 * every command still running is reported exited (SIGKILL: its relay is gone), every connection
 * is destroyed.
 */
export const makeHelperChannel = (channel: Duplex, onGone: (reason: string) => void): HelperChannel => {
  let alive = true
  let nextId = 1
  const entries = new Map<number, Entry>()
  const hello = Deferred.makeUnsafe<void, BoxError>()

  // Frames sent in one tick leave in one write (a command's start and its stdin's end, e.g.): one
  // syscall and one wake-up of the helper instead of several.
  let corked = false
  const uncork = () => {
    corked = false
    channel.uncork()
  }
  const send = (type: string, id: number, payload?: Buffer | Uint8Array) => {
    if (!alive) return
    if (!corked) {
      corked = true
      channel.cork()
      process.nextTick(uncork)
      if (forgets.length > 0 && type !== "C") flushForgets()
    }
    const header = Buffer.allocUnsafe(9)
    header[0] = type.charCodeAt(0)
    header.writeUInt32LE(id, 1)
    header.writeUInt32LE(payload?.length ?? 0, 5)
    if (!payload || payload.length === 0) return void channel.write(header)
    if (payload.length < 4096) return void channel.write(Buffer.concat([header, payload]))
    // Large payloads are not copied: header and payload go out in one writev.
    channel.cork()
    channel.write(header)
    channel.write(payload)
    channel.uncork()
  }

  const gone = (reason: string) => {
    if (!alive) return
    alive = false
    clearTimeout(forgetTimer)
    Deferred.doneUnsafe(hello, Effect.fail(new BoxError({ message: `the box's exec helper is gone: ${reason}` })))
    for (const [, entry] of entries) {
      if (entry.kind === "command") {
        entry.resolveStarted()
        if (!entry.exited) {
          entry.exited = true
          entry.resolveExit({ code: null, signal: "SIGKILL" })
        }
        entry.stdout.push(null)
        entry.stderr.push(null)
        entry.waiting?.()
      } else if (entry.kind === "connection") {
        entry.resolveStarted("the box's exec helper is gone")
        entry.duplex.destroy()
      } else entry.resolveStarted("the box's exec helper is gone")
    }
    entries.clear()
    onGone(reason)
  }

  // Forget frames wait for the next frame we send or 20 ms, whichever is first: a finished command
  // does not cost the helper (nor us) a write and a wake-up of its own.
  let forgets: Array<number> = []
  let forgetTimer: NodeJS.Timeout | undefined
  const flushForgets = () => {
    clearTimeout(forgetTimer)
    forgetTimer = undefined
    const ids = forgets
    forgets = []
    for (const id of ids) send("C", id)
  }
  const forget = (id: number) => {
    entries.delete(id)
    forgets.push(id)
    forgetTimer ??= setTimeout(flushForgets, 20).unref()
  }
  const forgetIfDone = (id: number, command: Command) => {
    if (command.exited && command.open === 0 && entries.get(id) === command) forget(id)
  }

  /** Output of a command or a connection: pushed on; a full stream pauses it in the helper (its pipe fills, the writer waits). */
  const output = (id: number, flow: Flow, stream: Readable, payload: Buffer) => {
    if (!stream.push(payload) && !flow.paused) {
      flow.paused = true
      send("P", id)
    }
  }
  /** Resumes output paused for `stream` once it is read again. */
  const resumeOf = (id: number, flow: Flow) => () => {
    if (flow.paused && entries.get(id) === flow) {
      flow.paused = false
      send("R", id)
    }
  }
  /** Stdin: sent in frames of at most MAX_CHUNK; the writer waits while STDIN_WINDOW bytes are in flight. */
  const writeOf =
    (id: number, flow: Flow) =>
    (chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void) => {
      if (entries.get(id) !== flow) return done()
      for (let offset = 0; offset < chunk.length; offset += MAX_CHUNK) send("I", id, chunk.subarray(offset, offset + MAX_CHUNK))
      flow.inFlight += chunk.length
      if (flow.inFlight < STDIN_WINDOW) done()
      else flow.waiting = () => done()
    }

  /** A connection as a Duplex: reads are its box side's data, writes go to it, `end` half-closes it, `destroy` closes it. */
  const connection = (id: number, resolveStarted: Connection["resolveStarted"]): Connection => {
    const entry: Connection = {
      kind: "connection",
      paused: false,
      inFlight: 0,
      waiting: undefined,
      exited: false,
      resolveStarted,
      duplex: new Duplex({
        readableHighWaterMark: 256 * 1024,
        writableHighWaterMark: MAX_CHUNK,
        read: () => resume(),
        write: (chunk: Buffer, encoding, done) => write(chunk, encoding, done),
        final: (done) => {
          if (entries.get(id) === entry) send("E", id)
          done()
        },
        destroy: (error, done) => {
          if (entries.get(id) === entry) forget(id)
          entry.waiting?.()
          done(error)
        }
      })
    }
    const resume = resumeOf(id, entry)
    const write = writeOf(id, entry)
    entries.set(id, entry)
    return entry
  }

  const onFrame = (type: number, id: number, payload: Buffer) => {
    if (type === 104 /* h */) return void Deferred.doneUnsafe(hello, Effect.void)
    const entry = entries.get(id)
    if (type === 110 /* n */) {
      const listener = entries.get(payload.readUInt32LE(0))
      if (entries.has(id) || listener?.kind !== "listener") return send("C", id)
      return listener.onConnection(connection(id, () => undefined).duplex)
    }
    if (!entry) return
    switch (String.fromCharCode(type)) {
      case "p":
        if (entry.kind === "command") entry.pid = payload.readUInt32LE(0)
        entry.resolveStarted()
        return
      case "f": {
        const message = payload.toString("utf8")
        entries.delete(id)
        if (entry.kind !== "command") {
          entry.resolveStarted(message)
          if (entry.kind === "connection") entry.duplex.destroy()
          return
        }
        entry.resolveStarted()
        entry.stderr.push(Buffer.from(`slipway: ${message}\n`))
        entry.stdout.push(null)
        entry.stderr.push(null)
        entry.exited = true
        entry.resolveExit({ code: 127, signal: null })
        return
      }
      case "o":
      case "e":
        if (entry.kind === "command") output(id, entry, type === 111 ? entry.stdout : entry.stderr, payload)
        else if (entry.kind === "connection") output(id, entry, entry.duplex, payload)
        return
      case "c":
        if (entry.kind === "command") (payload[0] === 1 ? entry.stdout : entry.stderr).push(null)
        else if (entry.kind === "connection") entry.duplex.push(null)
        return
      case "x": {
        if (entry.kind === "connection") {
          entry.exited = true
          // Reset: nothing more can pass. (Closed both ways: the Duplex ends once its data is read.)
          if (payload.readUInt32LE(0) !== 0) entry.duplex.destroy()
          return
        }
        if (entry.kind !== "command") return
        const status = payload.readUInt32LE(0)
        const signal = status & 0x7f
        entry.exited = true
        entry.resolveExit(signal === 0 ? { code: (status >> 8) & 0xff, signal: null } : { code: null, signal: signalNames.get(signal) ?? "SIGKILL" })
        forgetIfDone(id, entry)
        return
      }
      case "a":
        if (entry.kind === "listener") return
        entry.inFlight -= payload.readUInt32LE(0)
        if (entry.inFlight < STDIN_WINDOW && entry.waiting) {
          const resume = entry.waiting
          entry.waiting = undefined
          resume()
        }
        return
      default:
        return
    }
  }

  // Incoming bytes as a list of chunks: a frame spanning several socket reads is joined once, with one copy.
  const chunks: Array<Buffer> = []
  let buffered = 0
  /** The next `n` bytes (n <= buffered), removed from the list; a view when they lie in one chunk. */
  const take = (n: number): Buffer => {
    const first = chunks[0]!
    if (first.length >= n) {
      const out = first.subarray(0, n)
      if (first.length === n) chunks.shift()
      else chunks[0] = first.subarray(n)
      buffered -= n
      return out
    }
    const out = Buffer.allocUnsafe(n)
    let filled = 0
    while (filled < n) {
      const head = chunks[0]!
      const part = Math.min(head.length, n - filled)
      head.copy(out, filled, 0, part)
      filled += part
      if (part === head.length) chunks.shift()
      else chunks[0] = head.subarray(part)
    }
    buffered -= n
    return out
  }
  let header: Buffer | undefined
  /** Bytes of the current data frame ('o'/'e') not yet passed on: its pieces go out as they arrive, never joined. */
  let dataLeft = 0
  channel.on("data", (chunk: Buffer) => {
    chunks.push(chunk)
    buffered += chunk.length
    for (;;) {
      if (!header) {
        if (buffered < 9) return
        header = take(9)
        const length = header.readUInt32LE(5)
        if (length > MAX_INCOMING) {
          channel.destroy()
          return gone(`the exec helper sent a frame of ${length} bytes`)
        }
        dataLeft = header[0] === 111 || header[0] === 101 ? length : 0
      }
      const type = header[0]!
      const id = header.readUInt32LE(1)
      if (dataLeft > 0) {
        // Output: each piece is passed on as it is (views into the socket's chunks, no copy).
        while (dataLeft > 0 && buffered > 0) {
          const piece = take(Math.min(dataLeft, chunks[0]!.length))
          dataLeft -= piece.length
          onFrame(type, id, piece)
        }
        if (dataLeft > 0) return
        header = undefined
        continue
      }
      const length = header.readUInt32LE(5)
      if (type === 111 || type === 101) {
        header = undefined // an empty data frame
        continue
      }
      if (buffered < length) return
      header = undefined
      // Frames whose payload we read as a u32 carry one (a short one from a confused helper is dropped).
      if (length < 4 && "pxan".includes(String.fromCharCode(type))) {
        take(length)
        continue
      }
      onFrame(type, id, length === 0 ? Buffer.alloc(0) : take(length))
    }
  })
  channel.on("error", () => undefined)
  channel.on("close", () => gone("the exec helper exited"))

  /** The start frame's payload: NUL-terminated strings, the environment as NAME=value. */
  const startPayload = (head: ReadonlyArray<string>, env: Readonly<Record<string, string>>): Buffer => {
    let text = ""
    for (const s of head) text += s + "\0"
    for (const name in env) text += name + "=" + env[name] + "\0"
    return Buffer.from(text, "utf8")
  }

  const newId = () => {
    const id = nextId
    nextId = nextId >= LAST_ID ? 1 : nextId + 1
    return id
  }

  const startCommand = (frameType: "S" | "L", payload: Buffer): BoxProcess => {
    if (!alive) throw new Error("the box's exec helper is gone")
    const id = newId()
    const started = Deferred.makeUnsafe<void>()
    const resolveStarted = () => void Deferred.doneUnsafe(started, Effect.void)
    const exited = Deferred.makeUnsafe<ExitStatus>()
    const resolveExit = (exit: ExitStatus) => void Deferred.doneUnsafe(exited, Effect.succeed(exit))
    const streamClosed = () => {
      command.open--
      forgetIfDone(id, command)
    }
    const readable = () => new Readable({ highWaterMark: 256 * 1024, read: () => resume() })
    const stdout = readable()
    const stderr = readable()
    stdout.once("close", streamClosed)
    stderr.once("close", streamClosed)
    const stdin = new Writable({
      highWaterMark: MAX_CHUNK,
      write: (chunk: Buffer, encoding, done) => write(chunk, encoding, done),
      final: (done) => {
        if (entries.get(id) === command) send("E", id)
        done()
      }
    })
    const command: Command = {
      kind: "command",
      stdout,
      stderr,
      stdin,
      pid: 0,
      exited: false,
      paused: false,
      open: 2,
      inFlight: 0,
      waiting: undefined,
      resolveStarted,
      resolveExit
    }
    const resume = resumeOf(id, command)
    const write = writeOf(id, command)
    entries.set(id, command)
    send(frameType, id, payload)
    return {
      get pid() {
        return command.pid
      },
      started: Deferred.await(started),
      stdin,
      stdout,
      stderr,
      kill: (signal: NodeJS.Signals = "SIGKILL") => {
        if (command.exited || entries.get(id) !== command) return
        send("K", id, u32((constants.signals as Record<string, number>)[signal] ?? 9))
      },
      exited: Deferred.await(exited)
    }
  }

  const gone_ = () => new BoxError({ message: "the box's exec helper is gone" })
  const validPort = (port: number) => Number.isInteger(port) && port >= 1 && port <= 65535

  return {
    alive: () => alive,
    hello: Deferred.await(hello),
    exec: (argv, env, cwd) => startCommand("S", startPayload([cwd, String(argv.length), ...argv], env)),
    execShell: (shell, command, env, cwd) => startCommand("L", startPayload([cwd, shell, command], env)),
    connect: (port) =>
      Effect.callback<Duplex, BoxError>((resume) => {
        if (!validPort(port)) return resume(Effect.fail(new BoxError({ message: `invalid port ${port}` })))
        if (!alive) return resume(Effect.fail(gone_()))
        const id = newId()
        const entry = connection(id, (error) =>
          resume(error === undefined ? Effect.succeed(entry.duplex) : Effect.fail(new BoxError({ message: `port ${port} in the box: ${error}` })))
        )
        send("T", id, u32(port))
        // Interrupted before it connected: closed.
        return Effect.sync(() => entry.duplex.destroy())
      }),
    listen: (port, onConnection) =>
      Effect.callback<{ readonly close: () => void }, BoxError>((resume) => {
        if (!validPort(port)) return resume(Effect.fail(new BoxError({ message: `invalid port ${port}` })))
        if (!alive) return resume(Effect.fail(gone_()))
        const id = newId()
        const close = () => {
          if (entries.get(id) === entry) forget(id)
        }
        const entry: Listener = {
          kind: "listener",
          onConnection,
          resolveStarted: (error) =>
            resume(error === undefined ? Effect.succeed({ close }) : Effect.fail(new BoxError({ message: `port ${port} in the box: ${error}` })))
        }
        entries.set(id, entry)
        send("B", id, u32(port))
        return Effect.sync(close)
      }),
    close: () => {
      channel.destroy()
      gone("closed")
    }
  }
}
