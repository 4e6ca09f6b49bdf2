/**
 * The tokens of service and download URLs: `<base64url claims>.<base64url HMAC-SHA256>`, keyed
 * by a key derived from the server's secrets key (so a token is worthless on another server,
 * and rotating the secrets key voids every outstanding link). Claims pin the tenant, the box and
 * the port or file; expiry is checked by the caller against the clock. Verification is constant
 * time; a token that does not verify tells nothing about why.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { deriveKey } from "../../secrets/secrets.ts"

/** A service token: one port of one box, under a grant that can be withdrawn. */
export interface ServiceClaims {
  readonly k: "s"
  /** Tenant, box id, port, grant id. */
  readonly t: string
  readonly b: string
  readonly p: number
  readonly g: string
  /** Expiry, epoch seconds. */
  readonly e: number
}

/** A download token: one file of one box, with the answer's headers. */
export interface DownloadClaims {
  readonly k: "d"
  readonly t: string
  readonly b: string
  /** The file's path in the box. */
  readonly f: string
  /** Expiry, epoch seconds; absent for a link that never expires. */
  readonly e?: number
  readonly ct?: string
  readonly cd?: "attachment" | "inline"
}

export type AccessClaims = ServiceClaims | DownloadClaims

export interface AccessTokens {
  readonly sign: (claims: AccessClaims) => string
  /** The claims of a token this server signed, else undefined (expiry not checked here). */
  readonly verify: (token: string) => AccessClaims | undefined
}

export const makeAccessTokens = (secretsKey: string): AccessTokens => {
  const key = createHmac("sha256", deriveKey(secretsKey)).update("slipway sandbox access tokens v1").digest()
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
        const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as AccessClaims
        return claims && typeof claims === "object" && (claims.k === "s" || claims.k === "d") ? claims : undefined
      } catch {
        return undefined
      }
    }
  }
}

/** Whether claims with expiry `e` (epoch seconds, or none) are still valid at `nowMs`. */
export const unexpired = (e: number | undefined, nowMs = Date.now()): boolean => e === undefined || e * 1000 > nowMs
