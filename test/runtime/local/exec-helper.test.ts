/**
 * The box's exec helper (server/runtime/local/exec-helper.c): every exec is forked inside the box
 * by one helper process the runner starts there once. What a command sees must be what it saw
 * when the server spawned it through nsenter: real pipes, its own process group, default signal
 * dispositions, oom_score_adj 500, only its own fds; and a helper killed from inside the box is
 * replaced on the next exec.
 */
import { existsSync } from "node:fs"
import path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ShellCommand } from "../../../server/runtime/BoxProcess.ts"
import { createHash } from "node:crypto"
import type { Duplex } from "node:stream"
import { Effect, Exit, Scope } from "effect"
import { makeTestRunner, type TestBox, type TestRunner } from "./harness.ts"
import { requireIsolation, testIsolations } from "../../support/isolation.ts"
import { expectNothingLeft, makeRootfs, removeCgroupParent, requireHostTools, runIn, sh, tempDir } from "./support.ts"

const CGROUP_PARENT = "slipway-test-exec-helper"
let base: string
let rootfs: string
let runner: TestRunner

beforeAll(async () => {
  requireHostTools()
  if (!existsSync("/usr/bin/gcc")) throw new Error("/usr/bin/gcc is missing: apt-get install -y gcc libc6-dev (the exec helper is built with it)")
  base = tempDir("slipway-exec-helper-")
  rootfs = makeRootfs(base)
  runner = await makeTestRunner({ root: path.join(base, "state"), cgroupParent: CGROUP_PARENT })
}, 60_000)

afterAll(() =>
  expectNothingLeft({
    base,
    stateDir: path.join(base, "state"),
    cgroupParent: CGROUP_PARENT,
    release: async () => {
      for (const spec of runner?.list() ?? []) await runner.destroy(spec.id)
    }
  })
)

const helperPid = async (box: TestBox) => {
  const ps = (await sh(box, "ps -o pid,args")).stdout
  const line = ps.split("\n").find((l) => l.includes("/.slipway/exec"))
  return line === undefined ? undefined : Number(line.trim().split(/\s+/)[0])
}

