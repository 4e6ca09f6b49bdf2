import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { existsSync, statfsSync, statSync } from "node:fs"
import path from "node:path"
import { VOLUME_MIN_BYTES, VolumeStoreError } from "../../../server/runtime/local/VolumeStore.ts"
import { makeTestRunner, makeTestVolumes, run, type TestRunner } from "./harness.ts"
import { expectNothingLeft, leftovers, makeRootfs, requireHostTools, runIn, sh, tempDir } from "./support.ts"
import { requireIsolation, testIsolations } from "../../support/isolation.ts"

const CGROUP_PARENT = "slipway-test-volumes"
const MiB = 1024 * 1024
let base: string
let rootfs: string
let store: Awaited<ReturnType<typeof makeTestVolumes>>
let runner: TestRunner

/** The store's calls as Promises. */
const volumes = {
  roundSize: (size: number) => run(store.store.roundSize(size)),
  create: (id: string, size: number) => run(store.store.create(id, size)),
  grow: (id: string, size: number) => run(store.store.grow(id, size)),
  destroy: (id: string) => run(store.store.destroy(id)),
  path: (id: string) => run(store.store.path(id)),
  info: (id: string) => run(store.store.info(id)),
  list: () => run(store.store.list)
}

beforeAll(async () => {
  requireHostTools()
  base = tempDir("slipway-volumes-")
  rootfs = makeRootfs(base)
  store = await makeTestVolumes(path.join(base, "volumes"))
  runner = await makeTestRunner({ root: path.join(base, "boxes"), cgroupParent: CGROUP_PARENT })
})

afterAll(() =>
  expectNothingLeft({
    base,
    stateDir: path.join(base, "boxes"),
    cgroupParent: CGROUP_PARENT,
    release: async () => {
      for (const spec of runner?.list() ?? []) await runner.destroy(spec.id)
      if (store) for (const v of await volumes.list()) await volumes.destroy(v.id)
      await store?.close()
    }
  })
)

describe("volume store", () => {
  it("rounds sizes up to the btrfs minimum and whole MiB; rejects bad input", async () => {
    expect(await volumes.roundSize(1)).toBe(VOLUME_MIN_BYTES)
    expect(await volumes.roundSize(300 * MiB + 1)).toBe(301 * MiB)
    await expect(volumes.roundSize(0)).rejects.toThrow(VolumeStoreError)
    await expect(volumes.roundSize(1.5)).rejects.toThrow(VolumeStoreError)
    await expect(volumes.create("../etc", 32 * MiB)).rejects.toThrow(VolumeStoreError)
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
    expect((await volumes.info("tiny"))?.sizeBytes).toBe(400 * MiB)
    await volumes.destroy("tiny")
    expect(await volumes.info("tiny")).toBeUndefined()
    expect(leftovers(path.join(base, "volumes", "tiny"))).toEqual({ mounts: [], loops: [] })
  })
})

describe.each(testIsolations)("volumes in boxes under %s", (isolation) => {
  beforeAll(() => requireIsolation(isolation))

    it("a write past the size fails with ENOSPC inside a box; grow while mounted; the write then succeeds; data survives a box restart", async () => {
      const vol = await volumes.create(`data-${isolation}`, 256 * MiB)
      expect(vol.path).toBe(await volumes.path(`data-${isolation}`))
      const spec = { id: `withvol-${isolation}`, rootfs, env: {}, storageBytes: 32 * MiB, volumes: [{ hostPath: vol.path, mountPath: "/data" }], isolation }
      const box = await runner.start(spec)
      const hostBefore = statfsSync(base).bavail * statfsSync(base).bsize
      const full = await sh(box, "dd if=/dev/zero of=/data/big bs=1M count=300 2>&1; echo rc=$?")
      expect(full.stdout).toMatch(/No space left on device/)
      expect(full.stdout).not.toContain("rc=0")
      expect(statSync(path.join(base, "volumes", `data-${isolation}`, "volume.img")).blocks * 512).toBeLessThanOrEqual(256 * MiB)
      const hostAfter = statfsSync(base).bavail * statfsSync(base).bsize
      expect(hostBefore - hostAfter).toBeLessThan(1024 * MiB)
      await sh(box, "rm -f /data/big; sync")

      await expect(volumes.grow(`data-${isolation}`, 16 * MiB)).resolves.toMatchObject({ sizeBytes: 256 * MiB })
      await expect(volumes.grow(`data-${isolation}`, 255 * MiB + 300 * MiB)).resolves.toMatchObject({ sizeBytes: 555 * MiB })
      await expect(volumes.grow(`data-${isolation}`, 300 * MiB)).rejects.toThrow(/shrink/)
      const grown = (await volumes.info(`data-${isolation}`))!
      expect(grown.availableBytes).toBeGreaterThan(400 * MiB)
      const ok = await sh(box, "dd if=/dev/zero of=/data/big bs=1M count=300 2>&1; echo rc=$?; echo keep > /data/note; df -m /data")
      expect(ok.stdout).toContain("rc=0")

      await box.stop()
      const again = await runner.start(spec)
      expect((await runIn(again, ["cat", "/data/note"])).stdout).toBe("keep\n")
      expect((await runIn(again, ["stat", "-c", "%s", "/data/big"])).stdout.trim()).toBe(String(300 * MiB))
      await again.destroy()
    })

    it("a read-only volume cannot be written; what a box of the other isolation wrote is box root's", async () => {
      const other = isolation === "gvisor" ? "bwrap" : "gvisor"
      const vol = await volumes.create(`ro-${isolation}`, 1)
      const writer = await runner.start({ id: `writer-${isolation}`, rootfs, env: {}, storageBytes: 16 * MiB, volumes: [{ hostPath: vol.path, mountPath: "/v" }], isolation: other })
      await sh(writer, "echo shared > /v/file")
      // Stored with its real owner (0) on the volume: any box sees it as its own root's file.
      expect(statSync(path.join(vol.path, "file")).uid).toBe(0)
      await writer.destroy()
      const reader = await runner.start({ id: `reader-${isolation}`, rootfs, env: {}, storageBytes: 16 * MiB, volumes: [{ hostPath: vol.path, mountPath: "/v", readOnly: true }], isolation })
      expect((await runIn(reader, ["cat", "/v/file"])).stdout).toBe("shared\n")
      expect((await runIn(reader, ["stat", "-c", "%u", "/v/file"])).stdout).toBe("0\n")
      const w = await sh(reader, "mount -o remount,rw /v; mount -o remount,rw,bind /v; echo x > /v/other; echo rc=$?")
      expect(w.stdout).toContain("rc=1")
      expect(existsSync(path.join(vol.path, "other"))).toBe(false)
      await reader.destroy()
    })
})

describe("volume store, again", () => {
  it("a store started again mounts the volumes its last one unmounted", async () => {
    await store.close()
    expect(leftovers(path.join(base, "volumes"))).toEqual({ mounts: [], loops: [] })
    store = await makeTestVolumes(path.join(base, "volumes"))
    expect(leftovers(path.join(base, "volumes")).mounts.map((m) => /volumes\/([\w-]+)\/mnt/.exec(m)?.[1]).sort()).toEqual(testIsolations.flatMap((i) => [`data-${i}`, `ro-${i}`]).sort())
    for (const isolation of testIsolations) expect(existsSync(path.join(await volumes.path(`ro-${isolation}`), "file"))).toBe(true)
  })
})
