import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { existsSync, statfsSync, statSync } from "node:fs"
import path from "node:path"
import { makeBoxRunner, type BoxRunner } from "../../../server/runtime/local/boxes.ts"
import { makeVolumeStore, VolumeError, VOLUME_MIN_BYTES, type SandboxVolumeStore } from "../../../server/runtime/local/volumes.ts"
import { expectNothingLeft, leftovers, makeRootfs, requireHostTools, runIn, sh, tempDir } from "./support.ts"

const CGROUP_PARENT = "slipway-test-volumes"
const MiB = 1024 * 1024
let base: string
let rootfs: string
let volumes: SandboxVolumeStore
let runner: BoxRunner

beforeAll(() => {
  requireHostTools()
  base = tempDir("slipway-volumes-")
  rootfs = makeRootfs(base)
  volumes = makeVolumeStore({ root: path.join(base, "volumes") })
  runner = makeBoxRunner({ root: path.join(base, "boxes"), cgroupParent: CGROUP_PARENT })
})

afterAll(() =>
  expectNothingLeft({
    base,
    stateDir: path.join(base, "boxes"),
    cgroupParent: CGROUP_PARENT,
    release: async () => {
      for (const spec of runner?.list() ?? []) await runner.destroy(spec.id)
      for (const v of volumes?.list() ?? []) await volumes.destroy(v.id)
    }
  })
)

describe("volume store", () => {
  it("rounds sizes up to the btrfs minimum and whole MiB; rejects bad input", async () => {
    expect(volumes.roundSize(1)).toBe(VOLUME_MIN_BYTES)
    expect(volumes.roundSize(300 * MiB + 1)).toBe(301 * MiB)
    expect(() => volumes.roundSize(0)).toThrow(VolumeError)
    expect(() => volumes.roundSize(1.5)).toThrow(VolumeError)
    await expect(volumes.create("../etc", 32 * MiB)).rejects.toThrow(VolumeError)
    const tiny = await volumes.create("tiny", 1000)
    expect(tiny.sizeBytes).toBe(VOLUME_MIN_BYTES)
    expect(tiny.availableBytes).toBeGreaterThan(200 * MiB)
    await expect(volumes.create("tiny", 32 * MiB)).rejects.toThrow(/exists/)
    await expect(volumes.grow("tiny", 1000)).resolves.toMatchObject({ sizeBytes: VOLUME_MIN_BYTES })
    await expect(volumes.grow("nope", 64 * MiB)).rejects.toThrow(/does not exist/)
    // Concurrent grows are serialized: the larger wins, the smaller one then fails as a shrink.
    const [a, b] = await Promise.allSettled([volumes.grow("tiny", 400 * MiB), volumes.grow("tiny", 300 * MiB)])
    expect(a.status).toBe("fulfilled")
    expect(b.status).toBe("rejected")
    expect(volumes.info("tiny")?.sizeBytes).toBe(400 * MiB)
    await volumes.destroy("tiny")
    expect(volumes.info("tiny")).toBeUndefined()
    expect(leftovers(path.join(base, "volumes", "tiny"))).toEqual({ mounts: [], loops: [] })
  })

  it("a write past the size fails with ENOSPC inside a box; grow while mounted; the write then succeeds; data survives a box restart", async () => {
    const vol = await volumes.create("data", 256 * MiB)
    expect(vol.path).toBe(volumes.path("data"))
    const spec = { id: "withvol", rootfs, env: {}, storageBytes: 32 * MiB, volumes: [{ hostPath: vol.path, mountPath: "/data" }] }
    const box = await runner.start(spec)
    const hostBefore = statfsSync(base).bavail * statfsSync(base).bsize
    const full = await sh(box, "dd if=/dev/zero of=/data/big bs=1M count=300 2>&1; echo rc=$?")
    expect(full.stdout).toMatch(/No space left on device/)
    expect(full.stdout).not.toContain("rc=0")
    expect(statSync(path.join(base, "volumes", "data", "volume.img")).blocks * 512).toBeLessThanOrEqual(256 * MiB)
    const hostAfter = statfsSync(base).bavail * statfsSync(base).bsize
    expect(hostBefore - hostAfter).toBeLessThan(1024 * MiB)
    await sh(box, "rm -f /data/big; sync")

    await expect(volumes.grow("data", 16 * MiB)).resolves.toMatchObject({ sizeBytes: 256 * MiB })
    await expect(volumes.grow("data", 255 * MiB + 300 * MiB)).resolves.toMatchObject({ sizeBytes: 555 * MiB })
    await expect(volumes.grow("data", 300 * MiB)).rejects.toThrow(/shrink/)
    const grown = volumes.info("data")!
    expect(grown.availableBytes).toBeGreaterThan(400 * MiB)
    const ok = await sh(box, "dd if=/dev/zero of=/data/big bs=1M count=300 2>&1; echo rc=$?; echo keep > /data/note; df -m /data")
    expect(ok.stdout).toContain("rc=0")

    await box.stop()
    const again = await runner.start(spec)
    expect((await runIn(again, ["cat", "/data/note"])).stdout).toBe("keep\n")
    expect((await runIn(again, ["stat", "-c", "%s", "/data/big"])).stdout.trim()).toBe(String(300 * MiB))
    await again.destroy()
  })

  it("a read-only volume cannot be written; remountAll brings volumes back after an unmount", async () => {
    const vol = await volumes.create("ro", 1)
    const writer = await runner.start({ id: "writer", rootfs, env: {}, storageBytes: 16 * MiB, volumes: [{ hostPath: vol.path, mountPath: "/v" }] })
    await sh(writer, "echo shared > /v/file")
    // Stored with its real owner (0) on the volume: any box sees it as its own root's file.
    expect(statSync(path.join(vol.path, "file")).uid).toBe(0)
    await writer.destroy()
    const reader = await runner.start({ id: "reader", rootfs, env: {}, storageBytes: 16 * MiB, volumes: [{ hostPath: vol.path, mountPath: "/v", readOnly: true }] })
    expect((await runIn(reader, ["cat", "/v/file"])).stdout).toBe("shared\n")
    const w = await sh(reader, "mount -o remount,rw /v; mount -o remount,rw,bind /v; echo x > /v/other; echo rc=$?")
    expect(w.stdout).toContain("rc=1")
    expect(existsSync(path.join(vol.path, "other"))).toBe(false)
    await reader.destroy()

    await volumes.unmountAll()
    expect(leftovers(path.join(base, "volumes"))).toEqual({ mounts: [], loops: [] })
    const remounted = await volumes.remountAll()
    expect([...remounted].sort()).toEqual(["data", "ro"])
    expect(existsSync(path.join(volumes.path("ro"), "file"))).toBe(true)
  })
})