describe.each(testIsolations)("the box's exec helper under %s", (isolation) => {
  let box: TestBox

  beforeAll(async () => {
    requireIsolation(isolation)
    box = await runner.start({ id: `helped-${isolation}`, rootfs, env: {}, storageBytes: 64 << 20, resources: { memoryBytes: 256 << 20, pids: 64 }, isolation })
  }, 60_000)
  afterAll(() => box?.stop())

  it("forks each command inside the box: its parent is the helper, one per box (under gVisor, the sandbox's pid 1)", async () => {
    expect(runner.service.execMode).toEqual({ mode: "helper" })
    const pid = await helperPid(box)
    if (isolation === "gvisor") expect(pid).toBe(1)
    else expect(pid).toBeGreaterThan(1)
    const status = await sh(box, "grep PPid /proc/self/status")
    // sh is the command itself: its parent is the helper (not nsenter, which would be pid 0 here).
    expect(status.stdout.trim()).toBe(`PPid:\t${pid}`)
    await Promise.all(Array.from({ length: 8 }, () => sh(box, "true")))
    expect(await helperPid(box)).toBe(pid)
  })
  it("gives commands real pipes (/dev/stdin, /dev/stderr), their own fds only, default signals and (bwrap) oom_score_adj 500", async () => {
    const piped = await sh(box, "cat /dev/stdin; echo to-stderr > /dev/stderr; for f in 0 1 2; do readlink /proc/$$/fd/$f; done | grep -c '^pipe:'", { input: "from stdin\n" })
    expect(piped).toMatchObject({ code: 0, stdout: "from stdin\n3\n", stderr: "to-stderr\n" })
    // 0, 1, 2 and the directory ls reads: nothing of the helper's (its channel to the server) leaks in.
    expect((await runIn(box, ["ls", "/proc/self/fd"])).stdout.trim().split(/\s+/).sort()).toEqual(["0", "1", "2", "3"])
    // Under gVisor there is no OOM killer inside the sandbox (the host's ends the whole sandbox): left at 0.
    expect((await sh(box, "cat /proc/self/oom_score_adj")).stdout.trim()).toBe(isolation === "gvisor" ? "0" : "500")
    // gVisor's /proc/<pid>/status has no signal masks: there the defaults show in what signals do.
    if (isolation === "bwrap") expect((await runIn(box, ["grep", "-E", "SigIgn|SigBlk", "/proc/self/status"])).stdout).toBe("SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n")
    for (const signal of ["HUP", "INT", "TERM", "PIPE", "USR1"]) expect((await runIn(box, ["/bin/sh", "-c", `kill -${signal} $$; echo survived`])).signal).toBe(`SIG${signal}`)
    const sleeper = box.exec(["sleep", "100"])
    await sleeper.started
    expect(sleeper.pid).toBeGreaterThan(1)
    sleeper.kill("SIGTERM")
    expect(await sleeper.exited).toEqual({ code: null, signal: "SIGTERM" })
    // Its own session and process group.
    expect((await sh(box, "cut -d' ' -f6 /proc/self/stat; echo $$")).stdout.split("\n").slice(0, 2).reduce((a, b) => (a === b ? a : "differ"))).not.toBe("differ")
  })

  it("streams large output with backpressure and large input, byte for byte", async () => {
    const big = box.exec(["/bin/sh", "-c", "dd if=/dev/zero bs=1M count=20 2>/dev/null; printf x"])
    big.stdin.end()
    const bigClosed = new Promise((resolve) => big.stdout.once("close", resolve))
    let bytes = 0
    let last = 0
    big.stdout.pause()
    // Nobody reads for a while: the helper pauses the command instead of buffering 20 MB.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(big.stdout.readableLength).toBeLessThan(4 << 20)
    big.stdout.on("data", (chunk: Buffer) => {
      bytes += chunk.length
      last = chunk[chunk.length - 1]!
    })
    big.stdout.resume()
    big.stderr.resume()
    expect((await big.exited).code).toBe(0)
    await bigClosed
    expect(bytes).toBe((20 << 20) + 1)
    expect(last).toBe(0x78)

    const input = Buffer.alloc(9 << 20, 7)
    const counted = box.exec(["/bin/sh", "-c", "wc -c; md5sum"])
    let out = ""
    counted.stdout.on("data", (d: Buffer) => (out += d.toString()))
    counted.stderr.resume()
    const countedClosed = new Promise((resolve) => counted.stdout.once("close", resolve))
    counted.stdin.end(input)
    await counted.exited
    await countedClosed
    expect(out.split("\n")[0]!.trim()).toBe(String(9 << 20))
  })

  it("kills the command's process group; background processes of an exited command keep running", async () => {
    const group = box.exec(["/bin/sh", "-c", "sleep 2001 & sleep 2002 & echo up; wait"])
    group.stdin.end()
    await new Promise((resolve) => group.stdout.once("data", resolve))
    group.kill()
    expect((await group.exited).signal).toBe("SIGKILL")
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect((await sh(box, "ps")).stdout).not.toContain("sleep 200")
    await sh(box, "sleep 2003 >/dev/null 2>&1 &")
    expect((await sh(box, "ps")).stdout).toContain("sleep 2003")
  })

  it("execShell: the dataplane's launcher rules in the helper, the shell exec'd directly by it (one exec in the box)", async () => {
    expect(await launcherCases(box)).toEqual(expectedLauncher)
    const pid = await helperPid(box)
    // The shell's parent is the helper itself: no launcher process in between.
    expect(await shellIn(box, { shell: "/bin/sh", cwd: "/tmp", command: "grep PPid /proc/$$/status" })).toMatchObject({ code: 0, stdout: `PPid:\t${pid}\n` })
    // A command with NUL or a relative shell/cwd is refused before anything runs.
    expect(() => box.execShell({ shell: "/bin/sh", cwd: "/tmp", command: "a\0b" })).toThrow(/NUL/)
    expect(() => box.execShell({ shell: "sh", cwd: "/tmp", command: "true" })).toThrow(/absolute/)
  })

  it("connects to a port on the box's loopback and serves one of its ports (listen): the helper relays both", async () => {
    await sh(box, "mkdir -p /home/user/www && echo served > /home/user/www/index.html && httpd -p 127.0.0.1:8080 -h /home/user/www")
    expect(await Effect.runPromise(box.box.listening(8080))).toBe(true)
    expect(await Effect.runPromise(box.box.listening(8081))).toBe(false)
    // A connection: written, half-closed, read to its end.
    const connection = await Effect.runPromise(box.box.connect(8080))
    const answer = new Promise<string>((resolve) => {
      let text = ""
      connection.on("data", (d: Buffer) => (text += d.toString()))
      connection.once("end", () => resolve(text))
    })
    connection.end("GET /index.html HTTP/1.0\r\n\r\n")
    expect(await answer).toMatch(/200 OK[\s\S]*\r\n\r\nserved\n$/)
    // Nothing listens there: a clear failure.
    await expect(Effect.runPromise(box.box.connect(8081))).rejects.toThrow(/port 8081 in the box: cannot connect: Connection refused/)
    // The box dials its own loopback; each connection comes to us.
    const scope = Effect.runSync(Scope.make())
    const accepted: Array<string> = []
    await Effect.runPromise(Scope.provide(box.box.listen(7000, httpAnswer(accepted)), scope))
    const r = await sh(box, "for i in 1 2 3; do wget -q -O - http://127.0.0.1:7000/ping-$i; echo; done; wget -q -O - http://127.0.0.1:7001/; echo rc=$?")
    expect(r.stdout).toBe("/PING-1\n/PING-2\n/PING-3\nrc=1\n")
    expect(accepted.sort()).toEqual(["/ping-1", "/ping-2", "/ping-3"])
    await Effect.runPromise(Scope.close(scope, Exit.void))
    expect((await sh(box, "wget -q -O - http://127.0.0.1:7000/; echo rc=$?")).stdout).toBe("rc=1\n")
    await sh(box, "kill $(pidof httpd)")
  })

  it("streams a large download through a connection with backpressure", async () => {
    await sh(box, "mkdir -p /home/user/www && dd if=/dev/urandom of=/home/user/www/big bs=1M count=8 2>/dev/null && md5sum /home/user/www/big > /home/user/www/sum && httpd -p 127.0.0.1:8082 -h /home/user/www")
    const sum = (await sh(box, "cut -d' ' -f1 /home/user/www/sum")).stdout.trim()
    const connection = await Effect.runPromise(box.box.connect(8082))
    const hash = createHash("md5")
    let header = Buffer.alloc(0)
    let inBody = false
    connection.pause()
    const done = new Promise<void>((resolve) => connection.once("end", () => resolve()))
    connection.end("GET /big HTTP/1.0\r\n\r\n")
    await new Promise((resolve) => setTimeout(resolve, 300))
    // Nobody read: the helper stopped reading the box's socket instead of buffering 8 MiB here.
    expect(connection.readableLength).toBeLessThan(4 << 20)
    connection.on("data", (d: Buffer) => {
      if (inBody) return void hash.update(d)
      header = Buffer.concat([header, d])
      const end = header.indexOf("\r\n\r\n")
      if (end < 0) return
      inBody = true
      hash.update(header.subarray(end + 4))
    })
    connection.resume()
    await done
    expect(hash.digest("hex")).toBe(sum)
    await sh(box, "kill $(pidof httpd)")
  })
})

