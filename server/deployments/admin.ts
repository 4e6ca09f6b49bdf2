/**
 * `npm run keys -- integration add --tenant <uuid> --owner <org> [--provider github]`: registers
 * a git-host integration for a tenant (a self-hosted server has no GitHub App to install) and
 * prints its id and generated webhook secret once. `integration list --tenant <uuid>` lists them,
 * `integration remove <id> --tenant <uuid>` removes one.
 */
import { randomBytes, randomUUID } from "node:crypto"
import type { AdminCommand } from "../admin.ts"
import { isUuid } from "../../core/index.ts"
import { requireUuid } from "../cli.ts"
import { IntegrationStore } from "../store/IntegrationStore.ts"
import { KeyStore } from "../store/KeyStore.ts"
import { makeSecretBox } from "../secrets/secrets.ts"

const ownerPattern = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9_])?$/
export const PROVIDERS = ["github"] as const

/** Owners compare case-insensitively, as GitHub logins do. */
export const ownerKey = (owner: string) => owner.trim().toLowerCase()

export const integrationCommand: AdminCommand = {
  name: "integration",
  usage:
    "integration add --tenant <uuid> --owner <org> [--provider github]\n" +
    "                 register a git-host integration; prints its id and webhook secret once\n" +
    "  integration list --tenant <uuid>\n" +
    "                 list a tenant's integrations (secrets are never shown again)\n" +
    "  integration remove <id> --tenant <uuid>\n" +
    "                 remove an integration: pushes signed with its secret are refused from then on",
  run: async ({ run, config, values, positionals, fail }) => {
    const keys = await run(KeyStore)
    const integrations = await run(IntegrationStore)
    const action = positionals[0] ?? fail("integration needs add, list or remove")
    const tenantId = requireUuid("tenant", values.tenant, fail, `integration ${action} `)
    if ((await run(keys.tenantOrganization(tenantId))) === undefined) fail(`unknown tenant ${tenantId}: mint a key for it first (create --tenant)`)
    if (action === "list") {
      for (const row of await run(integrations.integrations(tenantId))) {
        process.stdout.write(`${JSON.stringify({ id: row.id, provider: row.provider, owner: row.owner, installed_at: row.installed_at })}\n`)
      }
      return
    }
    if (action === "remove") {
      const raw = positionals[1]
      if (raw === undefined || !isUuid(raw)) fail(`integration remove needs the integration's id (a uuid)${raw === undefined ? "" : `, got "${raw}"`}`)
      const id = raw!.toLowerCase()
      if (!(await run(integrations.deleteIntegration(tenantId, id)))) fail(`tenant ${tenantId} has no integration ${id}`)
      process.stdout.write(`removed integration ${id}\n`)
      return
    }
    if (action !== "add") fail(`unknown integration action "${action}" (add, list or remove)`)
    const owner = typeof values.owner === "string" ? values.owner.trim() : fail("integration add needs --owner <org>")
    if (!ownerPattern.test(owner)) fail(`--owner must be a GitHub user or organization name, got "${owner}"`)
    const provider = typeof values.provider === "string" ? values.provider.toLowerCase() : "github"
    if (!(PROVIDERS as ReadonlyArray<string>).includes(provider)) fail(`--provider must be one of ${PROVIDERS.join(", ")}, got "${provider}"`)
    if (await run(integrations.integrationByOwner(tenantId, provider, ownerKey(owner)))) fail(`tenant ${tenantId} already has a ${provider} integration for ${owner}`)
    const secret = randomBytes(32).toString("hex")
    const id = randomUUID()
    await run(integrations.insertIntegration({
      id,
      tenant_id: tenantId,
      provider,
      owner,
      owner_key: ownerKey(owner),
      webhook_secret: makeSecretBox(config.secretsKey, config.previousSecretsKeys).seal(secret),
      installed_at: new Date().toISOString()
    }))
    process.stderr.write(
      `keys: registered ${provider} integration ${id} for ${owner} (tenant ${tenantId}).\n` +
        `keys: point the repository or organization webhook (content type application/json, push events) at\n` +
        `keys:   <SLIPWAY_PUBLIC_URL>/v1/integrations/gitrepo/webhook\n` +
        `keys: with this secret; it is shown only now:\n`
    )
    process.stdout.write(`${JSON.stringify({ integration_id: id, webhook_secret: secret })}\n`)
  }
}
