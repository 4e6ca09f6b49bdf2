/** A box spec checked before anything is made of it, and what bubblewrap is told to build from it. */
import { existsSync, statSync } from "node:fs"
import path from "node:path"
import { Effect } from "effect"
import { BOX_HOME, BOX_TOOLS } from "../../BoxProcess.ts"
import { EXEC_HELPER } from "../execHelper.ts"
import { BoxError, type BoxSpec } from "./model.ts"

export const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/
export const MiB = 1024 * 1024
export const DEFAULT_STORAGE = 1024 * MiB
export const MIN_STORAGE = 8 * MiB
/** PATH of the box's init and commands. */
export const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/** PATH of the host tools that start things in boxes (sh, nsenter, setpriv, bwrap). */
export const HOST_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
const FORBIDDEN_MOUNTS = ["/", "/proc", "/dev", "/tmp", "/.slipway"]

const invalid = (message: string) => new BoxError({ message })

/** Why `spec` cannot be a box (a clear message), or nothing. */
const problemOf = (spec: BoxSpec): string | undefined => {
  if (typeof spec.id !== "string" || !ID.test(spec.id)) return `invalid box id ${JSON.stringify(spec.id)}`
  if (!path.isAbsolute(spec.rootfs) || /[,:\\]/.test(spec.rootfs)) return "rootfs must be an absolute path without ',', ':' or '\\\\'"
  if (!existsSync(spec.rootfs) || !statSync(spec.rootfs).isDirectory()) return `rootfs ${spec.rootfs} is not a directory`
  for (const [k, v] of Object.entries(spec.env)) {
    if (!/^[^=\0]+$/.test(k) || typeof v !== "string" || v.includes("\0")) return `invalid environment variable ${JSON.stringify(k)}`
  }
  const boxPath = (p: string, what: string) =>
    !p.startsWith("/") || p.includes("\0") || p.split("/").some((c) => c === ".." || c === ".") ? `${what} must be an absolute path without '.' or '..': ${JSON.stringify(p)}` : undefined
  if (spec.workingDir !== undefined) {
    const problem = boxPath(spec.workingDir, "workingDir")
    if (problem) return problem
  }
  if (spec.hostname !== undefined && !/^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(spec.hostname)) return `invalid hostname ${JSON.stringify(spec.hostname)}`
  if (spec.storageBytes !== undefined && (!Number.isSafeInteger(spec.storageBytes) || spec.storageBytes <= 0)) return "storageBytes must be a positive integer"
  for (const [k, v] of Object.entries(spec.resources ?? {})) {
    if (v !== undefined && (!Number.isSafeInteger(v) || v <= 0)) return `resources.${k} must be a positive integer`
  }
  for (const v of spec.volumes ?? []) {
    const problem = boxPath(v.mountPath, "volume mountPath")
    if (problem) return problem
    const norm = path.posix.normalize(v.mountPath)
    if (FORBIDDEN_MOUNTS.some((f) => norm === f || (f !== "/" && norm.startsWith(f + "/")))) return `volume mountPath ${v.mountPath} is reserved`
    if (!path.isAbsolute(v.hostPath) || !existsSync(v.hostPath) || !statSync(v.hostPath).isDirectory()) return `volume hostPath ${v.hostPath} is not a directory`
  }
  if (spec.network !== undefined && spec.network !== "none") return `unsupported network mode ${String(spec.network)}`
  if (spec.isolation !== undefined && spec.isolation !== "bwrap" && spec.isolation !== "gvisor") return `unknown isolation ${JSON.stringify(spec.isolation)} (bwrap or gvisor)`
  return undefined
}

export const validateSpec = (spec: BoxSpec): Effect.Effect<void, BoxError> =>
  Effect.suspend(() => {
    const problem = problemOf(spec)
    return problem === undefined ? Effect.void : Effect.fail(invalid(problem))
  })

/**
 * The size of the box's tmpfs /tmp. tmpfs pages are charged to the box's memory and cannot be
 * reclaimed: a /tmp as large as the memory limit would let a full /tmp OOM-kill the init. Default:
 * a quarter of it, at most 512 MiB.
 */
export const tmpBytesOf = (spec: BoxSpec): number =>
  spec.tmpBytes ?? Math.min(512 * MiB, Math.max(MiB, Math.floor((spec.resources?.memoryBytes ?? 2048 * MiB) / 4)))

/** bubblewrap's arguments for the box (given through a pipe: the box's /proc/1/cmdline shows no host paths). */
export const bwrapArgs = (options: {
  readonly spec: BoxSpec
  readonly merged: string
  readonly volumeSources: ReadonlyArray<string>
  readonly busybox: string
  readonly execHelper: string | undefined
}): Array<string> => {
  const { spec, merged, volumeSources } = options
  const args = [
    "--bind", merged, "/",
    "--proc", "/proc",
    "--dev", "/dev",
    "--size", String(tmpBytesOf(spec)), "--tmpfs", "/tmp",
    "--ro-bind", options.busybox, BOX_TOOLS,
    ...(options.execHelper ? ["--ro-bind", options.execHelper, EXEC_HELPER] : [])
  ]
  ;(spec.volumes ?? []).forEach((v, i) => args.push(v.readOnly ? "--ro-bind" : "--bind", volumeSources[i]!, v.mountPath))
  args.push(
    "--unshare-all",
    "--uid", "0",
    "--gid", "0",
    "--hostname", spec.hostname ?? "box",
    "--chdir", spec.workingDir ?? BOX_HOME,
    "--clearenv",
    "--setenv", "PATH", DEFAULT_PATH,
    "--setenv", "HOME", BOX_HOME,
    "--new-session",
    "--as-pid-1",
    "--info-fd", "3"
  )
  return args
}

export const shQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`
