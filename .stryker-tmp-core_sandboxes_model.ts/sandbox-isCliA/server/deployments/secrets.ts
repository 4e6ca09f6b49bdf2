/**
 * Secret values at rest. With SLIPWAY_SECRETS_KEY set, values are sealed with AES-256-GCM
 * (random 96-bit nonce, 128-bit tag) and stored as `enc:v1:<base64 nonce|tag|ciphertext>`;
 * without it they are stored as given (the database file is then the secret). Values written
 * before a key was configured stay readable. Nothing here logs.
 */
// @ts-nocheck

import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"

const PREFIX = "enc:v1:"

/** 32-byte key: 64 hex chars or base64 of 32 bytes are used as is; any other text is hashed. */
export const deriveKey = (secret: string): Buffer => {
  const trimmed = secret.trim()
  if (/^[0-9a-f]{64}$/i.test(trimmed)) return Buffer.from(trimmed, "hex")
  const decoded = /^[A-Za-z0-9+/_-]{42,44}={0,2}$/.test(trimmed) ? Buffer.from(trimmed, "base64") : undefined
  if (decoded?.length === 32) return decoded
  return createHash("sha256").update(trimmed, "utf8").digest()
}

export interface SecretBox {
  readonly seal: (value: string) => string
  readonly open: (stored: string) => string
  readonly encrypted: boolean
}

export const makeSecretBox = (secretsKey: string | undefined): SecretBox => {
  const key = secretsKey ? deriveKey(secretsKey) : undefined
  return {
    encrypted: key !== undefined,
    seal: (value) => {
      if (!key) return value
      const nonce = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", key, nonce)
      const body = Buffer.concat([cipher.update(value, "utf8"), cipher.final()])
      return PREFIX + Buffer.concat([nonce, cipher.getAuthTag(), body]).toString("base64")
    },
    open: (stored) => {
      if (!stored.startsWith(PREFIX)) return stored
      if (!key) throw new Error("a stored secret is encrypted but SLIPWAY_SECRETS_KEY is not set")
      const raw = Buffer.from(stored.slice(PREFIX.length), "base64")
      const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12))
      decipher.setAuthTag(raw.subarray(12, 28))
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8")
    }
  }
}
