/**
 * Break-out attempts: each must fail, under both isolations (bwrap, gVisor). Real bwrap, real
 * runsc, real cgroups, real loop mounts; the system calls busybox has no applet for are made by a
 * small static probe (fixtures/escape-probe.c) built here and put in the image.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { spawn, type ChildProcess } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from "node:fs"
import net from "node:net"
import path from "node:path"
import { randomBytes } from "node:crypto"
import { makeTestRunner, type TestBox, type TestRunner } from "./harness.ts"
import { execFileSync } from "node:child_process"
import { networkInterfaces } from "node:os"
import { GVISOR_BASE_TASKS, GVISOR_MEMORY_OVERHEAD, GVISOR_TASKS_PER_PROCESS } from "../../../server/runtime/local/boxes/gvisor.ts"
import type { BoxSpec, Isolation } from "../../../server/runtime/local/BoxRunner.ts"
import { requireIsolation, testIsolations } from "../../support/isolation.ts"
import { expectNothingLeft, leftovers, makeRootfs, requireHostTools, runIn, sh, tempDir } from "./support.ts"

const CGROUP_PARENT = "slipway-test-isolation"
let base: string
let rootfs: string
let runner: TestRunner
const secret = `SECRET-${randomBytes(8).toString("hex")}`
let secretInTmp: string
let secretInRoot: string
let hostSleep: ChildProcess
/** A TCP listener on the host's loopback, and on every address: what a box must never reach. */
let hostListener: net.Server
let hostAnyListener: net.Server
let hostConnections = 0
/** The host's own addresses (not loopback). */
const hostAddresses = Object.values(networkInterfaces())
  .flat()
  .filter((a) => a !== undefined && a.family === "IPv4" && !a.internal)
  .map((a) => a!.address)

const listenOn = (host: string) =>
  new Promise<net.Server>((resolve) => {
    const server = net.createServer((c) => {
      hostConnections++
      c.end("hello from host\n")
    })
    server.listen(0, host, () => resolve(server))
  })
const portOf = (server: net.Server) => (server.address() as net.AddressInfo).port

beforeAll(async () => {
  requireHostTools()
  if (!existsSync("/usr/bin/gcc")) throw new Error("/usr/bin/gcc is missing: apt-get install -y gcc libc6-dev (the escape probe is built with it)")
  base = tempDir("slipway-isolation-")
  rootfs = makeRootfs(base)
  execFileSync("/usr/bin/gcc", ["-static", "-O2", "-o", path.join(rootfs, "bin", "probe"), path.resolve("test/runtime/local/fixtures/escape-probe.c")])
  secretInTmp = path.join(base, "secret.txt")
  writeFileSync(secretInTmp, secret + "\n", { mode: 0o644 })
  secretInRoot = `/root/slipway-secret-${process.pid}.txt`
  writeFileSync(secretInRoot, secret + "\n", { mode: 0o644 })
  hostSleep = spawn("sleep", ["600"], { stdio: "ignore" })
  hostListener = await listenOn("127.0.0.1")
  hostAnyListener = await listenOn("0.0.0.0")
  runner = await makeTestRunner({ root: path.join(base, "state"), cgroupParent: CGROUP_PARENT })
}, 60_000)

afterAll(() =>
  expectNothingLeft({
    base,
    stateDir: path.join(base, "state"),
    cgroupParent: CGROUP_PARENT,
    release: async () => {
      hostSleep?.kill("SIGKILL")
      hostListener?.close()
      hostAnyListener?.close()
      for (const spec of runner?.list() ?? []) await runner.destroy(spec.id)
      rmSync(secretInRoot, { force: true })
    }
  })
)

