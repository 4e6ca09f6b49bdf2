/**
 * Registries, service URLs and download URLs end to end (issue 15): a real server with the
 * `local` runtime, two real OCI registries (a Docker Hub mirror, and a private one that demands
 * a login), boxes running a real HTTP server, and the published npm `langsmith@0.12.0` client
 * (`langsmith/sandbox`), unmodified.
 */
import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import { readFileSync, existsSync } from "node:fs"
import { connect } from "node:net"
import * as Current from "langsmith/sandbox"
import Database from "better-sqlite3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeLogger } from "../../server/log.ts"
import { pushTestImages, testImageRefs } from "../support/images.ts"
import { type ImageMirror, startImageMirror } from "../support/mirror.ts"
import { startRegistry } from "../support/registry.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import { testIsolations, useIsolation } from "../support/isolation.ts"

describe.each(testIsolations)("sandboxes under %s", (isolation) => {
  useIsolation(isolation)

  const credentials = { username: "robot", password: `pw-${crypto.randomUUID()}` }
  const secondPassword = `pw2-${crypto.randomUUID()}`

  let mirror: ImageMirror
  let privateRegistry: Awaited<ReturnType<typeof startRegistry>>
  let t: TestServer
  const logs: Array<string> = []

  beforeAll(async () => {
    mirror = await startImageMirror()
    privateRegistry = await startRegistry({ auth: credentials })
    await pushTestImages(privateRegistry.host, { only: ["busybox"], authFile: privateRegistry.authFile! })
    // Both plain HTTP; `mirror.stop()` restores the setting.
    process.env.SLIPWAY_INSECURE_REGISTRIES = `${mirror.host},${privateRegistry.host}`
    t = await startTestServer({ runtime: "local", logger: makeLogger("debug", (line) => void logs.push(line)) })
  }, 180_000)

  afterAll(async () => {
    await t?.close()
    await privateRegistry?.stop()
    await mirror?.stop()
  }, 60_000)

  /** A token service URL (the client answers a login URL only when `access` is set). */
  const serviceUrl = async (name: string, port: number, key = t.key, expiresInSeconds?: number) =>
    (await client(key).serviceUrl(name, { port, ...(expiresInSeconds ? { expiresInSeconds } : {}) })) as Current.ServiceUrl

  const client = (key = t.key) => new Current.SandboxClient({ apiKey: key, apiEndpoint: `${t.url}/v2/sandboxes`, maxRetries: 0 })

  /** The database as stored on disk (the main file and its WAL). */
  const databaseBytes = () => [t.databasePath, `${t.databasePath}-wal`].filter(existsSync).map((path) => readFileSync(path).toString("latin1")).join("")

  const privateImage = () => testImageRefs(privateRegistry.host).busybox

  /** A box created with wait_for_ready, as it is then: ready (201), or failed (422 ImagePull naming why; the box stays, failed). */
  const createBox = async (template: string, name: string, key = t.key) => {
    const created = await t.request("POST", "/v2/sandboxes/boxes", { key, body: { template_name: template, name, wait_for_ready: true, timeout: 120 } })
    if (created.status === 422) {
      expect(created.body.detail.error).toBe("ImagePull")
      const box = (await t.request("GET", `/v2/sandboxes/boxes/${name}`, { key })).body
      expect(created.body.detail.message).toBe(`sandbox ${name} failed: ${box.status_message}`)
      return box as { id: string; name: string; status: string; status_message: string | null }
    }
    expect(created.status).toBe(201)
    return created.body as { id: string; name: string; status: string; status_message: string | null }
  }

  describe("registries through langsmith@0.12.0's client.registries", () => {
    it("creates, lists, gets, updates and deletes a registry without ever answering its credentials", async () => {
      const registries = client().registries
      const created = await registries.create({ name: "scratch", url: "https://registry.example.com/acme", username: "bot", password: credentials.password })
      expect(created).toMatchObject({ name: "scratch", url: "https://registry.example.com/acme", auth_type: "DOCKER_CONFIG", provider: "DOCKER_REGISTRY" })
      expect(created.id).toMatch(/^[0-9a-f-]{36}$/)
      const listed = await registries.list()
      expect(listed.items!.map((r) => r.name)).toEqual(["scratch"])
      expect(listed.registries).toEqual(listed.items)
      expect(listed.next_cursor).toBeNull()
      expect(await registries.retrieve("scratch")).toEqual(created)
      const updated = await registries.update("scratch", { name: "scratch-2", password: secondPassword })
      expect(updated).toMatchObject({ id: created.id, name: "scratch-2" })
      const answers = JSON.stringify([created, listed, updated, await registries.list({ page_size: 1 }), await registries.retrieve("scratch-2")])
      expect(answers).not.toContain(credentials.password)
      expect(answers).not.toContain(secondPassword)
      expect(answers).not.toContain("bot")
      // Sealed at rest: neither password is in the database file in plain text.
      const stored = databaseBytes()
      expect(stored).toContain("scratch-2")
      expect(stored).not.toContain(credentials.password)
      expect(stored).not.toContain(secondPassword)
      await registries.delete("scratch-2")
      await expect(registries.retrieve("scratch-2")).rejects.toMatchObject({ status: 404 })
    })

    it("refuses a taken name, an AWS role, half a credential and a bad URL; pages with a cursor; keeps tenants apart", async () => {
      const registries = client().registries
      await registries.create({ name: "one", url: "ghcr.io", username: "u", password: "p" })
      await registries.create({ name: "two", url: "127.0.0.1:5999", username: "u", password: "p" })
      await expect(registries.create({ name: "one", url: "ghcr.io", username: "u", password: "p" })).rejects.toMatchObject({ status: 409 })
      await expect(registries.create({ name: "aws", url: "1.dkr.ecr.us-east-1.amazonaws.com", auth_type: "AWS_ROLE", aws_role_arn: "arn:x" })).rejects.toMatchObject({ status: 400 })
      await expect(registries.create({ name: "half", url: "ghcr.io", username: "u" })).rejects.toMatchObject({ status: 400 })
      await expect(registries.create({ name: "bad", url: "not a host!", username: "u", password: "p" })).rejects.toMatchObject({ status: 422 })
      const first = await registries.list({ page_size: 1 })
      expect(first.items!.map((r) => r.name)).toEqual(["two"])
      expect(first.items![0]!.provider).toBe("DOCKER_REGISTRY")
      const second = await registries.list({ page_size: 1, cursor: first.next_cursor! })
      expect(second.items!.map((r) => r.name)).toEqual(["one"])
      expect(second.items![0]!.provider).toBe("GHCR")
      expect((await registries.list({ name_contains: "tw" })).items!.map((r) => r.name)).toEqual(["two"])
      const stranger = client(t.keyFor(crypto.randomUUID())).registries
      expect((await stranger.list()).items).toEqual([])
      await expect(stranger.retrieve("one")).rejects.toMatchObject({ status: 404 })
      await registries.delete("one")
      await registries.delete("two")
    })
  })

  describe("a template on a private image", () => {
    it("fails to pull without a stored registry and pulls with it", async () => {
      const template = await t.request("POST", "/v2/sandboxes/templates", { body: { name: "private", image: privateImage(), resources: { cpu: "500m", memory: "256Mi", storage: "256Mi" } } })
      expect(template.status).toBe(201)
      const refused = await createBox("private", "no-login")
      expect(refused.status).toBe("failed")
      expect(refused.status_message).toMatch(/unauthorized/i)

      await client().registries.create({ name: "private", url: privateRegistry.host, username: credentials.username, password: credentials.password })
      const box = await createBox("private", "with-login")
      expect(box).toMatchObject({ status: "ready" })
      const sandbox = await client().getSandbox("with-login")
      expect(await sandbox.run("echo pulled")).toMatchObject({ stdout: "pulled\n", exit_code: 0 })
      // No log line carries the password.
      expect(logs.join("")).not.toContain(credentials.password)
    }, 240_000)

    it("does not hand the cached private image to another tenant, by tag or by digest", async () => {
      const manifest = execFileSync("skopeo", ["inspect", "--raw", "--tls-verify=false", "--authfile", privateRegistry.authFile!, `docker://${privateImage()}`])
      const digest = `sha256:${createHash("sha256").update(manifest).digest("hex")}`
      const strangerKey = t.keyFor(crypto.randomUUID())
      const byDigest = `${privateImage().replace(/:1$/, "")}@${digest}`
      for (const [name, image] of [["by-tag", privateImage()], ["by-digest", byDigest]] as const) {
        const template = await t.request("POST", "/v2/sandboxes/templates", { key: strangerKey, body: { name, image, resources: { cpu: "500m", memory: "256Mi", storage: "256Mi" } } })
        expect(template.status).toBe(201)
        const box = await createBox(name, `${name}-box`, strangerKey)
        expect(box.status).toBe("failed")
        expect(box.status_message).toMatch(/unauthorized/i)
      }
      // The owner pulls the same digest from the cache after showing access.
      await t.request("POST", "/v2/sandboxes/templates", { body: { name: "private-pinned", image: byDigest, resources: { cpu: "500m", memory: "256Mi", storage: "256Mi" } } })
      expect(await createBox("private-pinned", "pinned")).toMatchObject({ status: "ready" })
      await t.request("DELETE", "/v2/sandboxes/boxes/pinned")
    }, 240_000)
  })

  describe("service URLs", () => {
    const serve = async () => {
      const sandbox = await client().getSandbox("with-login")
      const started = await sandbox.run(
        "mkdir -p /tmp/www && echo hello-from-the-box > /tmp/www/index.html && (setsid httpd -f -p 127.0.0.1:8080 -h /tmp/www </dev/null >/dev/null 2>&1 &) ; sleep 0.3; echo started"
      )
      expect(started).toMatchObject({ exit_code: 0 })
    }

    it("reaches a port in the box with the token, and refuses without it or for another port", async () => {
      await serve()
      const service = await serviceUrl("with-login", 8080, t.key, 600)
      const url = await service.serviceUrl()
      const box = (await t.request("GET", "/v2/sandboxes/boxes/with-login")).body
      expect(url).toBe(`${t.url}/sandbox-services/${box.id}/8080/`)
      const answer = await service.fetch("/index.html")
      expect(answer.status).toBe(200)
      expect(await answer.text()).toBe("hello-from-the-box\n")

      const anonymous = await fetch(`${url}index.html`)
      expect(anonymous.status).toBe(401)
      const forged = await fetch(`${url}index.html`, { headers: { "x-langsmith-sandbox-service-token": `${await service.token()}x` } })
      expect(forged.status).toBe(401)
      const otherPort = await fetch(`${t.url}/sandbox-services/${box.id}/9090/index.html`, { headers: { "x-langsmith-sandbox-service-token": await service.token() } })
      expect(otherPort.status).toBe(403)
      // Nothing listens on a port that is shared but unserved: a clear 502, not a hang.
      const idle = await t.request("POST", "/v2/sandboxes/boxes/with-login/service-url", { body: { port: 9090 } })
      const unserved = await fetch(idle.body.service_url, { headers: { "x-langsmith-sandbox-service-token": idle.body.token } })
      expect(unserved.status).toBe(502)
      const listed = await t.request("GET", "/v2/sandboxes/boxes/with-login/service-urls")
      expect(listed.body.items.map((item: { port: number }) => item.port)).toEqual([8080, 9090])
      expect(listed.body.items[0]).toMatchObject({ access: "token", port: 8080 })
    })

    it("sets a cookie through browser_url, and refuses an expired token", async () => {
      const minted = await t.request("POST", "/v2/sandboxes/boxes/with-login/service-url", { body: { port: 8080, expires_in_seconds: 2 } })
      expect(minted.status).toBe(200)
      expect(Object.keys(minted.body).sort()).toEqual(["browser_url", "expires_at", "service_url", "token"])
      const login = await fetch(minted.body.browser_url, { redirect: "manual" })
      expect(login.status).toBe(303)
      const cookie = login.headers.get("set-cookie")!
      expect(cookie).toMatch(/HttpOnly/)
      const viaCookie = await fetch(new URL(login.headers.get("location")!, t.url), { headers: { cookie: cookie.split(";")[0]! } })
      expect(viaCookie.status).toBe(200)
      expect(viaCookie.headers.get("content-security-policy")).toMatch(/^sandbox/)
      await new Promise((resolve) => setTimeout(resolve, 2500))
      const expired = await fetch(minted.body.service_url, { headers: { "x-langsmith-sandbox-service-token": minted.body.token } })
      expect(expired.status).toBe(401)
      const badLength = await t.request("POST", "/v2/sandboxes/boxes/with-login/service-url", { body: { port: 8080, expires_in_seconds: 86_401 } })
      expect(badLength.status).toBe(422)
    })

    it("tunnels an upgraded connection (WebSocket) both ways", async () => {
      const sandbox = await client().getSandbox("with-login")
      const script = [
        "#!/bin/sh",
        'while read -r line; do line=$(printf %s "$line" | tr -d "\\r"); [ -z "$line" ] && break; done',
        'printf "HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\n\\r\\n"',
        "exec cat"
      ].join("\n")
      await sandbox.write("/tmp/echo.sh", script + "\n")
      const started = await sandbox.run("chmod +x /tmp/echo.sh && (setsid nc -ll -p 8081 -e /tmp/echo.sh </dev/null >/dev/null 2>&1 &) ; sleep 0.3; echo ok")
      expect(started.exit_code).toBe(0)
      const service = await serviceUrl("with-login", 8081)
      const url = new URL(await service.serviceUrl())
      const socket = connect(Number(url.port), url.hostname)
      const received: Array<Buffer> = []
      socket.on("data", (chunk: Buffer) => received.push(chunk))
      socket.write(
        `GET ${url.pathname}socket HTTP/1.1\r\nHost: ${url.host}\r\nConnection: Upgrade\r\nUpgrade: echo\r\nX-Langsmith-Sandbox-Service-Token: ${await service.token()}\r\n\r\n`
      )
      const until = async (predicate: () => boolean) => {
        for (let i = 0; i < 100 && !predicate(); i++) await new Promise((resolve) => setTimeout(resolve, 50))
      }
      await until(() => Buffer.concat(received).toString().includes("\r\n\r\n"))
      expect(Buffer.concat(received).toString()).toMatch(/^HTTP\/1.1 101/)
      received.length = 0
      socket.write("ping through the tunnel\n")
      await until(() => Buffer.concat(received).toString().includes("ping through the tunnel"))
      expect(Buffer.concat(received).toString()).toBe("ping through the tunnel\n")
      socket.destroy()

      const refused = connect(Number(url.port), url.hostname)
      const answer: Array<Buffer> = []
      refused.on("data", (chunk: Buffer) => answer.push(chunk))
      refused.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n`)
      await until(() => answer.length > 0)
      expect(Buffer.concat(answer).toString()).toMatch(/^HTTP\/1.1 401/)
      refused.destroy()
    })

    it("refuses another tenant's token, and stops every token of a port when its sharing is removed", async () => {
      const strangerKey = t.keyFor(crypto.randomUUID())
      const box = (await t.request("GET", "/v2/sandboxes/boxes/with-login")).body
      // Another tenant cannot mint for this box at all…
      const foreignMint = await t.request("POST", "/v2/sandboxes/boxes/with-login/service-url", { key: strangerKey, body: { port: 8080 } })
      expect(foreignMint.status).toBe(404)
      // …and its token for its own box does not open this one.
      await t.request("POST", "/v2/sandboxes/templates", { key: strangerKey, body: { name: "mine", image: "python:3.12-slim", resources: { cpu: "500m", memory: "256Mi", storage: "256Mi" } } })
      await createBox("mine", "mine", strangerKey)
      const theirs = await serviceUrl("mine", 8080, strangerKey)
      const crossed = await fetch(`${t.url}/sandbox-services/${box.id}/8080/index.html`, { headers: { "x-langsmith-sandbox-service-token": await theirs.token() } })
      expect(crossed.status).toBe(403)
      // Deleting a box removes its grants.
      const mine = (await t.request("GET", "/v2/sandboxes/boxes/mine", { key: strangerKey })).body
      const grantsOf = (sandboxId: string) => {
        const db = new Database(t.databasePath, { readonly: true })
        try {
          return (db.prepare("SELECT count(*) AS n FROM sandbox_service_grants WHERE sandbox_id = ?").get(sandboxId) as { n: number }).n
        } finally {
          db.close()
        }
      }
      expect(grantsOf(mine.id)).toBe(1)
      expect((await t.request("DELETE", "/v2/sandboxes/boxes/mine", { key: strangerKey })).status).toBe(204)
      for (let i = 0; i < 100 && grantsOf(mine.id) > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
      expect(grantsOf(mine.id)).toBe(0)

      const ours = await serviceUrl("with-login", 8080)
      expect((await ours.fetch("/index.html")).status).toBe(200)
      const removed = await t.request("DELETE", "/v2/sandboxes/boxes/with-login/service-urls?port=8080")
      expect(removed.status).toBe(204)
      expect((await ours.fetch("/index.html")).status).toBe(401)
      expect((await t.request("GET", "/v2/sandboxes/boxes/with-login/service-urls")).body.items.map((item: { port: number }) => item.port)).toEqual([8081, 9090])
    }, 120_000)
  })

  describe("download URLs", () => {
    it("fetches a file without an API key (Range included), wakes a stopped box, and refuses an expired or altered link", async () => {
      const current = client()
      const sandbox = await current.getSandbox("with-login")
      await sandbox.write("/home/user/report.txt", "0123456789 a report from the box")
      const link = await current.generateDownloadURL("with-login", "/home/user/report.txt", { contentType: "text/plain", contentDisposition: "inline" })
      expect(link.expires_at).toBeNull()
      expect(link.download_url.startsWith(`${t.url}/sandbox-downloads/`)).toBe(true)
      const whole = await fetch(link.download_url)
      expect(whole.status).toBe(200)
      expect(await whole.text()).toBe("0123456789 a report from the box")
      expect(whole.headers.get("content-type")).toBe("text/plain")
      expect(whole.headers.get("content-disposition")).toMatch(/^inline; filename="report.txt"/)
      expect(whole.headers.get("x-content-type-options")).toBe("nosniff")
      const part = await fetch(link.download_url, { headers: { range: "bytes=2-5" } })
      expect(part.status).toBe(206)
      expect(await part.text()).toBe("2345")

      const altered = await fetch(`${link.download_url.slice(0, -2)}xx`)
      expect(altered.status).toBe(401)
      const missing = await current.generateDownloadURL("with-login", "/home/user/nothing-here")
      expect((await fetch(missing.download_url)).status).toBe(404)

      await current.stopSandbox("with-login")
      expect((await t.request("GET", "/v2/sandboxes/boxes/with-login/status")).body.status).toBe("stopped")
      const woken = await fetch(link.download_url)
      expect(woken.status).toBe(200)
      expect(await woken.text()).toBe("0123456789 a report from the box")
      expect((await t.request("GET", "/v2/sandboxes/boxes/with-login/status")).body.status).toBe("ready")

      const short = await current.generateDownloadURL("with-login", "/home/user/report.txt", { expiresInSeconds: 1 })
      expect(short.expires_at).not.toBeNull()
      await new Promise((resolve) => setTimeout(resolve, 2100))
      expect((await fetch(short.download_url)).status).toBe(401)
    }, 120_000)
  })

  describe("malformed links", () => {
    it("answer 401/404, never crash the server", async () => {
      for (const path of ["/sandbox-downloads/%E0%A4%A", "/sandbox-downloads/", "/sandbox-service-login?token=%ZZ", "/sandbox-service-login", "/sandbox-services/nope/80/", "/sandbox-services/00000000-0000-4000-8000-000000000000/99999/"]) {
        const response = await fetch(`${t.url}${path}`, { redirect: "manual" })
        expect([401, 404], path).toContain(response.status)
      }
      const post = await fetch(`${t.url}/sandbox-downloads/x.y`, { method: "POST", body: "x" })
      expect(post.status).toBe(405)
      expect((await t.request("GET", "/health", { key: null })).status).toBe(200)
    })
  })
})
