/**
 * The egress proxy on its own (its policy inside a build is in sandbox.ts): plain-http requests by
 * absolute URI and CONNECT tunnels, to public hosts allowed, to the host and private ranges refused.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs"
import http from "node:http"
import net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type EgressDecision, serveEgressProxy } from "../../server/builds/egressProxy.ts"

let dir: string
let socket: string
let scope: Scope.Closeable
const decisions: Array<EgressDecision> = []
let local: http.Server
let localPort: number
let localHits = 0

/** One raw HTTP exchange over the proxy's unix socket; answers the status line (and body for plain requests). */
const exchange = (request: string) =>
  new Promise<string>((resolve, reject) => {
    const s = net.connect(socket)
    let buf = ""
    s.on("data", (d) => {
      buf += d.toString("latin1")
      if (/\r\n\r\n/.test(buf)) {
        s.destroy()
        resolve(buf.split("\r\n")[0]!)
      }
    })
    s.on("error", reject)
    s.setTimeout(20_000, () => s.destroy(new Error("timeout")))
    s.write(request)
  })

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "slipway-egress-"))
  socket = join(dir, "proxy.sock")
  scope = await Effect.runPromise(Scope.make())
  await Effect.runPromise(Scope.provide(scope)(serveEgressProxy(socket, { onDecision: (d) => void decisions.push(d) })))
  local = http.createServer((_req, res) => {
    localHits++
    res.end("local")
  })
  await new Promise<void>((r) => local.listen(0, "127.0.0.1", r))
  localPort = (local.address() as net.AddressInfo).port
})

afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  local?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe("the egress proxy", () => {
  it("listens on a unix socket only root may use unless given an owner", () => {
    expect(statSync(socket).mode & 0o777).toBe(0o600)
  })

  it("forwards plain-http requests to public hosts and refuses the host's loopback", async () => {
    expect(await exchange("GET http://deb.debian.org/debian/dists/bookworm/Release HTTP/1.1\r\nHost: deb.debian.org\r\nConnection: close\r\n\r\n")).toBe("HTTP/1.1 200 OK")
    expect(await exchange(`GET http://127.0.0.1:${localPort}/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)).toBe("HTTP/1.1 403 Forbidden")
    expect(await exchange(`GET http://localhost:${localPort}/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`)).toBe("HTTP/1.1 403 Forbidden")
    expect(await exchange("GET /relative HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")).toBe("HTTP/1.1 400 Bad Request")
    expect(localHits).toBe(0)
  }, 60_000)

  it("tunnels CONNECT to public hosts and refuses private, link-local and malformed targets", async () => {
    expect(await exchange("CONNECT registry.npmjs.org:443 HTTP/1.1\r\nHost: registry.npmjs.org:443\r\n\r\n")).toBe("HTTP/1.1 200 Connection Established")
    expect(await exchange(`CONNECT 127.0.0.1:${localPort} HTTP/1.1\r\n\r\n`)).toBe("HTTP/1.1 403 Forbidden")
    expect(await exchange("CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n")).toBe("HTTP/1.1 403 Forbidden")
    expect(await exchange("CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n")).toBe("HTTP/1.1 403 Forbidden")
    expect(await exchange("CONNECT [::1]:22 HTTP/1.1\r\n\r\n")).toBe("HTTP/1.1 403 Forbidden")
    expect(await exchange("CONNECT no-port HTTP/1.1\r\n\r\n")).toBe("HTTP/1.1 400 Bad Request")
    expect(await exchange("CONNECT does-not-exist.invalid:443 HTTP/1.1\r\n\r\n")).toBe("HTTP/1.1 403 Forbidden")
    expect(localHits).toBe(0)
    const refused = decisions.filter((d) => !d.allowed).map((d) => d.reason)
    expect(refused).toContain("10.0.0.1 is a private address")
    expect(refused).toContain("169.254.169.254 is a link-local address")
    expect(refused.some((r) => r?.startsWith("cannot resolve does-not-exist.invalid"))).toBe(true)
  }, 60_000)
})
