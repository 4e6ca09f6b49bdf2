/**
 * What each area of the server contributes: its routes, built once at start from the services
 * they need, and the Layer of its runtime (controller and driver), started with the server and
 * stopped with it. Both areas are wired this same way.
 */
import { Context, Effect, type Layer } from "effect"
import type { Endpoint } from "../core/index.ts"
import type { ServerConfig } from "./config.ts"
import type { Handler, Route } from "./http/app.ts"
import type { Logger } from "./log.ts"
import type { DeploymentStore } from "./store/DeploymentStore.ts"
import type { KeyStore } from "./store/KeyStore.ts"
import type { RevisionLeases } from "./store/RevisionLeases.ts"
import type { SandboxStore } from "./store/SandboxStore.ts"

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

/** What every area may use: the environment and the stores (with the backend's revision leases). */
export type BaseServices = ServerEnv | DeploymentStore | SandboxStore | KeyStore | RevisionLeases

/** Requests an area answers outside the API table (a sandbox's dataplane, a deployment's URL). */
export interface RawHttp {
  /** Answers the request when it is the area's own (true); false leaves it to the API. */
  readonly request?: (request: import("node:http").IncomingMessage, response: import("node:http").ServerResponse) => boolean
  /** Takes a WebSocket upgrade when it is the area's own. */
  readonly upgrade?: (request: import("node:http").IncomingMessage, socket: import("node:stream").Duplex, head: Buffer) => boolean
}

export interface ServerModule {
  readonly name: string
  /** The area's runtime (controller and driver), built on the base services. */
  readonly layer?: Layer.Layer<any, never, BaseServices>
  /** The area's routes; may use the base services and what its `layer` provides. */
  readonly routes: Effect.Effect<ReadonlyArray<Route>, never, any>
  /** Requests the area serves outside the API table. */
  readonly http?: Effect.Effect<RawHttp, never, any>
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

/** Routes built from services: `routes(Effect.gen(function* () { const store = yield* Store; return [...] }))`. */
export const routes = <R>(build: Effect.Effect<ReadonlyArray<Route>, never, R>) => build
