/**
 * The box runner and volume store under test, their calls as Promises for the tests' stream code.
 * Everything goes through the real services: a box runs in a scope of its own that `stop`
 * closes, its commands in scopes inside it (`startNow`, as the dataplane runs them).
 */
import { existsSync } from "node:fs"
import { join } from "node:path"
import { Effect, Exit, Scope } from "effect"
import type { ExecOptions, ShellCommand } from "../../../server/runtime/BoxProcess.ts"
import { type BoxCommand as StartedProcess, startNow } from "../../../server/sandboxes/dataplane/box.ts"
import { type BoxExit, BoxRunner, type BoxRunnerOptions, type BoxSpec, type Forward, makeBoxRunner, type RunningBox } from "../../../server/runtime/local/BoxRunner.ts"
import { makeVolumeStore, type VolumeStore } from "../../../server/runtime/local/VolumeStore.ts"
import { ProcessRunnerLive } from "../../../server/runtime/ProcessRunner.ts"

export const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> => Effect.runPromise(effect)

export interface TestBox {
  readonly box: RunningBox
  readonly id: string
  readonly pid: number
  readonly hostUid: number
  readonly filesystem: string
  readonly isRunning: () => boolean
  readonly exited: Promise<BoxExit>
  readonly exec: (argv: ReadonlyArray<string>, options?: ExecOptions) => StartedProcess
  readonly execShell: (command: ShellCommand, options?: ExecOptions) => StartedProcess
  /** A forward, closed by `close` (or with the box). */
  readonly forward: (port: number) => Promise<Forward & { readonly close: () => Promise<void> }>
  /** Closes the box's scope: the box ends, its files stay. */
  readonly stop: () => Promise<void>
  /** `stop`, then frees its disk. */
  readonly destroy: () => Promise<void>
}

export interface TestRunner {
  readonly service: BoxRunner["Service"]
  readonly start: (spec: BoxSpec) => Promise<TestBox>
  /** Adopts a box a previous (or another) process runs; the same box again while it runs. */
  readonly attach: (id: string) => Promise<TestBox | undefined>
  readonly recover: () => Promise<{ readonly running: ReadonlyArray<BoxSpec>; readonly stopped: ReadonlyArray<BoxSpec> }>
  readonly list: () => ReadonlyArray<BoxSpec>
  readonly destroy: (id: string) => Promise<void>
}

const testBox = (service: BoxRunner["Service"], box: RunningBox, scope: Scope.Closeable): TestBox => {
  const stop = () => run(Scope.close(scope, Exit.void))
  return {
    box,
    id: box.id,
    pid: box.pid,
    hostUid: box.hostUid,
    filesystem: box.filesystem,
    isRunning: box.isRunning,
    exited: run(box.exited),
    exec: (argv, options) => startNow(box.exec(argv, options), scope),
    execShell: (command, options) => startNow(box.execShell(command, options), scope),
    forward: async (port) => {
      const forwardScope = Scope.forkUnsafe(scope)
      const forward = await run(Scope.provide(box.forward(port), forwardScope))
      return { ...forward, close: () => run(Scope.close(forwardScope, Exit.void)) }
    },
    stop,
    destroy: () => stop().then(() => run(service.destroy(box.id)))
  }
}

/** Runs `acquire` in a new scope: its box then lives until the scope is closed. */
const inNewScope = async (service: BoxRunner["Service"], acquire: Effect.Effect<RunningBox | undefined, unknown, Scope.Scope>) => {
  const scope = Scope.makeUnsafe()
  const exit = await Effect.runPromiseExit(Scope.provide(acquire, scope))
  if (Exit.isSuccess(exit) && exit.value) return testBox(service, exit.value, scope)
  await run(Scope.close(scope, Exit.void))
  if (Exit.isFailure(exit)) throw exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error ?? new Error("start failed")
  return undefined
}

export const makeTestRunner = async (options: BoxRunnerOptions): Promise<TestRunner> => {
  const service = await run(Effect.provide(makeBoxRunner(options), ProcessRunnerLive))
  const adopted = new Map<string, TestBox>()
  return {
    service,
    start: async (spec) => (await inNewScope(service, service.start(spec)))!,
    attach: async (id) => {
      const known = adopted.get(id)
      if (known?.isRunning()) return known
      if (known) await known.stop()
      const box = await inNewScope(service, service.attach(id))
      if (box) adopted.set(id, box)
      return box
    },
    recover: () => run(service.recover),
    list: () => Effect.runSync(service.list),
    destroy: (id) => run(service.destroy(id))
  }
}

/** A volume store over `root`, open until `close` (which unmounts its volumes). */
export const makeTestVolumes = async (root: string): Promise<{ readonly store: VolumeStore["Service"]; readonly close: () => Promise<void> }> => {
  const scope = Scope.makeUnsafe()
  const store = await run(Effect.provide(Scope.provide(makeVolumeStore({ root }), scope), ProcessRunnerLive))
  return { store, close: () => run(Scope.close(scope, Exit.void)) }
}

export { BoxRunner }

/** The cgroup directories named `parent` that exist now (v2: one; v1: one per controller), e.g. what a stopped server left. */
export const cgroupDirsNamed = (parent: string): Array<string> =>
  ["/sys/fs/cgroup", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/pids"].map((base) => join(base, parent)).filter((dir) => existsSync(dir))
