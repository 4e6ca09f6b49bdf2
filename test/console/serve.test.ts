/**
 * How the server serves the console (server/system/console.ts): the redirect, content types,
 * caching (immutable hashed assets, a revalidated page), the page's security headers, no path
 * outside the built files, and a clear answer when the console is not built. Also: the committed
 * console/dist is what `npm run build:console` makes from the sources.
 */
import { Effect, Exit } from "effect"
import { spawnSync } from "node:child_process"
import { request as httpRequest } from "node:http"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { RawResponse } from "../../server/http/app.ts"
import { consoleRoutes } from "../../server/system/console.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

const dist = join(import.meta.dirname, "../../console/dist")
let server: TestServer

beforeAll(async () => {
  server = await startTestServer()
})

afterAll(async () => {
  await server?.close()
})

/** Sends the path exactly as written (fetch would resolve `%2e%2e` and `..` first). */
const rawGet = (path: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const url = new URL(server.url)
    const req = httpRequest({ host: url.hostname, port: url.port, path, method: "GET" }, (response) => {
      let body = ""
      response.on("data", (chunk) => (body += chunk))
      response.on("end", () => resolve({ status: response.statusCode!, body }))
    })
    req.on("error", reject)
    req.end()
  })

const get = (path: string, headers: Record<string, string> = {}) => fetch(server.url + path, { headers, redirect: "manual" })

describe("serving the console", () => {
  it("redirects / to /console and answers the page with its security headers", async () => {
    const root = await get("/")
    expect(root.status).toBe(302)
    expect(root.headers.get("location")).toBe("/console")
    for (const path of ["/console", "/console/", "/console/index.html"]) {
      const page = await get(path)
      expect(page.status).toBe(200)
      expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
      expect(page.headers.get("cache-control")).toBe("no-cache")
      expect(page.headers.get("content-security-policy")).toContain("script-src 'self'")
      expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
      expect(page.headers.get("x-frame-options")).toBe("DENY")
      expect(await page.text()).toContain('<div id="app">')
    }
  })

  it("serves the page's script and style sheet with their types, cached for good; answers 304 to a matching ETag", async () => {
    const html = await (await get("/console")).text()
    const assets = [...html.matchAll(/\/console\/(app-[A-Z0-9]{8}\.(js|css))/g)]
    expect(assets.map((match) => match[2]).sort()).toEqual(["css", "js"])
    for (const [, name, kind] of assets) {
      const response = await get(`/console/${name}`)
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toBe(kind === "js" ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8")
      expect(response.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
      expect(response.headers.get("x-content-type-options")).toBe("nosniff")
      const body = Buffer.from(await response.arrayBuffer())
      expect(body.equals(readFileSync(join(dist, name!)))).toBe(true)
      const etag = response.headers.get("etag")!
      const again = await get(`/console/${name}`, { "if-none-match": etag })
      expect(again.status).toBe(304)
      expect(await again.text()).toBe("")
    }
    const icon = await get("/console/favicon.svg")
    expect(icon.headers.get("content-type")).toBe("image/svg+xml")
  })

  it("serves nothing but the built files", async () => {
    for (const path of [
      "/console/..%2Fpackage.json",
      "/console/%2e%2e",
      "/console/..%2F..%2Fetc%2Fpasswd",
      "/console/%2Fetc%2Fpasswd",
      "/console/build.ts",
      "/console/nope.js",
      "/console/src%2Fmain.tsx",
      "/console/../package.json",
      "/console/src/main.tsx"
    ]) {
      const response = await rawGet(path)
      expect(response.status, path).toBe(404)
      expect(response.body, path).not.toMatch(/import|"name"|root:/)
    }
    expect((await fetch(server.url + "/console", { method: "POST" })).status).toBe(405)
  })

  it("answers 503 with the command to run when the console is not built", () => {
    const empty = mkdtempSync(join(tmpdir(), "slipway-console-empty-"))
    try {
      const [, page] = consoleRoutes({ dir: empty })
      const exit = Effect.runSyncExit(page!.handler({ params: {}, query: {}, body: undefined }, { headers: {} } as any))
      expect(Exit.isSuccess(exit)).toBe(true)
      const answer = (exit as Exit.Success<RawResponse>).value
      expect(answer.status).toBe(503)
      expect(String(answer.body)).toContain("npm run build:console")
    } finally {
      rmSync(empty, { recursive: true, force: true })
    }
  })

  it("the committed console/dist is what npm run build:console makes from the sources", () => {
    const out = mkdtempSync(join(tmpdir(), "slipway-console-build-"))
    try {
      const built = spawnSync(process.execPath, [join(import.meta.dirname, "../../console/build.ts"), "--out", out], { encoding: "utf8" })
      expect(built.status, built.stderr).toBe(0)
      const fresh = readdirSync(out).sort()
      expect(readdirSync(dist).sort(), "console/dist is stale: run npm run build:console and commit it").toEqual(fresh)
      for (const name of fresh) {
        expect(readFileSync(join(dist, name)).equals(readFileSync(join(out, name))), `console/dist/${name} is stale: run npm run build:console`).toBe(true)
      }
    } finally {
      rmSync(out, { recursive: true, force: true })
    }
  })
})
