/**
 * The tokens of service and download URLs (server/signedTokens.ts, purpose "slipway sandbox
 * access tokens v1"). Claims pin the tenant, the box and the port or file; expiry is checked by
 * the caller against the clock.
 */
import { makeSignedTokens, type SignedTokens, unexpired } from "../../signedTokens.ts"

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

export type AccessTokens = SignedTokens<AccessClaims>

export const makeAccessTokens = (secretsKey: string): AccessTokens =>
  makeSignedTokens(secretsKey, "slipway sandbox access tokens v1", (claims): claims is AccessClaims => {
    const kind = (claims as { readonly k?: unknown }).k
    return kind === "s" || kind === "d"
  })

export { unexpired }
