/** The server's one process runner: argv without a shell, failures as CommandFailed, processes ended by interruption and scopes. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { readFileSync } from "node:fs"
import { CommandFailed, processRunner as runner } from "../../server/runtime/ProcessRunner.ts"

const failure = <A>(effect: Effect.Effect<A, CommandFailed>) => Effect.flip(effect)

/** Whether `pid` is alive (a zombie is not). */
const alive = (pid: number) => {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return false
  }
}

describe("ProcessRunner.run", () => {
  it.effect("passes argv without a shell and collects stdout and stderr", () =>
    Effect.gen(function* () {
      const result = yield* runner.run(["/bin/sh", "-c", 'printf "%s|" "$@"; echo oops >&2', "sh", "a b", "$HOME", "--x", "`id`"])
      expect(result.stdout).toBe("a b|$HOME|--x|`id`|")
      expect(result.stdoutBytes.equals(Buffer.from(result.stdout))).toBe(true)
      expect(result.stderr).toBe("oops\n")
    })
  )

  it.effect("feeds input and adds env", () =>
    Effect.gen(function* () {
      const result = yield* runner.run(["/bin/sh", "-c", 'cat; printf "%s" "$GREETING"'], { input: "piped ", env: { GREETING: "hello" } })
      expect(result.stdout).toBe("piped hello")
      const clean = yield* runner.run(["/usr/bin/env"], { cleanEnv: true, env: { ONLY: "1" } })
      expect(clean.stdout).toBe("ONLY=1\n")
    })
  )

  it.effect("fails with the exit code and the tail of stderr", () =>
    Effect.gen(function* () {
      const error = yield* failure(runner.run(["/bin/sh", "-c", "echo first >&2; echo 'the reason' >&2; exit 3"]))
      expect(error).toBeInstanceOf(CommandFailed)
      expect(error.kind).toBe("exit")
      expect(error.exitCode).toBe(3)
      expect(error.stderrTail).toBe("first\nthe reason\n")
      expect(error.message).toBe("/bin/sh exited with code 3: the reason")
    })
  )

  it.effect("fails when the tool is missing", () =>
    Effect.gen(function* () {
      const error = yield* failure(runner.run(["/nonexistent/tool", "x"]))
      expect(error.kind).toBe("spawn")
      expect(error.errno).toBe("ENOENT")
      expect(error.message).toMatch(/^\/nonexistent\/tool could not start \(not found\)/)
    })
  )

  it.live("kills the whole process group on timeout, with what stderr said so far", () =>
    Effect.gen(function* () {
      const started = Date.now()
      // the shell starts a child sleep that would keep stdout open if only the shell were killed
      const error = yield* failure(runner.run(["/bin/sh", "-c", "echo begun >&2; sleep 30 & echo $! ; wait"], { timeout: 300 }))
      expect(error.kind).toBe("timeout")
      expect(error.message).toBe("/bin/sh timed out after 300ms: begun")
      expect(Date.now() - started).toBeLessThan(5000)
    })
  )

  it.live("interruption kills the process group", () =>
    Effect.gen(function* () {
      const pidFile = `/tmp/slipway-runner-test-${process.pid}`
      const fiber = yield* Effect.forkChild(runner.run(["/bin/sh", "-c", `sleep 30 & echo $! > ${pidFile}; wait`]))
      yield* Effect.sleep(200)
      const child = Number(readFileSync(pidFile, "utf8"))
      expect(alive(child)).toBe(true)
      yield* Fiber.interrupt(fiber)
      expect(Exit.hasInterrupts(yield* Fiber.await(fiber))).toBe(true)
      expect(alive(child)).toBe(false)
    })
  )

  it.effect("reports signals and oversized output", () =>
    Effect.gen(function* () {
      expect((yield* failure(runner.run(["/bin/sh", "-c", "kill -TERM $$"]))).kind).toBe("signal")
      const big = yield* failure(runner.run(["/bin/sh", "-c", "head -c 100000 /dev/zero"], { maxStdoutBytes: 1000 }))
      expect(big.kind).toBe("output")
      expect(big.message).toBe("/bin/sh wrote more than 1000 bytes to stdout")
    })
  )

  it.effect("streams lines as they come", () =>
    Effect.gen(function* () {
      const lines: Array<string> = []
      yield* runner.run(["/bin/sh", "-c", "echo one; echo two >&2; printf three"], { onLine: (line, stream) => lines.push(`${stream}:${line}`) })
      expect(lines.sort()).toEqual(["stderr:two", "stdout:one", "stdout:three"])
    })
  )
})

describe("ProcessRunner.spawn", () => {
  it.live("runs until its scope closes: SIGTERM first, SIGKILL for what ignores it, and the release waits for the exit", () =>
    Effect.gen(function* () {
      const polite = yield* Effect.scoped(
        Effect.gen(function* () {
          const child = yield* runner.spawn(["/bin/sleep", "30"], { stdio: ["ignore", "ignore", "ignore"] })
          expect(alive(child.pid)).toBe(true)
          return child
        })
      )
      expect(polite.isRunning()).toBe(false)
      expect(yield* polite.exited).toEqual({ code: null, signal: "SIGTERM" })
      const started = Date.now()
      const stubborn = yield* Effect.scoped(
        Effect.gen(function* () {
          const child = yield* runner.spawn(["/bin/sh", "-c", 'trap "" TERM; echo ready; while :; do sleep 1; done'], { killGrace: 300 })
          yield* Effect.callback<void>((resume) => void child.stdout!.once("data", () => resume(Effect.void)))
          return child
        })
      )
      expect(yield* stubborn.exited).toEqual({ code: null, signal: "SIGKILL" })
      expect(Date.now() - started).toBeLessThan(3000)
    })
  )

  it.effect("fails to start a missing tool with CommandFailed", () =>
    Effect.gen(function* () {
      const error = yield* Effect.scoped(Effect.flip(runner.spawn(["/nonexistent/tool"])))
      expect(error.kind).toBe("spawn")
      expect(error.errno).toBe("ENOENT")
    })
  )
})
