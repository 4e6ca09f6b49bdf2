/**
 * Break-out attempts: each must fail. Real bwrap, real cgroups, real loop mounts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { spawn, type ChildProcess } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from "node:fs"
import net from "node:net"
import path from "node:path"
import { randomBytes } from "node:crypto"
import { makeTestRunner, type TestBox, type TestRunner } from "./harness.ts"
import { expectNothingLeft, leftovers, makeRootfs, requireHostTools, runIn, sh, tempDir } from "./support.ts"

const CGROUP_PARENT = "slipway-test-isolation"
let base: string
let rootfs: string
let runner: TestRunner
let box: TestBox
const secret = `SECRET-${randomBytes(8).toString("hex")}`
let secretInTmp: string
let secretInRoot: string
let hostSleep: ChildProcess

beforeAll(async () => {
  requireHostTools()
  base = tempDir("slipway-isolation-")
  rootfs = makeRootfs(base)
  secretInTmp = path.join(base, "secret.txt")
  writeFileSync(secretInTmp, secret + "\n", { mode: 0o644 })
  secretInRoot = `/root/slipway-secret-${process.pid}.txt`
  writeFileSync(secretInRoot, secret + "\n", { mode: 0o644 })
  hostSleep = spawn("sleep", ["600"], { stdio: "ignore" })
  runner = await makeTestRunner({ root: path.join(base, "state"), cgroupParent: CGROUP_PARENT })
  box = await runner.start({
    id: "jail",
    rootfs,
    env: {},
    storageBytes: 32 << 20,
    resources: { memoryBytes: 64 << 20, pids: 64, cpuMillis: 500 }
  })
})

afterAll(() =>
  expectNothingLeft({
    base,
    stateDir: path.join(base, "state"),
    cgroupParent: CGROUP_PARENT,
    release: async () => {
      hostSleep?.kill("SIGKILL")
      await box?.stop()
      for (const spec of runner?.list() ?? []) await runner.destroy(spec.id)
      rmSync(secretInRoot, { force: true })
    }
  })
)

describe("a box cannot", () => {
  it("read a host file, by any path", async () => {
    const paths = [secretInTmp, secretInRoot]
    const script = paths
      .flatMap((p) => [
        `cat ${p}`,
        `cat /proc/1/root${p}`,
        `for d in /proc/[0-9]*; do cat $d/root${p} $d/cwd/../../../..${p}; done`,
        `cat /../../..${p}`,
        `cat /proc/self/root/../..${p}`,
        `cd /proc/1/cwd && cat ../../../..${p}`,
        `cat /.slipway/../..${p}`
      ])
      .join("; ")
    const r = await sh(box, `${script}; ls / /root 2>&1; grep -rs ${secret} /home /etc /tmp /bin /.slipway 2>/dev/null; echo done`)
    expect(r.stdout).toContain("done")
    expect(r.stdout + r.stderr).not.toContain(secret)
    // The host's own files are not there at all.
    expect((await runIn(box, ["ls", "/root", base, "/usr/lib", "/work"])).code).not.toBe(0)
    // Chroot/unshare games stay inside the box's own tree.
    const games = await sh(
      box,
      `mkdir -p /home/user/j && chroot /home/user/j /.slipway/busybox cat ${secretInRoot} 2>&1; ` +
        `unshare -m sh -c 'mount -t tmpfs t /mnt 2>&1; cat ${secretInRoot}' 2>&1; ` +
        `nsenter -t 1 -m -u -i -n -p cat ${secretInRoot} 2>&1; echo done`
    )
    expect(games.stdout).toContain("done")
    expect(games.stdout).not.toContain(secret)
  })

  it("see or signal host processes", async () => {
    const r = await sh(box, "ls /proc | grep -E '^[0-9]+$' | wc -l; ps")
    const count = Number(r.stdout.split("\n")[0])
    expect(count).toBeLessThan(10)
    expect(r.stdout).not.toContain("vitest")
    const k = await sh(box, `kill -9 ${hostSleep.pid}; kill -9 ${process.pid}; echo $?`)
    expect(k.stderr).toMatch(/No such process|can't kill/)
    // Every process the box may signal: its own (the exec helper among them, so this command's
    // output may be cut short: not asserted), never the host's.
    await sh(box, "kill -9 -1; echo $?").catch(() => undefined)
    expect(hostSleep.exitCode).toBeNull()
    expect(() => process.kill(hostSleep.pid!, 0)).not.toThrow()
  })

  it("see, signal or read another box", async () => {
    const other = await runner.start({ id: "neighbour", rootfs, env: {}, storageBytes: 16 << 20 })
    try {
      await sh(other, `echo ${secret} > /home/user/mine; sleep 1000 >/dev/null 2>&1 & echo started`)
      expect(other.hostUid).not.toBe(box.hostUid)
      const r = await sh(box, `kill -9 ${other.pid}; ps; cat /proc/${other.pid}/root/home/user/mine; grep -rs "$S" /home /tmp; echo done`, { env: { S: secret } })
      expect(r.stdout).toContain("done")
      expect(r.stdout + r.stderr).not.toContain(secret)
      expect(r.stdout).not.toContain("sleep 1000")
      expect(other.isRunning()).toBe(true)
      expect((await runIn(other, ["cat", "/home/user/mine"])).stdout).toBe(secret + "\n")
    } finally {
      await other.destroy()
    }
  })

  it("reach the network: a host listener on 127.0.0.1 gets no connection; only lo exists", async () => {
    let connections = 0
    const server = net.createServer((c) => {
      connections++
      c.end("hello from host\n")
    })
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
    const port = (server.address() as net.AddressInfo).port
    try {
      const r = await sh(box, `echo x | nc -w 2 127.0.0.1 ${port}; echo rc=$?; ip -o link; cat /proc/net/dev`)
      expect(r.stdout).not.toContain("hello from host")
      expect(r.stdout).toMatch(/rc=[1-9]/)
      const links = r.stdout.split("\n").filter((l) => /^\d+: /.test(l))
      expect(links.map((l) => l.split(":")[1]!.trim())).toEqual(["lo"])
      expect(connections).toBe(0)
      // No route anywhere else either.
      const out = await sh(box, "echo x | nc -w 2 10.0.2.2 80; echo rc=$?; echo x | nc -w 2 1.1.1.1 53; echo rc=$?")
      expect(out.stdout).not.toMatch(/rc=0/)
    } finally {
      server.close()
    }
  })

  it("fill the host disk: a write past storage fails with ENOSPC and the host loses no more than the cap", async () => {
    const before = statfsSync(base)
    const r = await sh(box, "dd if=/dev/zero of=/home/user/big bs=1M count=200 2>&1; echo rc=$?; sync")
    expect(r.stdout).toMatch(/No space left on device/)
    expect(r.stdout).not.toContain("rc=0")
    // What the box's writes cost the host: the blocks of its layer image (a sparse file), never
    // more than the cap. (Host free space is shared with other test runs; it is checked loosely.)
    const layer = statSync(path.join(base, "state", "jail", "layer.img"))
    expect(layer.blocks * 512).toBeLessThanOrEqual(32 << 20)
    const after = statfsSync(base)
    expect((before.bavail - after.bavail) * after.bsize).toBeLessThan(1 << 30)
    // The box still works and can free its space.
    expect((await sh(box, "rm /home/user/big && echo freed")).stdout).toBe("freed\n")
    // /tmp is a tmpfs capped too (by the memory limit); it cannot grow without bound.
    const t = await sh(box, "dd if=/dev/zero of=/tmp/big bs=1M count=200 2>&1; echo rc=$?; rm -f /tmp/big")
    expect(t.stdout).not.toContain("rc=0")
  })

  it("fork-bomb the host: the pids limit stops it", async () => {
    const bomb = box.exec(["/bin/sh", "-c", "b() { b | b & }; b; sleep 3"])
    bomb.stdin.end()
    await new Promise((r) => setTimeout(r, 1500))
    const current = Number(readFileSync(`/sys/fs/cgroup/pids/${CGROUP_PARENT}/jail/pids.current`, "utf8"))
    expect(current).toBeLessThanOrEqual(64)
    bomb.kill()
    await bomb.exited
    // Reparented bomb processes are still in the box: end them all, then the box works again.
    for (let i = 0; i < 50; i++) {
      const left = Number(readFileSync(`/sys/fs/cgroup/pids/${CGROUP_PARENT}/jail/pids.current`, "utf8"))
      if (left <= 3) break
      await sh(box, "kill -9 -1").catch(() => undefined)
      await new Promise((r) => setTimeout(r, 100))
    }
    expect((await runIn(box, ["echo", "alive"])).stdout).toBe("alive\n")
  })

  it("eat the host's memory: a hog is killed under the memory limit", async () => {
    const r = await sh(box, "dd if=/dev/zero of=/dev/null bs=200M count=1; echo after")
    // dd is killed by the OOM killer (137) or cannot allocate; it never succeeds.
    expect(r.stdout).toContain("after")
    const hog = await runIn(box, ["dd", "if=/dev/zero", "of=/dev/null", "bs=200M", "count=1"])
    expect(hog.code === 0 && hog.signal === null).toBe(false)
    const oom = readFileSync(`/sys/fs/cgroup/memory/${CGROUP_PARENT}/jail/memory.oom_control`, "utf8")
    expect(Number(/oom_kill (\d+)/.exec(oom)?.[1])).toBeGreaterThan(0)
    // The box's init survived the OOM killer.
    expect((await runIn(box, ["echo", "alive"])).stdout).toBe("alive\n")
  })

  it("write to the shared busybox, remount it, or reach host devices", async () => {
    const hostBefore = readFileSync("/bin/busybox")
    const r = await sh(
      box,
      "echo x > /.slipway/busybox; echo rc=$?; mount -o remount,rw /.slipway/busybox; echo x >> /.slipway/busybox; echo rc2=$?; " +
        "umount /.slipway/busybox 2>&1; rm -f /.slipway/busybox; echo x > /.slipway/busybox; " +
        "mknod /home/user/disk b 254 0; echo mknod=$?; ls /dev; echo x > /proc/sys/kernel/hostname; echo sysctl=$?"
    )
    expect(r.stdout).toContain("rc=1")
    expect(r.stdout).toContain("rc2=1")
    expect(r.stdout).not.toContain("mknod=0")
    expect(r.stdout).not.toContain("sysctl=0")
    expect(readFileSync("/bin/busybox").equals(hostBefore)).toBe(true)
    expect(r.stdout).not.toMatch(/\bvda\b|\bsda\b|\bloop\d/)
  })

  it("leave a mount or namespace on the host", async () => {
    const hostMounts = readFileSync("/proc/self/mountinfo", "utf8").split("\n").length
    const r = await sh(box, "mkdir -p /home/user/m && mount -t tmpfs t /home/user/m && echo in > /home/user/m/f && cat /home/user/m/f; unshare -U -r -m -n sh -c 'id; echo nested'")
    expect(readFileSync("/proc/self/mountinfo", "utf8").split("\n").length).toBe(hostMounts)
    expect(r.stdout + r.stderr).not.toContain(secret)
    // Whatever the box mounts lives and dies in its own mount namespace.
    expect(existsSync(path.join(base, "state", "jail", "layer", "upper", "home", "user", "m", "f"))).toBe(false)
  })

  it("make host root create directories through a symlink it planted (volume mount points)", async () => {
    const target = path.join(base, "outside")
    mkdirSync(target)
    await sh(box, `ln -s ${target} /home/user/evil`)
    const volume = path.join(base, "vol")
    mkdirSync(volume)
    await box.stop()
    await expect(
      runner.start({ id: "jail", rootfs, env: {}, storageBytes: 32 << 20, volumes: [{ hostPath: volume, mountPath: "/home/user/evil/sub" }] })
    ).rejects.toThrow(/symlink/)
    expect(existsSync(path.join(target, "sub"))).toBe(false)
    expect(leftovers(path.join(base, "state", "jail")).mounts).toEqual([])
    box = await runner.start({ id: "jail", rootfs, env: {}, storageBytes: 32 << 20, resources: { memoryBytes: 64 << 20, pids: 64 } })
    expect((await sh(box, "readlink /home/user/evil")).stdout.trim()).toBe(target)
  })
})

describe("rlimit fallback", () => {
  it("caps processes with RLIMIT_NPROC when cgroups are not used", async () => {
    const r = await makeTestRunner({ root: path.join(base, "state-rlimit"), limits: "rlimit", cgroupParent: CGROUP_PARENT })
    expect(r.service.limitsMode).toBe("rlimit")
    const b = await r.start({ id: "rl", rootfs, env: {}, storageBytes: 16 << 20, resources: { pids: 20, memoryBytes: 256 << 20 } })
    try {
      const out = await sh(b, "i=0; while [ $i -lt 40 ]; do sleep 5 & i=$((i+1)); done 2>&1; echo spawned; kill -9 -1")
      expect(out.stdout + out.stderr).toMatch(/can't fork|Resource temporarily unavailable/)
      const hog = await runIn(b, ["dd", "if=/dev/zero", "of=/dev/null", "bs=400M", "count=1"])
      expect(hog.code).not.toBe(0)
    } finally {
      await b.destroy()
    }
  })
})
