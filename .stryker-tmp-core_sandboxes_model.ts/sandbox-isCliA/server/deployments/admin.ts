/**
 * `npm run keys -- integration add --tenant <uuid> --owner <org> [--provider github]`: registers
 * a git-host integration for a tenant (a self-hosted server has no GitHub App to install) and
 * prints its id and generated webhook secret once. `integration list --tenant <uuid>` lists them.
 */
// @ts-nocheck

import { randomBytes, randomUUID } from "node:crypto"
import type { AdminCommand } from "../admin.ts"
import { requireUuid } from "../cli.ts"
import { makeKeyStore } from "../auth/keys.ts"
import { makeDeploymentRepository } from "./repository.ts"
import { makeSecretBox } from "./secrets.ts"

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
    "                 list a tenant's integrations (secrets are never shown again)",
  run: ({ db, config, values, positionals, fail }) => {
    const action = positionals[0] ?? fail("integration needs add or list")
    const tenantId = requireUuid("tenant", values.tenant, fail, `integration ${action} `)
    if (makeKeyStore(db).tenantOrganization(tenantId) === undefined) fail(`unknown tenant ${tenantId}: mint a key for it first (create --tenant)`)
    const repository = makeDeploymentRepository(db)
    if (action === "list") {
      for (const row of repository.integrations(tenantId)) {
        process.stdout.write(`${JSON.stringify({ id: row.id, provider: row.provider, owner: row.owner, installed_at: row.installed_at })}\n`)
      }
      return
    }
    if (action !== "add") fail(`unknown integration action "${action}" (add or list)`)
    const owner = typeof values.owner === "string" ? values.owner.trim() : fail("integration add needs --owner <org>")
    if (!ownerPattern.test(owner)) fail(`--owner must be a GitHub user or organization name, got "${owner}"`)
    const provider = typeof values.provider === "string" ? values.provider.toLowerCase() : "github"
    if (!(PROVIDERS as ReadonlyArray<string>).includes(provider)) fail(`--provider must be one of ${PROVIDERS.join(", ")}, got "${provider}"`)
    if (repository.integrationByOwner(tenantId, provider, ownerKey(owner))) fail(`tenant ${tenantId} already has a ${provider} integration for ${owner}`)
    const secret = randomBytes(32).toString("hex")
    const id = randomUUID()
    repository.insertIntegration({
      id,
      tenant_id: tenantId,
      provider,
      owner,
      owner_key: ownerKey(owner),
      webhook_secret: makeSecretBox(config.secretsKey).seal(secret),
      installed_at: new Date().toISOString()
    })
    process.stderr.write(
      `keys: registered ${provider} integration ${id} for ${owner} (tenant ${tenantId}).\n` +
        `keys: point the repository or organization webhook (content type application/json, push events) at\n` +
        `keys:   <SLIPWAY_PUBLIC_URL>/v1/integrations/gitrepo/webhook\n` +
        `keys: with this secret; it is shown only now:\n`
    )
    process.stdout.write(`${JSON.stringify({ integration_id: id, webhook_secret: secret })}\n`)
  }
}
