/**
 * A box's port reached from the host: a bridge (the host's node in the box's network namespace
 * only: host files, no box privileges) listens on a unix socket (a path, so reachable across
 * network namespaces) and dials 127.0.0.1:port inside the box; a host TCP listener pipes each
 * connection to that socket. Both end, and the socket goes, when the scope closes.
 */
import { randomBytes } from "node:crypto"
import { mkdirSync, rmSync } from "node:fs"
import net from "node:net"
import path from "node:path"
import { Effect, type Scope } from "effect"
import type { ProcessRunner } from "../../ProcessRunner.ts"
import { BoxError, type Forward } from "./model.ts"
import { HOST_PATH } from "./spec.ts"

/** Runs `code` with the server's node in the network namespace of `pid`; answers once it printed its first line (its "ready"). */
export const startBridge = (runner: ProcessRunner["Service"], pid: number, code: string, args: ReadonlyArray<string>, what: string) =>
  Effect.gen(function* () {
    const bridge = yield* runner
      .spawn(["/usr/bin/nsenter", "-t", String(pid), "--net", "--", process.execPath, "-e", code, ...args], {
        cleanEnv: true,
        env: { PATH: HOST_PATH },
        stdio: ["pipe", "pipe", "pipe"],
        killSignal: "SIGKILL"
      })
      .pipe(Effect.mapError((error) => new BoxError({ message: `${what}: ${error.message}` })))
    let stderr = ""
    bridge.stderr!.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)))
    bridge.stdin!.on("error", () => undefined)
    yield* Effect.raceFirst(
      Effect.callback<void>((resume) => void bridge.stdout!.once("data", () => resume(Effect.void))),
      Effect.flatMap(bridge.exited, (exit) => Effect.fail(new BoxError({ message: `${what} exited (${exit.code ?? exit.signal}): ${stderr.trim().slice(0, 300)}` })))
    )
    return bridge
  })

/** A host server piping each connection to `connect()`; closed (its connections ended) when the scope closes. */
export const pipeServer = (connect: () => net.Socket, listen: (server: net.Server) => void): Effect.Effect<net.Server, Error, Scope.Scope> => {
  // Open connections, so closing ends them (server.close alone waits for every keep-alive one).
  const conns = new Set<net.Socket>()
  return Effect.acquireRelease(
    Effect.callback<net.Server, Error>((resume) => {
      const server = net.createServer((c) => {
        const u = connect()
        conns.add(c)
        c.once("close", () => conns.delete(c))
        c.pipe(u).pipe(c)
        c.on("error", () => u.destroy())
        u.on("error", () => c.destroy())
      })
      server.once("error", (error) => resume(Effect.fail(error)))
      server.once("listening", () => resume(Effect.succeed(server)))
      listen(server)
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        for (const c of conns) c.destroy()
      })
  )
}

const BRIDGE =
  `const net=require("node:net");const [s,p]=process.argv.slice(1);` +
  `const srv=net.createServer(c=>{const u=net.connect(+p,"127.0.0.1");c.pipe(u).pipe(c);c.on("error",()=>u.destroy());u.on("error",()=>c.destroy())});` +
  `srv.listen(s,()=>process.stdout.write("ready\\n"));process.stdin.on("end",()=>process.exit(0));process.stdin.resume()`

export const forwardPort = (options: {
  readonly runner: ProcessRunner["Service"]
  readonly id: string
  readonly pid: number
  /** Where the bridge's unix socket goes (root only; short: a socket path has at most 107 bytes). */
  readonly socketDir: string
  readonly port: number
  readonly host?: string | undefined
  readonly hostPort?: number | undefined
}): Effect.Effect<Forward, BoxError, Scope.Scope> =>
  Effect.gen(function* () {
    const { port } = options
    if (!Number.isInteger(port) || port < 1 || port > 65535) return yield* new BoxError({ message: `invalid port ${port}` })
    mkdirSync(options.socketDir, { recursive: true, mode: 0o700 })
    const sock = path.join(options.socketDir, `p${port}-${randomBytes(4).toString("hex")}.sock`)
    yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(sock, { force: true })))
    yield* startBridge(options.runner, options.pid, BRIDGE, [sock, String(port)], `port bridge for box ${options.id}`)
    const host = options.host ?? "127.0.0.1"
    const server = yield* pipeServer(
      () => net.connect(sock),
      (server) => server.listen(options.hostPort ?? 0, host)
    ).pipe(Effect.mapError((error) => new BoxError({ message: `forward of box ${options.id}: ${error.message}` })))
    return { host, port: (server.address() as net.AddressInfo).port, socketPath: sock }
  })
