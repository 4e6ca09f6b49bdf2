/**
 * File endpoints of the dataplane, raw HTTP, against a real node:http server and a bwrap box:
 * every file operation runs inside the box, so box symlinks cannot reach host files.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { TestBox } from "../../support/bwrap-box.ts"
import { testIsolations } from "../../support/isolation.ts"
import { makeTestBox } from "../../support/runner-box.ts"
import { startDataplaneServer, type DataplaneServer } from "../../support/dataplane-server.ts"

describe.each(testIsolations)("the dataplane over a box under %s", (isolation) => {
  let box: TestBox
  let server: DataplaneServer
  let hostDir: string
  const canaryText = "host canary: must never change\n"

  beforeAll(async () => {
    box = await makeTestBox(isolation)
    server = await startDataplaneServer({ b: box }, { limits: { maxUploadBytes: 8 << 20 } })
    hostDir = mkdtempSync(join(tmpdir(), "slipway-host-"))
    writeFileSync(join(hostDir, "canary.txt"), canaryText)
  })

  afterAll(async () => {
    try {
      await server?.close()
      expect(box.running()).toBe(0)
    } finally {
      await box?.dispose()
      rmSync(hostDir, { recursive: true, force: true })
    }
  })

  const fetchLoose = async (input: string, init?: RequestInit) => loose(await fetch(input, init))
  /** Test answers are read loosely: the assertions check their shape. */
  const loose = (response: Response) => response as Omit<Response, "json"> & { json(): Promise<any> }

  const auth = () => ({ "x-api-key": server.apiKey })
  const url = (endpoint: string, path?: string) => server.boxUrl("b") + endpoint + (path === undefined ? "" : `?path=${encodeURIComponent(path)}`)

  const upload = (path: string, content: Uint8Array | string) => {
    const form = new FormData()
    form.append("file", new Blob([typeof content === "string" ? content : new Uint8Array(content)], { type: "application/octet-stream" }), "file")
    return fetchLoose(url("/upload", path), { method: "POST", headers: auth(), body: form })
  }
  const download = (path: string, headers: Record<string, string> = {}, method = "GET") =>
    fetchLoose(url("/download", path), { method, headers: { ...auth(), ...headers } })
  const search = (endpoint: "/glob" | "/grep", body: unknown) =>
    fetchLoose(url(endpoint), { method: "POST", headers: { ...auth(), "content-type": "application/json" }, body: JSON.stringify(body) })
  const run = async (command: string) =>
    (await (await fetchLoose(url("/execute"), { method: "POST", headers: { ...auth(), "content-type": "application/json" }, body: JSON.stringify({ command }) })).json()) as {
      stdout: string
      exit_code: number
    }

  describe("upload and download", () => {
    it("round-trips binary content: 0 bytes, a few bytes, a few MB; creates parent dirs; resolves relative paths from /home/user", async () => {
      const big = randomBytes(3 * 1024 * 1024 + 17)
      for (const [path, content] of [
        ["/tmp/empty.bin", Buffer.alloc(0)],
        ["deep/er/small.bin", Buffer.from([0, 255, 10, 13, 0xe2, 0x82])],
        ["/data/big file ü.bin", big]
      ] as const) {
        const written = await upload(path, content)
        expect(written.status).toBe(200)
        const expectedPath = path.startsWith("/") ? path : `/home/user/${path}`
        expect(await written.json()).toEqual({ path: expectedPath, written: content.length })
        const read = await download(path)
        expect(read.status).toBe(200)
        expect(read.headers.get("content-type")).toBe("application/octet-stream")
        expect(Number(read.headers.get("content-length"))).toBe(content.length)
        expect(Buffer.from(await read.arrayBuffer()).equals(content)).toBe(true)
      }
      // It really is in the box's filesystem.
      expect(readFileSync(join(box.root, "home/user/deep/er/small.bin"))).toEqual(Buffer.from([0, 255, 10, 13, 0xe2, 0x82]))
      expect(readFileSync(join(box.root, "data/big file ü.bin")).equals(big)).toBe(true)
    })

    it("overwrites atomically and leaves no temporary file behind", async () => {
      await upload("/tmp/over.txt", "first version, longer")
      await upload("/tmp/over.txt", "second")
      expect(await (await download("/tmp/over.txt")).text()).toBe("second")
      const listing = await run("ls -a /tmp")
      expect(listing.stdout).not.toMatch(/slipway-upload/)
    })

    it("answers 404 FileNotFound for a missing file, 400 ReadError for a directory, and validates input", async () => {
      const missing = await download("/no/such/file")
      expect(missing.status).toBe(404)
      expect(await missing.json()).toEqual({ detail: { error: "FileNotFound", message: "File not found: /no/such/file" } })
      const dir = await download("/tmp")
      expect(dir.status).toBe(400)
      expect((await dir.json()).detail).toMatchObject({ error: "ReadError", message: expect.stringMatching(/Is a directory/) })
      const noPath = await fetchLoose(url("/download"), { headers: auth() })
      expect(noPath.status).toBe(422)
      expect((await noPath.json()).detail.message).toMatch(/path: Field required/)
      const intoDir = await upload("/tmp", "x")
      expect(intoDir.status).toBe(400)
      expect((await intoDir.json()).detail).toMatchObject({ error: "WriteError", message: expect.stringMatching(/Is a directory/) })
      expect((await upload("/tmp/plain.txt", "x")).status).toBe(200)
      const underFile = await upload("/tmp/plain.txt/child", "x")
      expect(underFile.status).toBe(400)
      expect((await underFile.json()).detail.error).toBe("WriteError")
      const notMultipart = await fetchLoose(url("/upload", "/tmp/x"), { method: "POST", headers: { ...auth(), "content-type": "text/plain" }, body: "raw" })
      expect(notMultipart.status).toBe(415)
      const form = new FormData()
      form.append("other", "value")
      const noFile = await fetchLoose(url("/upload", "/tmp/x"), { method: "POST", headers: auth(), body: form })
      expect(noFile.status).toBe(422)
      expect((await noFile.json()).detail.message).toMatch(/no part named 'file'/)
      const tooBig = await upload("/tmp/too-big.bin", randomBytes(9 << 20))
      expect(tooBig.status).toBe(413)
      expect((await run("ls -a /tmp")).stdout).not.toMatch(/too-big|slipway-upload/)
    })

    it("discards an upload whose client goes away mid-body", async () => {
      const { request } = await import("node:http")
      const boundary = "----slipway-test-boundary"
      const target = new URL(url("/upload", "/tmp/aborted.bin"))
      const req = request(target, {
        method: "POST",
        headers: { ...auth(), "content-type": `multipart/form-data; boundary=${boundary}`, "content-length": String(10 << 20) }
      })
      req.on("error", () => {})
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="file"\r\nContent-Type: application/octet-stream\r\n\r\n`)
      req.write(randomBytes(256 << 10))
      await new Promise((resolve) => setTimeout(resolve, 500))
      req.destroy()
      // The writer is killed and its temporary file removed, shortly after the client left.
      const deadline = Date.now() + 5000
      let listing = await run("ls -a /tmp")
      while ((/slipway-upload/.test(listing.stdout) || box.running() > 0) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        listing = await run("ls -a /tmp")
      }
      expect(listing.stdout).not.toMatch(/aborted\.bin|slipway-upload/)
      expect(box.running()).toBe(0)
    })

    it("HEAD reports size and validators without a body", async () => {
      await upload("/tmp/head.txt", "0123456789")
      const head = await download("/tmp/head.txt", {}, "HEAD")
      expect(head.status).toBe(200)
      expect(head.headers.get("content-length")).toBe("10")
      expect(head.headers.get("etag")).toMatch(/^"[^"]+"$/)
      expect(new Date(head.headers.get("last-modified")!).getTime()).toBeGreaterThan(Date.now() - 60_000)
      expect(await head.text()).toBe("")
      expect((await download("/tmp/nothing", {}, "HEAD")).status).toBe(404)
    })

    it("serves byte ranges, If-Range, If-None-Match, and 416 past the end", async () => {
      await upload("/tmp/range.txt", "0123456789")
      const etag = (await download("/tmp/range.txt", {}, "HEAD")).headers.get("etag")!
      const cases: Array<[string, number, string, string | null]> = [
        ["bytes=2-5", 206, "2345", "bytes 2-5/10"],
        ["bytes=7-", 206, "789", "bytes 7-9/10"],
        ["bytes=-3", 206, "789", "bytes 7-9/10"],
        ["bytes=8-100", 206, "89", "bytes 8-9/10"],
        ["bytes=-50", 206, "0123456789", "bytes 0-9/10"],
        ["bytes=0-1,4-5", 200, "0123456789", null],
        ["nonsense", 200, "0123456789", null]
      ]
      for (const [range, status, body, contentRange] of cases) {
        const response = await download("/tmp/range.txt", { range })
        expect(response.status, range).toBe(status)
        expect(await response.text(), range).toBe(body)
        expect(response.headers.get("content-range"), range).toBe(contentRange)
      }
      const past = await download("/tmp/range.txt", { range: "bytes=10-" })
      expect(past.status).toBe(416)
      expect(past.headers.get("content-range")).toBe("bytes */10")
      expect((await download("/tmp/range.txt", { range: "bytes=2-3", "if-range": etag })).status).toBe(206)
      const stale = await download("/tmp/range.txt", { range: "bytes=2-3", "if-range": '"stale"' })
      expect(stale.status).toBe(200)
      expect(await stale.text()).toBe("0123456789")
      const unchanged = await download("/tmp/range.txt", { "if-none-match": etag })
      expect(unchanged.status).toBe(304)
      expect(unchanged.headers.get("etag")).toBe(etag)
      // Same size, new content: a new validator.
      await upload("/tmp/range.txt", "abcdefghij")
      const changed = await download("/tmp/range.txt", { "if-none-match": etag })
      expect(changed.status).toBe(200)
      expect(changed.headers.get("etag")).not.toBe(etag)
      expect(await changed.text()).toBe("abcdefghij")
      expect((await download("/tmp/empty.bin", { range: "bytes=0-" })).status).toBe(416)
    })
  })

  describe("glob and grep", () => {
    beforeAll(async () => {
      for (const [path, content] of [
        ["/proj/a.py", "import os\nprint('needle(1)')\n"],
        ["/proj/.hidden", "needle(1) hidden\n"],
        ["/proj/src/b.ts", "const x = 'needle(1)'\r\nneedle\n"],
        ["/proj/src/deep/c.py", "no match\nstill no\nneedle(1) at three\n"],
        ["/proj/src/we:ird:1:name.txt", "needle(1) in a colon file\n"],
        ["/proj/empty.txt", ""]
      ] as const) {
        expect((await upload(path, content)).status).toBe(200)
      }
    })

    it("lists a directory (ls = '*') with kinds, sizes and times, dotfiles included", async () => {
      const response = await search("/glob", { pattern: "*", path: "/proj" })
      expect(response.status).toBe(200)
      const body = await response.json()
      expect(body.truncated).toBe(false)
      expect(body.matches.map((m: { path: string }) => m.path)).toEqual(["/proj/.hidden", "/proj/a.py", "/proj/empty.txt", "/proj/src"])
      expect(body.matches.find((m: { path: string }) => m.path === "/proj/src")).toMatchObject({ is_dir: true })
      expect(body.matches.find((m: { path: string }) => m.path === "/proj/a.py")).toEqual({
        path: "/proj/a.py",
        is_dir: false,
        size_bytes: 29,
        modified_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      })
    })

    it("matches ** across directories, segment patterns, and truncates at the limit", async () => {
      const py = await (await search("/glob", { pattern: "**/*.py", path: "/proj" })).json()
      expect(py.matches.map((m: { path: string }) => m.path)).toEqual(["/proj/a.py", "/proj/src/deep/c.py"])
      const ts = await (await search("/glob", { pattern: "src/*.ts", path: "/proj" })).json()
      expect(ts.matches.map((m: { path: string }) => m.path)).toEqual(["/proj/src/b.ts"])
      const limited = await (await search("/glob", { pattern: "**", path: "/proj", limit: 2 })).json()
      expect(limited.matches).toHaveLength(2)
      expect(limited.truncated).toBe(true)
      const missing = await search("/glob", { pattern: "*", path: "/nope" })
      expect(missing.status).toBe(404)
      expect((await missing.json()).detail.error).toBe("FileNotFound")
      const bad = await search("/glob", { path: "/proj" })
      expect(bad.status).toBe(422)
      expect((await search("/glob", { pattern: "*", path: "/proj", limit: 0 })).status).toBe(422)
    })

    it("greps a literal string (not a regex) with line numbers, a file glob, colon file names and a limit", async () => {
      const all = await (await search("/grep", { pattern: "needle(1)", path: "/proj" })).json()
      expect(all.truncated).toBe(false)
      const sorted = [...all.matches].sort((a: { path: string }, b: { path: string }) => a.path.localeCompare(b.path))
      expect(sorted).toEqual([
        { path: "/proj/.hidden", line: 1, text: "needle(1) hidden" },
        { path: "/proj/a.py", line: 2, text: "print('needle(1)')" },
        { path: "/proj/src/b.ts", line: 1, text: "const x = 'needle(1)'" },
        { path: "/proj/src/deep/c.py", line: 3, text: "needle(1) at three" },
        { path: "/proj/src/we:ird:1:name.txt", line: 1, text: "needle(1) in a colon file" }
      ])
      const py = await (await search("/grep", { pattern: "needle", path: "/proj", glob: "*.py" })).json()
      expect(py.matches.map((m: { path: string }) => m.path).sort()).toEqual(["/proj/a.py", "/proj/src/deep/c.py"])
      const scoped = await (await search("/grep", { pattern: "needle", path: "/proj", glob: "src/**" })).json()
      expect(new Set(scoped.matches.map((m: { path: string }) => m.path))).toEqual(new Set(["/proj/src/b.ts", "/proj/src/deep/c.py", "/proj/src/we:ird:1:name.txt"]))
      const limited = await (await search("/grep", { pattern: "needle", path: "/proj", limit: 2 })).json()
      expect(limited.matches).toHaveLength(2)
      expect(limited.truncated).toBe(true)
      expect((await (await search("/grep", { pattern: "n.edle", path: "/proj" })).json()).matches).toEqual([])
      expect((await search("/grep", { pattern: "a\nb", path: "/proj" })).status).toBe(400)
      expect((await search("/grep", { pattern: "x", path: "/nope" })).status).toBe(404)
    })
  })

  describe("symlinks resolve inside the box, never on the host", () => {
    it("reads the box's file through a symlink to /etc/passwd, not the host's", async () => {
      expect((await run("ln -sf /etc/passwd /home/user/passwd-link")).exit_code).toBe(0)
      const read = await download("/home/user/passwd-link")
      expect(await read.text()).toBe("root:x:0:0:box-root-marker:/root:/bin/sh\n")
      const direct = await download("/etc/passwd")
      expect(await direct.text()).toBe("root:x:0:0:box-root-marker:/root:/bin/sh\n")
    })

    it("a symlink to a host path reads nothing of the host and writes only into the box", async () => {
      const canary = join(hostDir, "canary.txt")
      expect((await run(`ln -sf ${canary} /home/user/canary-link && ln -sfn ${hostDir} /home/user/host-dir`)).exit_code).toBe(0)
      // The host path does not exist in the box.
      expect((await download("/home/user/canary-link")).status).toBe(404)
      expect((await download(canary)).status).toBe(404)
      expect((await download("/home/user/host-dir/canary.txt")).status).toBe(404)
      // A write under a link to a directory the box lacks fails as it would in the box...
      const dangling = await upload("/home/user/host-dir/canary.txt", "overwritten?")
      expect(dangling.status).toBe(400)
      expect((await dangling.json()).detail.error).toBe("WriteError")
      // ...and once the box has such a directory, writes through the links land in the box's own tree.
      expect((await upload("/home/user/canary-link", "overwritten?")).status).toBe(200)
      expect((await run(`mkdir -p ${hostDir}`)).exit_code).toBe(0)
      expect((await upload("/home/user/host-dir/canary.txt", "overwritten?")).status).toBe(200)
      expect((await upload(canary, "overwritten?")).status).toBe(200)
      expect(readFileSync(canary, "utf8")).toBe(canaryText)
      // (Checked inside the box: the host directory's path is under /tmp, a tmpfs of its own in a runtime box.)
      expect(await run(`cat ${hostDir}/canary.txt`)).toMatchObject({ stdout: "overwritten?", exit_code: 0 })
      // Searches walk the box's tree too.
      const grep = await (await search("/grep", { pattern: "host canary", path: "/" })).json()
      expect(grep.matches).toEqual([])
      // And a ../ path stays in the box's root.
      expect(await (await download("/home/user/../../../etc/passwd")).text()).toBe("root:x:0:0:box-root-marker:/root:/bin/sh\n")
      expect(readFileSync(canary, "utf8")).toBe(canaryText)
    })
  })
})
