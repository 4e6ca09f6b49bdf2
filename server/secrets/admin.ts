/**
 * `npm run keys -- secrets rotate`: re-seals every stored secret value, webhook secret and
 * registry password with a new key, and the database's check value of the key (check.ts), in one
 * transaction. Values stored in plaintext (written before encryption was on by
 * default) are sealed on the way.
 *
 * With the generated key file: the new key goes to `<key file>.next` first, the transaction
 * commits, then `.next` replaces the key file (an interrupted rotation is finished by running
 * it again; meanwhile the server opens values with either key). With SLIPWAY_SECRETS_KEY: the
 * new key is SLIPWAY_NEW_SECRETS_KEY, which the operator then sets as SLIPWAY_SECRETS_KEY.
 * Stop the server while rotating: it keeps the key it started with.
 */
import { existsSync } from "node:fs"
import { Effect } from "effect"
import type { AdminCommand } from "../admin.ts"
import { ClusterStore } from "../store/ClusterStore.ts"
import { DeploymentStore } from "../store/DeploymentStore.ts"
import { IntegrationStore } from "../store/IntegrationStore.ts"
import { RegistryStore } from "../store/RegistryStore.ts"
import { Transactions } from "../store/Transactions.ts"
import { SECRETS_CHECK, sealedCheck } from "./check.ts"
import { newSecretsKey, promoteNextKey, writeKeyFile } from "./secretsKey.ts"
import { makeSecretBox } from "./secrets.ts"

export const secretsCommand: AdminCommand = {
  name: "secrets",
  usage:
    "secrets rotate   re-seal every stored secret value and webhook secret with a new key, in one transaction\n" +
    "                 (stop the server first; with SLIPWAY_SECRETS_KEY set, the new key is SLIPWAY_NEW_SECRETS_KEY)",
  run: async ({ run, secrets, positionals, fail }) => {
    if (positionals[0] !== "rotate") fail(`unknown secrets action "${positionals[0] ?? ""}" (rotate)`)
    if (secrets.source === "memory") fail("an in-memory database has no stored secrets to rotate")
    let newKey: string
    if (secrets.source === "env") {
      newKey = process.env.SLIPWAY_NEW_SECRETS_KEY ?? fail("SLIPWAY_SECRETS_KEY is set: put the new key in SLIPWAY_NEW_SECRETS_KEY")
      if (newKey === secrets.key) fail("SLIPWAY_NEW_SECRETS_KEY is the current key")
    } else {
      const next = `${secrets.path!}.next`
      // An unfinished rotation left its key: values may already be sealed with it, so finish with it.
      newKey = secrets.previous[0] ?? newSecretsKey()
      if (!existsSync(next)) writeKeyFile(next, newKey)
    }
    const current = makeSecretBox(secrets.key, secrets.previous)
    const replacement = makeSecretBox(newKey)
    const reseal = (stored: string) => replacement.seal(current.open(stored))
    // Every sealed value the stores hold, in one transaction, before the key file is replaced.
    const counts = await run(
      Effect.gen(function* () {
        const { transaction } = yield* Transactions
        return yield* transaction(
          Effect.all({
            secretValues: Effect.flatMap(DeploymentStore, (store) => store.resealSecrets(reseal)),
            webhookSecrets: Effect.flatMap(IntegrationStore, (store) => store.resealWebhookSecrets(reseal)),
            registryPasswords: Effect.flatMap(RegistryStore, (store) => store.resealRegistryPasswords(reseal)),
            // The check every replica opens at start (check.ts): sealed with the new key, so a
            // replica still on the old key refuses to start instead of sealing with it.
            check: Effect.flatMap(ClusterStore, (store) => store.putSetting(SECRETS_CHECK, sealedCheck(newKey)))
          })
        )
      })
    )
    const { registryPasswords } = counts
    if (secrets.source === "file") promoteNextKey(secrets.path!)
    process.stderr.write(
      `keys: re-sealed ${counts.secretValues} secret values, ${counts.webhookSecrets} webhook secrets and ${registryPasswords} registry passwords with a new key` +
        (secrets.source === "file"
          ? ` (now in ${secrets.path}).\n`
          : `.\nkeys: set SLIPWAY_SECRETS_KEY to the value of SLIPWAY_NEW_SECRETS_KEY before starting the server again.\n`)
    )
    process.stdout.write(`${JSON.stringify({ rotated: true, secret_values: counts.secretValues, webhook_secrets: counts.webhookSecrets, registry_passwords: registryPasswords })}\n`)
  }
}
