/**
 * The reverse of `RunningBox.forward`: services of the host (a deployment's PostgreSQL and
 * Redis) made reachable at `127.0.0.1:<port>` *inside* a box, whose network namespace has only
 * its own loopback. One bridge per box: the server's own `node`, started with `nsenter --net`
 * only (host files, the box's network), listens on the box's loopback for each port and pipes
 * every connection to a unix socket (a path: reachable across network namespaces) on which the
 * server dials the service on the host. The box reaches exactly these ports, nothing else of the
 * host network. The bridge exits when its stdin (a pipe from the server) closes or the box stops.
 */
import { spawn } from "node:child_process"
import { mkdirSync, rmSync } from "node:fs"
import net from "node:net"
import path from "node:path"
import type { RunningBox } from "./boxes.ts"

export interface EgressTarget {
  /** Port the box connects to on its own loopback. */
  readonly boxPort: number
  /** Where the server connects on the host side. */
  readonly host: string
  readonly port: number
}

export interface Egress {
  readonly close: () => Promise<void>
}

const HOST_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"

/**
 * Makes each target reachable inside `box` at `127.0.0.1:<boxPort>`. `socketDir` is a host
 * directory only root may enter (the unix sockets live there).
 */
export const exposeToBox = async (box: RunningBox, targets: ReadonlyArray<EgressTarget>, socketDir: string): Promise<Egress> => {
  for (const t of targets) {
    if (!Number.isInteger(t.boxPort) || t.boxPort < 1 || t.boxPort > 65535) throw new Error(`invalid box port ${t.boxPort}`)
  }
  mkdirSync(socketDir, { recursive: true, mode: 0o700 })
  const servers: Array<net.Server> = []
  const conns = new Set<net.Socket>()
  const sockets: Array<string> = []
  const pairs: Array<string> = []
  for (const t of targets) {
    const sock = path.join(socketDir, `${box.id}-${t.boxPort}-${process.pid}.sock`)
    rmSync(sock, { force: true })
    const server = net.createServer((c) => {
      conns.add(c)
      c.once("close", () => conns.delete(c))
      const u = net.connect(t.port, t.host)
      c.pipe(u).pipe(c)
      c.on("error", () => u.destroy())
      u.on("error", () => c.destroy())
    })
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject)
      server.listen(sock, () => resolve())
    })
    servers.push(server)
    sockets.push(sock)
    pairs.push(`${t.boxPort}=${sock}`)
  }
  const code =
    `const net=require("node:net");let n=0;const pairs=process.argv.slice(1);` +
    `for(const pair of pairs){const i=pair.indexOf("=");const port=+pair.slice(0,i),sock=pair.slice(i+1);` +
    `const srv=net.createServer(c=>{const u=net.connect(sock);c.pipe(u).pipe(c);c.on("error",()=>u.destroy());u.on("error",()=>c.destroy())});` +
    `srv.listen(port,"127.0.0.1",()=>{if(++n===pairs.length)process.stdout.write("ready\\n")})}` +
    `process.stdin.on("end",()=>process.exit(0));process.stdin.resume()`
  const bridge = spawn("/usr/bin/nsenter", ["-t", String(box.pid), "--net", "--", process.execPath, "-e", code, ...pairs], {
    env: { PATH: HOST_PATH },
    stdio: ["pipe", "pipe", "pipe"]
  })
  let stderr = ""
  bridge.stderr!.on("data", (d: Buffer) => (stderr += d.toString()))
  const closeAll = async () => {
    bridge.stdin!.end()
    if (bridge.exitCode === null) bridge.kill("SIGKILL")
    const closing = Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))))
    for (const c of conns) c.destroy()
    await closing
    for (const sock of sockets) rmSync(sock, { force: true })
  }
  try {
    await new Promise<void>((resolve, reject) => {
      bridge.stdout!.once("data", () => resolve())
      bridge.once("exit", (c) => reject(new Error(`egress bridge for box ${box.id} exited (${c}): ${stderr.trim().slice(0, 300)}`)))
    })
  } catch (e) {
    await closeAll()
    throw e
  }
  let closed: Promise<void> | undefined
  const egress: Egress = { close: () => (closed ??= closeAll()) }
  box.onExit(() => void egress.close())
  return egress
}