describe("the exec helper under bwrap", () => {
  let box: TestBox
  beforeAll(async () => {
    box = await runner.start({ id: "helped-bwrap-only", rootfs, env: {}, storageBytes: 64 << 20, resources: { memoryBytes: 256 << 20, pids: 64 } })
  }, 60_000)
  afterAll(() => box?.stop())

  it("a helper killed from inside the box is replaced on the next exec; the command it was relaying reports SIGKILL", async () => {
    const before = await helperPid(box)
    const orphan = box.exec(["sleep", "300"])
    orphan.stdin.end()
    await orphan.started
    const killed = await sh(box, `kill -9 ${before}; echo sent`)
    // The helper died under this very command: its answer may be cut; what matters is what follows.
    expect(killed.code === 0 || killed.signal === "SIGKILL").toBe(true)
    expect(await orphan.exited).toEqual({ code: null, signal: "SIGKILL" })
    expect(await sh(box, "echo again")).toMatchObject({ code: 0, stdout: "again\n" })
    const after = await helperPid(box)
    expect(after).toBeGreaterThan(1)
    expect(after).not.toBe(before)
  })

  it("a runner without the helper (execHelper: false) still runs commands through nsenter", async () => {
    const plain = await makeTestRunner({ root: path.join(base, "plain"), cgroupParent: `${CGROUP_PARENT}-plain`, execHelper: false })
    expect(plain.service.execMode).toEqual({ mode: "nsenter", reason: "disabled" })
    const other = await plain.start({ id: "plain", rootfs, env: { X: "1" }, storageBytes: 16 << 20 })
    try {
      expect(await sh(other, "echo $X; ls /.slipway")).toMatchObject({ code: 0, stdout: "1\nbusybox\n" })
      expect((await sh(other, "ps -o args")).stdout).not.toContain("/.slipway/exec")
      // execShell without the helper: the busybox launcher, with the same answers.
      expect(await launcherCases(other)).toEqual(expectedLauncher)
      // Ports without the helper: bridges in the box's network namespace, the same answers.
      await sh(other, "mkdir -p /home/user/www && echo bridged > /home/user/www/index.html && httpd -p 127.0.0.1:8080 -h /home/user/www")
      const forward = await other.forward(8080)
      expect(await (await fetch(`http://127.0.0.1:${forward.port}/index.html`)).text()).toBe("bridged\n")
      await forward.close()
      const scope = Effect.runSync(Scope.make())
      await Effect.runPromise(Scope.provide(other.box.listen(7000, httpAnswer([])), scope))
      expect((await sh(other, "wget -q -O - http://127.0.0.1:7000/from-the-host")).stdout).toBe("/FROM-THE-HOST")
      await Effect.runPromise(Scope.close(scope, Exit.void))
    } finally {
      await other.destroy()
      expect(removeCgroupParent(`${CGROUP_PARENT}-plain`)).toBe(true)
    }
  })
})

