/**
 * A test-only BoxExec: every exec is a fresh `bwrap --unshare-all` process over a busybox root
 * filesystem that the test builds in a temporary directory, with the host's static busybox bound
 * read-only at /.slipway/busybox. A real sandboxed process, without the persistent-namespace box
 * of the runtime (files persist because the root directory persists between execs).
 */
import { spawn, spawnSync } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { BoxCommand, BoxExec } from "../../server/sandboxes/dataplane/box.ts"

const APPLETS = ["sh", "ash", "cat", "echo", "ls", "mkdir", "rm", "mv", "sleep", "head", "tail", "dd", "printf", "env", "pwd",
  "grep", "find", "stat", "true", "false", "wc", "tr", "od", "seq", "yes", "kill", "ln", "touch", "chmod", "id", "base64", "cp"]

/** Fails (never skips) when a tool is missing, naming the Debian package. */
export const requireHostTools = (): void => {
  if (spawnSync("bwrap", ["--version"]).status !== 0) throw new Error("bwrap is missing: apt-get install -y bubblewrap")
  if (!existsSync("/bin/busybox")) throw new Error("/bin/busybox is missing: apt-get install -y busybox-static")
}

export interface TestBox extends BoxExec {
  /** The box's root filesystem, as a host directory. */
  readonly root: string
  /** Processes started and not yet exited. */
  readonly running: () => number
  readonly dispose: () => Promise<void>
}

export const makeBwrapBox = (options: { readonly bash?: boolean } = {}): TestBox => {
  requireHostTools()
  const base = mkdtempSync(join(tmpdir(), "slipway-box-"))
  const root = join(base, "rootfs")
  for (const dir of ["bin", "etc", "home/user", "tmp", "root", ".slipway", "proc", "dev"]) mkdirSync(join(root, dir), { recursive: true })
  copyFileSync("/bin/busybox", join(root, "bin/busybox"))
  for (const applet of APPLETS) symlinkSync("busybox", join(root, "bin", applet))
  // Optionally a "bash" (busybox ash under that name, through a wrapper) to tell the shell fallback apart.
  if (options.bash) writeFileSync(join(root, "bin/bash"), "#!/bin/sh\nexport SLIPWAY_TEST_SHELL=bash\nexec /bin/busybox sh \"$@\"\n", { mode: 0o755 })
  writeFileSync(join(root, "etc/passwd"), "root:x:0:0:box-root-marker:/root:/bin/sh\n")
  writeFileSync(join(root, ".slipway/busybox"), "")
  const live = new Set<number>()

  const exec: BoxExec["exec"] = (argv, execOptions = {}) => {
    const env = Object.entries(execOptions.env ?? {}).flatMap(([name, value]) => ["--setenv", name, value])
    const child = spawn(
      "bwrap",
      [
        "--bind", root, "/",
        "--ro-bind", "/bin/busybox", "/.slipway/busybox",
        "--proc", "/proc", "--dev", "/dev",
        "--unshare-all", "--die-with-parent", "--new-session", "--hostname", "box",
        "--clearenv", "--setenv", "PATH", "/bin", "--setenv", "HOME", "/home/user", ...env,
        "--chdir", execOptions.cwd ?? "/home/user",
        "--", ...argv
      ],
      { stdio: ["pipe", "pipe", "pipe"], detached: true }
    )
    const pid = child.pid ?? -1
    live.add(pid)
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.on("exit", (code, signal) => {
        live.delete(pid)
        resolve({ code, signal })
      })
      child.on("error", () => {
        live.delete(pid)
        resolve({ code: 127, signal: null })
      })
    })
    const process: BoxCommand = {
      pid,
      started: Promise.resolve(),
      stdin: child.stdin,
      stdout: child.stdout,
      stderr: child.stderr,
      // bwrap's pid-namespace init dies with it (--die-with-parent), taking every process of the command along.
      kill: () => {
        try {
          globalThis.process.kill(-pid, "SIGKILL")
        } catch {
          // gone already
        }
      },
      exited
    }
    return process
  }

  return {
    exec,
    root,
    running: () => live.size,
    dispose: async () => {
      for (const pid of live) {
        try {
          process.kill(-pid, "SIGKILL")
        } catch {
          // gone already
        }
      }
      const deadline = Date.now() + 5000
      while (live.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
      rmSync(base, { recursive: true, force: true })
    }
  }
}
