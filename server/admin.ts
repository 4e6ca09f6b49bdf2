/**
 * What an extra command of the key tool (server/keys.ts) is: server areas contribute them
 * (e.g. the storage quota), the key tool lists them.
 */
import type { Effect } from "effect"
import type { ServerConfig } from "./config.ts"
import type { DeploymentStore } from "./store/DeploymentStore.ts"
import type { KeyStore } from "./store/KeyStore.ts"
import type { SecretsKeys } from "./secretsKey.ts"
import type { SandboxStore } from "./store/SandboxStore.ts"

export interface AdminInput {
  readonly keys: KeyStore["Service"]
  readonly deployments: DeploymentStore["Service"]
  readonly sandboxes: SandboxStore["Service"]
  /** Runs a store operation; a store failure ends the tool with its message. */
  readonly run: <A, E>(effect: Effect.Effect<A, E>) => Promise<A>
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
