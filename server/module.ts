/**
 * What every area of the server builds on: the server's environment (`ServerEnv`), the shape of
 * an area's routes and raw HTTP (`ServerModule`), binding a handler to its endpoint
 * (`implement`), and the API's clock (`now`).
 */
import { Context, type Effect } from "effect"
import type { Endpoint } from "../core/index.ts"
import type { ServerConfig } from "./config.ts"
import type { Handler, Route } from "./http/app.ts"
import type { Logger } from "./log.ts"

/** The server's settings and logger, and the base of generated URLs. */
export class ServerEnv extends Context.Service<
  ServerEnv,
  {
    readonly config: ServerConfig
    readonly log: Logger
    /** Base of generated URLs (custom_url, dataplane_url), without a trailing slash. */
    readonly publicUrl: string
  }
>()("slipway/ServerEnv") {}

/** Requests an area answers outside the API table (a sandbox's dataplane, a deployment's URL). */
export interface RawHttp {
  /** Answers the request when it is the area's own (true); false leaves it to the API. */
  readonly request?: (request: import("node:http").IncomingMessage, response: import("node:http").ServerResponse) => boolean
  /** Takes a WebSocket upgrade when it is the area's own. */
  readonly upgrade?: (request: import("node:http").IncomingMessage, socket: import("node:stream").Duplex, head: Buffer) => boolean
}

/**
 * What an area serves: its routes and raw HTTP hooks, each built once at start from the services
 * `R` they need. The services themselves (stores, runtimes, controllers) are Layers composed in
 * `server/modules.ts`, where a module that needs a service nothing provides does not compile.
 */
export interface ServerModule<R> {
  readonly name: string
  /** The area's routes. */
  readonly routes: Effect.Effect<ReadonlyArray<Route>, never, R>
  /** Requests the area serves outside the API table. */
  readonly http?: Effect.Effect<RawHttp, never, R>
}

/**
 * Binds a handler to its endpoint description with full typing of input and answer.
 *
 * A handler with steps is `Effect.fnUntraced(function* (input, context) {...})`, defined once,
 * rather than `(input, context) => Effect.gen(function* () {...})`: V8 gives every new generator
 * function its own prototype and object shape, so a generator function created per request costs
 * about 1.5 us (and old-space garbage) before its first step, against 0.05 us to call one made once.
 */
export const implement = <E extends Endpoint>(endpoint: E, handler: Handler<E>): Route => ({ endpoint, handler })

let lastMs = Number.NaN
let lastIso = ""

/**
 * The current time as the API writes it. Formatting a date costs about 1 us, a write request asks
 * several times, and writes at a few thousand per second often share a millisecond: the text of
 * the last millisecond is kept (the same string `new Date().toISOString()` would give).
 */
export const now = (): string => {
  const ms = Date.now()
  if (ms !== lastMs) {
    lastMs = ms
    lastIso = new Date(ms).toISOString()
  }
  return lastIso
}

/** The milliseconds of an ISO 8601 time; the text `now()` gave last is not parsed again (a new revision's `since` usually is). */
export const millisOf = (iso: string): number => (iso === lastIso ? lastMs : Date.parse(iso))