describe.each(testIsolations)("a box under %s cannot", (isolation: Isolation) => {
  const id = `jail-${isolation}`
  const jail = (): BoxSpec => ({ id, rootfs, env: {}, storageBytes: 32 << 20, resources: { memoryBytes: 64 << 20, pids: 64, cpuMillis: 500 }, isolation })
  let box: TestBox
  const cgroupFile = (controller: string, file: string) => `/sys/fs/cgroup/${controller}/${CGROUP_PARENT}/${id}/${file}`
  /** The host tasks the box's cgroup allows (under gVisor every process of the box is several). */
  const hostPidsMax = isolation === "gvisor" ? GVISOR_BASE_TASKS + 64 * GVISOR_TASKS_PER_PROCESS : 64
  /** Under gVisor exhausting the box's tasks or memory ends the whole sandbox: the next test gets a new one (same files). */
  const restartIfEnded = async () => {
    if (box.isRunning()) return
    await box.stop()
    box = await runner.start(jail())
  }

  beforeAll(async () => {
    requireIsolation(isolation)
    box = await runner.start(jail())
  }, 60_000)
  // One failed attempt that ended the sandbox does not fail the attempts after it.
  beforeEach(restartIfEnded, 60_000)
  afterAll(() => box?.stop())

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

  it("see, signal or ptrace host processes", async () => {
    const r = await sh(box, "ls /proc | grep -E '^[0-9]+$' | wc -l; ps")
    const count = Number(r.stdout.split("\n")[0])
    expect(count).toBeLessThan(10)
    expect(r.stdout).not.toContain("vitest")
    const k = await sh(box, `kill -9 ${hostSleep.pid}; kill -9 ${process.pid}; echo $?`)
    expect(k.stderr).toMatch(/No such process|can't kill/)
    const traced = await runIn(box, ["probe", "ptrace", String(hostSleep.pid)])
    expect(traced.stdout).toBe("ptrace attach: No such process\n")
    expect((await runIn(box, ["probe", "ptrace", String(process.pid)])).stdout).not.toContain(": ok")
    // Every process the box may signal: its own (under bwrap the exec helper among them, so this
    // command's output may be cut short: not asserted), never the host's.
    await sh(box, "kill -9 -1; echo $?").catch(() => undefined)
    expect(hostSleep.exitCode).toBeNull()
    expect(() => process.kill(hostSleep.pid!, 0)).not.toThrow()
  })

  it("see, signal or read another box", async () => {
    const other = await runner.start({ id: `neighbour-${isolation}`, rootfs, env: {}, storageBytes: 16 << 20, isolation })
    try {
      await sh(other, `echo ${secret} > /home/user/mine; sleep 1000 >/dev/null 2>&1 & echo started`)
      expect(other.hostUid).not.toBe(box.hostUid)
      const r = await sh(box, `kill -9 ${other.pid}; ps; cat /proc/${other.pid}/root/home/user/mine; grep -rs "$S" /home /tmp; echo done`, { env: { S: secret } })
      expect(r.stdout).toContain("done")
      expect(r.stdout + r.stderr).not.toContain(secret)
      expect(r.stdout).not.toContain("sleep 1000")
      expect((await runIn(box, ["probe", "ptrace", String(other.pid)])).stdout).not.toContain(": ok")
      expect(other.isRunning()).toBe(true)
      expect((await runIn(other, ["cat", "/home/user/mine"])).stdout).toBe(secret + "\n")
    } finally {
      await other.destroy()
    }
  })

  it("reach the network: not the host's loopback, not its addresses, not a metadata address; only lo exists", async () => {
    const connections = hostConnections
    const r = await sh(box, `echo x | nc -w 2 127.0.0.1 ${portOf(hostListener)}; echo rc=$?; ip -o link; cat /proc/net/dev`)
    expect(r.stdout).not.toContain("hello from host")
    expect(r.stdout).toMatch(/rc=[1-9]/)
    const links = r.stdout.split("\n").filter((l) => /^\d+: /.test(l))
    expect(links.map((l) => l.split(":")[1]!.trim())).toEqual(["lo"])
    // The box's loopback is its own: the host's listeners there and on every address are out of reach.
    const probes = [`127.0.0.1 ${portOf(hostListener)}`, `127.0.0.1 ${portOf(hostAnyListener)}`, ...hostAddresses.map((a) => `${a} ${portOf(hostAnyListener)}`), "169.254.169.254 80", "10.0.2.2 80", "1.1.1.1 53"]
    for (const target of probes) expect((await sh(box, `probe connect ${target}`)).stdout, target).not.toBe("connect: ok\n")
    expect(hostConnections).toBe(connections)
  })

  it("send raw packets to the host (raw sockets)", async () => {
    for (const target of ["169.254.169.254", ...hostAddresses, "127.0.0.1"]) {
      const r = await runIn(box, ["probe", "raw", target])
      // bwrap: box root may open one in its own network namespace, whose only link is its loopback; gVisor: no raw sockets at all.
      if (isolation === "gvisor") expect(r.stdout).toMatch(/^raw socket: (Operation not permitted|Permission denied|Address family not supported)/)
      if (target !== "127.0.0.1") expect(r.stdout).not.toContain("raw send: ok")
    }
  })

  it("load or remove kernel modules", async () => {
    const r = await runIn(box, ["probe", "modules"])
    expect(r.stdout.split("\n").filter((l) => l !== "")).toHaveLength(3)
    expect(r.stdout).not.toContain(": ok")
    expect((await sh(box, "echo x > /proc/sys/kernel/modprobe; echo rc=$?")).stdout).not.toContain("rc=0")
  })

  it("make or open host devices", async () => {
    const r = await runIn(box, ["probe", "mknod", "/home/user"])
    expect(r.stdout).toMatch(/mknod block: (?!ok)/)
    expect(r.stdout).toMatch(/open block: (?!ok)/)
    expect(r.stdout).toMatch(/open char: (?!ok)/)
    const dev = await sh(box, "ls /dev")
    expect(dev.stdout.split("\n")).not.toEqual(expect.arrayContaining([expect.stringMatching(/^(vda|sda|loop\d+|kvm|mem|kmem|port|kmsg)$/)]))
    const read = await sh(box, "for f in /dev/kmsg /dev/mem /proc/kcore /dev/vda /dev/loop0; do head -c 16 $f >/dev/null 2>&1 && echo read $f; done; echo done")
    expect(read.stdout).toBe("done\n")
  })

  it("read the host's kernel log (dmesg): under gVisor it shows gVisor's own kernel", async () => {
    const r = await sh(box, "dmesg 2>&1; echo; uname -r")
    // The host's kernel log starts with "Linux version ..."; a box never reads it.
    expect(r.stdout).not.toContain("Linux version")
    if (isolation === "gvisor") {
      expect(r.stdout).toContain("Starting gVisor")
      expect(r.stdout.trim().split("\n").pop()).not.toBe(execFileSync("uname", ["-r"], { encoding: "utf8" }).trim())
    } else expect(r.stdout).toMatch(/klogctl: Operation not permitted/)
  })

  it("fill the host disk: a write past storage fails with ENOSPC and the host loses no more than the cap", async () => {
    const before = statfsSync(base)
    const r = await sh(box, "dd if=/dev/zero of=/home/user/big bs=1M count=200 2>&1; echo rc=$?; sync")
    expect(r.stdout).toMatch(/No space left on device/)
    expect(r.stdout).not.toContain("rc=0")
    // What the box's writes cost the host: the blocks of its layer image (a sparse file), never
    // more than the cap. (Host free space is shared with other test runs; it is checked loosely.)
    const layer = statSync(path.join(base, "state", id, "layer.img"))
    expect(layer.blocks * 512).toBeLessThanOrEqual(32 << 20)
    const after = statfsSync(base)
    expect((before.bavail - after.bavail) * after.bsize).toBeLessThan(1 << 30)
    // The box still works and can free its space.
    expect((await sh(box, "rm /home/user/big && echo freed")).stdout).toBe("freed\n")
    // /tmp is a tmpfs capped too (by the memory limit); it cannot grow without bound.
    const t = await sh(box, "dd if=/dev/zero of=/tmp/big bs=1M count=200 2>&1; echo rc=$?; rm -f /tmp/big")
    expect(t.stdout).not.toContain("rc=0")
    await restartIfEnded()
  })

  it("fork-bomb the host: the pids limit stops it (under gVisor by ending the sandbox)", async () => {
    const neighbour = await runner.start({ id: `bystander-${isolation}`, rootfs, env: {}, storageBytes: 16 << 20, isolation })
    try {
      const bomb = box.exec(["/bin/sh", "-c", "b() { b | b & }; b; sleep 3"])
      bomb.stdin.end()
      let peak = 0
      for (let i = 0; i < 30; i++) {
        await new Promise((r) => setTimeout(r, 50))
        if (!box.isRunning()) break
        peak = Math.max(peak, Number(readFileSync(cgroupFile("pids", "pids.current"), "utf8")))
      }
      expect(peak).toBeLessThanOrEqual(hostPidsMax)
      bomb.kill()
      await bomb.exited
      if (isolation === "bwrap") {
        // Reparented bomb processes are still in the box: end them all, then the box works again.
        for (let i = 0; i < 50; i++) {
          const left = Number(readFileSync(cgroupFile("pids", "pids.current"), "utf8"))
          if (left <= 3) break
          await sh(box, "kill -9 -1").catch(() => undefined)
          await new Promise((r) => setTimeout(r, 100))
        }
        expect((await runIn(box, ["echo", "alive"])).stdout).toBe("alive\n")
      } else {
        // gVisor's kernel cannot get another host task: the sandbox ends, as a VM out of memory would.
        expect(await box.exited).toMatchObject({ expected: false })
      }
      // Neither the host nor another box noticed.
      expect((await runIn(neighbour, ["echo", "unaffected"])).stdout).toBe("unaffected\n")
      expect(() => process.kill(hostSleep.pid!, 0)).not.toThrow()
    } finally {
      await neighbour.destroy()
    }
    await restartIfEnded()
    expect((await runIn(box, ["echo", "alive"])).stdout).toBe("alive\n")
  })

  it("eat the host's memory: a hog is killed under the memory limit (under gVisor, the sandbox)", async () => {
    const oomKills = () => Number(/oom_kill (\d+)/.exec(readFileSync(cgroupFile("memory", "memory.oom_control"), "utf8"))?.[1])
    // The cgroup's limit: the box's 64 MiB (under gVisor, plus what its kernel may use).
    const limit = Number(readFileSync(cgroupFile("memory", "memory.limit_in_bytes"), "utf8"))
    expect(limit).toBe((64 << 20) + (isolation === "gvisor" ? GVISOR_MEMORY_OVERHEAD : 0))
    const hog = await runIn(box, ["dd", "if=/dev/zero", "of=/dev/null", `bs=${Math.ceil(limit / (1 << 20)) + 100}M`, "count=1"]).catch(() => ({ code: null, signal: "SIGKILL" }))
    expect(hog.code === 0 && hog.signal === null).toBe(false)
    expect(oomKills()).toBeGreaterThan(0)
    // The kernel lets a task it is killing charge past the limit so it can exit (a page was seen
    // under gVisor): far less than the 100 MiB beyond the limit the hog asked for.
    const dyingTaskSlack = 2 << 20
    expect(Number(readFileSync(cgroupFile("memory", "memory.max_usage_in_bytes"), "utf8"))).toBeLessThanOrEqual(limit + dyingTaskSlack)
    if (isolation === "bwrap") {
      // The box's init survived the OOM killer.
      expect((await runIn(box, ["echo", "alive"])).stdout).toBe("alive\n")
    } else {
      expect(await box.exited).toMatchObject({ expected: false })
      await restartIfEnded()
      expect((await runIn(box, ["echo", "alive"])).stdout).toBe("alive\n")
    }
  })

  it("write to the shared busybox or exec helper (remount, unmount, replace), or reach host devices", async () => {
    const helpers = readdirSync(path.join(base, "state", ".tools")).filter((f) => f.startsWith("exec-helper-")).map((f) => path.join(base, "state", ".tools", f))
    const shared = ["/bin/busybox", ...helpers, ...(isolation === "gvisor" ? ["busybox", "exec"].map((f) => path.join(base, "state", ".tools", "box", f)) : [])]
    const before = shared.map((f) => readFileSync(f))
    for (const tool of ["/.slipway/busybox", "/.slipway/exec"]) {
      const r = await sh(
        box,
        `echo x > ${tool}; echo rc=$?; mount -o remount,rw ${tool}; echo x >> ${tool}; echo rc2=$?; ` +
          `umount ${tool} 2>&1; umount -l ${tool} 2>&1; rm -f ${tool}; echo x > ${tool}; echo rc3=$?; ` +
          "mknod /home/user/disk b 254 0; echo mknod=$?; ls /dev; echo x > /proc/sys/kernel/hostname; echo sysctl=$?"
      )
      expect(r.stdout).toContain("rc=1")
      expect(r.stdout).toContain("rc2=1")
      expect(r.stdout).not.toContain("mknod=0")
      expect(r.stdout).not.toContain("sysctl=0")
      expect(r.stdout).not.toMatch(/\bvda\b|\bsda\b|\bloop\d/)
    }
    // Whatever the box's view became, the files behind it are unchanged.
    shared.forEach((file, i) => expect(readFileSync(file).equals(before[i]!), file).toBe(true))
    // Other boxes (and this one, restarted) still get working tools.
    await box.stop()
    box = await runner.start(jail())
    expect((await runIn(box, ["/.slipway/busybox", "echo", "tools intact"])).stdout).toBe("tools intact\n")
  })

  it("write to a read-only volume (remount, unmount, replace)", async () => {
    const volume = path.join(base, `ro-volume-${isolation}`)
    mkdirSync(volume)
    writeFileSync(path.join(volume, "kept"), "original\n")
    const reader = await runner.start({ id: `reader-${isolation}`, rootfs, env: {}, storageBytes: 16 << 20, isolation, volumes: [{ hostPath: volume, mountPath: "/data", readOnly: true }] })
    try {
      const r = await sh(
        reader,
        "cat /data/kept; echo x > /data/kept; echo rc=$?; echo x > /data/new; mount -o remount,rw /data; echo x > /data/kept; echo rc2=$?; " +
          "umount /data 2>&1; umount -l /data 2>&1; echo x > /data/kept; echo x > /data/new; rm -rf /data/*; echo done"
      )
      expect(r.stdout).toContain("original\nrc=1\n")
      expect(r.stdout).toContain("rc2=1")
      expect(readdirSync(volume)).toEqual(["kept"])
      expect(readFileSync(path.join(volume, "kept"), "utf8")).toBe("original\n")
    } finally {
      await reader.destroy()
    }
  })

  it("leave a mount or namespace on the host", async () => {
    const hostMounts = readFileSync("/proc/self/mountinfo", "utf8").split("\n").length
    const r = await sh(box, "mkdir -p /home/user/m && mount -t tmpfs t /home/user/m && echo in > /home/user/m/f && cat /home/user/m/f; unshare -U -r -m -n sh -c 'id; echo nested'")
    expect(r.stdout).toContain("in\n")
    expect(readFileSync("/proc/self/mountinfo", "utf8").split("\n").length).toBe(hostMounts)
    expect(r.stdout + r.stderr).not.toContain(secret)
    // Whatever the box mounts lives and dies in its own mount namespace.
    expect(existsSync(path.join(base, "state", id, "layer", "upper", "home", "user", "m", "f"))).toBe(false)
  })

  it("make host root create directories through a symlink it planted (volume mount points)", async () => {
    const target = path.join(base, `outside-${isolation}`)
    mkdirSync(target)
    await sh(box, `ln -s ${target} /home/user/evil`)
    const volume = path.join(base, `vol-${isolation}`)
    mkdirSync(volume)
    await box.stop()
    await expect(runner.start({ ...jail(), volumes: [{ hostPath: volume, mountPath: "/home/user/evil/sub" }] })).rejects.toThrow(/symlink/)
    expect(existsSync(path.join(target, "sub"))).toBe(false)
    expect(leftovers(path.join(base, "state", id)).mounts).toEqual([])
    box = await runner.start(jail())
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
    // gVisor's sandboxes need the box's cgroup: refused, clearly.
    expect(r.service.gvisorProblem).toMatch(/cgroups/)
    await expect(r.start({ id: "rl-gvisor", rootfs, env: {}, isolation: "gvisor" })).rejects.toThrow(/gVisor cannot run here: .*cgroups/)
  })
})
