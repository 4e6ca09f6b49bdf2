/**
 * `npm run keys -- integration add --tenant <uuid> --owner <org> [--provider github]`: registers
 * a git-host integration for a tenant (a self-hosted server has no GitHub App to install) and
 * prints its id and generated webhook secret once. `integration list --tenant <uuid>` lists them,
 * `integration remove <id> --tenant <uuid>` removes one. `integration token <id> --tenant <uuid>
 * --read-token-file <path> | --read-token-stdin | --clear` gives it a read token for private
 * repositories (sealed like secrets; never printed, never answered by the API), or takes it away;
 * `add` takes the same options.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import type { AdminCommand } from "../admin.ts"
import { isUuid } from "../../core/index.ts"
import { requireUuid } from "../cli.ts"
import { IntegrationStore } from "../store/IntegrationStore.ts"
import { KeyStore } from "../store/KeyStore.ts"
import { makeSecretBox } from "../secrets/secrets.ts"

const ownerPattern = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9_])?$/
export const PROVIDERS = ["github"] as const

/** The integration id a command names (a uuid), lower-cased. */
const integrationIdOf = (raw: string | undefined, action: string, fail: (message: string) => never): string => {
  if (raw === undefined || !isUuid(raw)) fail(`integration ${action} needs the integration's id (a uuid)${raw === undefined ? "" : `, got "${raw}"`}`)
  return raw!.toLowerCase()
}

/** Longest read token taken (GitHub's are about 40 to 100 characters). */
const MAX_TOKEN_LENGTH = 4096

/**
 * The read token of `--read-token-file <path>` or `--read-token-stdin` (never an argument: argv is
 * visible to every user of the host), trimmed; undefined when neither is given.
 */
export const readTokenInput = (values: Record<string, string | boolean | undefined>, fail: (message: string) => never): string | undefined => {
  const file = values["read-token-file"]
  const stdin = values["read-token-stdin"] === true
  if (file !== undefined && stdin) fail("give the read token either with --read-token-file or with --read-token-stdin, not both")
  if (file === undefined && !stdin) return undefined
  let text: string
  try {
    text = readFileSync(stdin ? 0 : String(file), "utf8")
  } catch (error) {
    return fail(`cannot read the read token${stdin ? " from stdin" : ` file ${String(file)}`}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
  const token = text.trim()
  if (token === "") fail("the read token is empty")
  if (token.length > MAX_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(token)) fail(`the read token must be one line of printable ASCII without spaces, at most ${MAX_TOKEN_LENGTH} characters`)
  return token
}

/** Owners compare case-insensitively, as GitHub logins do. */
export const ownerKey = (owner: string) => owner.trim().toLowerCase()

export const integrationCommand: AdminCommand = {
  name: "integration",
  usage:
    "integration add --tenant <uuid> --owner <org> [--provider github] [--read-token-file <path> | --read-token-stdin]\n" +
    "                 register a git-host integration; prints its id and webhook secret once\n" +
    "  integration token <id> --tenant <uuid> --read-token-file <path> | --read-token-stdin | --clear\n" +
    "                 set (or clear) the read token builds clone the integration's private repositories with\n" +
    "  integration list --tenant <uuid>\n" +
    "                 list a tenant's integrations (secrets are never shown again)\n" +
    "  integration remove <id> --tenant <uuid>\n" +
    "                 remove an integration: pushes signed with its secret are refused from then on",
  run: async ({ run, config, values, positionals, fail }) => {
    const keys = await run(KeyStore)
    const integrations = await run(IntegrationStore)
    const action = positionals[0] ?? fail("integration needs add, token, list or remove")
    const tenantId = requireUuid("tenant", values.tenant, fail, `integration ${action} `)
    if ((await run(keys.tenantOrganization(tenantId))) === undefined) fail(`unknown tenant ${tenantId}: mint a key for it first (create --tenant)`)
    if (action === "list") {
      for (const row of await run(integrations.integrations(tenantId))) {
        const readToken = (await run(integrations.readToken(tenantId, row.id))) !== undefined
        process.stdout.write(`${JSON.stringify({ id: row.id, provider: row.provider, owner: row.owner, installed_at: row.installed_at, read_token: readToken })}\n`)
      }
      return
    }
    const sealToken = () => {
      const token = readTokenInput(values, fail)
      return token === undefined ? undefined : makeSecretBox(config.secretsKey, config.previousSecretsKeys).seal(token)
    }
    if (action === "token") {
      const id = integrationIdOf(positionals[1], "token", fail)
      if (values.clear === true && (values["read-token-file"] !== undefined || values["read-token-stdin"] === true)) fail("--clear takes no token")
      const sealed = values.clear === true ? null : (sealToken() ?? fail("integration token needs --read-token-file <path>, --read-token-stdin or --clear"))
      if (!(await run(integrations.setReadToken(tenantId, id, sealed)))) fail(`tenant ${tenantId} has no integration ${id}`)
      process.stdout.write(sealed === null ? `cleared the read token of integration ${id}\n` : `set the read token of integration ${id}\n`)
      return
    }
    if (action === "remove") {
      const id = integrationIdOf(positionals[1], "remove", fail)
      if (!(await run(integrations.deleteIntegration(tenantId, id)))) fail(`tenant ${tenantId} has no integration ${id}`)
      process.stdout.write(`removed integration ${id}\n`)
      return
    }
    if (action !== "add") fail(`unknown integration action "${action}" (add, token, list or remove)`)
    const owner = typeof values.owner === "string" ? values.owner.trim() : fail("integration add needs --owner <org>")
    if (!ownerPattern.test(owner)) fail(`--owner must be a GitHub user or organization name, got "${owner}"`)
    const provider = typeof values.provider === "string" ? values.provider.toLowerCase() : "github"
    if (!(PROVIDERS as ReadonlyArray<string>).includes(provider)) fail(`--provider must be one of ${PROVIDERS.join(", ")}, got "${provider}"`)
    if (await run(integrations.integrationByOwner(tenantId, provider, ownerKey(owner)))) fail(`tenant ${tenantId} already has a ${provider} integration for ${owner}`)
    const sealedToken = sealToken()
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
    if (sealedToken !== undefined) await run(integrations.setReadToken(tenantId, id, sealedToken))
    process.stderr.write(
      `keys: registered ${provider} integration ${id} for ${owner} (tenant ${tenantId}).\n` +
        `keys: point the repository or organization webhook (content type application/json, push events) at\n` +
        `keys:   <SLIPWAY_PUBLIC_URL>/v1/integrations/gitrepo/webhook\n` +
        `keys: with this secret; it is shown only now:\n`
    )
    process.stdout.write(`${JSON.stringify({ integration_id: id, webhook_secret: secret })}\n`)
  }
}
