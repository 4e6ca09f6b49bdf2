/**
 * Free TCP ports on the host, for processes the server starts (a deployment's PostgreSQL and
 * Redis, a forward's listener): the kernel picks a free port (a listener on port 0, closed at
 * once), and no other reservation of this server gets it until the reservation's scope closes.
 * (Another program on the host may still take it between the probe and its use: callers that
 * bind it themselves retry on EADDRINUSE.)
 */
import net from "node:net"
import { Context, Data, Effect, Layer, Schedule, type Scope } from "effect"

export class PortError extends Data.TaggedError("PortError")<{ readonly message: string }> {}

export class PortAllocator extends Context.Service<
  PortAllocator,
  {
    /** A free port on `host` (default 127.0.0.1), reserved until the scope closes. */
    readonly reserve: (host?: string) => Effect.Effect<number, PortError, Scope.Scope>
  }
>()("slipway/PortAllocator") {}

/** A port the kernel says is free on `host` now. */
const probe = (host: string) =>
  Effect.callback<number, PortError>((resume) => {
    const server = net.createServer()
    server.unref()
    server.once("error", (error) => resume(Effect.fail(new PortError({ message: `no free port on ${host}: ${error.message}` }))))
    server.listen(0, host, () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resume(Effect.succeed(port)))
    })
  })

export const makePortAllocator = Effect.sync(() => {
  /** Ports reserved by this server, by host. */
  const reserved = new Set<string>()
  const reserve = (host = "127.0.0.1") =>
    Effect.acquireRelease(
      probe(host).pipe(
        Effect.flatMap((port) =>
          reserved.has(`${host}:${port}`) ? Effect.fail(new PortError({ message: `port ${port} on ${host} is reserved` })) : Effect.succeed(port)
        ),
        // The kernel hands out ports in turn: a reserved one comes back rarely, and the next probe differs.
        Effect.retry(Schedule.recurs(20)),
        Effect.tap((port) => Effect.sync(() => reserved.add(`${host}:${port}`)))
      ),
      (port) => Effect.sync(() => reserved.delete(`${host}:${port}`))
    )
  return PortAllocator.of({ reserve })
})

export const PortAllocatorLive = Layer.effect(PortAllocator, makePortAllocator)
