/**
 * The current npm `langsmith` sandbox client (langsmith@0.12.0, `langsmith/sandbox`), unmodified,
 * against a real server on the local runtime, at its default base (`<endpoint>/api/v2/sandboxes`):
 * every snapshot and box call it offers that Slipway supports, each succeeding, on real boxes
 * (bubblewrap) from a real registry (the Docker Hub mirror serving `python:3.12-slim` from a
 * busybox image the tests build), a running box captured as a snapshot included.
 */
import { existsSync, statSync } from "node:fs"
import { dirname, join } from "node:path"
import * as Current from "langsmith/sandbox"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ImageMirror, startImageMirror } from "../support/mirror.ts"
import Database from "better-sqlite3"
import { eventually, startTestServer, tempDatabasePath, type TestServer } from "../support/server.ts"
import { testIsolations, useIsolation } from "../support/isolation.ts"

describe.each(testIsolations)("sandboxes under %s", (isolation) => {
  useIsolation(isolation)

  let mirror: ImageMirror
  let t: TestServer
  const savedSweep = process.env.SLIPWAY_SANDBOX_SWEEP_MS
  const restore = (key: string, value: string | undefined) => {
    if (value === undefined) delete process.env[key]
    else process.env[key] = value
  }

  beforeAll(async () => {
    mirror = await startImageMirror()
    process.env.SLIPWAY_SANDBOX_SWEEP_MS = "200"
    t = await startTestServer({ runtime: "local" })
  }, 180_000)

  afterAll(async () => {
    await t?.close()
    await mirror?.stop()
    restore("SLIPWAY_SANDBOX_SWEEP_MS", savedSweep)
  }, 60_000)

  const GiB = 1024 ** 3
  const MiB = 1024 ** 2
  /** The client as its users make it: only the endpoint (its default path `/api/v2/sandboxes`) and the key. */
  const client = () => new Current.SandboxClient({ apiKey: t.key, apiEndpoint: `${t.url}/api/v2/sandboxes`, maxRetries: 0 })
  const boxDir = (id: string) => join(dirname(t.databasePath), "runtime", "boxes", id)

  describe("langsmith@0.12.0 langsmith/sandbox: snapshots", () => {
    it("createSnapshot pulls the image through the image store and answers it ready; getSnapshot, waitForSnapshot, listSnapshots", async () => {
      const c = client()
      const snapshot = await c.createSnapshot("py-snap", "python:3.12-slim", GiB, { timeout: 120 })
      expect(snapshot).toMatchObject({ name: "py-snap", status: "ready", docker_image: "python:3.12-slim", fs_capacity_bytes: GiB, status_message: null })
      expect(snapshot.image_digest).toMatch(/^sha256:[0-9a-f]{64}$/)
      expect(await c.getSnapshot(snapshot.id)).toEqual(snapshot)
      expect(await c.waitForSnapshot(snapshot.id, { timeout: 5 })).toEqual(snapshot)

      const tools = await c.createSnapshot("tools", "python:3.12-slim", 2 * GiB, { timeout: 120 })
      expect(tools.image_digest).toBe(snapshot.image_digest)
      expect((await c.listSnapshots()).map((item) => item.name)).toEqual(["py-snap", "tools"])
      expect((await c.listSnapshots({ nameContains: "PY" })).map((item) => item.name)).toEqual(["py-snap"])
      expect((await c.listSnapshots({ limit: 1, offset: 1 })).map((item) => item.name)).toEqual(["tools"])
      await c.deleteSnapshot(tools.id)
      await expect(c.getSnapshot(tools.id)).rejects.toBeInstanceOf(Current.LangSmithResourceNotFoundError)
    }, 180_000)

    it("a snapshot of an image the registry does not have fails, and the client says why", async () => {
      const error = await client()
        .createSnapshot("missing", "acme/does-not-exist:1", GiB, { timeout: 60 })
        .then(() => undefined, (caught: unknown) => caught)
      expect(error).toBeInstanceOf(Current.LangSmithResourceCreationError)
      expect((error as Error).message).toMatch(/does-not-exist.*manifest unknown/)
      const [failed] = await client().listSnapshots({ nameContains: "missing" })
      expect(failed).toMatchObject({ status: "failed", image_digest: null })
      await client().deleteSnapshot(failed!.id)
    }, 90_000)
  })

  describe("langsmith@0.12.0 langsmith/sandbox: boxes from a snapshot", () => {
    it("createSandbox(snapshotId) with resources and retention; run, files; getSandbox, getSandboxStatus, listSandboxes", async () => {
      const c = client()
      const [snapshot] = await c.listSnapshots({ nameContains: "py-snap" })
      const sandbox = await c.createSandbox(snapshot!.id, {
        name: "snap-box",
        timeout: 120,
        vCpus: 1,
        memBytes: 256 * MiB,
        idleTtlSeconds: 3600,
        deleteAfterStopSeconds: 3600
      })
      expect(sandbox).toMatchObject({ name: "snap-box", status: "ready", dataplane_url: `${t.url}/sandboxes/${sandbox.id}` })
      expect(await sandbox.run("echo $((6*7))")).toMatchObject({ stdout: "42\n", exit_code: 0 })
      await sandbox.write("/home/user/kept.txt", "from the client")
      expect(new TextDecoder().decode(await sandbox.read("/home/user/kept.txt"))).toBe("from the client")

      const got = await c.getSandbox("snap-box")
      expect(got).toMatchObject({ id: sandbox.id, snapshot_id: snapshot!.id, vCpus: 1, mem_bytes: 256 * MiB, fs_capacity_bytes: GiB, idle_ttl_seconds: 3600, delete_after_stop_seconds: 3600 })
      expect(await c.getSandboxStatus("snap-box")).toEqual({ status: "ready", status_message: null })
      expect((await c.waitForSandbox("snap-box", { timeout: 5 })).id).toBe(sandbox.id)
      expect((await c.listSandboxes()).map((box) => box.name)).toContain("snap-box")
    }, 180_000)

    it("the writable layer is capped at the snapshot's fs capacity", async () => {
      const sandbox = await client().getSandbox("snap-box")
      const tooBig = await sandbox.run("dd if=/dev/zero of=/home/user/big bs=1M count=1100 2>&1; echo rc=$?; rm -f /home/user/big", { timeout: 120 })
      expect(tooBig.stdout).toMatch(/No space left on device/)
    }, 180_000)

    it("createSandbox({ snapshotName }) and createSandbox() (the default image)", async () => {
      const c = client()
      const byName = await c.createSandbox({ snapshotName: "py-snap", name: "by-name", timeout: 120 })
      expect((await c.getSandbox(byName.name)).snapshot_id).toBe((await c.listSnapshots({ nameContains: "py-snap" }))[0]!.id)
      expect(await byName.run("echo named")).toMatchObject({ stdout: "named\n" })
      const plain = await c.createSandbox({ timeout: 120 })
      expect(plain.name).toMatch(/^sandbox-[a-z0-9]{6}$/)
      expect(await plain.run("echo default")).toMatchObject({ stdout: "default\n" })
      await plain.delete()
      await byName.delete()
    }, 180_000)

    it("updateSandbox renames and changes retention", async () => {
      const c = client()
      const renamed = await c.updateSandbox("snap-box", { newName: "snap-box-2", idleTtlSeconds: 7200 })
      expect(renamed).toMatchObject({ name: "snap-box-2", idle_ttl_seconds: 7200 })
      expect((await c.updateSandbox("snap-box-2", "snap-box")).name).toBe("snap-box")
      await expect(c.updateSandbox("no-such-box", "other")).rejects.toBeInstanceOf(Current.LangSmithResourceNotFoundError)
    })

    it("stopSandbox keeps the files, startSandbox brings the box back with them", async () => {
      const c = client()
      await c.stopSandbox("snap-box")
      const stopped = await c.getSandbox("snap-box")
      expect(stopped.status).toBe("stopped")
      expect((stopped as unknown as { stopped_at: string }).stopped_at).toMatch(/Z$/)
      const started = await c.startSandbox("snap-box", { timeout: 120 })
      expect(started.status).toBe("ready")
      expect(await started.run("cat /home/user/kept.txt")).toMatchObject({ stdout: "from the client" })
      await started.stop()
      await started.start({ timeout: 120 })
      expect(await started.run("echo again")).toMatchObject({ stdout: "again\n" })
    }, 180_000)

    it("captureSnapshot makes a snapshot of what the box wrote and deleted; a box from it starts with that; deleting it frees the image", async () => {
      const c = client()
      const source = await c.getSandbox("snap-box")
      const prepared = await source.run("mkdir -p /opt/tool && echo v1 > /opt/tool/version && echo captured > /home/user/cap.txt && rm /bin/vi && cp /bin/busybox /home/user/suid && chmod 4755 /home/user/suid && echo ok", { timeout: 60 })
      expect(prepared).toMatchObject({ stdout: "ok\n", exit_code: 0 })
      const captured = await c.captureSnapshot("snap-box", "captured", { timeout: 120 })
      expect(captured).toMatchObject({ name: "captured", status: "ready", source_sandbox_id: source.id, docker_image: "python:3.12-slim", fs_capacity_bytes: GiB })
      expect(captured.image_digest).toMatch(/^sha256:[0-9a-f]{64}$/)
      const imageDir = join(dirname(t.databasePath), "runtime", "images", "images", captured.image_digest!.replace(":", "-"))
      expect(existsSync(join(imageDir, "rootfs"))).toBe(true)
      // On the host the captured files belong to root, and a set-uid program the box made lost its bit.
      const planted = statSync(join(imageDir, "rootfs", "home", "user", "suid"))
      expect({ uid: planted.uid, setid: planted.mode & 0o6000 }).toEqual({ uid: 0, setid: 0 })

      const copy = await c.createSandbox(captured.id, { name: "from-capture", timeout: 120 })
      const seen = await copy.run("cat /opt/tool/version /home/user/cap.txt; test -e /bin/vi && echo vi-present || echo vi-gone; stat -c %u /home/user/cap.txt /bin/busybox", { timeout: 60 })
      expect(seen).toMatchObject({ stdout: "v1\ncaptured\nvi-gone\n0\n0\n", exit_code: 0 })
      // The source box is untouched by the capture and keeps running.
      expect(await source.run("cat /home/user/cap.txt")).toMatchObject({ stdout: "captured\n" })
      await copy.delete()
      await c.deleteSnapshot(captured.id)
      await eventually(async () => (existsSync(imageDir) ? undefined : true), 20_000, 100)
      // The pulled image of the snapshot it came from stays (templates and other snapshots share it).
      expect(existsSync(join(dirname(t.databasePath), "runtime", "images", "images", (await c.listSnapshots({ nameContains: "py-snap" }))[0]!.image_digest!.replace(":", "-")))).toBe(true)
    }, 240_000)

    it("deleteSnapshot of a snapshot in use is refused", async () => {
      const c = client()
      const [snapshot] = await c.listSnapshots({ nameContains: "py-snap" })
      const inUse = await c.deleteSnapshot(snapshot!.id).then(() => undefined, (caught: unknown) => caught as Error)
      expect(inUse?.message).toMatch(/used by 1 sandbox/)
    }, 60_000)

    it("deleteSandbox ends the box and frees its disk; then the snapshot can be deleted", async () => {
      const c = client()
      const box = await c.getSandbox("snap-box")
      await c.deleteSandbox("snap-box")
      await expect(c.getSandbox("snap-box")).rejects.toBeInstanceOf(Current.LangSmithResourceNotFoundError)
      await eventually(async () => (existsSync(boxDir(box.id!)) ? undefined : true), 20_000, 100)
      const [snapshot] = await c.listSnapshots({ nameContains: "py-snap" })
      await c.deleteSnapshot(snapshot!.id)
      expect(await c.listSnapshots()).toEqual([])
    }, 60_000)
  })

  describe("retention on the local runtime", () => {
    it("a box past ttl_seconds is deleted and its disk freed; an idle box is stopped", async () => {
      const c = client()
      const snapshot = await c.createSnapshot("ttl-snap", "python:3.12-slim", GiB, { timeout: 120 })
      // The client accepts only whole minutes; the server takes any seconds, so short values go over HTTP.
      const short = await t.request("POST", "/api/v2/sandboxes/boxes", { body: { snapshot_id: snapshot.id, name: "short", ttl_seconds: 3, wait_for_ready: true, timeout: 120 } })
      expect(short.status).toBe(201)
      expect(short.body).toMatchObject({ status: "ready", ttl_seconds: 3 })
      const idle = await t.request("POST", "/api/v2/sandboxes/boxes", { body: { snapshot_id: snapshot.id, name: "idle", idle_ttl_seconds: 2, wait_for_ready: true, timeout: 120 } })
      expect(idle.body.status).toBe("ready")
      expect(await (await c.getSandbox("short")).run("echo alive")).toMatchObject({ stdout: "alive\n" })
      await eventually(async () => c.getSandbox("short").then(() => undefined, (error: unknown) => (error instanceof Current.LangSmithResourceNotFoundError ? true : undefined)), 20_000, 200)
      await eventually(async () => (existsSync(boxDir(short.body.id)) ? undefined : true), 20_000, 100)
      await eventually(async () => ((await c.getSandboxStatus("idle")).status === "stopped" ? true : undefined), 20_000, 200)
      // A dataplane request wakes it: answered 503 "starting" while it comes up (this client has no retries), then it is ready again.
      // 0 turns the idle stop off, so the woken box is not stopped again while the test uses it.
      expect((await c.updateSandbox("idle", { idleTtlSeconds: 0 })).idle_ttl_seconds).toBe(0)
      const woken = await c.getSandbox("idle")
      await woken.run("echo wake", { timeout: 60 }).catch(() => undefined)
      expect((await c.waitForSandbox("idle", { timeout: 60, pollInterval: 0.2 })).status).toBe("ready")
      expect(await woken.run("echo awake", { timeout: 60 })).toMatchObject({ stdout: "awake\n" })
      await c.deleteSandbox("idle")
      await c.deleteSnapshot(snapshot.id)
    }, 180_000)
  })

  describe("a restart on the local runtime", () => {
    it("brings a snapshot's box back with its files, and builds again a snapshot left building", async () => {
      const database = tempDatabasePath("snapshot-restart")
      try {
        const first = await startTestServer({ runtime: "local", databasePath: database.path })
        let snapshotId: string
        try {
          const c = new Current.SandboxClient({ apiKey: first.key, apiEndpoint: `${first.url}/api/v2/sandboxes`, maxRetries: 0 })
          const snapshot = await c.createSnapshot("restart-snap", "python:3.12-slim", GiB, { timeout: 120 })
          snapshotId = snapshot.id
          const box = await c.createSandbox(snapshot.id, { name: "survivor", timeout: 120 })
          await box.write("/home/user/state", "before")
        } finally {
          await first.close()
        }
        // A snapshot the server had not finished building when it stopped.
        const db = new Database(database.path)
        const at = new Date().toISOString()
        db.prepare(
          `INSERT INTO sandbox_snapshots (id, tenant_id, name, docker_image, image_digest, fs_capacity_bytes, status, status_message, created_at, updated_at)
           SELECT ?, tenant_id, 'unfinished', 'python:3.12-slim', NULL, ?, 'building', 'pulling image python:3.12-slim', ?, ? FROM sandbox_snapshots WHERE id = ?`
        ).run(crypto.randomUUID(), GiB, at, at, snapshotId!)
        db.close()

        const second = await startTestServer({ runtime: "local", databasePath: database.path })
        try {
          const c = new Current.SandboxClient({ apiKey: second.key, apiEndpoint: `${second.url}/api/v2/sandboxes`, maxRetries: 0 })
          const box = await c.waitForSandbox("survivor", { timeout: 60, pollInterval: 0.1 })
          expect(new TextDecoder().decode(await box.read("/home/user/state"))).toBe("before")
          const [unfinished] = await c.listSnapshots({ nameContains: "unfinished" })
          const built = await c.waitForSnapshot(unfinished!.id, { timeout: 60, pollInterval: 0.1 })
          expect(built.image_digest).toMatch(/^sha256:/)
        } finally {
          await second.close()
        }
      } finally {
        database.remove()
      }
    }, 240_000)
  })
})
