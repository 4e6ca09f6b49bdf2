/**
 * What the deployment database servers (the managed PostgreSQL, a Redis per deployment) share:
 * the system user each runs as, the state files they are found again by after a restart, running
 * a tool as that user, and whether a process still runs. Both servers are daemons detached from
 * Slipway's process (a crash of the server leaves them running; `recover` re-attaches).
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { Data, Effect } from "effect"
import type { ProcessRunner } from "../../runtime/ProcessRunner.ts"

/** A clear, operator-facing failure (missing binary, unreachable server, bad id...). */
export class DatabaseProvisionError extends Data.TaggedError("DatabaseProvisionError")<{
  readonly message: string
  /** The server could not be reached at all (as opposed to refusing what it was asked). */
  readonly unreachable?: boolean
}> {}

const fail = (message: string) => new DatabaseProvisionError({ message })

export const writeFileAtomic = (file: string, data: string, mode = 0o600): void => {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`
  fs.writeFileSync(tmp, data, { mode })
  fs.renameSync(tmp, file)
}

export const readJson = <T>(file: string): T | undefined => {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as T
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined
    throw e
  }
}

export const requireFile = (file: string, pkg: string): Effect.Effect<void, DatabaseProvisionError> =>
  fs.existsSync(file) ? Effect.void : Effect.fail(fail(`${file} is missing: install the Debian package ${pkg} (apt-get install -y ${pkg})`))

export interface SystemUser {
  readonly name: string
  readonly uid: number
  readonly gid: number
}

export const systemUser = (name: string, pkg: string): Effect.Effect<SystemUser, DatabaseProvisionError> =>
  Effect.suspend(() => {
    const line = fs
      .readFileSync("/etc/passwd", "utf8")
      .split("\n")
      .find((l) => l.startsWith(`${name}:`))
    if (line === undefined) return Effect.fail(fail(`system user "${name}" is missing: install the Debian package ${pkg} (apt-get install -y ${pkg})`))
    const parts = line.split(":")
    return Effect.succeed({ name, uid: Number(parts[2]), gid: Number(parts[3]) })
  })

/** Every ancestor of `dir` must be searchable by the user, or the server cannot reach its files. */
export const assertReachable = (dir: string, user: SystemUser): Effect.Effect<void, DatabaseProvisionError> =>
  Effect.suspend(() => {
    let current = path.resolve(dir)
    for (;;) {
      const parent = path.dirname(current)
      if (parent === current) return Effect.void
      current = parent
      const st = fs.statSync(current)
      const ok = st.uid === user.uid ? (st.mode & 0o100) !== 0 : st.gid === user.gid ? (st.mode & 0o010) !== 0 : (st.mode & 0o001) !== 0
      if (!ok) return Effect.fail(fail(`the "${user.name}" system user cannot reach ${dir}: ${current} is not searchable by it (chmod o+x ${current})`))
    }
  })

/** Whether `pid` runs and is `name` (a pid reused by another program does not count). */
export const processAlive = (pid: number, name: string): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    if (/^\d+ \([^)]*\) Z/.test(stat)) return false
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(name)
  } catch {
    return false
  }
}

/** Runs a tool as a system user (`runuser`); its output, or a `DatabaseProvisionError` naming `what` with the tool's last words. */
export const runAs = (runner: ProcessRunner["Service"], user: string, argv: ReadonlyArray<string>, what: string, timeoutMs = 120_000): Effect.Effect<string, DatabaseProvisionError> =>
  runner.run(["runuser", "-u", user, "--", ...argv], { timeout: timeoutMs }).pipe(
    Effect.map((result) => result.stdout),
    Effect.mapError((e) => fail(`${what} failed: ${(e.stderrTail || e.message).trim()}`))
  )

/** Whether `port` on the loopback is free now (0 never is). */
export const portFree = (port: number): Effect.Effect<boolean> =>
  port === 0
    ? Effect.succeed(false)
    : Effect.callback<boolean>((resume) => {
        const s = net.createServer()
        s.once("error", () => resume(Effect.succeed(false)))
        s.listen(port, "127.0.0.1", () => s.close(() => resume(Effect.succeed(true))))
      })
