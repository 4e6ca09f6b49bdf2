/**
 * The published LangSmith sandbox clients, unmodified, against the dataplane on a real server with
 * a real bwrap box: `langsmith@0.12.0` (`langsmith/sandbox`) and `langsmith@0.5.21`
 * (`langsmith/experimental/sandbox`, installed as `langsmith-05`).
 *
 * The clients get their Sandbox object from the control plane (`client.getSandbox(name)`); the
 * test server answers that one lookup with the box's `dataplane_url` (see test/support). Pointed at
 * the real Slipway server instead (apiEndpoint, apiKey, box name), these tests run unchanged.
 */
import * as Current from "langsmith/sandbox"
import * as Legacy from "langsmith-05/experimental/sandbox"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { TestBox } from "../../support/bwrap-box.ts"
import { testIsolations } from "../../support/isolation.ts"
import { makeTestBox } from "../../support/runner-box.ts"
import { startDataplaneServer, type DataplaneServer } from "../../support/dataplane-server.ts"

describe.each(testIsolations)("the dataplane over a box under %s", (isolation) => {
  let box: TestBox
  let server: DataplaneServer

  beforeAll(async () => {
    box = await makeTestBox(isolation)
    server = await startDataplaneServer({ box1: box })
  })

  afterAll(async () => {
    try {
      await server?.close()
      expect(box.running()).toBe(0)
    } finally {
      await box?.dispose()
    }
  })

  const bytes = (text: string) => new TextEncoder().encode(text)
  const text = (data: Uint8Array) => new TextDecoder().decode(data)

  describe("langsmith@0.12.0 langsmith/sandbox", () => {
    const sandbox = async () => {
      const client = new Current.SandboxClient({ apiKey: server.apiKey, apiEndpoint: server.apiEndpoint, maxRetries: 0 })
      const found = await client.getSandbox("box1")
      expect(found.dataplane_url).toBe(server.boxUrl("box1"))
      return found
    }

    it("runs a command (WebSocket), a failing command, and a timed-out one", async () => {
      const sb = await sandbox()
      expect(await sb.run("echo hi")).toEqual({ stdout: "hi\n", stderr: "", exit_code: 0 })
      expect(await sb.run("echo bad >&2; exit 3")).toEqual({ stdout: "", stderr: "bad\n", exit_code: 3 })
      expect(await sb.run("pwd; echo $A", { env: { A: "b" }, cwd: "/tmp" })).toMatchObject({ stdout: "/tmp\nb\n" })
      expect(await sb.run("pwd", { runConfig: { work_dir: "/home/user" } })).toMatchObject({ stdout: "/home/user\n" })
      // Stdin is closed by default in 0.12: a command reading it ends instead of hanging.
      expect(await sb.run("cat; echo after")).toMatchObject({ stdout: "after\n", exit_code: 0 })
      await expect(sb.run("sleep 30", { timeout: 1 })).rejects.toBeInstanceOf(Current.LangSmithCommandTimeoutError)
    })

    it("runs through the HTTP fallback the client uses without the ws package", async () => {
      const sb = await sandbox()
      // _runHttp is what run() calls when `ws` cannot be imported.
      const http = (sb as unknown as { _runHttp: (c: string, o?: object) => Promise<unknown> })._runHttp.bind(sb)
      expect(await http("echo over http; exit 2")).toEqual({ stdout: "over http\n", stderr: "", exit_code: 2 })
    })

    it("streams output to callbacks and through a handle, with input, kill and reconnect", async () => {
      const sb = await sandbox()
      const out: Array<string> = []
      const err: Array<string> = []
      const result = await sb.run("for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.1; done", {
        onStdout: (data) => out.push(data),
        onStderr: (data) => err.push(data)
      })
      expect(result).toEqual({ stdout: "out1\nout2\nout3\n", stderr: "err1\nerr2\nerr3\n", exit_code: 0 })
      expect(out.join("")).toBe("out1\nout2\nout3\n")
      expect(err.join("")).toBe("err1\nerr2\nerr3\n")

      const interactive = await sb.run("read a; echo \"got $a\"; read b; echo \"got $b\"", { wait: false, closeInput: false })
      expect(interactive.commandId).toEqual(expect.any(String))
      interactive.sendInput("one\n")
      interactive.sendInput("twö\n")
      expect(await interactive.result).toMatchObject({ stdout: "got one\ngot twö\n", exit_code: 0 })

      const long = await sb.run("echo start; sleep 30; echo never", { wait: false })
      const chunks: Array<string> = []
      for await (const chunk of long) {
        chunks.push(chunk.data)
        long.kill()
      }
      expect(chunks).toEqual(["start\n"])
      expect((await long.result).exit_code).not.toBe(0)

      const resumable = await sb.run("echo first; sleep 1; echo second", { wait: false })
      const iterator = resumable[Symbol.asyncIterator]()
      expect((await iterator.next()).value).toMatchObject({ stream: "stdout", data: "first\n", offset: 0 })
      const again = await resumable.reconnect()
      expect(await again.result).toMatchObject({ stdout: "second\n", exit_code: 0 })
      expect(again.lastStdoutOffset).toBe(Buffer.byteLength("first\nsecond\n"))
    })

    it("writes and reads files, text and binary, and reports a missing file", async () => {
      const sb = await sandbox()
      await sb.write("/tmp/hello.txt", "hello wörld")
      expect(text(await sb.read("/tmp/hello.txt"))).toBe("hello wörld")
      const binary = new Uint8Array(70_000).map((_, i) => (i * 7) % 256)
      await sb.write("data/bin.dat", binary)
      expect(await sb.read("/home/user/data/bin.dat")).toEqual(binary)
      await sb.write("/tmp/empty", new Uint8Array(0))
      expect(await sb.read("/tmp/empty")).toEqual(new Uint8Array(0))
      await expect(sb.read("/tmp/missing")).rejects.toBeInstanceOf(Current.LangSmithResourceNotFoundError)
      await expect(sb.write("/tmp", "x")).rejects.toBeInstanceOf(Current.LangSmithSandboxOperationError)
    })

    it("stats and reads ranges with validators", async () => {
      const sb = await sandbox()
      await sb.write("/tmp/range.txt", "0123456789")
      const stat = await sb.stat("/tmp/range.txt")
      expect(stat).toMatchObject({ size_bytes: 10, etag: expect.any(String), last_modified: expect.any(String), content_type: "application/octet-stream" })
      const head = await sb.readRange("/tmp/range.txt", { start: 0, end: 3 })
      expect(head).toMatchObject({ partial: true, start: 0, total_bytes: 10, etag: stat.etag, unchanged: false })
      expect(text(head.content)).toBe("0123")
      const rest = await sb.readRange("/tmp/range.txt", { start: 4, ifRange: head.etag })
      expect(text(rest.content)).toBe("456789")
      expect(rest.start).toBe(4)
      expect(text((await sb.readRange("/tmp/range.txt", { suffixBytes: 2 })).content)).toBe("89")
      expect(await sb.readRange("/tmp/range.txt", { start: 0, ifNoneMatch: stat.etag })).toMatchObject({ unchanged: true })
      await sb.write("/tmp/range.txt", "abcdefghij")
      const restarted = await sb.readRange("/tmp/range.txt", { start: 4, ifRange: head.etag })
      expect(restarted).toMatchObject({ partial: false, start: 0 })
      expect(text(restarted.content)).toBe("abcdefghij")
      await expect(sb.readRange("/tmp/range.txt", { start: 10 })).rejects.toBeInstanceOf(Current.LangSmithSandboxOperationError)
      await expect(sb.stat("/tmp/none")).rejects.toBeInstanceOf(Current.LangSmithResourceNotFoundError)
    })

    it("lists, globs and greps", async () => {
      const sb = await sandbox()
      await sb.write("/srv/app/main.py", "print('hello')\n")
      await sb.write("/srv/app/lib/util.py", "def hello():\n    return 'hello'\n")
      await sb.write("/srv/app/README", "say hello\n")
      const ls = await sb.ls("/srv/app")
      expect(ls.truncated).toBe(false)
      expect(ls.matches.map((m) => [m.path, m.is_dir])).toEqual([
        ["/srv/app/README", false],
        ["/srv/app/lib", true],
        ["/srv/app/main.py", false]
      ])
      const py = await sb.glob("**/*.py", "/srv/app")
      expect(py.matches.map((m) => m.path)).toEqual(["/srv/app/lib/util.py", "/srv/app/main.py"])
      expect(py.matches[0]).toMatchObject({ size_bytes: 32, is_dir: false, modified_at: expect.any(String) })
      const found = await sb.grep("hello", "/srv/app", { glob: "*.py" })
      expect(found.matches.map((m) => `${m.path}:${m.line}:${m.text}`).sort()).toEqual([
        "/srv/app/lib/util.py:1:def hello():",
        "/srv/app/lib/util.py:2:    return 'hello'",
        "/srv/app/main.py:1:print('hello')"
      ])
      expect((await sb.grep("hello", "/srv/app", { limit: 1 })).truncated).toBe(true)
      await expect(sb.ls("/srv/none")).rejects.toBeInstanceOf(Current.LangSmithResourceNotFoundError)
    })

    it("is refused without the right API key", async () => {
      const client = new Current.SandboxClient({ apiKey: "wrong", apiEndpoint: server.apiEndpoint, maxRetries: 0 })
      await expect(client.getSandbox("box1")).rejects.toBeInstanceOf(Current.LangSmithSandboxAuthenticationError)
    })
  })

  describe("langsmith@0.5.21 langsmith/experimental/sandbox", () => {
    const sandbox = async () => {
      const client = new Legacy.SandboxClient({ apiKey: server.apiKey, apiEndpoint: server.apiEndpoint, maxRetries: 0 })
      return client.getSandbox("box1")
    }

    it("runs commands, streams with callbacks, kills a handle", async () => {
      const sb = await sandbox()
      expect(await sb.run("echo hi")).toEqual({ stdout: "hi\n", stderr: "", exit_code: 0 })
      expect(await sb.run("exit 7")).toMatchObject({ exit_code: 7 })
      const out: Array<string> = []
      const result = await sb.run("echo a; sleep 0.1; echo b", { onStdout: (data) => out.push(data) })
      expect(result.stdout).toBe("a\nb\n")
      expect(out.join("")).toBe("a\nb\n")
      const handle = await sb.run("read line; echo \"got $line\"", { wait: false })
      handle.sendInput("x\n")
      expect(await handle.result).toMatchObject({ stdout: "got x\n", exit_code: 0 })
      const long = await sb.run("sleep 30", { wait: false })
      long.kill()
      expect((await long.result).exit_code).not.toBe(0)
      await expect(sb.run("sleep 30", { timeout: 1 })).rejects.toBeInstanceOf(Legacy.LangSmithCommandTimeoutError)
    })

    it("writes and reads files and reports a missing one", async () => {
      const sb = await sandbox()
      await sb.write("/tmp/legacy.txt", "from 0.5")
      expect(text(await sb.read("/tmp/legacy.txt"))).toBe("from 0.5")
      const binary = bytes("\u0000\u00ff binary \u20ac")
      await sb.write("legacy.bin", binary)
      expect(await sb.read("/home/user/legacy.bin")).toEqual(binary)
      await expect(sb.read("/tmp/missing")).rejects.toBeInstanceOf(Legacy.LangSmithResourceNotFoundError)
    })
  })
})
