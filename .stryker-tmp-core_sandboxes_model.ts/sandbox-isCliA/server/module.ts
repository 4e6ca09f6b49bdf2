/** What each area of the server contributes: its migrations, its routes and optional background work. */
// @ts-nocheck

import { Effect } from "effect"
import type { Endpoint } from "../core/index.ts"
import type { KeyStore } from "./auth/keys.ts"
import type { ServerConfig } from "./config.ts"
import type { Db } from "./db/database.ts"
import type { Migration } from "./db/migrations.ts"
import type { Handler, Route } from "./http/app.ts"
import type { Logger } from "./log.ts"

export interface ServerContext {
  readonly db: Db
  readonly config: ServerConfig
  readonly keys: KeyStore
  readonly log: Logger
  /** Base of generated URLs (custom_url, dataplane_url), without a trailing slash. */
  readonly publicUrl: string
}

export interface ServerModule {
  readonly name: string
  readonly migrations: ReadonlyArray<Migration>
  readonly routes: (context: ServerContext) => ReadonlyArray<Route>
  /** Background work (e.g. the revision runtime); returns how to stop it. */
  readonly start?: (context: ServerContext) => { readonly stop: () => Promise<void> | void }
}

/** Binds a handler to its endpoint description with full typing of input and answer. */
export const implement = <E extends Endpoint>(endpoint: E, handler: Handler<E>): Route => ({ endpoint, handler })

/** Runs synchronous repository work inside a handler; thrown errors become defects (500 or 503). */
export const sql = <A>(work: () => A) => Effect.sync(work)
