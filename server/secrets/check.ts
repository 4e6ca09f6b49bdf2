/**
 * One secrets key for every replica: the database keeps a check value sealed with the key
 * (`cluster_settings.secrets_check`). The first server to start on a database writes it; every
 * start opens it, and a key that cannot is refused before anything runs: without this, replicas
 * that each generated a key file would seal secrets no other replica can open, silently.
 * `secrets rotate` re-seals it with the other values (admin.ts).
 */
import { Effect } from "effect"
import type { ClusterStore } from "../store/ClusterStore.ts"
import { makeSecretBox } from "./secrets.ts"

export const SECRETS_CHECK = "secrets_check"
/** What the check value opens to. */
const EXPECTED = "slipway secrets key check v1"

export class SecretsKeyMismatch extends Error {
  override readonly name = "SecretsKeyMismatch"
}

/** Seals a fresh check value with `key`. */
export const sealedCheck = (key: string): string => makeSecretBox(key).seal(EXPECTED)

/**
 * Writes the check value when the database has none; fails (a defect: the start stops with its
 * message) when the configured key, or a key of an unfinished rotation, cannot open it.
 */
export const checkSecretsKey = (cluster: ClusterStore["Service"], key: string | undefined, previous: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    // startServer always resolves a key; a bare test setup may not (nothing is sealed then).
    if (key === undefined) return
    const stored = yield* Effect.orDie(cluster.initSetting(SECRETS_CHECK, sealedCheck(key)))
    let opened: string | undefined
    try {
      opened = makeSecretBox(key, previous).open(stored)
    } catch {
      opened = undefined
    }
    if (opened !== EXPECTED) {
      return yield* Effect.die(
        new SecretsKeyMismatch(
          "this server's secrets key cannot open the database's secrets check value: another server (replica) on this database seals secrets with a different key. " +
            "Set the same SLIPWAY_SECRETS_KEY on every replica (the key the others use; a generated key is in the key file beside their DATABASE_PATH, <database>.secrets-key) and start again"
        )
      )
    }
  })
