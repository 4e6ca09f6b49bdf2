import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { spawnSync, spawn } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import path from "node:path"
import { BOX_HOME } from "../../../server/runtime/BoxProcess.ts"
import { BoxError, type BoxSpec } from "../../../server/runtime/local/BoxRunner.ts"
import { makeTestRunner, type TestBox, type TestRunner } from "./harness.ts"
import { cgroupExists, expectNothingLeft, leftovers, makeRootfs, requireHostTools, runIn, sh, tempDir } from "./support.ts"
import { requireIsolation, testIsolations } from "../../support/isolation.ts"
import { GVISOR_BASE_TASKS, GVISOR_MEMORY_OVERHEAD, GVISOR_TASKS_PER_PROCESS } from "../../../server/runtime/local/boxes/gvisor.ts"

describe.each(testIsolations)("box runner under %s", (isolation) => {
  const CGROUP_PARENT = `slipway-test-boxes-${isolation}`
  let base: string
  let rootfs: string
  let runner: TestRunner
  const started: Array<TestBox> = []

  const startBox = async (id: string, extra: Partial<BoxSpec> = {}) => {
    const box = await runner.start({ id, rootfs, env: { GREETING: "hello" }, storageBytes: 64 << 20, isolation, ...extra })
    started.push(box)
    return box
  }

  beforeAll(async () => {
    requireHostTools()
    requireIsolation(isolation)
    base = tempDir("slipway-boxes-")
    rootfs = makeRootfs(base)
    runner = await makeTestRunner({ root: path.join(base, "state"), cgroupParent: CGROUP_PARENT })
  })

  afterAll(() =>
    expectNothingLeft({
      base,
      stateDir: path.join(base, "state"),
      cgroupParent: CGROUP_PARENT,
      release: async () => {
        for (const b of started) await b.destroy().catch(() => undefined)
        for (const spec of runner?.list() ?? []) await runner.destroy(spec.id)
      }
    })
  )

    it("reports which limits mode is in force (cgroup v1 on these hosts)", () => {
      expect(["cgroup-v2", "cgroup-v1", "rlimit"]).toContain(runner.service.limitsMode)
      // The CI hosts have cgroup v1 with memory, cpu and pids writable as root.
      expect(runner.service.limitsMode).toBe("cgroup-v1")
    })

    it("writes the limits into the box's cgroups; a busy loop is throttled to its cpu quota", async () => {
      const box = await startBox("limits", { resources: { memoryBytes: 96 << 20, cpuMillis: 200, pids: 77 } })
      const cg = (c: string, f: string) => readFileSync(path.join("/sys/fs/cgroup", c, CGROUP_PARENT, "limits", f), "utf8").trim()
      // Under gVisor the cgroup also holds gVisor's own kernel: its memory gets GVISOR_MEMORY_OVERHEAD on top.
      expect(cg("memory", "memory.limit_in_bytes")).toBe(String((96 << 20) + (isolation === "gvisor" ? GVISOR_MEMORY_OVERHEAD : 0)))
      expect(cg("cpu", "cpu.cfs_quota_us")).toBe("20000")
      expect(cg("cpu", "cpu.cfs_period_us")).toBe("100000")
      // Under gVisor each process of the box is several host tasks of its sandbox: the limit is scaled.
      expect(cg("pids", "pids.max")).toBe(String(isolation === "gvisor" ? GVISOR_BASE_TASKS + 77 * GVISOR_TASKS_PER_PROCESS : 77))
      if (isolation === "gvisor") {
        // The sandbox (its kernel, the sentry, and its file proxy, the gofer) is in the box's cgroup: charged to it.
        const procs = readFileSync(path.join("/sys/fs/cgroup/memory", CGROUP_PARENT, "limits", "cgroup.procs"), "utf8").trim().split("\n").map(Number)
        expect(procs).toContain(box.pid)
        expect(procs.length).toBeGreaterThanOrEqual(2)
        expect(Number(cg("memory", "memory.usage_in_bytes"))).toBeGreaterThan(4 << 20)
        // gVisor's kernel knows the limit (its /proc/meminfo).
        expect((await sh(box, "head -1 /proc/meminfo")).stdout).toMatch(new RegExp(`MemTotal:\\s+${((96 << 20) + GVISOR_MEMORY_OVERHEAD) / 1024} kB`))
      }
      const r = await sh(box, "timeout 1 sh -c 'while :; do :; done'; echo done")
      expect(r.stdout).toBe("done\n")
      const stat = cg("cpu", "cpu.stat")
      expect(Number(/nr_throttled (\d+)/.exec(stat)?.[1])).toBeGreaterThan(0)
    })

    it("runs echo hi, returns exit codes, a missing command is 127", async () => {
      const box = await startBox("basic")
      expect(await runIn(box, ["echo", "hi"])).toMatchObject({ code: 0, stdout: "hi\n" })
      expect((await sh(box, "exit 7")).code).toBe(7)
      expect((await runIn(box, ["no-such-command"])).code).toBe(127)
      expect(box.isRunning()).toBe(true)
      // Box root is root inside, an unprivileged uid of its own outside.
      expect((await runIn(box, ["id", "-u"])).stdout.trim()).toBe("0")
      expect(box.hostUid).toBeGreaterThanOrEqual(1_000_000_000)
      const hostSideUid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${box.pid}/status`, "utf8"))?.[1])
      // Under gVisor the box's kernel (the sentry) runs as nobody on the host.
      expect(hostSideUid).toBe(isolation === "gvisor" ? 65534 : box.hostUid)
      expect((await runIn(box, ["hostname"])).stdout.trim()).toBe("box")
    })

    it("passes the box env plus exec env, and runs in the right directory", async () => {
      const box = await startBox("envcwd", { hostname: "web-1" })
      const r = await sh(box, 'echo "$GREETING $EXTRA"; pwd', { env: { EXTRA: "world" } })
      expect(r.stdout).toBe(`hello world\n${BOX_HOME}\n`)
      await sh(box, "mkdir -p /home/user/sub")
      expect((await runIn(box, ["pwd"], { cwd: "sub" })).stdout).toBe("/home/user/sub\n")
      expect((await runIn(box, ["pwd"], { cwd: "/tmp" })).stdout).toBe("/tmp\n")
      expect((await runIn(box, ["pwd"], { cwd: "/does/not/exist" })).code).not.toBe(0)
      // Exec env overrides the box env; host variables never leak in.
      const env = (await runIn(box, ["env"], { env: { GREETING: "over" } })).stdout
      expect(env).toContain("GREETING=over")
      expect(env).not.toContain("VITEST")
      expect((await runIn(box, ["hostname"])).stdout.trim()).toBe("web-1")
    })

    it("runs many commands at once, each with its own output and exit code", async () => {
      const box = await startBox("parallel")
      const results = await Promise.all(Array.from({ length: 16 }, (_, i) => sh(box, `echo out-${i}; echo err-${i} >&2; exit ${i}`)))
      results.forEach((r, i) => expect(r).toEqual({ code: i, signal: null, stdout: `out-${i}\n`, stderr: `err-${i}\n` }))
    })

    it("a small box (64 MiB) runs command after command: under gVisor its kernel's own memory has room of its own", async () => {
      const box = await startBox("many", { resources: { memoryBytes: 64 << 20, pids: 64 } })
      // gVisor's sentry grows with every exec (about 100 KiB each, levelling off near 180 MiB).
      for (let i = 0; i < 600; i++) {
        const r = await runIn(box, ["true"])
        if (r.code !== 0) throw new Error(`command ${i} ended ${r.code ?? r.signal}`)
      }
      expect(box.isRunning()).toBe(true)
    }, 120_000)

    it("feeds stdin", async () => {
      const box = await startBox("stdin")
      expect((await runIn(box, ["cat"], { input: "line one\nline two\n" })).stdout).toBe("line one\nline two\n")
      expect((await sh(box, "wc -l", { input: "a\nb\nc\n" })).stdout.trim()).toBe("3")
    })

    it("kill signals the command's whole process group", async () => {
      const box = await startBox("kill")
      const p = box.exec(["/bin/sh", "-c", "sleep 1001 & sleep 1002 & echo started; wait"])
      await new Promise<void>((resolve) => p.stdout.once("data", () => resolve()))
      expect((await sh(box, "ps")).stdout).toContain("sleep 1001")
      p.kill()
      const exit = await p.exited
      expect(exit.signal === "SIGKILL" || exit.code === 137).toBe(true)
      await new Promise((r) => setTimeout(r, 100))
      const ps = (await sh(box, "ps")).stdout
      expect(ps).not.toContain("sleep 1001")
      expect(ps).not.toContain("sleep 1002")
      // SIGTERM reaches the group too.
      const q = box.exec(["sleep", "1003"])
      await new Promise((r) => setTimeout(r, 100))
      q.kill("SIGTERM")
      expect((await q.exited).signal ?? (await q.exited).code).toBeTruthy()
    })

    it("a background server survives its exec and is reachable from the next one and from the host", async () => {
      const box = await startBox("server")
      await sh(box, "mkdir -p www && echo pong > www/index.html")
      const started = await sh(box, "httpd -p 8080 -h /home/user/www; echo ok")
      expect(started).toMatchObject({ code: 0, stdout: "ok\n" })
      const got = await sh(box, 'printf "GET /index.html HTTP/1.0\\r\\n\\r\\n" | nc 127.0.0.1 8080')
      expect(got.stdout).toContain("pong")
      const fwd = await box.forward(8080)
      const res = await fetch(`http://127.0.0.1:${fwd.port}/index.html`)
      expect(await res.text()).toBe("pong\n")
      await fwd.close()
    })

    it("keeps the writable layer across stop/start; /tmp is a fresh tmpfs", async () => {
      const box = await startBox("persist")
      await sh(box, "echo kept > /home/user/file && echo gone > /tmp/file && mkdir -p /home/user/d/e")
      // Box root owns the image's files (id-mapped lower layer): it can change them, in its own layer only.
      expect((await sh(box, "echo changed > /etc/image-file && mkdir -p /usr/local/lib && echo ok")).stdout).toBe("ok\n")
      expect(readFileSync(path.join(rootfs, "etc/image-file"), "utf8")).toBe("from the image\n")
      expect(existsSync(path.join(rootfs, "usr/local"))).toBe(false)
      await box.stop()
      expect(box.isRunning()).toBe(false)
      expect(leftovers(path.join(base, "state", "persist")).mounts).toEqual([])
      expect(cgroupExists(CGROUP_PARENT, "persist")).toBe(false)
      expect(() => box.exec(["true"])).toThrow(/not running/)
      const again = await startBox("persist")
      expect((await runIn(again, ["cat", "/home/user/file"])).stdout).toBe("kept\n")
      expect((await runIn(again, ["cat", "/tmp/file"])).code).not.toBe(0)
      expect((await runIn(again, ["cat", "/etc/image-file"])).stdout).toBe("changed\n")
      await again.destroy()
      expect(existsSync(path.join(base, "state", "persist"))).toBe(false)
    })

    it("a stopped box started under the other isolation has its files, still box root's", async () => {
      const other = isolation === "gvisor" ? "bwrap" : "gvisor"
      const box = await startBox("switch")
      await sh(box, "echo mine > /home/user/own && mkdir -p /home/user/dir && echo changed > /etc/image-file")
      await box.stop()
      const moved = await startBox("switch", { isolation: other })
      expect(moved.box.isolation).toBe(other)
      const seen = await sh(moved, "cat /home/user/own /etc/image-file; stat -c %u /home/user/own /home/user/dir /home/user; echo more >> /home/user/own && echo ok")
      expect(seen).toMatchObject({ code: 0, stdout: "mine\nchanged\n0\n0\n0\nok\n" })
      await moved.stop()
      const back = await startBox("switch")
      expect((await sh(back, "cat /home/user/own; stat -c %u /home/user/own")).stdout).toBe("mine\nmore\n0\n")
      await back.destroy()
    })

    it("grows the writable layer when a later start asks for more storage", async () => {
      const box = await startBox("grows", { storageBytes: 16 << 20 })
      const full = await sh(box, "dd if=/dev/zero of=/home/user/a bs=1M count=30 2>&1; echo rc=$?")
      expect(full.stdout).toMatch(/No space left on device/)
      await sh(box, "rm -f /home/user/a; echo keep > /home/user/k; sync")
      await box.stop()
      const bigger = await startBox("grows", { storageBytes: 64 << 20 })
      const ok = await sh(bigger, "dd if=/dev/zero of=/home/user/a bs=1M count=30 2>&1; echo rc=$?; cat /home/user/k")
      expect(ok.stdout).toContain("rc=0")
      expect(ok.stdout).toContain("keep")
      await bigger.destroy()
    })

    it("tells its owner when the box's init dies; closing the box's scope then undoes its mounts and cgroup", async () => {
      const box = await startBox("dies")
      process.kill(box.pid, "SIGKILL")
      expect(await box.exited).toMatchObject({ expected: false })
      expect(box.isRunning()).toBe(false)
      expect(() => box.exec(["true"])).toThrow(/not running/)
      await box.stop()
      expect(leftovers(path.join(base, "state", "dies")).mounts).toEqual([])
      expect(cgroupExists(CGROUP_PARENT, "dies")).toBe(false)
    })

    it("an interrupted start undoes what it did, in reverse order; a start that fails half-way too", async () => {
      // Failing after its layer, image and overlay are mounted (a volume path through a symlink of the image): all of it unmounted.
      const spec = { id: "halfway", rootfs, env: {}, storageBytes: 16 << 20, isolation }
      await expect(runner.start({ ...spec, volumes: [{ hostPath: base, mountPath: "/bin/sh/v" }] })).rejects.toThrow(/crosses a symlink/)
      expect(leftovers(path.join(base, "state", "halfway"))).toEqual({ mounts: [], loops: [] })
      expect(cgroupExists(CGROUP_PARENT, "halfway")).toBe(false)
      // Interrupted while it starts (or once it runs): nothing of the box stays mounted, no cgroup.
      const { Effect, Fiber } = await import("effect")
      const fiber = Effect.runFork(Effect.scoped(Effect.andThen(runner.service.start(spec), Effect.never)))
      for (let i = 0; i < 200 && !leftovers(path.join(base, "state", "halfway")).mounts.some((m) => m.includes("merged")); i++) await new Promise((r) => setTimeout(r, 5))
      await Effect.runPromise(Fiber.interrupt(fiber))
      expect(leftovers(path.join(base, "state", "halfway"))).toEqual({ mounts: [], loops: [] })
      expect(cgroupExists(CGROUP_PARENT, "halfway")).toBe(false)
      // The files stay: a later start has them.
      const again = await startBox("halfway")
      expect((await runIn(again, ["true"])).code).toBe(0)
      await again.destroy()
    })

    it("rejects bad specs with a clear error", async () => {
      await expect(runner.start({ id: "../x", rootfs, env: {} })).rejects.toThrow(BoxError)
      await expect(runner.start({ id: "ok", rootfs: "relative", env: {} })).rejects.toThrow(/rootfs/)
      await expect(runner.start({ id: "ok", rootfs, env: { "A=B": "x" } })).rejects.toThrow(/environment/)
      await expect(runner.start({ id: "ok", rootfs, env: {}, volumes: [{ hostPath: base, mountPath: "/proc/x" }] })).rejects.toThrow(/reserved/)
      await expect(runner.start({ id: "ok", rootfs, env: {}, resources: { memoryBytes: -1 } })).rejects.toThrow(/memoryBytes/)
      const box = await startBox("twice")
      await expect(runner.start({ id: "twice", rootfs, env: {}, isolation })).rejects.toThrow(/already running/)
      await expect(runner.destroy("twice")).rejects.toThrow(/running/)
      expect(() => box.exec([])).toThrow(/argv/)
    })

    it("survives a server restart: another runner attaches; after a crash recover() cleans up and restart keeps files", async () => {
      // A separate server process starts a box and dies without stopping it.
      const script = path.join(base, "crash.ts")
      writeFileSync(
        script,
        `import { makeTestRunner } from ${JSON.stringify(path.resolve("test/runtime/local/harness.ts"))}\n` +
          `const r = await makeTestRunner({ root: ${JSON.stringify(path.join(base, "state"))}, cgroupParent: ${JSON.stringify(CGROUP_PARENT)} })\n` +
          `const b = await r.start({ id: "crashy", rootfs: ${JSON.stringify(rootfs)}, env: {}, isolation: ${JSON.stringify(isolation)} })\n` +
          `const p = b.exec(["/bin/sh", "-c", "echo survived > /home/user/mark"]); await p.exited\n` +
          `console.log(b.pid); process.exit(0)\n`
      )
      const out = spawnSync(process.execPath, [script], { encoding: "utf8" })
      expect(out.status, out.stderr).toBe(0)
      const pid = Number(out.stdout.trim())

      const other = await makeTestRunner({ root: path.join(base, "state"), cgroupParent: CGROUP_PARENT })
      const attached = await other.attach("crashy")
      expect(attached?.pid).toBe(pid)
      expect((await runIn(attached!, ["cat", "/home/user/mark"])).stdout).toBe("survived\n")

      // Now the box dies (as in a host crash): its owner notices, and closing its scope cleans up.
      process.kill(pid, "SIGKILL")
      expect(await attached!.exited).toMatchObject({ expected: false })
      await attached!.stop()
      const third = await makeTestRunner({ root: path.join(base, "state"), cgroupParent: CGROUP_PARENT })
      const { running, stopped } = await third.recover()
      expect(running.map((b) => b.id)).not.toContain("crashy")
      expect(stopped.map((s) => s.id)).toContain("crashy")
      expect(leftovers(path.join(base, "state", "crashy")).mounts).toEqual([])
      const back = await third.start(stopped.find((s) => s.id === "crashy")!)
      started.push(back)
      expect((await runIn(back, ["cat", "/home/user/mark"])).stdout).toBe("survived\n")
    })

    it("recover() cleans mounts and cgroups left by a box that died with no runner around", async () => {
      const script = path.join(base, "crash2.ts")
      writeFileSync(
        script,
        `import { makeTestRunner } from ${JSON.stringify(path.resolve("test/runtime/local/harness.ts"))}\n` +
          `const r = await makeTestRunner({ root: ${JSON.stringify(path.join(base, "state"))}, cgroupParent: ${JSON.stringify(CGROUP_PARENT)} })\n` +
          `const b = await r.start({ id: "orphan", rootfs: ${JSON.stringify(rootfs)}, env: {}, resources: { pids: 50 }, isolation: ${JSON.stringify(isolation)} })\n` +
          `console.log(b.pid); process.exit(0)\n`
      )
      const out = spawnSync(process.execPath, [script], { encoding: "utf8" })
      expect(out.status, out.stderr).toBe(0)
      process.kill(Number(out.stdout.trim()), "SIGKILL")
      await new Promise((r) => setTimeout(r, 200))
      expect(leftovers(path.join(base, "state", "orphan")).mounts.length).toBeGreaterThan(0)
      expect(cgroupExists(CGROUP_PARENT, "orphan")).toBe(true)
      const fresh = await makeTestRunner({ root: path.join(base, "state"), cgroupParent: CGROUP_PARENT })
      const { stopped } = await fresh.recover()
      expect(stopped.map((s) => s.id)).toContain("orphan")
      expect(leftovers(path.join(base, "state", "orphan"))).toEqual({ mounts: [], loops: [] })
      expect(cgroupExists(CGROUP_PARENT, "orphan")).toBe(false)
      await fresh.destroy("orphan")
    })

    it("is fast: start well under 300 ms, exec round trip of `true` close to a bare bwrap", async () => {
      const t0 = performance.now()
      const box = await startBox("fast")
      const startMs = performance.now() - t0
      const timeExec = async (n: number, f: () => Promise<unknown>) => {
        const times: Array<number> = []
        for (let i = 0; i < n; i++) {
          const t = performance.now()
          await f()
          times.push(performance.now() - t)
        }
        times.sort((a, b) => a - b)
        return times[Math.floor(n / 2)]!
      }
      const execMs = await timeExec(15, () => runIn(box, ["true"]))
      const bare = () =>
        new Promise((resolve) => {
          const c = spawn("/usr/bin/bwrap", ["--ro-bind", rootfs, "/", "--unshare-all", "--die-with-parent", "/bin/true"], { stdio: "ignore" })
          c.on("exit", resolve)
        })
      const bareMs = await timeExec(15, bare)
      const nodeSpawnMs = await timeExec(15, () => new Promise((resolve) => spawn("/bin/true").on("exit", resolve)))
      console.log(`box start ${startMs.toFixed(1)} ms; exec true ${execMs.toFixed(1)} ms; bare bwrap true ${bareMs.toFixed(1)} ms; node spawn /bin/true ${nodeSpawnMs.toFixed(1)} ms`)
      // Generous bounds: the CI host is a shared 2-core machine.
      expect(startMs).toBeLessThan(3000)
      expect(execMs).toBeLessThan(500)
    })
})
