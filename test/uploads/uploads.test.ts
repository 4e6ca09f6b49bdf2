/**
 * Upload URLs (server/uploads/SourceUploads.ts) served by a small node HTTP server calling the
 * exported handler, with the requests `langgraph deploy --remote` makes (deploy.py
 * `_upload_to_gcs`): PUT, `Content-Type: application/gzip`, `Content-Length`,
 * `X-Goog-Content-Length-Range: 0,209715200`.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer, request as httpRequest, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Readable } from "node:stream"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeLogger } from "../../server/log.ts"
import { defaultUploadSettings, makeSourceUploads, SOURCE_UPLOAD_PREFIX, type SourceUploads } from "../../server/uploads/SourceUploads.ts"
import { agentEntries, tarGzOf } from "./tarballs.ts"

const TENANT = "0a000000-0000-4000-8000-00000000000a"
const OTHER_TENANT = "0b000000-0000-4000-8000-00000000000b"
const DEPLOYMENT = "d1000000-0000-4000-8000-000000000001"
const OTHER_DEPLOYMENT = "d2000000-0000-4000-8000-000000000002"
const MAX = 256 * 1024

let dir: string
let server: Server
let base: string
let uploads: SourceUploads["Service"]

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)
const failureOf = <A, E extends { readonly message: string }>(effect: Effect.Effect<A, E>) =>
  Effect.runPromise(effect.pipe(Effect.match({ onSuccess: () => "succeeded", onFailure: (error) => error.message })))

interface Answer {
  readonly status: number
  readonly body: { readonly detail?: unknown; readonly object_path?: string; readonly size?: number }
}

/** A PUT as the CLI makes it (headers overridable; `chunked` sends no Content-Length). */
const put = (url: string, body: Buffer, headers: Record<string, string | undefined> = {}, chunked = false): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const all: Record<string, string> = {
      "content-type": "application/gzip",
      "x-goog-content-length-range": "0,209715200",
      ...(chunked ? {} : { "content-length": String(body.length) })
    }
    for (const [name, value] of Object.entries(headers)) {
      if (value === undefined) delete all[name]
      else all[name] = value
    }
    const request = httpRequest(url, { method: "PUT", headers: all }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString() || "{}") }))
    })
    request.on("error", reject)
    if (chunked) Readable.from([body.subarray(0, body.length >> 1), body.subarray(body.length >> 1)]).pipe(request)
    else request.end(body)
  })

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "slipway-uploads-test-"))
  server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://uploads")
    void run(uploads.handleUpload({ method: request.method ?? "GET", headers: request.headers, query: url.searchParams, path: url.pathname, body: request })).then((answer) => {
      response.writeHead(answer.status, answer.headers).end(JSON.stringify(answer.body))
      // A refusal before the body was read: drop the rest of it.
      request.resume()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  uploads = makeSourceUploads({
    settings: { ...defaultUploadSettings, maxBytes: MAX },
    databasePath: join(dir, "slipway.db"),
    secretsKey: "1".repeat(64),
    publicUrl: base,
    log: makeLogger("silent")
  })
})

