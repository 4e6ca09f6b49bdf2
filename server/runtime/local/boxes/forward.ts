/**
 * A box's ports and the host: connections to a port on the box's loopback (`connect`), ports of
 * the box's loopback served from the host (`listen`), and host listeners piping to a box's port
 * (`forwardPort`). A box has only its own loopback (bwrap: a network namespace of its own; gVisor:
 * the sandbox's own network stack), so every byte passes through the box's exec helper, which
 * opens the connection (or listens) inside the box and relays it over its channel: no route, no
 * interface, no host socket is shared with the box.
 *
 * A bwrap runner without the exec helper (`SLIPWAY_EXEC_HELPER=off`, no gcc) uses bridges instead:
 * the host's node joined to the box's network namespace only (host files, no box privileges),
 * listening on a unix socket (a path: reachable across network namespaces) in the runtime's
 * short socket directory (root only). They end, and their sockets go, when their scope closes.
 */
import { randomBytes } from "node:crypto"
import { mkdirSync, rmSync } from "node:fs"
import net from "node:net"
import path from "node:path"
import type { Duplex } from "node:stream"
import { Effect, Scope } from "effect"
import type { ProcessRunner } from "../../ProcessRunner.ts"
import { BoxError, type Forward } from "./model.ts"
import { HOST_PATH } from "./spec.ts"

/** Pipes two connections both ways; either one's end or error ends the other. */
export const splice = (a: Duplex, b: Duplex) => {
  a.pipe(b).pipe(a)
  a.on("error", () => b.destroy())
  b.on("error", () => a.destroy())
  a.once("close", () => b.destroy())
  b.once("close", () => a.destroy())
}

/**
 * A host server handing each connection to `connect()` (a connection into a box), piped both ways;
 * closed (its connections ended) when the scope closes. A connection that cannot be made is closed.
 */
