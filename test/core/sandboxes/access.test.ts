/** Registry URLs, which registry a pull uses, and the access tokens' signatures. */
import { describe, expect, it } from "vitest"
import { parseRegistryUrl, registryFor, registryProvider } from "../../../core/index.ts"
import { makeAccessTokens, unexpired } from "../../../server/sandboxes/access/tokens.ts"

describe("registry URLs", () => {
  it("reads host[:port] and a repository prefix, ignoring a scheme and trailing slashes", () => {
    expect(parseRegistryUrl("https://GHCR.io/acme/")).toEqual({ host: "ghcr.io", path: "acme" })
    expect(parseRegistryUrl("127.0.0.1:5000")).toEqual({ host: "127.0.0.1:5000", path: "" })
    expect(parseRegistryUrl("index.docker.io")).toEqual({ host: "docker.io", path: "" })
    for (const bad of ["", "https://", "not a host", "host:99999", "ghcr.io/UPPER", "ghcr.io//x"]) expect(typeof parseRegistryUrl(bad), bad).toBe("string")
  })

  it("names the provider", () => {
    const provider = (url: string) => registryProvider(parseRegistryUrl(url) as never)
    expect(provider("docker.io")).toBe("DOCKER_HUB")
    expect(provider("ghcr.io")).toBe("GHCR")
    expect(provider("123.dkr.ecr.eu-west-1.amazonaws.com")).toBe("ECR")
    expect(provider("europe-docker.pkg.dev")).toBe("GAR")
    expect(provider("registry.example.com")).toBe("DOCKER_REGISTRY")
  })

  it("picks the registry of the image's host whose prefix holds the repository, the longest prefix winning", () => {
    const registries = [{ url: "ghcr.io" }, { url: "ghcr.io/acme" }, { url: "ghcr.io/acme/team" }, { url: "registry.example.com" }, { url: "docker.io" }]
    const pick = (domain: string, path: string) => registryFor({ domain, path }, registries)?.url
    expect(pick("ghcr.io", "acme/team/app")).toBe("ghcr.io/acme/team")
    expect(pick("ghcr.io", "acme/app")).toBe("ghcr.io/acme")
    // A prefix is whole path segments: acme-other is not under acme.
    expect(pick("ghcr.io", "acme-other/app")).toBe("ghcr.io")
    expect(pick("docker.io", "library/python")).toBe("docker.io")
    expect(pick("quay.io", "acme/app")).toBeUndefined()
    expect(registryFor({ domain: "ghcr.io", path: "x/app" }, [{ url: "ghcr.io/acme" }])).toBeUndefined()
  })
})

describe("access tokens", () => {
  const tokens = makeAccessTokens("0".repeat(64))
  const claims = { k: "s", t: "tenant", b: "box", p: 8080, g: "grant", e: 2_000_000_000 } as const

  it("verify what this key signed, and nothing altered or signed with another key", () => {
    const token = tokens.sign(claims)
    expect(tokens.verify(token)).toEqual(claims)
    const [payload, mac] = token.split(".") as [string, string]
    const forged = Buffer.from(JSON.stringify({ ...claims, p: 22 })).toString("base64url")
    expect(tokens.verify(`${forged}.${mac}`)).toBeUndefined()
    expect(tokens.verify(`${payload}.${mac.slice(0, -2)}AA`)).toBeUndefined()
    expect(tokens.verify(payload)).toBeUndefined()
    expect(tokens.verify("")).toBeUndefined()
    expect(makeAccessTokens("1".repeat(64)).verify(token)).toBeUndefined()
  })

  it("expire at their second", () => {
    expect(unexpired(undefined)).toBe(true)
    expect(unexpired(100, 99_999)).toBe(true)
    expect(unexpired(100, 100_000)).toBe(false)
  })
})
