/**
 * Which stored registry's credentials a box's image is pulled with: the tenant's registry whose
 * host (and repository prefix, the longest one) matches the image reference. The password is
 * opened here, just before the pull, and handed to the runtime only (never logged or answered).
 */
import { Effect } from "effect"
import { registryFor } from "../../../core/index.ts"
import type { SecretBox } from "../../secrets/secrets.ts"
import { parseReference } from "../../runtime/local/reference.ts"
import type { RegistryStore } from "../../store/RegistryStore.ts"

/** Credentials for one registry host, as a pull takes them. */
export interface PullCredentials {
  /** The registry's name (for messages; never the secret). */
  readonly registry: string
  readonly username: string
  readonly password: string
}

export const makeRegistryCredentials =
  (registryStore: RegistryStore["Service"], secrets: SecretBox, warn: (message: string, fields: Record<string, unknown>) => void) =>
  (tenantId: string, image: string, registryId?: string | null): Effect.Effect<PullCredentials | undefined> =>
    Effect.gen(function* () {
      // A named registry (a snapshot's `registry_id`) wins; else the one matching the image's host.
      let chosen = registryId ? yield* registryStore.registryById(tenantId, registryId) : undefined
      if (!chosen) {
        let reference: { readonly domain: string; readonly path: string }
        try {
          reference = parseReference(image)
        } catch {
          return undefined // the pull reports the invalid reference
        }
        chosen = registryFor(reference, yield* registryStore.tenantRegistries(tenantId))
      }
      if (!chosen) return undefined
      try {
        return { registry: chosen.name, username: chosen.username, password: secrets.open(chosen.password_sealed) }
      } catch (error) {
        warn("a registry's stored password does not open with the secrets key: pulling anonymously", { registry: chosen.name, error: (error as Error).message })
        return undefined
      }
    }).pipe(
      Effect.catch((error) =>
        Effect.sync(() => {
          warn("registries could not be read: pulling anonymously", { error: error.message })
          return undefined
        })
      )
    )
