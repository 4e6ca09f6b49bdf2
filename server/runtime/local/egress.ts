/**
 * The reverse of `RunningBox.forward`: services of the host (a deployment's PostgreSQL and
 * Redis) made reachable at `127.0.0.1:<port>` *inside* a box, whose network has only its own
 * loopback. The box listens on each port (`RunningBox.listen`: its exec helper listens inside
 * the box, under bwrap and gVisor alike) and every connection a process of the box makes there is
 * piped to the service on the host. The box reaches exactly these ports, nothing else of the host
 * network. The listeners end when the scope closes.
 */
import net from "node:net"
import { Context, Effect, Layer, type Scope } from "effect"
import { splice } from "./boxes/forward.ts"
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
    /** Makes each target reachable inside `box` at `127.0.0.1:<boxPort>`, until the scope closes. */
    readonly exposeToBox: (box: RunningBox, targets: ReadonlyArray<EgressTarget>) => Effect.Effect<void, BoxError, Scope.Scope>
  }
>()("slipway/Egress") {}

export const makeEgress = Egress.of({
  exposeToBox: (box, targets) =>
    Effect.gen(function* () {
      for (const t of targets) {
        if (!Number.isInteger(t.boxPort) || t.boxPort < 1 || t.boxPort > 65535) return yield* new BoxError({ message: `invalid box port ${t.boxPort}` })
      }
      for (const t of targets) yield* box.listen(t.boxPort, (connection) => splice(connection, net.connect(t.port, t.host)))
    })
})

export const EgressLive = Layer.succeed(Egress, makeEgress)
