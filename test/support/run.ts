/** Host tools for test setup (building images, starting registries), through the server's ProcessRunner. */
import { Effect } from "effect"
import { type CommandResult, processRunner, type RunOptions } from "../../server/runtime/ProcessRunner.ts"

export const runCommand = (argv: ReadonlyArray<string>, options: RunOptions & { readonly timeoutMs?: number } = {}): Promise<CommandResult> =>
  Effect.runPromise(processRunner.run(argv, { ...options, ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}) }))
