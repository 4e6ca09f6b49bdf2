/**
 * `npm run keys -- quota --org <uuid> [--set <quantity>|default]`: shows an organization's
 * storage quota and usage, or changes the quota. The server reads the quota inside the same
 * transaction as each volume create/resize check, so a change applies to the next request of a
 * running server, without a restart. `--set default` removes the override (back to
 * SLIPWAY_STORAGE_QUOTA).
 */
import { Result } from "effect"
import { formatQuantity, fromBytes } from "../../core/sandboxes/quantity.ts"
import type { AdminCommand } from "../admin.ts"
import { requireUuid } from "../cli.ts"
import { QuotaStore } from "../store/QuotaStore.ts"
import { effectiveQuota, parseQuota } from "./quota.ts"


export const quotaCommand: AdminCommand = {
  name: "quota",
  usage: `quota --org <uuid> [--set <quantity>|default]
                 show an organization's sandbox storage quota and usage, or set it (e.g. 200Gi;
                 "default" returns to SLIPWAY_STORAGE_QUOTA). Applies to the next request.`,
  run: async ({ run, config, values, fail }) => {
    const quotas = await run(QuotaStore)
    const org = requireUuid("org", values.org, fail, "quota ")
    if ((await run(quotas.organizationQuota(org))) === undefined) fail(`no organization with id ${org}`)
    const set = values.set
    if (typeof set === "string") {
      let stored: string | null = null
      if (set.trim().toLowerCase() !== "default") {
        const parsed = parseQuota(set)
        if (Result.isFailure(parsed)) fail(`--set: ${parsed.failure}`)
        stored = Result.getOrThrow(parsed).canonical
      }
      await run(quotas.setOrganizationQuota(org, stored))
    } else if (set !== undefined) fail("--set needs a quantity such as 200Gi, or default")
    const quota = effectiveQuota(await run(quotas.organizationQuota(org)), config.storageQuota)
    const usage = await run(quotas.organizationUsage(org))
    process.stdout.write(
      `${JSON.stringify({ organization_id: org, storage_quota: quota.canonical, source: quota.source, usage: formatQuantity(fromBytes(usage)) })}\n`
    )
  }
}
