/**
 * What an extra command of the key tool (server/keys.ts) is: server areas contribute them
 * (e.g. the storage quota), the key tool lists them.
 */
import type { Effect } from "effect"
import type { ServerConfig } from "./config.ts"
import type { SecretsKeys } from "./secrets/secretsKey.ts"
import type { Stores } from "./store/index.ts"

export interface AdminInput {
  /**
   * Runs an effect on the database's stores (`await run(QuotaStore)` is the store itself); a
   * store failure ends the tool with its message.
   */
  readonly run: <A, E>(effect: Effect.Effect<A, E, Stores>) => Promise<A>
  /** `config.secretsKey` is the resolved key (SLIPWAY_SECRETS_KEY or the key file); `secrets` says where it came from. */
  readonly config: ServerConfig
  readonly secrets: SecretsKeys
  readonly values: Record<string, string | boolean | undefined>
  readonly positionals: ReadonlyArray<string>
  readonly fail: (message: string) => never
}

export interface AdminCommand {
  readonly name: string
  readonly usage: string
  readonly run: (input: AdminInput) => Promise<void>
}
