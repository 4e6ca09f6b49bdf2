/**
 * Secret values at rest, sealed with AES-256-GCM (random 96-bit nonce, 128-bit tag) and stored
 * as `enc:v1:<base64 nonce|tag|ciphertext>`. The key is SLIPWAY_SECRETS_KEY or, by default, one
 * generated beside the database (secretsKey.ts). Plaintext values written by versions
 * that did not encrypt by default stay readable until `secrets rotate` seals them. Nothing here logs.
 */
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

/**
 * Seals with `secretsKey`; opens with it or, failing authentication, with one of `previous`
 * (keys of an unfinished rotation). Without a key, values are stored as given.
 */
export const makeSecretBox = (secretsKey: string | undefined, previous: ReadonlyArray<string> = []): SecretBox => {
  const key = secretsKey ? deriveKey(secretsKey) : undefined
  const openWith = (candidate: Buffer, raw: Buffer) => {
    const decipher = createDecipheriv("aes-256-gcm", candidate, raw.subarray(0, 12))
    decipher.setAuthTag(raw.subarray(12, 28))
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8")
  }
  const keys = key ? [key, ...previous.map(deriveKey)] : []
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
      if (!key) throw new Error("a stored secret is encrypted but no secrets key is configured")
      const raw = Buffer.from(stored.slice(PREFIX.length), "base64")
      for (const [index, candidate] of keys.entries()) {
        try {
          return openWith(candidate, raw)
        } catch (error) {
          if (index === keys.length - 1) throw new Error(`a stored secret does not open with the configured secrets key: ${(error as Error).message}`)
        }
      }
      throw new Error("unreachable")
    }
  }
}

/** Whether a stored value is sealed (as opposed to plaintext written before encryption was on). */
export const isSealed = (stored: string): boolean => stored.startsWith(PREFIX)
