/**
 * Who may do what in the registry: the credentials Slipway hands out (a push token, the
 * password of `oauth2accesstoken`; Slipway's own pull credentials), the repository path of a
 * deployment, and the grant the token endpoint answers for the scopes a client asks for.
 */
import { makeSignedTokens, type SignedTokens } from "../signedTokens.ts"

/** The user name the credentials go with (what `langgraph deploy` gives `docker login`). */
export const CREDENTIALS_USERNAME = "oauth2accesstoken"

export type RepositoryAction = "push" | "pull"

/** A credential: a deployment's repositories, the actions allowed there, until when. */
export interface CredentialClaims {
  /** Tenant and deployment. */
  readonly t: string
  readonly d: string
  readonly a: ReadonlyArray<RepositoryAction>
  /** Expiry, epoch seconds. */
  readonly e: number
}

export const makeCredentialTokens = (secretsKey: string): SignedTokens<CredentialClaims> =>
  makeSignedTokens(secretsKey, "slipway registry credentials v1", (claims): claims is CredentialClaims => {
    const c = claims as Partial<Record<keyof CredentialClaims, unknown>>
    return typeof c.t === "string" && typeof c.d === "string" && typeof c.e === "number" && Array.isArray(c.a) && c.a.every((action) => action === "push" || action === "pull")
  })

/** One path component of a repository name, as distribution's reference grammar has it. */
const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/

/**
 * The repository path of a deployment: `<tenant>/<deployment>`. The deployment's images live at
 * that path and below it (`langgraph deploy` pushes `<registry_url>/<name>:<tag>`). Undefined
 * when an id cannot be a path component (ids are lower-case UUIDs).
 */
export const repositoryOf = (tenantId: string, deploymentId: string): string | undefined => {
  const tenant = tenantId.toLowerCase()
  const deployment = deploymentId.toLowerCase()
  return COMPONENT.test(tenant) && COMPONENT.test(deployment) ? `${tenant}/${deployment}` : undefined
}

/** Whether the repository `name` is `repository` or below it. */
export const isUnder = (name: string, repository: string): boolean => name === repository || name.startsWith(`${repository}/`)

export interface RequestedScope {
  readonly type: string
  readonly name: string
  readonly actions: ReadonlyArray<string>
}

/**
 * The scopes of a token request: each `scope` parameter holds one or more space-separated
 * `type:name:action[,action]` (the name may itself hold colons, e.g. a port; the type may carry a
 * `(class)`). Malformed entries are dropped: they grant nothing.
 */
export const parseScopes = (values: ReadonlyArray<string>): ReadonlyArray<RequestedScope> =>
  values
    .flatMap((value) => value.split(" "))
    .flatMap((scope) => {
      const first = scope.indexOf(":")
      const last = scope.lastIndexOf(":")
      if (first <= 0 || last <= first + 1) return []
      const actions = scope.slice(last + 1).split(",").filter((action) => action.length > 0)
      return [{ type: scope.slice(0, first).replace(/\(.*\)$/, ""), name: scope.slice(first + 1, last), actions }]
    })

/**
 * What a credential grants of the requested scopes: only repositories at or below the
 * deployment's path, only the credential's actions. Anything else is left out (the token
 * endpoint still answers a token; the registry then refuses the request it does not cover).
 */
export const grant = (
  repository: string,
  allowed: ReadonlyArray<RepositoryAction>,
  requested: ReadonlyArray<RequestedScope>
): ReadonlyArray<{ readonly type: "repository"; readonly name: string; readonly actions: ReadonlyArray<string> }> =>
  requested.flatMap((scope) => {
    if (scope.type !== "repository" || !isUnder(scope.name, repository) || !scope.name.split("/").every((part) => COMPONENT.test(part))) return []
    const actions = [...new Set(scope.actions.filter((action) => (allowed as ReadonlyArray<string>).includes(action)))]
    return actions.length === 0 ? [] : [{ type: "repository" as const, name: scope.name, actions }]
  })
