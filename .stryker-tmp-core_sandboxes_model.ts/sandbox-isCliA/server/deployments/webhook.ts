/** GitHub push webhooks: signature check and repository matching. No I/O, no logging of bodies. */
// @ts-nocheck

import { createHmac, timingSafeEqual } from "node:crypto"

/** `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`, compared in constant time. */
export const verifySignature = (secret: string, rawBody: Buffer, header: string | undefined): boolean => {
  if (typeof header !== "string" || !/^sha256=[0-9a-f]{64}$/i.test(header.trim())) return false
  const expected = createHmac("sha256", secret).update(rawBody).digest()
  return timingSafeEqual(expected, Buffer.from(header.trim().slice(7), "hex"))
}

export const sign = (secret: string, rawBody: Buffer | string): string => `sha256=${createHmac("sha256", secret).update(rawBody).digest("hex")}`

/**
 * A comparable form of a repository URL: host and path, lowercase, without scheme, credentials,
 * `.git` or trailing slashes. `git@github.com:org/repo.git` and `https://github.com/Org/repo`
 * both become `github.com/org/repo`.
 */
export const repoKey = (url: string): string => {
  let text = url.trim().toLowerCase()
  const scp = /^[\w.-]+@([\w.-]+):(.+)$/.exec(text)
  if (scp) text = `${scp[1]}/${scp[2]}`
  text = text.replace(/^[a-z+]+:\/\//, "").replace(/^[^@/]+@/, "")
  return text.replace(/\/+$/, "").replace(/\.git$/, "").replace(/\/+$/, "")
}

/** `refs/heads/main` → `main`; tags and other refs stay as they are. */
export const branchOf = (ref: string): string => (ref.startsWith("refs/heads/") ? ref.slice("refs/heads/".length) : ref)
