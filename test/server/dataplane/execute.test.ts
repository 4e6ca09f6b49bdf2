/**
 * Command execution over the dataplane, raw: HTTP `POST /execute` and the `/execute/ws` frames,
 * against a real node:http server and real bwrap boxes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { TestBox } from "../../support/bwrap-box.ts"
import { testIsolations } from "../../support/isolation.ts"
import { makeTestBox } from "../../support/runner-box.ts"
import { openFrameSocket, startDataplaneServer, streamText, type DataplaneServer, type Frame } from "../../support/dataplane-server.ts"

describe.each(testIsolations)("the dataplane over a box under %s", (isolation) => {
  let box: TestBox
  let bashBox: TestBox
  let server: DataplaneServer
  let tight: DataplaneServer

  beforeAll(async () => {
    box = await makeTestBox(isolation)
    bashBox = await makeTestBox(isolation, { bash: true })
    const stopped = { exec: () => { throw new Error("box b-stopped is stopped") } }
    server = await startDataplaneServer({ b: box, bash: bashBox, stopped })
    tight = await startDataplaneServer({ b: box }, { limits: { ringBytes: 1024, maxFrameBytes: 16, maxSessions: 3 } })
  })

  afterAll(async () => {
    try {
      await server?.close()
      await tight?.close()
      // Closing the dataplane left no process of the box running.
      expect(box.running()).toBe(0)
      expect(bashBox.running()).toBe(0)
    } finally {
      await box?.dispose()
      await bashBox?.dispose()
    }
  })

  const post = (srv: DataplaneServer, path: string, body: unknown, id = "b") =>
    fetchLoose(srv.boxUrl(id) + path, {
      method: "POST",
      headers: { "x-api-key": srv.apiKey, "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body)
    })

  const fetchLoose = async (input: string, init?: RequestInit) => loose(await fetch(input, init))
  /** Test answers are read loosely: the assertions check their shape. */
  const loose = (response: Response) => response as Omit<Response, "json"> & { json(): Promise<any> }

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
  const isExit = (f: Frame) => f.type === "exit" || f.type === "error"

  describe("POST /execute", () => {
    it("runs a command in the box and answers stdout, stderr and the exit code", async () => {
      const response = await post(server, "/execute", {
        command: "echo hi; echo oops >&2; pwd; echo $GREETING; cat /etc/passwd; exit 3",
        timeout: 10,
        shell: "/bin/bash",
        env: { GREETING: "hello there" }
      })
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({
        stdout: "hi\n/home/user\nhello there\nroot:x:0:0:box-root-marker:/root:/bin/sh\n",
        stderr: "oops\n",
        exit_code: 3
      })
    })

    it("falls back to /bin/sh when the box has no bash, and uses bash when it has one", async () => {
      const withoutBash = await (await post(server, "/execute", { command: 'echo "[$SLIPWAY_TEST_SHELL]"', timeout: 10, shell: "/bin/bash" })).json()
      expect(withoutBash).toMatchObject({ stdout: "[]\n", exit_code: 0 })
      const withBash = await (await post(server, "/execute", { command: 'echo "[$SLIPWAY_TEST_SHELL]"', timeout: 10, shell: "/bin/bash" }, "bash")).json()
      expect(withBash).toMatchObject({ stdout: "[bash]\n", exit_code: 0 })
    })

    it("reports a missing shell and a missing cwd clearly", async () => {
      const shell = await (await post(server, "/execute", { command: "echo hi", shell: "/usr/bin/zsh" })).json()
      expect(shell).toMatchObject({ exit_code: 127, stderr: expect.stringContaining("shell not found in the sandbox: /usr/bin/zsh") })
      const cwd = await (await post(server, "/execute", { command: "pwd", cwd: "/nowhere" })).json()
      expect(cwd).toMatchObject({ exit_code: 1, stderr: expect.stringContaining("cannot change to directory: /nowhere") })
      const relative = await (await post(server, "/execute", { command: "mkdir -p work/a && cd work/a && pwd" })).json()
      expect(relative.stdout).toBe("/home/user/work/a\n")
      const inDir = await (await post(server, "/execute", { command: "pwd", cwd: "work" })).json()
      expect(inDir.stdout).toBe("/home/user/work\n")
    })

    it("accepts run_config (work_dir, env_vars) and refuses it combined with env/cwd", async () => {
      const ok = await (await post(server, "/execute", { command: "pwd; echo $X", run_config: { work_dir: "/tmp", env_vars: { X: "1" } } })).json()
      expect(ok).toMatchObject({ stdout: "/tmp\n1\n", exit_code: 0 })
      const both = await post(server, "/execute", { command: "pwd", cwd: "/tmp", run_config: { work_dir: "/tmp" } })
      expect(both.status).toBe(400)
      expect((await both.json()).detail.message).toMatch(/Cannot combine run_config/)
    })

    it("times out a command: 408 CommandTimeout, and the process is gone", async () => {
      const started = Date.now()
      const response = await post(server, "/execute", { command: "sleep 30", timeout: 1 })
      expect(response.status).toBe(408)
      expect(await response.json()).toEqual({ detail: { error: "CommandTimeout", message: "Command timed out after 1 seconds" } })
      expect(Date.now() - started).toBeLessThan(10_000)
    })

    it("kills the command when the HTTP client goes away", async () => {
      const before = box.running()
      const controller = new AbortController()
      const pending = post(server, "/execute", { command: "sleep 30", timeout: 60 }).catch(() => undefined)
      void pending
      const request = fetchLoose(server.boxUrl("b") + "/execute", {
        method: "POST",
        headers: { "x-api-key": server.apiKey, "content-type": "application/json" },
        body: JSON.stringify({ command: "sleep 30", timeout: 60 }),
        signal: controller.signal
      }).catch(() => "aborted")
      const deadline = Date.now() + 5000
      while (box.running() < before + 2 && Date.now() < deadline) await sleep(50)
      expect(box.running()).toBe(before + 2)
      controller.abort()
      expect(await request).toBe("aborted")
      while (box.running() > before + 1 && Date.now() < deadline + 5000) await sleep(50)
      expect(box.running()).toBe(before + 1) // only the other, still attached, request's command is left
    })

    it("answers bad input with 4xx and the error shape, never 500", async () => {
      const cases: Array<[unknown, number, RegExp]> = [
        ["{not json", 400, /not valid JSON/],
        ["", 422, /empty/],
        [{}, 422, /body\.command: Field required/],
        [{ command: 5 }, 422, /body\.command/],
        [{ command: "x", timeout: "soon" }, 422, /body\.timeout/],
        [{ command: "x", env: { "BAD-NAME": "1" } }, 400, /not a valid environment variable name/],
        [{ command: "x", shell: "bash" }, 400, /absolute path/],
        [{ command: "a\u0000b" }, 400, /NUL/],
        [{ command: "x", run_config: { user: "nobody" } }, 400, /run_config.user/]
      ]
      for (const [body, status, message] of cases) {
        const response = await post(server, "/execute", body)
        expect(response.status, JSON.stringify(body)).toBe(status)
        const json = await response.json()
        expect(json.detail.error).toEqual(expect.any(String))
        expect(json.detail.message).toMatch(message)
      }
    })

    it("answers 503 ServiceUnavailable (retryable) when the box cannot run anything", async () => {
      const response = await post(server, "/execute", { command: "echo hi" }, "stopped")
      expect(response.status).toBe(503)
      expect(await response.json()).toEqual({ detail: { error: "ServiceUnavailable", message: "Sandbox is not available: box b-stopped is stopped" } })
      const read = await fetchLoose(server.boxUrl("stopped") + "/download?path=/x", { headers: { "x-api-key": server.apiKey } })
      expect(read.status).toBe(503)
      const socket = await openFrameSocket(server.boxUrl("stopped"), server.apiKey)
      socket.send({ type: "execute", command: "echo hi" })
      expect(await socket.waitFor(isExit)).toEqual({ type: "error", error_type: "CommandError", error: "Sandbox is not available: box b-stopped is stopped" })
      expect(server.logs).toEqual([])
    })

    it("answers unknown endpoints 404 and wrong methods 405 with the error shape", async () => {
      const missing = await fetchLoose(server.boxUrl("b") + "/nope", { headers: { "x-api-key": server.apiKey } })
      expect(missing.status).toBe(404)
      expect((await missing.json()).detail.error).toBe("NotFound")
      const wrong = await fetchLoose(server.boxUrl("b") + "/execute", { headers: { "x-api-key": server.apiKey } })
      expect(wrong.status).toBe(405)
      expect(wrong.headers.get("allow")).toBe("POST")
      const plainWs = await fetchLoose(server.boxUrl("b") + "/execute/ws", { headers: { "x-api-key": server.apiKey } })
      expect(plainWs.status).toBe(426)
    })
  })

  describe("GET /execute/ws", () => {
    const execute = async (srv: DataplaneServer, frame: Record<string, unknown>) => {
      const socket = await openFrameSocket(srv.boxUrl("b"), srv.apiKey)
      socket.send({ type: "execute", timeout_seconds: 30, shell: "/bin/bash", ...frame })
      return socket
    }

    it("streams started, stdout/stderr with byte offsets, then exit, then closes normally", async () => {
      const socket = await execute(server, { command: "printf 'héllo '; sleep 0.2; printf 'wörld\\n'; echo bad >&2; exit 4" })
      await socket.waitFor(isExit)
      const { code } = await socket.closed
      expect(code).toBe(1000)
      expect(socket.frames[0]).toEqual({ type: "started", command_id: expect.any(String), pid: expect.any(Number) })
      expect(streamText(socket.frames, "stdout")).toBe("héllo wörld\n")
      expect(streamText(socket.frames, "stderr")).toBe("bad\n")
      const stdout = socket.frames.filter((f) => f.type === "stdout")
      expect(stdout[0]!.offset).toBe(0)
      expect(stdout.length).toBeGreaterThanOrEqual(2)
      expect(stdout[1]!.offset).toBe(Buffer.byteLength("héllo ")) // bytes, not characters
      expect(socket.frames.at(-1)).toEqual({ type: "exit", exit_code: 4 })
    })

    it("never splits a multi-byte character, even when the process does or frames are tiny", async () => {
      // "€" is e2 82 ac: the command writes it in two pieces with a pause between.
      const socket = await execute(tight, { command: "printf '\\342\\202'; sleep 0.3; printf '\\254'; printf '€€€€€€€€€€€€ñ🙂🙂🙂'" })
      await socket.waitFor(isExit)
      const stdout = socket.frames.filter((f) => f.type === "stdout")
      for (const frame of stdout) {
        const data = frame.data as string
        expect(data).not.toContain("\uFFFD")
        expect(Buffer.byteLength(data)).toBeLessThanOrEqual(16)
      }
      expect(streamText(socket.frames, "stdout")).toBe("€€€€€€€€€€€€€ñ🙂🙂🙂")
    })

    it("replaces invalid UTF-8 with U+FFFD and counts offsets over the replacement", async () => {
      const socket = await execute(server, { command: "printf 'a\\377b'; sleep 0.2; printf 'c'" })
      await socket.waitFor(isExit)
      expect(streamText(socket.frames, "stdout")).toBe("a\uFFFDbc")
      const last = socket.frames.filter((f) => f.type === "stdout").at(-1)!
      expect(last).toMatchObject({ data: "c", offset: 5 })
    })

    it("reports CommandTimeout, CommandNotFound, SessionExpired and CommandError frames", async () => {
      const timeout = await execute(server, { command: "sleep 30", timeout_seconds: 1 })
      expect(await timeout.waitFor(isExit)).toEqual({ type: "error", error_type: "CommandTimeout", error: "Command timed out after 1 seconds" })

      const unknown = await openFrameSocket(server.boxUrl("b"), server.apiKey)
      unknown.send({ type: "reconnect", command_id: "no-such-command", stdout_offset: 0, stderr_offset: 0 })
      expect(await unknown.waitFor(isExit)).toEqual({ type: "error", error_type: "CommandNotFound", error: "Command not found: no-such-command" })

      const short = await execute(server, { command: "echo bye", ttl_seconds: 1 })
      const started = await short.waitFor((f) => f.type === "started")
      await short.waitFor(isExit)
      const replay = await openFrameSocket(server.boxUrl("b"), server.apiKey)
      replay.send({ type: "reconnect", command_id: started.command_id, stdout_offset: 0, stderr_offset: 0 })
      await replay.waitFor(isExit)
      expect(streamText(replay.frames, "stdout")).toBe("bye\n") // kept during its ttl
      await sleep(1500)
      const expired = await openFrameSocket(server.boxUrl("b"), server.apiKey)
      expired.send({ type: "reconnect", command_id: started.command_id, stdout_offset: 0, stderr_offset: 0 })
      expect(await expired.waitFor(isExit)).toEqual({ type: "error", error_type: "SessionExpired", error: `Session expired: ${started.command_id}` })

      for (const bad of ["not json", JSON.stringify({ type: "input", data: "x" }), JSON.stringify({ type: "execute" }), JSON.stringify({ type: "execute", command: "x", pty: true })]) {
        const socket = await openFrameSocket(server.boxUrl("b"), server.apiKey)
        socket.ws.send(bad)
        const error = await socket.waitFor(isExit)
        expect(error).toMatchObject({ type: "error", error_type: "CommandError", error: expect.any(String) })
        expect((await socket.closed).code).toBe(1000)
      }
    })

    it("makes execute idempotent on command_id: a re-sent execute reattaches to the same process", async () => {
      const commandId = "0190f1a2b3c4d5e6f708192a3b4c5d6e"
      const command = "echo run >> /home/user/idempotent.log; echo first; sleep 1; echo second"
      const first = await execute(server, { command, command_id: commandId })
      const started = await first.waitFor((f) => f.type === "started")
      expect(started.command_id).toBe(commandId)
      await first.close() // lost the socket right after started
      const again = await execute(server, { command, command_id: commandId })
      await again.waitFor(isExit)
      expect(again.frames[0]).toEqual({ type: "started", command_id: commandId, pid: started.pid })
      expect(streamText(again.frames, "stdout")).toBe("first\nsecond\n")
      const log = await (await post(server, "/execute", { command: "cat /home/user/idempotent.log" })).json()
      expect(log.stdout).toBe("run\n")
    })

    it("survives a disconnect and replays from the client's byte offsets on reconnect", async () => {
      const socket = await execute(server, { command: "printf 'ab€'; sleep 1; printf 'cd'; echo err >&2" })
      const started = await socket.waitFor((f) => f.type === "started")
      await socket.waitFor((f) => f.type === "stdout")
      await socket.close()
      await sleep(1500) // the command finished while nobody was attached
      const from = async (stdoutOffset: number, stderrOffset: number) => {
        const again = await openFrameSocket(server.boxUrl("b"), server.apiKey)
        again.send({ type: "reconnect", command_id: started.command_id, stdout_offset: stdoutOffset, stderr_offset: stderrOffset })
        await again.waitFor(isExit)
        expect(again.frames[0]).toEqual({ type: "started", command_id: started.command_id, pid: started.pid })
        expect(again.frames.at(-1)).toEqual({ type: "exit", exit_code: 0 })
        return again
      }
      const all = await from(0, 0)
      expect(streamText(all.frames, "stdout")).toBe("ab€cd")
      const tail = await from(5, 4) // after "ab€" (2 + 3 bytes); stderr fully read
      expect(streamText(tail.frames, "stdout", 5)).toBe("cd")
      expect(tail.frames.filter((f) => f.type === "stderr")).toEqual([])
      expect(tail.frames.find((f) => f.type === "stdout")!.offset).toBe(5)
      const midChar = await from(3, 0) // inside "€": resumes at the next character
      expect(midChar.frames.find((f) => f.type === "stdout")).toMatchObject({ offset: 5, data: "cd" })
    })

    it("replays from the earliest retained byte when the ring buffer was trimmed", async () => {
      const socket = await execute(tight, { command: "seq 1 2000" })
      const started = await socket.waitFor((f) => f.type === "started")
      await socket.waitFor(isExit)
      const full = streamText(socket.frames, "stdout")
      expect(full.split("\n").length).toBe(2001)
      const again = await openFrameSocket(tight.boxUrl("b"), tight.apiKey)
      again.send({ type: "reconnect", command_id: started.command_id, stdout_offset: 0, stderr_offset: 0 })
      await again.waitFor(isExit)
      const first = again.frames.find((f) => f.type === "stdout")!
      const total = Buffer.byteLength(full)
      expect(first.offset).toBeGreaterThanOrEqual(total - 1024)
      expect(first.offset).toBeGreaterThan(0)
      const replayed = streamText(again.frames, "stdout", first.offset as number)
      expect(replayed).toBe(Buffer.from(full).subarray(first.offset as number).toString())
      expect(Buffer.byteLength(replayed)).toBeLessThanOrEqual(1024)
    })

    it("feeds input frames to stdin and honours close_stdin", async () => {
      const socket = await execute(server, { command: "while read line; do echo \"got $line\"; done; echo eof" })
      await socket.waitFor((f) => f.type === "started")
      socket.send({ type: "input", data: "one\n" })
      await socket.waitFor((f) => f.type === "stdout" && String(f.data).includes("got one"))
      socket.send({ type: "input", data: "twö\n" })
      socket.send({ type: "close_stdin" })
      await socket.waitFor(isExit)
      expect(streamText(socket.frames, "stdout")).toBe("got one\ngot twö\neof\n")
      const closed = await execute(server, { command: "cat; echo done", close_stdin: true })
      expect(await closed.waitFor(isExit)).toEqual({ type: "exit", exit_code: 0 })
      expect(streamText(closed.frames, "stdout")).toBe("done\n")
    })

    it("kills the command's whole process group on a kill frame", async () => {
      const socket = await execute(server, { command: "sleep 60 & sleep 60; echo never" })
      await socket.waitFor((f) => f.type === "started")
      socket.send({ type: "kill" })
      const exit = await socket.waitFor(isExit, 5000)
      expect(exit.type).toBe("exit")
      expect(exit.exit_code).not.toBe(0)
      expect(streamText(socket.frames, "stdout")).toBe("")
    })

    it("keeps a command running while detached, kills it after idle_timeout_seconds, or at once with kill_on_disconnect", async () => {
      const reattach = async (commandId: unknown) => {
        const again = await openFrameSocket(server.boxUrl("b"), server.apiKey)
        again.send({ type: "reconnect", command_id: commandId, stdout_offset: 0, stderr_offset: 0 })
        return again
      }
      const survivor = await execute(server, { command: "sleep 1.5; echo late", idle_timeout_seconds: -1 })
      const survivorId = (await survivor.waitFor((f) => f.type === "started")).command_id
      const idle = await execute(server, { command: "sleep 30; echo never", idle_timeout_seconds: 1 })
      const idleId = (await idle.waitFor((f) => f.type === "started")).command_id
      const eager = await execute(server, { command: "sleep 30; echo never", kill_on_disconnect: true })
      const eagerId = (await eager.waitFor((f) => f.type === "started")).command_id
      await Promise.all([survivor.close(), idle.close(), eager.close()])

      const eagerAgain = await reattach(eagerId)
      const eagerExit = await eagerAgain.waitFor(isExit, 3000)
      expect(eagerExit.type).toBe("exit")
      expect(eagerExit.exit_code).not.toBe(0)

      await sleep(2500)
      const survivorAgain = await reattach(survivorId)
      expect(await survivorAgain.waitFor(isExit)).toEqual({ type: "exit", exit_code: 0 })
      expect(streamText(survivorAgain.frames, "stdout")).toBe("late\n")
      const idleAgain = await reattach(idleId)
      const idleExit = await idleAgain.waitFor(isExit)
      expect(idleExit.type).toBe("exit")
      expect(idleExit.exit_code).not.toBe(0)
      expect(streamText(idleAgain.frames, "stdout")).toBe("")
    })

    it("bounds the commands per box", async () => {
      const sockets = []
      for (let i = 0; i < 3; i++) {
        const socket = await execute(tight, { command: "sleep 30", kill_on_disconnect: true })
        await socket.waitFor((f) => f.type === "started")
        sockets.push(socket)
      }
      const refused = await execute(tight, { command: "echo hi" })
      expect(await refused.waitFor(isExit)).toMatchObject({ type: "error", error_type: "CommandError", error: expect.stringMatching(/already runs 3 commands/) })
      await Promise.all(sockets.map((s) => s.close()))
      await sleep(500)
      const accepted = await execute(tight, { command: "echo hi" })
      expect(await accepted.waitFor(isExit)).toEqual({ type: "exit", exit_code: 0 })
    })

    it("closeBox kills the box's commands (attached clients get the exit) and forgets their sessions", async () => {
      const socket = await execute(server, { command: "echo up; sleep 30" })
      const started = await socket.waitFor((f) => f.type === "started")
      await socket.waitFor((f) => f.type === "stdout")
      await server.dataplane.closeBox("b")
      const exit = await socket.waitFor(isExit, 5000)
      expect(exit.type).toBe("exit")
      expect(exit.exit_code).not.toBe(0)
      const again = await openFrameSocket(server.boxUrl("b"), server.apiKey)
      again.send({ type: "reconnect", command_id: started.command_id, stdout_offset: 0, stderr_offset: 0 })
      expect(await again.waitFor(isExit)).toMatchObject({ error_type: "CommandNotFound" })
      const fresh = await execute(server, { command: "echo fresh" })
      expect(await fresh.waitFor(isExit)).toEqual({ type: "exit", exit_code: 0 })
    })

    it("tells a client that stops reading to reconnect (1001) instead of buffering without bound, and the ring resumes it", async () => {
      const slow = await startDataplaneServer({ b: box }, { limits: { maxBufferedBytes: 256 << 10 } })
      try {
        const socket = await openFrameSocket(slow.boxUrl("b"), slow.apiKey)
        const raw = (socket.ws as unknown as { _socket: import("node:net").Socket })._socket
        raw.pause() // the client stops reading
        socket.send({ type: "execute", command: "yes 0123456789 | head -c 40000000; echo; echo end", timeout_seconds: 60 })
        await sleep(3000)
        raw.resume()
        const { code } = await socket.closed
        expect(code).toBe(1001)
        const started = socket.frames[0]!
        const last = socket.frames.filter((f) => f.type === "stdout").at(-1)!
        const resumeAt = (last.offset as number) + Buffer.byteLength(last.data as string)
        expect(resumeAt).toBeLessThan(40_000_000)
        const again = await openFrameSocket(slow.boxUrl("b"), slow.apiKey)
        again.send({ type: "reconnect", command_id: started.command_id, stdout_offset: resumeAt, stderr_offset: 0 })
        expect(await again.waitFor(isExit, 30_000)).toEqual({ type: "exit", exit_code: 0 })
        const first = again.frames.find((f) => f.type === "stdout")!
        expect(first.offset).toBeGreaterThanOrEqual(resumeAt)
        expect(streamText(again.frames, "stdout", resumeAt).endsWith("\nend\n")).toBe(true)
      } finally {
        await slow.close()
      }
    }, 60_000)

    it("refuses upgrades on other paths with 404 and a JSON body", async () => {
      const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        import("ws").then(({ WebSocket }) => {
          const ws = new WebSocket(server.boxUrl("b").replace("http", "ws") + "/tunnel", { headers: { "X-Api-Key": server.apiKey } })
          ws.on("unexpected-response", (_req, res) => {
            let body = ""
            res.on("data", (c: Buffer) => (body += c))
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body }))
          })
          ws.on("open", () => reject(new Error("upgraded")))
          ws.on("error", () => {})
        }, reject)
      })
      expect(response.status).toBe(404)
      expect(JSON.parse(response.body).detail.error).toBe("NotFound")
    })
  })
})