afterAll(() => {
  server?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe("source uploads", () => {
  it("takes the CLI's PUT, stores the tarball once, and hands it to the build step of that deployment only", async () => {
    const { upload_url, object_path } = await run(uploads.uploadUrl(TENANT, DEPLOYMENT))
    expect(upload_url.startsWith(`${base}${SOURCE_UPLOAD_PREFIX}`)).toBe(true)
    expect(object_path).toMatch(new RegExp(`^uploads/${TENANT}/${DEPLOYMENT}/[0-9a-f-]{36}\\.tar\\.gz$`))
    const tarball = tarGzOf(agentEntries)
    const answer = await put(upload_url, tarball)
    expect(answer).toEqual({ status: 200, body: { object_path, size: tarball.length } })

    const stored = await run(uploads.open(TENANT, DEPLOYMENT, object_path))
    expect(readFileSync(stored.file).equals(tarball)).toBe(true)
    const out = join(dir, "build-1")
    const summary = await run(uploads.extract(TENANT, DEPLOYMENT, object_path, out))
    expect(summary.entries).toBe(5)
    expect(readFileSync(join(out, "agent", "agent.py"), "utf8")).toBe("graph = None\n")

    // One object per URL.
    const again = await put(upload_url, tarball)
    expect(again.status).toBe(409)
    expect(again.body.detail).toBe("this upload URL was used already: ask for a new one")
    // The path is this deployment's only.
    expect(await failureOf(uploads.open(TENANT, OTHER_DEPLOYMENT, object_path))).toContain("is not an upload of this deployment")
    expect(await failureOf(uploads.open(OTHER_TENANT, DEPLOYMENT, object_path))).toContain("is not an upload of this deployment")
    expect(await failureOf(uploads.open(TENANT, DEPLOYMENT, `uploads/${TENANT}/${DEPLOYMENT}/../../x.tar.gz`))).toContain("is not an upload of this deployment")

    await run(uploads.removeDeployment(TENANT, DEPLOYMENT))
    expect(await failureOf(uploads.open(TENANT, DEPLOYMENT, object_path))).toContain("nothing was uploaded to")
  })

  it("takes a body without Content-Length (chunked)", async () => {
    const { upload_url, object_path } = await run(uploads.uploadUrl(TENANT, DEPLOYMENT))
    const answer = await put(upload_url, tarGzOf(agentEntries), {}, true)
    expect(answer.status).toBe(200)
    expect((await run(uploads.open(TENANT, DEPLOYMENT, object_path))).bytes).toBe(tarGzOf(agentEntries).length)
  })

  it("refuses an expired URL and a tampered one", async () => {
    const expired = await run(Effect.gen(function* () {
      yield* TestClock.setTime(Date.now() - 3600_000)
      return yield* uploads.uploadUrl(TENANT, DEPLOYMENT)
    }).pipe(Effect.provide(TestClock.layer())))
    const late = await put(expired.upload_url, tarGzOf(agentEntries))
    expect(late.status).toBe(401)
    expect(late.body.detail).toMatch(/^this upload URL has expired/)

    const { upload_url, object_path } = await run(uploads.uploadUrl(TENANT, DEPLOYMENT))
    const [payload, signature] = upload_url.slice(upload_url.lastIndexOf("/") + 1).split(".") as [string, string]
    // Another object of another deployment under the original signature.
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, "base64url").toString()), d: OTHER_DEPLOYMENT })).toString("base64url")
    for (const token of [`${forged}.${signature}`, `${payload}.${signature.slice(0, -2)}xx`, payload, "garbage"]) {
      const answer = await put(`${base}${SOURCE_UPLOAD_PREFIX}${token}`, tarGzOf(agentEntries))
      expect(answer.status).toBe(401)
      expect(answer.body.detail).toBe("this upload URL is not valid")
    }
    expect(await failureOf(uploads.open(TENANT, DEPLOYMENT, object_path))).toContain("nothing was uploaded to")
  })

  it("refuses a wrong content type, another method, and bodies over the limit", async () => {
    const { upload_url, object_path } = await run(uploads.uploadUrl(TENANT, DEPLOYMENT))
    const tarball = tarGzOf(agentEntries)
    const wrongType = await put(upload_url, tarball, { "content-type": "application/octet-stream" })
    expect(wrongType.status).toBe(415)
    expect(wrongType.body.detail).toContain("Content-Type: application/gzip")
    expect((await put(upload_url, tarball, { "content-type": undefined })).status).toBe(415)
    const post = await fetch(upload_url, { method: "POST", headers: { "content-type": "application/gzip" }, body: new Uint8Array(tarball) })
    expect(post.status).toBe(405)

    const big = tarGzOf([{ path: "noise", body: randomBytes(MAX) }])
    expect(big.length).toBeGreaterThan(MAX)
    const declared = await put(upload_url, big)
    expect(declared.status).toBe(413)
    expect(declared.body.detail).toBe(`the tarball is larger than ${MAX} bytes`)
    const streamed = await put(upload_url, big, {}, true)
    expect(streamed.status).toBe(413)
    // X-Goog-Content-Length-Range is honoured: a smaller maximum, a minimum.
    const ranged = await put(upload_url, tarball, { "x-goog-content-length-range": `0,${tarball.length - 1}` })
    expect(ranged.status).toBe(413)
    expect((await put(upload_url, tarball, { "x-goog-content-length-range": `${tarball.length + 1},209715200` })).status).toBe(400)
    expect((await put(upload_url, tarball, { "x-goog-content-length-range": "lots" })).status).toBe(400)
    expect(await failureOf(uploads.open(TENANT, DEPLOYMENT, object_path))).toContain("nothing was uploaded to")
    // Nothing was stored: the URL still takes a good upload.
    expect((await put(upload_url, tarball)).status).toBe(200)
  })

  it("refuses hostile tarballs with an error naming the entry, and stores nothing", async () => {
    const cases: ReadonlyArray<[Buffer, string]> = [
      [tarGzOf([{ path: "/etc/passwd", body: "x" }]), 'tarball refused: entry "/etc/passwd" has an absolute path'],
      [tarGzOf([{ path: "a/../../x", body: "x" }]), `tarball refused: entry "a/../../x" has a '..' in its path`],
      [tarGzOf([{ path: "out", type: "SymbolicLink", linkpath: "../.." }]), 'tarball refused: entry "out" is a symbolic link that leads outside the archive ("../..")'],
      [tarGzOf([{ path: "h", type: "Link", linkpath: "../../etc/shadow" }]), 'tarball refused: entry "h" is a hard link that leads outside the archive ("../../etc/shadow")'],
      [tarGzOf([{ path: "dev/sda", type: "BlockDevice" }]), 'tarball refused: entry "dev/sda" is a device node (block device): only files, directories and links are allowed'],
      [tarGzOf(Array.from({ length: defaultUploadSettings.limits.maxEntries + 1 }, (_, i) => ({ path: `f${i}` }))), `tarball refused: the tarball holds more than ${defaultUploadSettings.limits.maxEntries} entries`],
      [Buffer.from("not gzip at all"), "tarball refused: the tarball is not gzip (upload a .tar.gz)"]
    ]
    for (const [tarball, message] of cases) {
      const { upload_url, object_path } = await run(uploads.uploadUrl(TENANT, DEPLOYMENT))
      const answer = await put(upload_url, tarball)
      expect(answer).toEqual({ status: 400, body: { detail: message } })
      expect(await failureOf(uploads.open(TENANT, DEPLOYMENT, object_path))).toContain("nothing was uploaded to")
    }
  })

  it("refuses ids that cannot name an upload", async () => {
    expect(await failureOf(uploads.uploadUrl("../etc", DEPLOYMENT))).toBe("tenant and deployment ids must be lower-case UUIDs")
  })
})
