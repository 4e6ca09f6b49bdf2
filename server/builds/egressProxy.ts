/**
 * The only way out of a build's network namespace: an HTTP proxy (CONNECT for https and any
 * TCP, absolute-URI requests for plain http) that Slipway runs on the host, listening on a unix
 * socket that the build's sandbox bridges to `127.0.0.1:<port>` inside (see sandbox.ts). Its
 * policy is the boxes': the proxy resolves the name itself and connects only to public
 * addresses — never to the host's loopback, the host's own interface addresses, private,
 * link-local, carrier-grade NAT, multicast or reserved ranges (IPv4-mapped IPv6 is judged by its
 * IPv4 address). A name that resolves to a forbidden address is refused, not retried elsewhere.
 */
import { promises as dns } from "node:dns"
import { chmodSync, chownSync, rmSync } from "node:fs"
import http from "node:http"
import net from "node:net"
import { networkInterfaces } from "node:os"
import { Effect, type Scope } from "effect"

const FORBIDDEN_V4: ReadonlyArray<readonly [string, number, string]> = [
  ["0.0.0.0", 8, "reserved"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "carrier-grade NAT"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"],
  ["172.16.0.0", 12, "private"],
  ["192.168.0.0", 16, "private"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"]
]
const FORBIDDEN_V6: ReadonlyArray<readonly [string, number, string]> = [
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["fc00::", 7, "private"],
  ["fe80::", 10, "link-local"],
  ["ff00::", 8, "multicast"]
]

const lists = FORBIDDEN_V4.map(([address, prefix, reason]) => ({ reason, list: block(address, prefix, "ipv4") })).concat(
  FORBIDDEN_V6.map(([address, prefix, reason]) => ({ reason, list: block(address, prefix, "ipv6") }))
)

function block(address: string, prefix: number, family: "ipv4" | "ipv6"): net.BlockList {
  const list = new net.BlockList()
  list.addSubnet(address, prefix, family)
  return list
}

/** The host's own interface addresses (read each time: interfaces come and go). */
const ownAddresses = (): Set<string> => {
  const own = new Set<string>()
  for (const addresses of Object.values(networkInterfaces())) for (const a of addresses ?? []) own.add(a.address.toLowerCase().replace(/%.*$/, ""))
  return own
}

/** Why a build may not connect to `address` (an IP literal), or undefined when it may. */
export const forbiddenAddress = (address: string, own: ReadonlySet<string> = ownAddresses()): string | undefined => {
  const family = net.isIP(address)
  if (family === 0) return "not an IP address"
  const lower = address.toLowerCase()
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower)
    if (mapped) return forbiddenAddress(mapped[1]!, own)
  }
  const type = family === 4 ? "ipv4" : "ipv6"
  for (const { reason, list } of lists) if (list.check(address, type)) return `a ${reason} address`
  if (own.has(lower)) return "an address of the host itself"
  return undefined
}

export interface EgressDecision {
  readonly target: string
  readonly allowed: boolean
  /** Why it was refused. */
  readonly reason?: string | undefined
}

/** Resolves `host` and answers the first address a build may reach, or why none. */
const resolveAllowed = async (host: string): Promise<{ readonly address: string } | { readonly refused: string }> => {
  const bare = host.replace(/^\[(.*)\]$/, "$1")
  let addresses: Array<string>
  if (net.isIP(bare) !== 0) addresses = [bare]
  else {
    try {
      addresses = (await dns.lookup(bare, { all: true, verbatim: true })).map((a) => a.address)
    } catch (error) {
      return { refused: `cannot resolve ${bare} (${(error as NodeJS.ErrnoException).code ?? "error"})` }
    }
  }
  const own = ownAddresses()
  for (const address of addresses) {
    const why = forbiddenAddress(address, own)
    if (why !== undefined) return { refused: `${bare} is ${address === bare ? "" : `${address}, `}${why}` }
  }
  const first = addresses[0]
  return first === undefined ? { refused: `${bare} has no address` } : { address: first }
}

const splitHostPort = (target: string): { readonly host: string; readonly port: number } | undefined => {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s/]+):(\d{1,5})$/.exec(target)
  if (!m) return undefined
  const port = Number(m[2])
  return port >= 1 && port <= 65535 ? { host: m[1]!, port } : undefined
}

