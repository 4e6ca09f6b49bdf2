/**
 * One small helper to run a host tool (skopeo, umoci, mkfs.btrfs, nsenter, ...) and wait for it.
 *
 * - argv is an array handed to spawn without a shell: no word splitting, no globbing, no quoting bugs.
 *   (Callers still validate user input so that it can never be read as an option of the tool.)
 * - stdout is collected whole (up to a cap), stderr keeps a tail for error messages.
 * - A timeout kills the process group with SIGKILL.
 * - Any failure (cannot start, non-zero exit, killed by a signal, timed out) is a `CommandFailed`.
 */
import { spawn } from "node:child_process"

export interface RunCommandOptions {
  /** Kill the command (its whole process group) after this long. Default: no limit. */
  readonly timeoutMs?: number
  /** Written to stdin, which is then closed. Without it stdin is /dev/null. */
  readonly input?: string | Uint8Array
  /** Added to (and overriding) the server's environment; `cleanEnv` starts from an empty one. */
  readonly env?: Readonly<Record<string, string>>
  readonly cleanEnv?: boolean
  readonly cwd?: string
  /** Aborting kills the command; the promise fails with kind "aborted". */
  readonly signal?: AbortSignal
  /** Called with every complete output line as it arrives (progress reporting). */
  readonly onLine?: (line: string, stream: "stdout" | "stderr") => void
  /** stdout beyond this many bytes fails the command. Default 64 MiB. */
  readonly maxStdoutBytes?: number
}

export interface CommandResult {
  readonly stdout: string
  /** The exact bytes of stdout (e.g. to hash a manifest). */
  readonly stdoutBytes: Buffer
  readonly stderr: string
}

export type CommandFailureKind = "spawn" | "exit" | "signal" | "timeout" | "aborted" | "output"

const STDERR_TAIL_BYTES = 16 * 1024

/** The command could not run or did not succeed. `stderrTail` is the end of what it wrote to stderr. */
export class CommandFailed extends Error {
  readonly _tag = "CommandFailed"
  readonly argv: ReadonlyArray<string>
  readonly kind: CommandFailureKind
  readonly exitCode: number | null
  readonly signal: NodeJS.Signals | null
  readonly stderrTail: string
  /** errno code when the command could not start (ENOENT: not installed). */
  readonly errno: string | undefined
  constructor(args: {
    readonly argv: ReadonlyArray<string>
    readonly kind: CommandFailureKind
    readonly exitCode?: number | null
    readonly signal?: NodeJS.Signals | null
    readonly stderrTail?: string
    readonly errno?: string
    readonly detail?: string
  }) {
    const tool = args.argv[0] ?? "command"
    const lastLine = lastNonEmptyLine(args.stderrTail ?? "")
    const what =
      args.kind === "spawn" ? `could not start${args.errno === "ENOENT" ? " (not found)" : ""}${args.detail ? `: ${args.detail}` : ""}`
      : args.kind === "timeout" ? `timed out${args.detail ? ` after ${args.detail}` : ""}`
      : args.kind === "aborted" ? "aborted"
      : args.kind === "output" ? (args.detail ?? "wrote too much output")
      : args.kind === "signal" ? `killed by ${args.signal}`
      : `exited with code ${args.exitCode}`
    super(`${tool} ${what}${lastLine && args.kind !== "spawn" ? `: ${lastLine}` : ""}`)
    this.name = "CommandFailed"
    this.argv = args.argv
    this.kind = args.kind
    this.exitCode = args.exitCode ?? null
    this.signal = args.signal ?? null
    this.stderrTail = args.stderrTail ?? ""
    this.errno = args.errno
  }
}

const lastNonEmptyLine = (text: string): string => {
  const lines = text.split("\n").map((l) => l.trim()).filter((l) => l.length > 0)
  const last = lines[lines.length - 1] ?? ""
  return last.length > 500 ? `${last.slice(0, 500)}…` : last
}

/** Splits a byte stream into lines for `onLine`. */
const lineSplitter = (emit: (line: string) => void) => {
  let pending = ""
  return {
    push: (chunk: Buffer) => {
      pending += chunk.toString("utf8")
      let index: number
      while ((index = pending.indexOf("\n")) >= 0) {
        emit(pending.slice(0, index).replace(/\r$/, ""))
        pending = pending.slice(index + 1)
      }
      if (pending.length > 64 * 1024) pending = pending.slice(-64 * 1024)
    },
    end: () => {
      if (pending.length > 0) emit(pending)
      pending = ""
    }
  }
}

