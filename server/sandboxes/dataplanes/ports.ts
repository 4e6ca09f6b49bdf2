/**
 * Reaching a port inside a box from the host, for service URLs: a box has its own network
 * namespace (only its loopback), so for each (box, port) a small relay runs in that namespace
 * (the host's node, joined to the box's network namespace only with `nsenter --net`, as the box
 * runner's `forward` does) and listens on a unix socket in a private directory (0700, root's):
 * no TCP port opens on the host, so nothing reaches the box's service without passing the
 * service URL's token check. Each connection to the socket is piped to 127.0.0.1:<port> in the
 * box. Relays end when the box exits, when the dataplane releases the box, or at shutdown.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { RunningBox } from "../../runtime/local/boxes.ts"

const HOST_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"

const RELAY =
  `const net=require("node:net");const [s,p]=process.argv.slice(1);` +
  `const srv=net.createServer(c=>{const u=net.connect(+p,"127.0.0.1");c.pipe(u).pipe(c);c.on("error",()=>u.destroy());u.on("error",()=>c.destroy());c.on("close",()=>u.destroy());u.on("close",()=>c.destroy())});` +
  `srv.listen(s,()=>process.stdout.write("ready\\n"));process.stdin.on("end",()=>process.exit(0));process.stdin.resume()`

export interface PortRelays {
  /** The unix socket that reaches `port` inside the running box (started on first use). */
  readonly socketFor: (box: RunningBox, port: number) => Promise<string>
  /** Ends the relays of one box. */
  readonly release: (sandboxId: string) => void
  readonly close: () => void
}

export const makePortRelays = (): PortRelays => {
  // Short (a socket path has at most 107 bytes) and private: only root may connect.
  const dir = mkdtempSync(join(tmpdir(), "slipway-ports-"))
  let counter = 0
  const relays = new Map<string, { readonly sandboxId: string; readonly ready: Promise<string>; readonly process: ChildProcess; readonly socket: string }>()

  const stop = (key: string) => {
    const relay = relays.get(key)
    if (!relay) return
    relays.delete(key)
    relay.process.stdin?.end()
    if (relay.process.exitCode === null) relay.process.kill("SIGKILL")
    rmSync(relay.socket, { force: true })
  }

  const socketFor = (box: RunningBox, port: number): Promise<string> => {
    const key = `${box.id}:${box.pid}:${port}`
    const existing = relays.get(key)
    if (existing && existing.process.exitCode === null) return existing.ready
    if (existing) stop(key)
    if (box.status() !== "running") return Promise.reject(new Error(`box ${box.id} is not running`))
    const socket = join(dir, `${++counter}.sock`)
    const child = spawn("/usr/bin/nsenter", ["-t", String(box.pid), "--net", "--", process.execPath, "-e", RELAY, socket, String(port)], {
      env: { PATH: HOST_PATH },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stderr = ""
    child.stderr!.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-500)))
    const ready = new Promise<string>((resolve, reject) => {
      child.stdout!.once("data", () => resolve(socket))
      child.once("error", (error) => reject(error))
      child.once("exit", (code) => reject(new Error(`the port relay of box ${box.id} exited (${code}): ${stderr.trim()}`)))
    })
    ready.catch(() => stop(key))
    relays.set(key, { sandboxId: box.id, ready, process: child, socket })
    box.onExit(() => stop(key))
    return ready
  }

  const release = (sandboxId: string) => {
    for (const [key, relay] of relays) if (relay.sandboxId === sandboxId) stop(key)
  }

  return {
    socketFor,
    release,
    close: () => {
      for (const key of [...relays.keys()]) stop(key)
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
