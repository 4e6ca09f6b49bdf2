/**
 * The dataplane's command features on the real server and the local runtime, where every command
 * goes through the box's exec helper (test/server/dataplane drives the dataplane with bwrap boxes
 * of its own, which spawn per command): started with the box pid, streams with offsets, stdin,
 * kill, timeout, env, cwd, command_id replay on reconnect.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { openFrameSocket, streamText, type Frame } from "../support/dataplane-server.ts"
import { type ImageMirror, startImageMirror } from "../support/mirror.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import { testIsolations, useIsolation } from "../support/isolation.ts"

describe.each(testIsolations)("sandboxes under %s", (isolation) => {
  useIsolation(isolation)

  let mirror: ImageMirror
  let t: TestServer
  let boxUrl: string

  beforeAll(async () => {
    mirror = await startImageMirror()
    t = await startTestServer({ runtime: "local" })
    await t.request("POST", "/v2/sandboxes/templates", { body: { name: "py", image: "python:3.12-slim", resources: { cpu: "500m", memory: "128Mi", storage: "64Mi" } } })
    const box = await t.request("POST", "/v2/sandboxes/boxes", { body: { template_name: "py", name: "helped", wait_for_ready: true, timeout: 120 } })
    expect(box.body.status).toBe("ready")
    boxUrl = box.body.dataplane_url
  }, 180_000)

  afterAll(async () => {
    await t?.close()
    await mirror?.stop()
  }, 60_000)

  const isExit = (frame: Frame) => frame.type === "exit" || frame.type === "error"
  const execute = async (frame: Record<string, unknown>) => {
    const socket = await openFrameSocket(boxUrl, t.key)
    socket.send({ type: "execute", shell: "/bin/sh", ...frame })
    return socket
  }

  describe("dataplane commands through the box's exec helper", () => {
    it("started carries the command's pid in the box; output streams with offsets; exit code", async () => {
      const socket = await execute({ command: "echo $$; printf 'héllo '; sleep 0.2; printf 'wörld\\n'; echo bad >&2; exit 4" })
      const exit = await socket.waitFor(isExit)
      expect(exit).toMatchObject({ type: "exit", exit_code: 4 })
      const started = socket.frames[0]!
      expect(started).toMatchObject({ type: "started", command_id: expect.any(String) })
      expect(started.pid).toBeGreaterThan(1)
      const stdout = streamText(socket.frames, "stdout")
      // The launcher execs the shell: the pid reported is the shell's own $$ inside the box.
      expect(stdout).toBe(`${started.pid}\nhéllo wörld\n`)
      expect(streamText(socket.frames, "stderr")).toBe("bad\n")
    })

    it("feeds input and close_stdin; env and cwd apply", async () => {
      const socket = await execute({ command: 'echo "$GREETING from $(pwd)"; cat', env: { GREETING: "hi" }, cwd: "/tmp", close_stdin: false })
      await socket.waitFor((f) => f.type === "stdout")
      socket.send({ type: "input", data: "line one\n" })
      socket.send({ type: "close_stdin" })
      expect(await socket.waitFor(isExit)).toMatchObject({ exit_code: 0 })
      expect(streamText(socket.frames, "stdout")).toBe("hi from /tmp\nline one\n")
    })

    it("kill ends the command and what it started; a timeout is CommandTimeout", async () => {
      const killed = await execute({ command: "sleep 300 & echo up; wait" })
      await killed.waitFor((f) => f.type === "stdout")
      killed.send({ type: "kill" })
      expect(await killed.waitFor(isExit)).toMatchObject({ type: "exit", exit_code: 137 })
      const timed = await execute({ command: "sleep 30", timeout_seconds: 1 })
      expect(await timed.waitFor(isExit, 15_000)).toMatchObject({ type: "error", error_type: "CommandTimeout" })
      const ps = await fetch(`${boxUrl}/execute`, {
        method: "POST",
        headers: { "x-api-key": t.key, "content-type": "application/json" },
        body: JSON.stringify({ command: "ps -o args | grep -c '^sleep' || true", shell: "/bin/sh" })
      })
      expect(((await ps.json()) as { stdout: string }).stdout.trim()).toBe("0")
    })

    it("the launcher's rules, kept by the helper: a missing shell is 127, a missing cwd 1, each with its message; relative cwd from /home/user", async () => {
      const post = async (body: Record<string, unknown>) =>
        (await (
          await fetch(`${boxUrl}/execute`, { method: "POST", headers: { "x-api-key": t.key, "content-type": "application/json" }, body: JSON.stringify(body) })
        ).json()) as { stdout: string; stderr: string; exit_code: number }
      expect(await post({ command: "echo hi", shell: "/usr/bin/zsh" })).toEqual({ stdout: "", stderr: "slipway: shell not found in the sandbox: /usr/bin/zsh\n", exit_code: 127 })
      expect(await post({ command: "pwd", cwd: "/nowhere" })).toEqual({ stdout: "", stderr: "slipway: cannot change to directory: /nowhere\n", exit_code: 1 })
      expect(await post({ command: "mkdir -p work/a && cd work/a && pwd", shell: "/bin/sh" })).toMatchObject({ stdout: "/home/user/work/a\n", exit_code: 0 })
      expect(await post({ command: 'pwd; echo "$PWD"', cwd: "work" })).toMatchObject({ stdout: "/home/user/work\n/home/user/work\n", exit_code: 0 })
    })

    it("a re-sent execute with the same command_id reattaches and replays from the offsets", async () => {
      const commandId = `replay-${Date.now()}`
      const first = await execute({ command: "echo one; sleep 1; echo two", command_id: commandId })
      await first.waitFor((f) => f.type === "stdout")
      const startedPid = first.frames[0]!.pid
      await first.close()
      const again = await openFrameSocket(boxUrl, t.key)
      again.send({ type: "reconnect", command_id: commandId, stdout_offset: 4, stderr_offset: 0 })
      expect(await again.waitFor(isExit)).toMatchObject({ exit_code: 0 })
      expect(again.frames[0]).toEqual({ type: "started", command_id: commandId, pid: startedPid })
      expect(streamText(again.frames, "stdout", 4)).toBe("two\n")
    })
  })
})
