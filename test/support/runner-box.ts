/**
 * A test-only BoxExec over a real box of the local runtime's box runner (the runner under test
 * elsewhere): a persistent box on a busybox root filesystem built like `bwrap-box.ts`'s, its
 * commands started through the box's exec helper, as the dataplane runs them. The dataplane's
 * protocol suites use it to run under gVisor (`makeTestBox`).
 */
import { copyFileSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import type { Isolation } from "../../server/runtime/local/boxes/model.ts"
import { buildExecHelper } from "../../server/runtime/local/execHelper.ts"
import { processRunner } from "../../server/runtime/ProcessRunner.ts"
import type { BoxCommand } from "../../server/sandboxes/dataplane/box.ts"
import { makeTestRunner } from "../runtime/local/harness.ts"
import { removeCgroupParent, tempDir } from "../runtime/local/support.ts"
import { type TestBox, makeBwrapBox, requireHostTools } from "./bwrap-box.ts"
import { requireIsolation } from "./isolation.ts"

const APPLETS = ["sh", "ash", "cat", "echo", "ls", "mkdir", "rm", "mv", "sleep", "head", "tail", "dd", "printf", "env", "pwd",
  "grep", "find", "stat", "true", "false", "wc", "tr", "od", "seq", "yes", "kill", "ln", "touch", "chmod", "id", "base64", "cp"]

let counter = 0

export const makeRunnerBox = async (options: { readonly isolation: Isolation; readonly bash?: boolean }): Promise<TestBox> => {
  requireHostTools()
  requireIsolation(options.isolation)
  const base = tempDir("slipway-runner-box-")
  const rootfs = join(base, "rootfs")
  for (const dir of ["bin", "etc", "home/user", "tmp", "root"]) mkdirSync(join(rootfs, dir), { recursive: true })
  copyFileSync("/bin/busybox", join(rootfs, "bin/busybox"))
  for (const applet of APPLETS) symlinkSync("busybox", join(rootfs, "bin", applet))
  if (options.bash) writeFileSync(join(rootfs, "bin/bash"), "#!/bin/sh\nexport SLIPWAY_TEST_SHELL=bash\nexec /bin/busybox sh \"$@\"\n", { mode: 0o755 })
  writeFileSync(join(rootfs, "etc/passwd"), "root:x:0:0:box-root-marker:/root:/bin/sh\n")
  // One build of the exec helper for every box of the test run.
  const helper = await Effect.runPromise(buildExecHelper(processRunner, join(tmpdir(), "slipway-test-tools")))
  if (!("path" in helper)) throw new Error(helper.error)
  const cgroupParent = `slipway-test-runner-box-${process.pid}-${++counter}`
  const runner = await makeTestRunner({ root: join(base, "state"), cgroupParent, execHelper: helper.path })
  const box = await runner.start({ id: "box", rootfs, env: {}, storageBytes: 256 << 20, resources: { memoryBytes: 512 << 20, pids: 256 }, isolation: options.isolation })
  const live = new Set<BoxCommand>()
  const track = (command: BoxCommand) => {
    live.add(command)
    void command.exited.then(() => live.delete(command))
    return command
  }
  return {
    exec: (argv, execOptions) => track(box.exec(argv, execOptions)),
    execShell: (command, execOptions) => track(box.execShell(command, execOptions)),
    root: box.filesystem,
    running: () => live.size,
    dispose: async () => {
      await box.destroy()
      // runsc may still be removing the sandbox's cgroups in the other hierarchies.
      for (let i = 0; i < 50 && !removeCgroupParent(cgroupParent); i++) await new Promise((resolve) => setTimeout(resolve, 40))
      rmSync(base, { recursive: true, force: true })
    }
  }
}

/** The protocol suites' box under `isolation`: a bubblewrap sandbox per command, or a gVisor box of the runner. */
export const makeTestBox = (isolation: Isolation, options: { readonly bash?: boolean } = {}): Promise<TestBox> =>
  isolation === "bwrap" ? Promise.resolve(makeBwrapBox(options)) : makeRunnerBox({ isolation, ...options })