export const pipeServer = (
  connect: () => Effect.Effect<Duplex, BoxError>,
  listen: (server: net.Server) => void
): Effect.Effect<net.Server, Error, Scope.Scope> => {
  // Open connections, so closing ends them (server.close alone waits for every keep-alive one).
  const conns = new Set<net.Socket>()
  return Effect.acquireRelease(
    Effect.callback<net.Server, Error>((resume) => {
      const server = net.createServer((client) => {
        conns.add(client)
        client.once("close", () => conns.delete(client))
        client.on("error", () => undefined)
        client.pause()
        Effect.runFork(
          Effect.match(connect(), {
            onFailure: () => client.destroy(),
            onSuccess: (upstream) => {
              if (client.destroyed) return void upstream.destroy()
              splice(client, upstream)
              client.resume()
            }
          })
        )
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

/** Runs `code` with the server's node in the network namespace of `pid`; answers once it printed its first line (its "ready"). */
const startBridge = (runner: ProcessRunner["Service"], pid: number, code: string, args: ReadonlyArray<string>, what: string) =>
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

// The dial bridge: each connection to its socket starts with the box port (2 bytes, big-endian), then is piped to 127.0.0.1:port.
const DIAL =
  `const net=require("node:net");const [s]=process.argv.slice(1);` +
  `const srv=net.createServer(c=>{c.once("readable",function go(){const h=c.read(2);if(h===null)return c.once("readable",go);` +
  `const u=net.connect(h.readUInt16BE(0),"127.0.0.1");c.pipe(u).pipe(c);c.on("error",()=>u.destroy());u.on("error",()=>c.destroy());c.on("close",()=>u.destroy());u.on("close",()=>c.destroy())})});` +
  `srv.listen(s,()=>process.stdout.write("ready\\n"));process.stdin.on("end",()=>process.exit(0));process.stdin.resume()`

// The listen bridge: listens on 127.0.0.1:port in the box and pipes each connection to the host's unix socket.
const LISTEN =
  `const net=require("node:net");const [port,sock]=process.argv.slice(1);` +
  `const srv=net.createServer(c=>{const u=net.connect(sock);c.pipe(u).pipe(c);c.on("error",()=>u.destroy());u.on("error",()=>c.destroy());c.on("close",()=>u.destroy());u.on("close",()=>c.destroy())});` +
  `srv.on("error",e=>{process.stderr.write(String(e.message));process.exit(1)});srv.listen(+port,"127.0.0.1",()=>process.stdout.write("ready\\n"));process.stdin.on("end",()=>process.exit(0));process.stdin.resume()`

/** The bridges of one box without the exec helper: one dial bridge (started on the first connect, in the box's scope), one listen bridge per `listen`. */
export const makeBridges = (options: {
  readonly runner: ProcessRunner["Service"]
  readonly id: string
  /** Host pid of the box's init (its network namespace). */
  readonly pid: number
  /** Where the bridges' unix sockets go (root only; short: a socket path has at most 107 bytes). */
  readonly socketDir: string
  /** The box's own scope: the dial bridge lives in it. */
  readonly scope: Scope.Scope
}) => {
  const socketPath = (what: string) => {
    mkdirSync(options.socketDir, { recursive: true, mode: 0o700 })
    return path.join(options.socketDir, `${what}-${randomBytes(4).toString("hex")}.sock`)
  }
  let dial: Promise<string> | undefined
  const dialSocket = Effect.suspend(() => {
    if (!dial) {
      const sock = socketPath("d")
      dial = Effect.runPromise(
        Effect.gen(function* () {
          yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(sock, { force: true })))
          yield* startBridge(options.runner, options.pid, DIAL, [sock], `the port bridge of box ${options.id}`)
          return sock
        }).pipe(Scope.provide(options.scope))
      )
      dial.catch(() => (dial = undefined))
    }
    const pending = dial
    return Effect.tryPromise({ try: () => pending, catch: (error) => (error instanceof BoxError ? error : new BoxError({ message: String(error) })) })
  })
  return {
    connect: (port: number): Effect.Effect<Duplex, BoxError> =>
      Effect.flatMap(dialSocket, (sock) =>
        Effect.callback<Duplex, BoxError>((resume) => {
          const socket = net.connect(sock)
          socket.once("error", (error) => resume(Effect.fail(new BoxError({ message: `port ${port} in box ${options.id}: ${error.message}` }))))
          socket.once("connect", () => {
            const header = Buffer.allocUnsafe(2)
            header.writeUInt16BE(port)
            socket.write(header)
            resume(Effect.succeed(socket))
          })
        })
      ),
    listen: (port: number, onConnection: (connection: Duplex) => void): Effect.Effect<void, BoxError, Scope.Scope> =>
      Effect.gen(function* () {
        const sock = socketPath(`l${port}`)
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(sock, { force: true })))
        yield* Effect.acquireRelease(
          Effect.callback<net.Server, BoxError>((resume) => {
            const server = net.createServer(onConnection)
            server.once("error", (error) => resume(Effect.fail(new BoxError({ message: `box ${options.id}: ${error.message}` }))))
            server.listen(sock, () => resume(Effect.succeed(server)))
          }),
          (server) => Effect.sync(() => server.close())
        )
        yield* startBridge(options.runner, options.pid, LISTEN, [String(port), sock], `the listen bridge of box ${options.id}`)
      })
  }
}

/**
 * Listens on the host (default 127.0.0.1, a free port) and on a unix socket in `socketDir`
 * (the deployment proxy dials it: no TCP hop), each connection piped to `connect(port)`.
 */
export const forwardPort = (options: {
  readonly connect: (port: number) => Effect.Effect<Duplex, BoxError>
  readonly id: string
  /** Where its unix socket goes (root only; short: a socket path has at most 107 bytes). */
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
    const fail = (error: Error) => new BoxError({ message: `forward of box ${options.id}: ${error.message}` })
    yield* pipeServer(
      () => options.connect(port),
      (server) => server.listen(sock)
    ).pipe(Effect.mapError(fail))
    const host = options.host ?? "127.0.0.1"
    const server = yield* pipeServer(
      () => options.connect(port),
      (server) => server.listen(options.hostPort ?? 0, host)
    ).pipe(Effect.mapError(fail))
    return { host, port: (server.address() as net.AddressInfo).port, socketPath: sock }
  })
