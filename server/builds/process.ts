/**
 * Running a long, chatty command (a build) with the ProcessRunner: its output is handed on line
 * by line as it comes and never accumulated (a build may print far more than a buffer should
 * hold); only the end of stderr is kept for errors. Interruption kills the whole process group.
 */
import { createInterface } from "node:readline"
import type { Readable } from "node:stream"
import { Effect, Fiber } from "effect"
import { type CommandFailed, type ExitStatus, HOST_ENV, type ProcessRunner } from "../runtime/ProcessRunner.ts"

export interface StreamedExit extends ExitStatus {
  /** The last lines of output (both streams), for error messages. */
  readonly tail: ReadonlyArray<string>
}

const lines = (stream: Readable | null, onLine: (line: string) => void) =>
  Effect.callback<void>((resume) => {
    if (stream === null) return resume(Effect.void)
    const rl = createInterface({ input: stream, crlfDelay: Infinity })
    rl.on("line", onLine)
    rl.once("close", () => resume(Effect.void))
    return Effect.sync(() => rl.close())
  })

/** Runs `argv` (clean host environment) to its end; `onLine` hears every line of stdout and stderr. */
export const runStreaming = (
  runner: ProcessRunner["Service"],
  argv: ReadonlyArray<string>,
  onLine: (line: string, stream: "stdout" | "stderr") => void,
  tailLines = 40
): Effect.Effect<StreamedExit, CommandFailed> =>
  Effect.scoped(
    Effect.gen(function*() {
      const tail: Array<string> = []
      const keep = (line: string) => {
        tail.push(line)
        if (tail.length > tailLines) tail.shift()
      }
      const child = yield* runner.spawn(argv, { cleanEnv: true, env: HOST_ENV, stdio: ["ignore", "pipe", "pipe"], killSignal: "SIGKILL", killGrace: "1 second" })
      const out = lines(child.stdout, (line) => {
        keep(line)
        onLine(line, "stdout")
      })
      const err = lines(child.stderr, (line) => {
        keep(line)
        onLine(line, "stderr")
      })
      const streams = yield* Effect.forkScoped(Effect.all([out, err], { concurrency: 2, discard: true }))
      const status = yield* child.exited
      // The rest of the output, unless something the command left behind holds the pipes open.
      yield* Effect.timeoutOption(Fiber.join(streams), "2 seconds")
      return { ...status, tail }
    })
  )
