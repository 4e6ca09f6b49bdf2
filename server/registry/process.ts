/**
 * The registry's long-running child process, started through the server's `ProcessRunner`: in
 * a Scope, ended when the scope closes (SIGTERM to its process group, then SIGKILL after a
 * grace). It runs under `setpriv --pdeathsig SIGKILL` when available, so a server that dies
 * without closing its scopes does not leave it holding the port. Output is kept as a tail for
 * error messages.
 */
import { Effect, type Scope } from "effect"
import type { ExitStatus, ProcessRunner } from "../runtime/ProcessRunner.ts"
import { which } from "../runtime/local/tools.ts"
import { RegistryError } from "./keys.ts"

export interface Child {
  readonly pid: number
  /** Completes when the process has exited. */
  readonly exited: Effect.Effect<ExitStatus>
  /** The end of what it wrote to stdout and stderr. */
  readonly output: () => string
}

const OUTPUT_TAIL = 16 * 1024

export const describeExit = (exit: ExitStatus): string => (exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`)

export const spawnChild = (
  runner: ProcessRunner["Service"],
  argv: ReadonlyArray<string>,
  options: { readonly env: Readonly<Record<string, string>>; readonly cwd: string; readonly graceMs: number }
): Effect.Effect<Child, RegistryError, Scope.Scope> =>
  Effect.gen(function* () {
    const setpriv = which("setpriv")
    const command = setpriv ? [setpriv, "--pdeathsig", "SIGKILL", ...argv] : [...argv]
    const child = yield* runner
      .spawn(command, { env: options.env, cleanEnv: true, cwd: options.cwd, killGrace: options.graceMs })
      .pipe(Effect.mapError((error) => new RegistryError({ message: `${argv[0]} could not start: ${error.message}` })))
    let tail = ""
    const keep = (chunk: Buffer) => {
      tail = (tail + chunk.toString("utf8")).slice(-OUTPUT_TAIL)
    }
    child.stdout?.on("data", keep)
    child.stderr?.on("data", keep)
    return { pid: child.pid, exited: child.exited, output: () => tail }
  })
