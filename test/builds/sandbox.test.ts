/**
 * What a build's RUN step can see and reach: a real build FROM the langgraphjs-api stand-in
 * (node + npm) whose RUN steps probe the host — its processes, its loopback, its own address, a
 * private address, the cloud metadata address — directly and through the egress proxy, and use
 * npm through the proxy.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import net from "node:net"
import { networkInterfaces, tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { forbiddenAddress } from "../../server/builds/egressProxy.ts"
import { ImageBuilder } from "../../server/builds/ImageBuilder.ts"
import { type BuildEnv, collectLog, startBuildEnv, unpackLayout } from "../support/builds.ts"
import { pushLanggraphBase } from "../support/langgraphBase.ts"
import { startRegistry, type TestRegistry } from "../support/registry.ts"

const PROBE = `
import net from "node:net"
import fs from "node:fs"
import { execFileSync } from "node:child_process"
const [loopPort, ownAddr, ownPort] = process.argv.slice(2)
const result = {}
const pids = fs.readdirSync("/proc").filter((n) => /^\\d+$/.test(n))
result.cmdlines = pids.map((p) => { try { return fs.readFileSync("/proc/" + p + "/cmdline", "utf8").replace(/\\0/g, " ").trim() } catch { return "" } })
result.uidMap = fs.readFileSync("/proc/self/uid_map", "utf8").trim().split(/\\s+/)
const connect = (host, port) => new Promise((r) => {
  const s = net.connect({ host, port: +port })
  s.setTimeout(3000, () => { s.destroy(); r("timeout") })
  s.once("connect", () => { s.destroy(); r("connected") })
  s.once("error", (e) => r(e.code))
})
const viaProxy = (target) => new Promise((r) => {
  let buf = ""
  const s = net.connect(3128, "127.0.0.1", () => s.write("CONNECT " + target + " HTTP/1.1\\r\\nHost: " + target + "\\r\\n\\r\\n"))
  s.on("data", (d) => { buf += d; if (buf.includes("\\r\\n")) { s.destroy(); r(buf.split("\\r\\n")[0]) } })
  s.on("error", (e) => r(e.code))
  s.setTimeout(15000, () => { s.destroy(); r("timeout") })
})
result.directLoopback = await connect("127.0.0.1", loopPort)
result.directOwn = await connect(ownAddr, ownPort)
result.directPrivate = await connect("10.0.0.1", 80)
result.proxyLoopback = await viaProxy("127.0.0.1:" + loopPort)
result.proxyLocalhost = await viaProxy("localhost:" + loopPort)
result.proxyOwn = await viaProxy(ownAddr + ":" + ownPort)
result.proxyPrivate = await viaProxy("10.0.0.1:80")
result.proxyMetadata = await viaProxy("169.254.169.254:80")
result.proxyMapped = await viaProxy("[::ffff:127.0.0.1]:" + loopPort)
result.proxyRegistry = await viaProxy("registry.npmjs.org:443")
result.npmView = execFileSync("npm", ["view", "@langchain/langgraph@1.7.3", "version"], { encoding: "utf8" }).trim()
console.log("PROBE " + JSON.stringify(result))
`

/** A listener on the host that counts who reached it. */
const listen = (hostAddress: string) =>
  new Promise<{ port: number; hits: () => number; close: () => void }>((resolve) => {
    let hits = 0
    const server = net.createServer((socket) => {
      hits++
      socket.destroy()
    })
    server.listen(0, hostAddress, () => resolve({ port: (server.address() as net.AddressInfo).port, hits: () => hits, close: () => server.close() }))
  })

let registry: TestRegistry
let env: BuildEnv
let base: string
let scratch: string

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "slipway-sandbox-test-"))
  chmodSync(scratch, 0o755)
  registry = await startRegistry()
  base = await pushLanggraphBase(registry.host)
  env = await startBuildEnv({ registries: { insecureRegistries: [registry.host] } })
}, 600_000)

afterAll(async () => {
  await env?.stop()
  await registry?.stop()
  if (scratch) rmSync(scratch, { recursive: true, force: true })
})