/** Runs `argv` (no shell) and resolves with its output when it exits 0; otherwise fails with `CommandFailed`. */
export const runCommand = (argv: ReadonlyArray<string>, options: RunCommandOptions = {}): Promise<CommandResult> =>
  new Promise<CommandResult>((resolve, reject) => {
    if (argv.length === 0 || argv[0] === "") {
      reject(new CommandFailed({ argv, kind: "spawn", detail: "empty argv" }))
      return
    }
    if (options.signal?.aborted) {
      reject(new CommandFailed({ argv, kind: "aborted" }))
      return
    }
    const maxStdout = options.maxStdoutBytes ?? 64 * 1024 * 1024
    const env = { ...(options.cleanEnv ? {} : process.env), ...options.env }
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: options.cwd,
      env,
      stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      // Its own process group, so that a timeout also kills whatever it started.
      detached: true,
      shell: false
    })

    const stdoutChunks: Array<Buffer> = []
    let stdoutBytes = 0
    let stderrTail = Buffer.alloc(0)
    let failure: CommandFailed | undefined
    let settled = false

    const killGroup = () => {
      if (child.pid === undefined) return
      try {
        process.kill(-child.pid, "SIGKILL")
      } catch {
        try {
          child.kill("SIGKILL")
        } catch {
          // already gone
        }
      }
    }
    const failWith = (error: CommandFailed) => {
      if (failure === undefined) failure = error
      killGroup()
    }

    const outLines = options.onLine ? lineSplitter((l) => options.onLine!(l, "stdout")) : undefined
    const errLines = options.onLine ? lineSplitter((l) => options.onLine!(l, "stderr")) : undefined

    child.stdout!.on("data", (chunk: Buffer) => {
      stdoutBytes += chunk.length
      if (stdoutBytes > maxStdout) {
        failWith(new CommandFailed({ argv, kind: "output", detail: `wrote more than ${maxStdout} bytes to stdout` }))
        return
      }
      stdoutChunks.push(chunk)
      outLines?.push(chunk)
    })
    child.stderr!.on("data", (chunk: Buffer) => {
      stderrTail = Buffer.concat([stderrTail, chunk])
      if (stderrTail.length > STDERR_TAIL_BYTES) stderrTail = stderrTail.subarray(stderrTail.length - STDERR_TAIL_BYTES)
      errLines?.push(chunk)
    })

    const timer =
      options.timeoutMs !== undefined && Number.isFinite(options.timeoutMs)
        ? setTimeout(() => failWith(new CommandFailed({ argv, kind: "timeout", detail: `${options.timeoutMs} ms` })), options.timeoutMs)
        : undefined
    const onAbort = () => failWith(new CommandFailed({ argv, kind: "aborted" }))
    options.signal?.addEventListener("abort", onAbort, { once: true })

    const finish = (error: CommandFailed | undefined, result?: CommandResult) => {
      if (settled) return
      settled = true
      if (timer) clearTimeout(timer)
      options.signal?.removeEventListener("abort", onAbort)
      if (error) reject(error)
      else resolve(result!)
    }

    child.on("error", (error: NodeJS.ErrnoException) => {
      // Failure to spawn (ENOENT, EACCES): "close" may never come.
      if (child.pid === undefined) finish(new CommandFailed({ argv, kind: "spawn", errno: error.code, detail: error.message }))
      else failWith(new CommandFailed({ argv, kind: "spawn", errno: error.code, detail: error.message }))
    })

    if (options.input !== undefined && child.stdin) {
      child.stdin.on("error", () => {
        // EPIPE when the command exits without reading its input: its exit status tells the story.
      })
      child.stdin.end(options.input)
    }

    child.on("close", (code, signal) => {
      outLines?.end()
      errLines?.end()
      const stderr = stderrTail.toString("utf8")
      if (failure) {
        finish(
          new CommandFailed({
            argv,
            kind: failure.kind,
            exitCode: code,
            signal,
            stderrTail: stderr,
            errno: failure.errno,
            detail: failure.kind === "timeout" ? `${options.timeoutMs} ms` : failure.kind === "output" ? `wrote more than ${maxStdout} bytes to stdout` : undefined
          })
        )
        return
      }
      if (code === 0) {
        const bytes = Buffer.concat(stdoutChunks)
        finish(undefined, { stdout: bytes.toString("utf8"), stdoutBytes: bytes, stderr })
        return
      }
      finish(
        new CommandFailed({
          argv,
          kind: signal ? "signal" : "exit",
          exitCode: code,
          signal,
          stderrTail: stderr
        })
      )
    })
  })
