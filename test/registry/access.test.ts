/** The grant of the token endpoint and the registry's settings, as pure functions. */
import { describe, expect, it } from "vitest"
import { ConfigError } from "../../server/config.ts"
import { grant, isUnder, makeCredentialTokens, parseScopes, repositoryOf } from "../../server/registry/access.ts"
import { defaultRegistrySettings, registrySettingsFromEnv } from "../../server/registry/settings.ts"

const REPO = "0a000000-0000-4000-8000-00000000000a/d1000000-0000-4000-8000-000000000001"

describe("registry access", () => {
  it("names a deployment's repository by tenant and deployment, lower case", () => {
    expect(repositoryOf("0A000000-0000-4000-8000-00000000000A", "d1000000-0000-4000-8000-000000000001")).toBe(REPO)
    expect(repositoryOf("a b", "d")).toBeUndefined()
    expect(repositoryOf("t", "../x")).toBeUndefined()
    expect(isUnder(`${REPO}/agent`, REPO)).toBe(true)
    expect(isUnder(REPO, REPO)).toBe(true)
    expect(isUnder(`${REPO}x/agent`, REPO)).toBe(false)
  })

  it("parses the scopes of a token request", () => {
    expect(parseScopes([`repository:${REPO}/agent:pull,push repository(plugin):x/y:pull`, "registry:catalog:*", "nonsense", "repository::pull"])).toEqual([
      { type: "repository", name: `${REPO}/agent`, actions: ["pull", "push"] },
      { type: "repository", name: "x/y", actions: ["pull"] },
      { type: "registry", name: "catalog", actions: ["*"] }
    ])
    expect(parseScopes(["repository:host:5000/x:pull"])).toEqual([{ type: "repository", name: "host:5000/x", actions: ["pull"] }])
  })

  it("grants only the credential's actions on the deployment's repositories", () => {
    const requested = parseScopes([`repository:${REPO}/agent:pull,push,delete,* repository:${REPO}x/agent:pull registry:catalog:* repository:${REPO}/../other:pull`])
    expect(grant(REPO, ["push", "pull"], requested)).toEqual([{ type: "repository", name: `${REPO}/agent`, actions: ["pull", "push"] }])
    expect(grant(REPO, ["pull"], requested)).toEqual([{ type: "repository", name: `${REPO}/agent`, actions: ["pull"] }])
    expect(grant(REPO, ["pull"], parseScopes([`repository:${REPO}/agent:push`]))).toEqual([])
  })

  it("verifies only credentials it signed, with the right key and purpose", () => {
    const tokens = makeCredentialTokens("a".repeat(64))
    const token = tokens.sign({ t: "t", d: "d", a: ["pull"], e: 1 })
    expect(tokens.verify(token)).toEqual({ t: "t", d: "d", a: ["pull"], e: 1 })
    expect(makeCredentialTokens("b".repeat(64)).verify(token)).toBeUndefined()
    expect(tokens.verify(`${token.split(".")[0]}.`)).toBeUndefined()
    const forged = tokens.sign({ t: "t", d: "d", a: ["pull", "delete" as "pull"], e: 1 })
    expect(tokens.verify(forged)).toBeUndefined()
  })
})

describe("registry settings", () => {
  it("has defaults and reads the documented variables", () => {
    expect(registrySettingsFromEnv({})).toEqual(defaultRegistrySettings)
    const settings = registrySettingsFromEnv({
      SLIPWAY_REGISTRY: "ON",
      SLIPWAY_REGISTRY_ADDR: "0.0.0.0:5443",
      SLIPWAY_REGISTRY_HOST: "registry.example.com",
      SLIPWAY_REGISTRY_TOKEN_TTL: "60",
      SLIPWAY_REGISTRY_GC: "off"
    })
    expect(settings).toMatchObject({ mode: "on", addr: "0.0.0.0:5443", publicHost: "registry.example.com", pushTokenTtlSeconds: 60, accessTokenTtlSeconds: 60, gcSchedule: undefined })
    expect(registrySettingsFromEnv({ SLIPWAY_REGISTRY_URL: "https://registry.internal:5000/" }).url).toBe("https://registry.internal:5000")
  })

  it("refuses bad values with a clear message", () => {
    const bad: ReadonlyArray<[Record<string, string>, RegExp]> = [
      [{ SLIPWAY_REGISTRY: "maybe" }, /SLIPWAY_REGISTRY must be one of auto, on, off/],
      [{ SLIPWAY_REGISTRY_ADDR: "5000" }, /SLIPWAY_REGISTRY_ADDR must be host:port/],
      [{ SLIPWAY_REGISTRY_URL: "registry:5000" }, /SLIPWAY_REGISTRY_URL must be http\(s\):\/\/host/],
      [{ SLIPWAY_REGISTRY_HOST: "https://registry.example.com" }, /SLIPWAY_REGISTRY_HOST must be host\[:port\]/],
      [{ SLIPWAY_REGISTRY_TOKEN_TTL: "0" }, /SLIPWAY_REGISTRY_TOKEN_TTL must be a number of seconds/],
      [{ SLIPWAY_REGISTRY_TOKEN_TTL: "1h" }, /SLIPWAY_REGISTRY_TOKEN_TTL must be a number of seconds/],
      [{ SLIPWAY_REGISTRY_GC: "every night" }, /SLIPWAY_REGISTRY_GC must be a cron expression/]
    ]
    for (const [env, message] of bad) {
      expect(() => registrySettingsFromEnv(env)).toThrow(ConfigError)
      expect(() => registrySettingsFromEnv(env)).toThrow(message)
    }
  })
})