describe("the exec helper under gVisor", () => {
  it("is the sandbox's pid 1: no signal box root can catch ends it; SIGKILL ends that box only", async () => {
    requireIsolation("gvisor")
    const box = await runner.start({ id: "helped-gvisor-init", rootfs, env: {}, storageBytes: 16 << 20, resources: { memoryBytes: 256 << 20, pids: 64 }, isolation: "gvisor" })
    const neighbour = await runner.start({ id: "helped-gvisor-other", rootfs, env: {}, storageBytes: 16 << 20, isolation: "gvisor" })
    try {
      // gVisor does not shield its pid 1 from its own processes' signals as Linux does: the helper catches them all.
      const r = await sh(box, "sleep 100 & for s in TERM HUP INT QUIT USR1 USR2 ALRM TSTP TTIN TTOU ABRT SEGV BUS TRAP SYS 34 64; do kill -$s 1; done; kill -9 -1; echo sent")
      expect(r.code === 0 || r.signal === "SIGKILL").toBe(true)
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(await sh(box, "echo again; ps -o pid,args | grep -c '[.]slipway/exec --init'")).toMatchObject({ code: 0, stdout: "again\n1\n" })
      // SIGKILL cannot be caught: box root can end its own box, nothing else.
      await sh(box, "kill -9 1").catch(() => undefined)
      expect(await box.exited).toMatchObject({ expected: false })
      expect(await sh(neighbour, "echo unaffected")).toMatchObject({ code: 0, stdout: "unaffected\n" })
    } finally {
      await box.destroy()
      await neighbour.destroy()
    }
  })
})

/** A connection handler answering an HTTP request with its path in capitals (and noting the path). */
const httpAnswer = (paths: Array<string>) => (conn: Duplex) => {
  let request = ""
  conn.on("error", () => undefined)
  conn.on("data", (d: Buffer) => {
    request += d.toString()
    if (!request.includes("\r\n\r\n")) return
    const path = request.split(" ")[1] ?? ""
    paths.push(path)
    conn.end(`HTTP/1.0 200 OK\r\nContent-Length: ${path.length}\r\n\r\n${path.toUpperCase()}`)
  })
}

/** Runs a shell command through `execShell` to completion. */
const shellIn = async (target: TestBox, command: ShellCommand, env?: Record<string, string>) => {
  const p = target.execShell(command, { env: env ?? {} })
  let stdout = ""
  let stderr = ""
  p.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
  p.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
  p.stdin.end()
  const closed = Promise.all([new Promise((r) => p.stdout.once("close", r)), new Promise((r) => p.stderr.once("close", r))])
  const { code } = await p.exited
  await closed
  return { code, stdout, stderr }
}

/** The launcher's observable rules: shell fallback and errors, cwd, PWD, env, exit codes, argv[0]. */
const launcherCases = async (target: TestBox) => ({
  missingShell: await shellIn(target, { shell: "/usr/bin/zsh", cwd: "/tmp", command: "echo hi" }),
  missingCwd: await shellIn(target, { shell: "/bin/sh", cwd: "/nowhere", command: "pwd" }),
  notExecutable: await shellIn(target, { shell: "/etc/passwd", cwd: "/tmp", command: "true" }),
  cwdAndEnv: await shellIn(target, { shell: "/bin/sh", cwd: "/tmp", command: 'pwd; echo "$PWD $GREETING $0"; exit 3' }, { GREETING: "hello there" }),
  quoting: await shellIn(target, { shell: "/bin/sh", cwd: "/home/user", command: "printf '%s|' \"$HOME\" 'a  b' \"$(echo x)\"" }),
  // No /bin/bash in the box: /bin/bash (the clients' default) runs /bin/sh instead.
  bashFallback: await (async () => {
    await sh(target, "rm /bin/bash")
    try {
      return await shellIn(target, { shell: "/bin/bash", cwd: "/tmp", command: "echo fell back to $0" })
    } finally {
      await sh(target, "ln -s busybox /bin/bash")
    }
  })()
})

const expectedLauncher = {
  missingShell: { code: 127, stdout: "", stderr: "slipway: shell not found in the sandbox: /usr/bin/zsh\n" },
  missingCwd: { code: 1, stdout: "", stderr: "slipway: cannot change to directory: /nowhere\n" },
  notExecutable: { code: 127, stdout: "", stderr: "slipway: shell not found in the sandbox: /etc/passwd\n" },
  cwdAndEnv: { code: 3, stdout: "/tmp\n/tmp hello there /bin/sh\n", stderr: "" },
  quoting: { code: 0, stdout: "/home/user|a  b|x|", stderr: "" },
  bashFallback: { code: 0, stdout: "fell back to /bin/sh\n", stderr: "" }
}
