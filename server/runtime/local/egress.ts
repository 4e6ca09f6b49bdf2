/**
 * The reverse of `RunningBox.forward`: services of the host (a deployment's PostgreSQL and
 * Redis) made reachable at `127.0.0.1:<port>` *inside* a box, whose network namespace has only
 * its own loopback. One bridge per call: the server's own `node`, started with `nsenter --net`
 * only (host files, the box's network), listens on the box's loopback for each port and pipes
 * every connection to a unix socket (a path: reachable across network namespaces) on which the
 * server dials the service on the host. The box reaches exactly these ports, nothing else of the
 * host network. Listeners and bridge end when the scope closes.
 */
import { randomBytes } from "node:crypto"
import { mkdirSync, rmSync } from "node:fs"
import net from "node:net"
import path from "node:path"
import { Context, Effect, Layer, type Scope } from "effect"
import { ProcessRunner } from "../ProcessRunner.ts"
import { pipeServer, startBridge } from "./boxes/forward.ts"
import { BoxError, type RunningBox } from "./boxes/model.ts"

export interface EgressTarget {
  /** Port the box connects to on its own loopback. */
  readonly boxPort: number
  /** Where the server connects on the host side. */
  readonly host: string
  readonly port: number
}

export class Egress extends Context.Service<
  Egress,
  {
    /** Makes each target reachable inside `box` at `127.0.0.1:<boxPort>`, until the scope closes. `socketDir`: a host directory only root may enter. */
    readonly exposeToBox: (box: RunningBox, targets: ReadonlyArray<EgressTarget>, socketDir: string) => Effect.Effect<void, BoxError, Scope.Scope>
  }
>()("slipway/Egress") {}

const BRIDGE =
  `const net=require("node:net");let n=0;const pairs=process.argv.slice(1);` +
  `for(const pair of pairs){const i=pair.indexOf("=");const port=+pair.slice(0,i),sock=pair.slice(i+1);` +
  `const srv=net.createServer(c=>{const u=net.connect(sock);c.pipe(u).pipe(c);c.on("error",()=>u.destroy());u.on("error",()=>c.destroy())});` +
  `srv.listen(port,"127.0.0.1",()=>{if(++n===pairs.length)process.stdout.write("ready\\n")})}` +
  `process.stdin.on("end",()=>process.exit(0));process.stdin.resume()`

export const makeEgress = Effect.map(ProcessRunner, (runner) =>
  Egress.of({
    exposeToBox: (box, targets, socketDir) =>
      Effect.gen(function* () {
        for (const t of targets) {
          if (!Number.isInteger(t.boxPort) || t.boxPort < 1 || t.boxPort > 65535) return yield* new BoxError({ message: `invalid box port ${t.boxPort}` })
        }
        mkdirSync(socketDir, { recursive: true, mode: 0o700 })
        const pairs: Array<string> = []
        // The host side first: a unix socket per target, each connection piped to the service.
        for (const t of targets) {
          // Short, whatever the box id: a socket path has at most 107 bytes.
          const sock = path.join(socketDir, `e${t.boxPort}-${randomBytes(4).toString("hex")}.sock`)
          rmSync(sock, { force: true })
          yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(sock, { force: true })))
          yield* pipeServer(
            () => net.connect(t.port, t.host),
            (server) => server.listen(sock)
          ).pipe(Effect.mapError((error) => new BoxError({ message: `egress of box ${box.id}: ${error.message}` })))
          pairs.push(`${t.boxPort}=${sock}`)
        }
        yield* startBridge(runner, box.pid, BRIDGE, pairs, `egress bridge for box ${box.id}`)
      })
  })
)

export const EgressLive = Layer.effect(Egress, makeEgress)
