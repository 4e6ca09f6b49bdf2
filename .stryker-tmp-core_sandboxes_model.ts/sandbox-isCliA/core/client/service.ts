/**
 * The client as an Effect service, for applications built from layers:
 * `program.pipe(Effect.provide(SlipwayClient.layer({ baseUrl, apiKey })))`, then
 * `const client = yield* SlipwayClient` inside the program.
 */
// @ts-nocheck

import { Context, Layer } from "effect"
import { Api } from "../api/index.ts"
import { type Client, type ClientOptions, makeClient } from "./client.ts"

export class SlipwayClient extends Context.Service<SlipwayClient, Client<Api>>()("slipway/SlipwayClient") {
  /** A layer providing a client for the whole API, configured by `options`. */
  static readonly layer = (options: ClientOptions): Layer.Layer<SlipwayClient> => Layer.sync(SlipwayClient, () => makeClient(Api, options))
}
