/**
 * Short self-contained tokens the server signs and later checks: `<base64url claims>.<base64url
 * HMAC-SHA256>`, keyed by a key derived from the server's secrets key and a purpose (so a token
 * of one kind never verifies as another, a token is worthless on another server, and rotating
 * the secrets key voids every outstanding one). Used by the sandbox links, the registry's push
 * tokens and the source upload URLs. Expiry is a claim the caller checks against its clock
 * (`unexpired`). Verification is constant time; a token that does not verify tells nothing about why.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { deriveKey } from "./secrets/secrets.ts"

export interface SignedTokens<C> {
  readonly sign: (claims: C) => string
  /** The claims of a token this server signed for this purpose, else undefined (expiry not checked here). */
  readonly verify: (token: string) => C | undefined
}

/**
 * A signer for one purpose. `accept` checks the shape of decoded claims (a token signed by this
 * server is trusted, but an old version of a claim set must not be misread).
 */
export const makeSignedTokens = <C>(secretsKey: string, purpose: string, accept: (claims: unknown) => claims is C): SignedTokens<C> => {
  const key = createHmac("sha256", deriveKey(secretsKey)).update(purpose).digest()
  const mac = (payload: string) => createHmac("sha256", key).update(payload).digest()
  return {
    sign: (claims) => {
      const payload = Buffer.from(JSON.stringify(claims), "utf8").toString("base64url")
      return `${payload}.${mac(payload).toString("base64url")}`
    },
    verify: (token) => {
      if (typeof token !== "string" || token.length > 8192) return undefined
      const dot = token.indexOf(".")
      if (dot <= 0) return undefined
      const payload = token.slice(0, dot)
      const given = Buffer.from(token.slice(dot + 1), "base64url")
      const expected = mac(payload)
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
      try {
        const claims: unknown = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"))
        return claims !== null && typeof claims === "object" && accept(claims) ? claims : undefined
      } catch {
        return undefined
      }
    }
  }
}

/** Whether claims with expiry `e` (epoch seconds, or none) are still valid at `nowMs`. */
export const unexpired = (e: number | undefined, nowMs = Date.now()): boolean => e === undefined || e * 1000 > nowMs
