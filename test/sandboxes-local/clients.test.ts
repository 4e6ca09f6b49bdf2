/**
 * Real sandboxes end to end: a real server with the `local` runtime, a real OCI registry serving
 * as the Docker Hub mirror (templates name `python:3.12-slim`, served by the test registry from a
 * busybox image the tests build), and the published npm `langsmith` sandbox clients, unmodified,
 * doing their main job: create a template and a sandbox, run commands, write and read files.
 */
import * as Current from "langsmith/sandbox"
import * as Legacy from "langsmith-05/experimental/sandbox"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ImageMirror, startImageMirror } from "../support/mirror.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import { testIsolations, useIsolation } from "../support/isolation.ts"

describe.each(testIsolations)("sandboxes under %s", (isolation) => {
  useIsolation(isolation)

  let mirror: ImageMirror
  let t: TestServer

  beforeAll(async () => {
    mirror = await startImageMirror()
    t = await startTestServer({ runtime: "local" })
  }, 180_000)

  afterAll(async () => {
    await t?.close()
    await mirror?.stop()
  }, 60_000)

  const legacy = () => new Legacy.SandboxClient({ apiKey: t.key, apiEndpoint: `${t.url}/v2/sandboxes` })

  describe("langsmith@0.5.21 experimental/sandbox against the local runtime", () => {
    it("creates a template and a sandbox that is ready, with a dataplane url", async () => {
      const client = legacy()
      await client.createTemplate("py", { image: "python:3.12-slim", cpu: "500m", memory: "256Mi", storage: "256Mi" })
      const sandbox = await client.createSandbox("py", { name: "py-one", timeout: 120 })
      expect(sandbox.name).toBe("py-one")
      expect(sandbox.dataplane_url).toBe(`${t.url}/sandboxes/${sandbox.id}`)
      const status = await t.request("GET", "/v2/sandboxes/boxes/py-one/status")
      expect(status.body).toEqual({ status: "ready", status_message: null })
    })

    it("runs commands, writes and reads files in the box", async () => {
      const sandbox = await legacy().getSandbox("py-one")
      expect(await sandbox.run("echo hi")).toMatchObject({ stdout: "hi\n", exit_code: 0 })
      expect(await sandbox.run("exit 7")).toMatchObject({ exit_code: 7 })
      await sandbox.write("/home/user/note.txt", "written by the client")
      expect(new TextDecoder().decode(await sandbox.read("/home/user/note.txt"))).toBe("written by the client")
      expect(await sandbox.run("cat /home/user/note.txt")).toMatchObject({ stdout: "written by the client" })
    })
  })

  describe("langsmith@0.12.0 langsmith/sandbox against the local runtime", () => {
    it("runs commands and files through a sandbox it looks up", async () => {
      const client = new Current.SandboxClient({ apiKey: t.key, apiEndpoint: `${t.url}/v2/sandboxes`, maxRetries: 0 })
      const sandbox = await client.getSandbox("py-one")
      expect(await sandbox.run("echo $((6*7))")).toMatchObject({ stdout: "42\n", exit_code: 0 })
      await sandbox.write("data/x.bin", new Uint8Array([0, 1, 2, 255]))
      expect(Array.from(await sandbox.read("data/x.bin"))).toEqual([0, 1, 2, 255])
    })
  })

  describe("the dataplane's tenancy", () => {
    it("answers another tenant's box as absent, and an unauthenticated request 401", async () => {
      const box = (await t.request("GET", "/v2/sandboxes/boxes/py-one")).body
      const stranger = t.keyFor(crypto.randomUUID())
      const foreign = await fetch(`${box.dataplane_url}/execute`, {
        method: "POST",
        headers: { "x-api-key": stranger, "content-type": "application/json" },
        body: JSON.stringify({ command: "echo pwned", timeout: 10, shell: "/bin/sh" })
      })
      expect(foreign.status).toBe(404)
      expect(((await foreign.json()) as { detail: { error: string } }).detail.error).toBe("NotFound")
      const anonymous = await fetch(`${box.dataplane_url}/execute`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } })
      expect(anonymous.status).toBe(401)
    })
  })

  describe("volumes, stop and start through the API", () => {
    const run = async (box: { dataplane_url: string }, command: string) => {
      const response = await fetch(`${box.dataplane_url}/execute`, {
        method: "POST",
        headers: { "x-api-key": t.key, "content-type": "application/json" },
        body: JSON.stringify({ command, timeout: 60, shell: "/bin/sh" })
      })
      expect(response.status).toBe(200)
      return (await response.json()) as { stdout: string; stderr: string; exit_code: number }
    }

    it("a volume is a filesystem of its size: a write past it fails with ENOSPC in the box, and succeeds after a resize", async () => {
      expect((await t.request("POST", "/v2/sandboxes/volumes", { body: { name: "data", size: "256Mi" } })).status).toBe(201)
      expect(
        (await t.request("POST", "/v2/sandboxes/templates", {
          body: { name: "with-data", image: "python:3.12-slim", resources: { cpu: "500m", memory: "256Mi" }, volume_mounts: [{ volume_name: "data", mount_path: "/data" }] }
        })).status
      ).toBe(201)
      const box = (await t.request("POST", "/v2/sandboxes/boxes", { body: { template_name: "with-data", name: "vol-box", wait_for_ready: true, timeout: 120 } })).body
      expect(box.status).toBe("ready")
      const tooBig = await run(box, "dd if=/dev/zero of=/data/big bs=1M count=300 2>&1; echo rc=$?")
      expect(tooBig.stdout).toMatch(/No space left on device/)
      await run(box, "rm -f /data/big; sync")
      expect((await t.request("PATCH", "/v2/sandboxes/volumes/data", { body: { size: "1Gi" } })).body.size).toBe("1Gi")
      const fits = await run(box, "dd if=/dev/zero of=/data/big bs=1M count=300 2>&1 >/dev/null; echo rc=$?; echo kept > /data/marker")
      expect(fits.stdout).toMatch(/rc=0/)
    })

    it("stop ends the box's processes and keeps its files; start brings it back with them", async () => {
      const box = (await t.request("GET", "/v2/sandboxes/boxes/vol-box")).body
      await run(box, "echo layer > /home/user/kept.txt")
      const stopped = await t.request("POST", "/v2/sandboxes/boxes/vol-box/stop")
      expect(stopped.status).toBe(200)
      expect(stopped.body.status).toBe("stopped")
      const started = await t.request("POST", "/v2/sandboxes/boxes/vol-box/start")
      expect(started.body.status).toMatch(/provisioning|ready/)
      for (let attempt = 0; attempt < 100; attempt++) {
        if ((await t.request("GET", "/v2/sandboxes/boxes/vol-box/status")).body.status === "ready") break
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      expect((await run(box, "cat /home/user/kept.txt /data/marker")).stdout).toBe("layer\nkept\n")
    })

    it("deleting a box ends its processes and frees its disk", async () => {
      const box = (await t.request("POST", "/v2/sandboxes/boxes", { body: { template_name: "py", name: "short-lived", wait_for_ready: true, timeout: 120 } })).body
      await run(box, "sleep 300 & echo started")
      expect((await t.request("DELETE", "/v2/sandboxes/boxes/short-lived")).status).toBe(204)
      for (let attempt = 0; attempt < 100; attempt++) {
        const response = await fetch(`${box.dataplane_url}/execute`, { method: "POST", headers: { "x-api-key": t.key, "content-type": "application/json" }, body: "{}" })
        if (response.status === 404) break
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      const { existsSync } = await import("node:fs")
      const { join, dirname } = await import("node:path")
      for (let attempt = 0; attempt < 100 && existsSync(join(dirname(t.databasePath), "runtime", "boxes", box.id)); attempt++) await new Promise((resolve) => setTimeout(resolve, 100))
      expect(existsSync(join(dirname(t.databasePath), "runtime", "boxes", box.id))).toBe(false)
    })
  })
})