/**
 * Serves the proxy on `socketPath` until the scope closes (open connections are cut then).
 * `onDecision` hears every connection it allows or refuses.
 */
export const serveEgressProxy = (
  socketPath: string,
  options: {
    readonly onDecision?: ((decision: EgressDecision) => void) | undefined
    /** uid that may connect to the socket (the sandbox's root); default: root only. */
    readonly owner?: number | undefined
  } = {}
): Effect.Effect<void, Error, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ readonly server: http.Server; readonly sockets: Set<net.Socket> }, Error>((resume) => {
      const onDecision = options.onDecision ?? (() => undefined)
      const sockets = new Set<net.Socket>()
      const track = (socket: net.Socket) => {
        sockets.add(socket)
        socket.once("close", () => sockets.delete(socket))
      }
      const server = http.createServer((req, res) => {
        const refuse = (status: number, reason: string, target: string) => {
          onDecision({ target, allowed: false, reason })
          res.writeHead(status, { "Content-Type": "text/plain", Connection: "close" })
          res.end(`slipway build egress: ${reason}\n`)
        }
        let url: URL
        try {
          url = new URL(req.url ?? "")
        } catch {
          return refuse(400, "only absolute http:// URLs and CONNECT are proxied", String(req.url).slice(0, 200))
        }
        if (url.protocol !== "http:") return refuse(400, `${url.protocol} requests must use CONNECT`, url.host)
        const port = Number(url.port || 80)
        const target = `${url.hostname}:${port}`
        void resolveAllowed(url.hostname).then((answer) => {
          if ("refused" in answer) return refuse(403, answer.refused, target)
          onDecision({ target, allowed: true })
          const headers = { ...req.headers }
          for (const name of Object.keys(headers)) if (name.startsWith("proxy-")) delete headers[name]
          const upstream = http.request(
            { host: answer.address, port, method: req.method, path: `${url.pathname}${url.search}`, headers, setHost: false },
            (up) => {
              res.writeHead(up.statusCode ?? 502, up.headers)
              up.pipe(res)
            }
          )
          upstream.on("error", (error) => {
            if (!res.headersSent) res.writeHead(502, { "Content-Type": "text/plain" })
            res.end(`slipway build egress: ${error.message}\n`)
          })
          req.pipe(upstream)
        })
      })
      server.on("connection", track)
      server.on("connect", (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
        const target = String(req.url ?? "")
        const parts = splitHostPort(target)
        const refuse = (status: string, reason: string) => {
          onDecision({ target, allowed: false, reason })
          client.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nslipway build egress: ${reason}\n`)
        }
        client.on("error", () => undefined)
        if (!parts) return refuse("400 Bad Request", `bad CONNECT target ${JSON.stringify(target.slice(0, 200))}`)
        void resolveAllowed(parts.host).then((answer) => {
          if ("refused" in answer) return refuse("403 Forbidden", answer.refused)
          const upstream = net.connect({ host: answer.address, port: parts.port })
          let connected = false
          track(upstream)
          upstream.setTimeout(30_000, () => upstream.destroy(new Error("connect timeout")))
          upstream.once("connect", () => {
            connected = true
            upstream.setTimeout(0)
            onDecision({ target, allowed: true })
            client.write("HTTP/1.1 200 Connection Established\r\n\r\n")
            if (head.length > 0) upstream.write(head)
            upstream.pipe(client)
            client.pipe(upstream)
          })
          upstream.on("error", (error) => {
            if (!connected && !client.destroyed) refuse("502 Bad Gateway", `${target}: ${error.message}`)
            else client.destroy()
          })
          client.on("close", () => upstream.destroy())
        })
      })
      rmSync(socketPath, { force: true })
      server.once("error", (error) => resume(Effect.fail(error)))
      server.listen(socketPath, () => {
        try {
          chmodSync(socketPath, 0o600)
          if (options.owner !== undefined) chownSync(socketPath, options.owner, options.owner)
        } catch (error) {
          server.close()
          return resume(Effect.fail(error as Error))
        }
        resume(Effect.succeed({ server, sockets }))
      })
    }),
    ({ server, sockets }) =>
      Effect.callback<void>((resume) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => {
          rmSync(socketPath, { force: true })
          resume(Effect.void)
        })
      })
  ).pipe(Effect.asVoid)
