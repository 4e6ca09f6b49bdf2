/**
 * Real sandboxes end to end: a real server with the `local` runtime, a real OCI registry serving
 * as the Docker Hub mirror (templates name `python:3.12-slim`, served by the test registry from a
 * busybox image the tests build), and the published npm `langsmith` sandbox clients, unmodified,
 * doing their main job: create a template and a sandbox, run commands, write and read files.
 */
import { randomBytes } from "node:crypto"
import { dirname, join } from "node:path"
import * as Current from "langsmith/sandbox"
import { handleSandboxCreationError } from "langsmith/lib/sandbox/helpers.mjs"
import * as Legacy from "langsmith-05/experimental/sandbox"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeLogger } from "../../server/log.ts"
import { cgroupParentFor } from "../../server/runtime/local/RuntimeRoot.ts"
import { cgroupDirsNamed } from "../runtime/local/harness.ts"
import { type ImageMirror, startImageMirror } from "../support/mirror.ts"
import { startTestServer, type TestServer, executeIn } from "../support/server.ts"
import { testIsolations, useIsolation } from "../support/isolation.ts"

describe.each(testIsolations)("sandboxes under %s", (isolation) => {
  useIsolation(isolation)

  let mirror: ImageMirror
  let t: TestServer
  const logs: Array<string> = []

  beforeAll(async () => {
    mirror = await startImageMirror()
    t = await startTestServer({ runtime: "local", logger: makeLogger("info", (line) => void logs.push(line)) })
  }, 180_000)

  afterAll(async () => {
    const cgroupParent = t && cgroupParentFor(join(dirname(t.databasePath), "runtime"))
    await t?.close()
    await mirror?.stop()
    // A stopped server leaves no cgroup of its own behind (its boxes' nor their empty parent).
    if (cgroupParent) expect(cgroupDirsNamed(cgroupParent)).toEqual([])
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

  describe("large files", () => {
    it("a download of 1 MiB or more is relayed from the box to the client under bwrap, streamed by the server under gVisor (whole, ranged, exact bytes); the langsmith client reads it", async () => {
      const box = (await t.request("GET", "/v2/sandboxes/boxes/py-one")).body
      const content = randomBytes(3 * 1024 * 1024 + 17)
      const form = new FormData()
      form.append("file", new Blob([content]), "big.bin")
      const uploaded = await fetch(`${box.dataplane_url}/upload?path=/home/user/big.bin`, { method: "POST", headers: { "x-api-key": t.key }, body: form })
      expect(uploaded.status).toBe(200)
      const whole = await fetch(`${box.dataplane_url}/download?path=/home/user/big.bin`, { headers: { "x-api-key": t.key } })
      expect(whole.status).toBe(200)
      // The relay wrote the body on the connection, which is then not reused. The host cannot enter
      // a gVisor box's namespaces, so there the server streams it (and keeps the connection).
      if (isolation === "bwrap") expect(whole.headers.get("connection")).toBe("close")
      else expect(whole.headers.get("connection")).not.toBe("close")
      expect(whole.headers.get("content-length")).toBe(String(content.length))
      expect(Buffer.from(await whole.arrayBuffer()).equals(content)).toBe(true)
      const start = 1024 * 1024 + 5
      const ranged = await fetch(`${box.dataplane_url}/download?path=/home/user/big.bin`, { headers: { "x-api-key": t.key, range: `bytes=${start}-` } })
      expect(ranged.status).toBe(206)
      expect(ranged.headers.get("content-range")).toBe(`bytes ${start}-${content.length - 1}/${content.length}`)
      expect(Buffer.from(await ranged.arrayBuffer()).equals(content.subarray(start))).toBe(true)
      // A small one goes the ordinary way (keep-alive).
      const small = await fetch(`${box.dataplane_url}/download?path=/home/user/big.bin`, { headers: { "x-api-key": t.key, range: "bytes=0-99" } })
      expect(small.headers.get("connection")).not.toBe("close")
      expect(Buffer.from(await small.arrayBuffer()).equals(content.subarray(0, 100))).toBe(true)
      const sandbox = await new Current.SandboxClient({ apiKey: t.key, apiEndpoint: `${t.url}/v2/sandboxes`, maxRetries: 0 }).getSandbox("py-one")
      expect(Buffer.from(await sandbox.read("/home/user/big.bin")).equals(content)).toBe(true)
      expect(await sandbox.run("rm /home/user/big.bin && echo gone")).toMatchObject({ stdout: "gone\n" })
    }, 60_000)
  })

  describe("a sandbox whose image cannot be pulled", () => {
    it("the start-up log names the registry mirror and the insecure registries in force", () => {
      const line = logs.find((entry) => entry.includes("image registries"))
      expect(line).toBeDefined()
      expect(line).toContain(mirror.host)
      expect(JSON.parse(line!)).toMatchObject({ mirror: mirror.host, insecure_registries: [mirror.host] })
    })

    it("createSandbox fails with the pull error (naming the mirror); commands get that error, not a retry; a retry with the same name works", async () => {
      const client = legacy()
      await client.createTemplate("missing", { image: "nosuchimage:1", cpu: "500m", memory: "256Mi", storage: "256Mi" })
      // The create as the clients send it, its answer read by the current client's own handler (its
      // createSandbox names snapshots, not templates; 0.5.21's reads a 422's body twice and throws a TypeError).
      const response = await fetch(`${t.url}/v2/sandboxes/boxes`, {
        method: "POST",
        headers: { "x-api-key": t.key, "content-type": "application/json" },
        body: JSON.stringify({ template_name: "missing", name: "broken", wait_for_ready: true, timeout: 60 })
      })
      expect(response.status).toBe(422)
      const failure = await handleSandboxCreationError(response).then(
        () => undefined,
        (error: unknown) => error
      )
      expect(failure).toBeInstanceOf(Current.LangSmithSandboxCreationError)
      expect((failure as Current.LangSmithSandboxCreationError).errorType).toBe("ImagePull")
      expect((failure as Error).message).toMatch(/^sandbox broken failed: image pull failed: pull docker\.io\/library\/nosuchimage:1: (manifest unknown|not found)/)
      expect((failure as Error).message).toContain(`through the Docker Hub mirror ${mirror.host}`)
      const status = (await t.request("GET", "/v2/sandboxes/boxes/broken/status")).body
      expect(status.status).toBe("failed")

      // A command on the failed box: a clear error carrying status_message, and the box is not started again.
      const box = (await t.request("GET", "/v2/sandboxes/boxes/broken")).body
      const refused = await fetch(`${box.dataplane_url}/execute`, {
        method: "POST",
        headers: { "x-api-key": t.key, "content-type": "application/json" },
        body: JSON.stringify({ command: "true", timeout: 10 })
      })
      expect(refused.status).toBe(400)
      expect(await refused.json()).toEqual({
        detail: { error: "NotReady", message: expect.stringContaining(`Sandbox broken failed: ${status.status_message}`), status: "failed", status_message: status.status_message }
      })
      // The current client runs commands over WebSocket: the refusal's text reaches it as the protocol's error frame.
      const current = new Current.SandboxClient({ apiKey: t.key, apiEndpoint: `${t.url}/v2/sandboxes`, maxRetries: 0 })
      await expect((await current.getSandbox("broken")).run("true")).rejects.toThrow(/Sandbox broken failed: image pull failed/)
      // The legacy client refuses a box that is not ready itself, from the status the API answers.
      await expect((await client.getSandbox("broken")).run("true")).rejects.toThrow(/status: failed/)
      expect((await t.request("GET", "/v2/sandboxes/boxes/broken/status")).body).toEqual(status)

      // The same name again, from a template that works: the failed box is replaced.
      const retried = await client.createSandbox("py", { name: "broken", timeout: 120 })
      expect(retried.id).not.toBe(box.id)
      expect(await retried.run("echo back")).toMatchObject({ stdout: "back\n", exit_code: 0 })
      expect((await t.request("DELETE", "/v2/sandboxes/boxes/broken")).status).toBe(204)
    }, 180_000)
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
    const run = (box: { dataplane_url: string }, command: string) => executeIn(box.dataplane_url, t.key, command)

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
