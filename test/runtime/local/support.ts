/** Test support for the local runtime: a busybox rootfs, command helpers, leak checks. */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync, chmodSync, rmdirSync, rmSync, readdirSync, readFileSync } from "node:fs"
import { execFileSync } from "node:child_process"
import os from "node:os"
import path from "node:path"
import { expect } from "vitest"
import type { ExecOptions } from "../../../server/runtime/BoxProcess.ts"
import type { TestBox } from "./harness.ts"

/** Fails (never skips) with the Debian package to install when a tool is missing. */
export const requireHostTools = () => {
  const tools: Array<[string, string]> = [
    ["/usr/bin/bwrap", "bubblewrap"],
    ["/bin/busybox", "busybox-static"],
    ["/usr/bin/nsenter", "util-linux"],
    ["/usr/sbin/mkfs.btrfs", "btrfs-progs"],
    ["/usr/sbin/mkfs.ext4", "e2fsprogs"]
  ]
  for (const [tool, pkg] of tools) if (!existsSync(tool)) throw new Error(`${tool} is missing: apt-get install -y ${pkg}`)
  if (process.getuid?.() !== 0) throw new Error("the local runtime tests need root (mounts, cgroups)")
}

const APPLETS = ["sh", "bash", "ls", "cat", "echo", "env", "id", "nc", "sleep", "kill", "ps", "dd", "mount", "umount", "unshare",
  "ip", "hostname", "mkdir", "rm", "touch", "true", "false", "wc", "head", "grep", "seq", "df", "sync", "stat", "pwd", "test", "readlink",
  "httpd", "md5sum", "find", "timeout", "mknod", "chroot", "nsenter", "ln", "printf", "xargs", "tail", "ifconfig", "wget", "chmod"]

/** A minimal image rootfs: static busybox and its applets, /etc, /tmp, /home/user. */
export const makeRootfs = (base: string): string => {
  const rootfs = path.join(base, "rootfs")
  for (const d of ["bin", "etc", "tmp", "home/user", "usr/bin"]) mkdirSync(path.join(rootfs, d), { recursive: true })
  copyFileSync("/bin/busybox", path.join(rootfs, "bin/busybox"))
  chmodSync(path.join(rootfs, "bin/busybox"), 0o755)
  for (const a of APPLETS) symlinkSync("busybox", path.join(rootfs, "bin", a))
  writeFileSync(path.join(rootfs, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")
  writeFileSync(path.join(rootfs, "etc/image-file"), "from the image\n")
  chmodSync(path.join(rootfs, "tmp"), 0o1777)
  return rootfs
}

export const tempDir = (prefix: string) => {
  const d = mkdtempSync(path.join(os.tmpdir(), prefix))
  chmodSync(d, 0o711)
  return d
}

export interface Ran {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs argv in the box to completion (with optional stdin), collecting output. */
export const runIn = async (box: TestBox, argv: ReadonlyArray<string>, options?: ExecOptions & { input?: string }): Promise<Ran> => {
  const p = box.exec(argv, options)
  let stdout = ""
  let stderr = ""
  p.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
  p.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
  p.stdin.end(options?.input ?? "")
  const streamsDone = Promise.all([new Promise((r) => p.stdout.once("close", r)), new Promise((r) => p.stderr.once("close", r))])
  const { code, signal } = await p.exited
  await streamsDone
  return { code, signal, stdout, stderr }
}

export const sh = (box: TestBox, script: string, options?: ExecOptions & { input?: string }) => runIn(box, ["/bin/sh", "-c", script], options)

/** Mounts, loop devices and cgroups that mention `marker` (a test's temp dir or id prefix). */
export const leftovers = (marker: string) => {
  const mounts = execFileSync("/usr/bin/mount", { encoding: "utf8" }).split("\n").filter((l) => l.includes(marker))
  const loops = execFileSync("/usr/sbin/losetup", ["-a"], { encoding: "utf8" }).split("\n").filter((l) => l.includes(marker))
  return { mounts, loops }
}

export const cgroupExists = (parent: string, id: string) =>
  ["memory", "cpu", "pids"].some((c) => existsSync(path.join("/sys/fs/cgroup", c, parent, id))) || existsSync(path.join("/sys/fs/cgroup", parent, id))

/** Removes a test's parent cgroup in every hierarchy (empty once every box is gone: runsc makes it in the others too); returns false if it could not. */
export const removeCgroupParent = (parent: string): boolean => {
  let ok = true
  for (const d of [...readdirSync("/sys/fs/cgroup").map((c) => path.join("/sys/fs/cgroup", c, parent)), path.join("/sys/fs/cgroup", parent)]) {
    if (!existsSync(d)) continue
    try {
      rmdirSync(d)
    } catch {
      ok = false
    }
  }
  return ok
}

/** Host pids whose real uid is one of `uids` (a box's processes run as its host uid). */
export const processesOf = (uids: ReadonlyArray<number>): Array<number> => {
  const wanted = new Set(uids)
  const found: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const status = readFileSync(`/proc/${entry}/status`, "utf8")
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1])
      const state = /^State:\s+(\S)/m.exec(status)?.[1]
      if (wanted.has(uid) && state !== "Z") found.push(Number(entry))
    } catch {
      /* gone */
    }
  }
  return found
}

/** Host pids of runsc processes (runsc run, exec, its gofer and sandbox) whose command line mentions `marker` (a test's state dir). */
export const runscProcesses = (marker: string): Array<number> =>
  readdirSync("/proc").flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return []
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8")
      return cmdline.includes("runsc") && cmdline.includes(marker) ? [Number(entry)] : []
    } catch {
      return []
    }
  })

/** Host uids of every box recorded under a runner's state dir. */
export const boxUids = (stateDir: string): Array<number> => {
  if (!existsSync(stateDir)) return []
  return readdirSync(stateDir).flatMap((id) => {
    try {
      return [JSON.parse(readFileSync(path.join(stateDir, id, "box.json"), "utf8")).hostUid as number]
    } catch {
      return []
    }
  })
}

/**
 * The end of every local-runtime test file: `release` destroys what the file started, then the
 * file must have left nothing behind: its parent cgroup removable, no process running as one of
 * its boxes' uids (read from `stateDir` before `release`) nor any runsc process of its gVisor
 * boxes, no mount or loop device under `base`, which is removed.
 */
export const expectNothingLeft = async (options: { readonly base: string; readonly stateDir: string; readonly cgroupParent: string; readonly release: () => Promise<void> }) => {
  const uids = boxUids(options.stateDir)
  await options.release()
  expect(removeCgroupParent(options.cgroupParent)).toBe(true)
  expect(processesOf(uids)).toEqual([])
  expect(runscProcesses(options.stateDir)).toEqual([])
  const left = leftovers(options.base)
  rmSync(options.base, { recursive: true, force: true })
  expect(left).toEqual({ mounts: [], loops: [] })
}
