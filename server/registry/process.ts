/**
 * The one place the registry's long-running child process is started: in a Scope, ended when the
 * scope closes (SIGTERM, then SIGKILL after a grace). It runs under `setpriv --pdeathsig SIGKILL`
 * when available, so a server that dies without closing its scopes does not leave it holding the
 * port. Output is kept as a tail for error messages.
 * (To be replaced by the project's ProcessRunner service once it exists.)
 */
import { spawn } from "node:child_process"
import { Deferred, Effect, type Scope } from "effect"
import { which } from "../runtime/local/tools.ts"
import { RegistryError } from "./keys.ts"

export interface ChildExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface Child {
  readonly pid: number
  /** Completes when the process has exited. */
  readonly exited: Effect.Effect<ChildExit>
  readonly hasExited: () => boolean
  /** The end of what it wrote to stdout and stderr. */
  readonly output: () => string
}

const OUTPUT_TAIL = 16 * 1024

export const describeExit = (exit: ChildExit): string => (exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`)

export const spawnChild = (
  argv: ReadonlyArray<string>,
  options: { readonly env: Readonly<Record<string, string>>; readonly cwd: string; readonly graceMs: number }
): Effect.Effect<Child, RegistryError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      const exited = yield* Deferred.make<ChildExit>()
      const setpriv = which("setpriv")
      const command = setpriv ? [setpriv, "--pdeathsig", "SIGKILL", ...argv] : [...argv]
      let tail = ""
      let done = false
      const child = yield* Effect.try({
        try: () => spawn(command[0]!, command.slice(1), { cwd: options.cwd, env: { ...options.env }, stdio: ["ignore", "pipe", "pipe"] }),
        catch: (error) => new RegistryError({ message: `${argv[0]} could not start: ${String(error)}` })
      })
      const keep = (chunk: Buffer) => {
        tail = (tail + chunk.toString("utf8")).slice(-OUTPUT_TAIL)
      }
      child.stdout!.on("data", keep)
      child.stderr!.on("data", keep)
      const started = yield* Effect.callback<number, RegistryError>((resume) => {
        child.once("spawn", () => resume(Effect.succeed(child.pid!)))
        child.once("error", (error) => resume(Effect.fail(new RegistryError({ message: `${argv[0]} could not start: ${error.message}` }))))
      })
      child.once("exit", (code, signal) => {
        done = true
        Deferred.doneUnsafe(exited, Effect.succeed({ code, signal }))
      })
      return {
        pid: started,
        exited: Deferred.await(exited),
        hasExited: () => done,
        output: () => tail,
        kill: (signal: NodeJS.Signals) => {
          if (!done) child.kill(signal)
        }
      }
    }),
    (child) =>
      Effect.gen(function* () {
        if (child.hasExited()) return
        child.kill("SIGTERM")
        const graceful = yield* child.exited.pipe(Effect.timeoutOption(options.graceMs))
        if (graceful._tag === "None") {
          child.kill("SIGKILL")
          yield* child.exited
        }
      })
  )
