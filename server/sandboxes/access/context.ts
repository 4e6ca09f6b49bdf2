/**
 * What the registry, service URL and download URL handlers and their HTTP hook are built from:
 * the stores, the controller and the dataplane, the secret box and the link tokens; and where
 * the links are served.
 */
import { Effect } from "effect"
import { makeSecretBox } from "../../secrets/secrets.ts"
import { ServerEnv } from "../../module.ts"
import { Replicas } from "../../replicas/Replicas.ts"
import { RegistryStore } from "../../store/RegistryStore.ts"
import { SandboxStore } from "../../store/SandboxStore.ts"
import { ServiceGrantStore } from "../../store/ServiceGrantStore.ts"
import { Transactions } from "../../store/Transactions.ts"
import { SandboxController } from "../controller.ts"
import { Dataplane } from "../dataplane/Dataplane.ts"
import { makeAccessTokens } from "./tokens.ts"

/** Where the links are served, under the server's public URL. */
export const SERVICE_PREFIX = "/sandbox-services/"
export const SERVICE_LOGIN_PATH = "/sandbox-service-login"
export const DOWNLOAD_PREFIX = "/sandbox-downloads/"
/** The header `service_url` requests carry (the npm client's `SERVICE_TOKEN_HEADER`). */
export const SERVICE_TOKEN_HEADER = "x-langsmith-sandbox-service-token"
/** The cookie `browser_url` sets (HttpOnly, scoped to the service's path). */
export const SERVICE_COOKIE = "slipway_sandbox_service"

export const makeAccessContext = Effect.gen(function* () {
  const { config, publicUrl, log } = yield* ServerEnv
  const { transaction } = yield* Transactions
  const sandboxStore = yield* SandboxStore
  const registryStore = yield* RegistryStore
  const grantStore = yield* ServiceGrantStore
  const controller = yield* SandboxController
  const dataplane = yield* Dataplane
  const replicas = yield* Replicas
  // startServer always resolves a key (SLIPWAY_SECRETS_KEY or the key file); a bare test setup may not.
  const secretsKey = config.secretsKey ?? (yield* Effect.die(new Error("the sandbox access features need the secrets key")))
  return {
    transaction,
    sandboxStore,
    registryStore,
    grantStore,
    controller,
    dataplane,
    replicas,
    log,
    publicUrl,
    secure: publicUrl.startsWith("https://"),
    secrets: makeSecretBox(secretsKey, config.previousSecretsKeys),
    tokens: makeAccessTokens(secretsKey)
  }
})

export type AccessContext = Effect.Success<typeof makeAccessContext>

/** The path of a box port's service, with its trailing slash. */
export const servicePath = (sandboxId: string, port: number) => `${SERVICE_PREFIX}${sandboxId}/${port}/`