describe("the build sandbox", () => {
  it("a RUN step sees only the build's processes, is root only in its user namespace, and reaches nothing of the host; npm works through the egress proxy", async () => {
    const own = Object.values(networkInterfaces()).flat().find((a) => a && a.family === "IPv4" && !a.internal)?.address
    expect(own, "the host needs a non-loopback IPv4 address for this test").toBeDefined()
    const loopback = await listen("127.0.0.1")
    const everywhere = await listen("0.0.0.0")
    try {
      const context = join(scratch, "probe")
      mkdirSync(context)
      writeFileSync(join(context, "probe.mjs"), PROBE)
      const log = collectLog()
      const dockerfile = [
        `FROM ${base}`,
        "ARG LOOPBACK_PORT",
        "ARG OWN_ADDR",
        "ARG OWN_PORT",
        "COPY probe.mjs /probe.mjs",
        "RUN ps -o pid,args",
        'RUN node /probe.mjs "$LOOPBACK_PORT" "$OWN_ADDR" "$OWN_PORT"',
        "WORKDIR /work",
        "RUN npm install --no-audit --no-fund ms@2.1.3"
      ].join("\n")
      const { rootfs, image } = await env.run(
        Effect.gen(function*() {
          const builder = yield* ImageBuilder
          return yield* Effect.scoped(
            Effect.gen(function*() {
              const image = yield* builder.build({
                cacheKey: "sandbox",
                tag: "r1",
                dockerfile,
                contextDir: context,
                buildArgs: { LOOPBACK_PORT: String(loopback.port), OWN_ADDR: own!, OWN_PORT: String(everywhere.port) },
                onLog: log.onLog
              })
              const rootfs = yield* Effect.promise(() => unpackLayout(image.layout, image.layoutTag, join(scratch, "bundle")))
              return { rootfs, image }
            })
          )
        })
      )
      const probeLine = log.lines().find((l) => l.startsWith("PROBE "))
      expect(probeLine, log.text()).toBeDefined()
      const probe = JSON.parse(probeLine!.slice(6)) as Record<string, unknown> & { cmdlines: Array<string>; uidMap: Array<string> }

      // Processes: the sandbox's own (bwrap, the bridge, buildah, the step), nothing of the host.
      expect(probe.cmdlines.length).toBeLessThan(15)
      expect(probe.cmdlines.some((c) => c.includes("buildah bud"))).toBe(true)
      expect(probe.cmdlines.filter((c) => /vitest|docker-registry/.test(c))).toEqual([])
      const ps = log.events.filter((e) => e._tag === "Output" && e.step === 6).map((e) => (e._tag === "Output" ? e.line : ""))
      expect(ps[0]).toMatch(/PID\s+COMMAND/)
      expect(ps.filter((l) => /vitest|docker-registry/.test(l))).toEqual([])
      // Root inside is an unprivileged uid range outside.
      expect(probe.uidMap[0]).toBe("0")
      expect(Number(probe.uidMap[1])).toBeGreaterThanOrEqual(800_000_000)
      expect(probe.uidMap[2]).toBe("65536")

      // No route to anything directly.
      expect(probe.directLoopback).toBe("ECONNREFUSED")
      expect(probe.directOwn).toBe("ENETUNREACH")
      expect(probe.directPrivate).toBe("ENETUNREACH")
      // The proxy refuses the host and private ranges, and lets public registries through.
      for (const key of ["proxyLoopback", "proxyLocalhost", "proxyOwn", "proxyPrivate", "proxyMetadata", "proxyMapped"]) expect(probe[key], key).toBe("HTTP/1.1 403 Forbidden")
      expect(probe.proxyRegistry).toBe("HTTP/1.1 200 Connection Established")
      expect(probe.npmView).toBe("1.7.3")
      expect(loopback.hits()).toBe(0)
      expect(everywhere.hits()).toBe(0)
      expect(log.text()).toContain(`egress refused: 127.0.0.1:${loopback.port} (127.0.0.1 is a loopback address)`)
      expect(log.text()).toContain(`egress refused: ${own}:${everywhere.port} (${own} is an address of the host itself)`)
      expect(image.egress.refused).toBe(6)
      expect(image.egress.allowed).toBeGreaterThan(1)

      // npm install through the proxy: the package is in the image.
      expect(JSON.parse(readFileSync(join(rootfs, "work/node_modules/ms/package.json"), "utf8")).version).toBe("2.1.3")
    } finally {
      loopback.close()
      everywhere.close()
    }
  }, 600_000)
})

describe("the egress policy", () => {
  it("refuses loopback, private, link-local, CGNAT, multicast, reserved and the host's own addresses; allows public ones", () => {
    const own = new Set(["192.0.2.2", "fd00::2"])
    for (const address of ["127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fc00::1", "fd12::1", "fe80::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "192.0.2.2", "fd00::2"])
      expect(forbiddenAddress(address, own), address).toBeDefined()
    for (const address of ["203.0.113.80", "192.0.2.1", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8"]) expect(forbiddenAddress(address, own), address).toBeUndefined()
    expect(forbiddenAddress("example.com", own)).toBe("not an IP address")
  })
})
