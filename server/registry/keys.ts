/**
 * The key Slipway signs registry tokens with, and the certificate the registry trusts.
 *
 * At first start Slipway generates an ECDSA P-256 key (`<database>.registry-key.pem`, mode 0600,
 * created exclusively so processes starting together agree on one key) and a self-signed
 * certificate for it (`<database>.registry-cert.pem`, made with `openssl`, valid ten years and
 * remade at start when less than a year is left or when it is not the key's). The registry's
 * `auth.token.rootcertbundle` is that certificate.
 *
 * What distribution (v2.8, registry/auth/token/token.go) checks of a token, and how the tokens
 * here meet it:
 * - compact JWS of exactly three parts; the header's `alg` must suit the key (`ES256` for P-256);
 * - the signing key comes from the header: `x5c` first (the chain is verified against the root
 *   bundle, at the current time, so the certificate must be valid now), else `jwk`, else `kid`
 *   (a libtrust fingerprint of a key in the bundle). Tokens here carry `x5c` = [the certificate];
 * - `iss` equals the configured `issuer`; `aud` (one string in v2.8, not an array) equals the
 *   configured `service`;
 * - `exp` + 60 s leeway is not past, `nbf` - 60 s is not in the future;
 * - every action the request needs is in `access` (`{type, name, actions}`) for that exact
 *   repository name: no wildcards, and `*` is only a literal action name.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, randomBytes, sign, X509Certificate } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs"
import { dirname, join } from "node:path"
import { Data, Effect } from "effect"
import { isFileDatabase, stateDir } from "../dataDir.ts"
import { ProcessRunner } from "../runtime/ProcessRunner.ts"
import { createExclusive } from "../secrets/secretsKey.ts"

export class RegistryError extends Data.TaggedError("RegistryError")<{ readonly message: string }> {}

export interface SigningKey {
  readonly privateKey: KeyObject
  /** The certificate, PEM (what the registry's `rootcertbundle` file holds). */
  readonly certificatePem: string
  /** The certificate file. */
  readonly certificatePath: string
  /** The certificate, base64 DER (a JWS `x5c` entry). */
  readonly x5c: string
}

/** Where the key and certificate live: beside the database file (or in the in-memory database's state dir). */
export const signingKeyPaths = (databasePath: string): { readonly key: string; readonly certificate: string } =>
  isFileDatabase(databasePath)
    ? { key: `${databasePath}.registry-key.pem`, certificate: `${databasePath}.registry-cert.pem` }
    : { key: join(stateDir(databasePath, "registry"), "token-key.pem"), certificate: join(stateDir(databasePath, "registry"), "token-cert.pem") }

const YEAR_MS = 365 * 24 * 3600 * 1000

/** Whether `pem` is a certificate of `key` valid from now for at least a year. */
const certificateFits = (pem: string, key: KeyObject, nowMs: number): boolean => {
  try {
    const certificate = new X509Certificate(pem)
    const ours = createPublicKey(key).export({ type: "spki", format: "der" })
    return certificate.publicKey.export({ type: "spki", format: "der" }).equals(ours) && Date.parse(certificate.validFrom) <= nowMs && Date.parse(certificate.validTo) - nowMs > YEAR_MS
  } catch {
    return false
  }
}

/** The signing key and its certificate, made at first start. `nowMs` from the caller's clock. */
export const loadOrCreateSigningKey = (databasePath: string, nowMs: number): Effect.Effect<SigningKey, RegistryError, ProcessRunner> =>
  Effect.gen(function* () {
    const paths = signingKeyPaths(databasePath)
    const failed = (what: string) => (error: unknown) => new RegistryError({ message: `registry token key: ${what}: ${error instanceof Error ? error.message : String(error)}` })
    const privateKey = yield* Effect.try({
      try: () => {
        mkdirSync(dirname(paths.key), { recursive: true })
        if (!existsSync(paths.key)) {
          const { privateKey: fresh } = generateKeyPairSync("ec", { namedCurve: "prime256v1" })
          createExclusive(paths.key, fresh.export({ type: "pkcs8", format: "pem" }).toString().trim())
        }
        return createPrivateKey(readFileSync(paths.key, "utf8"))
      },
      catch: failed(`cannot read or create ${paths.key}`)
    })
    const existing = existsSync(paths.certificate) ? readFileSync(paths.certificate, "utf8") : undefined
    if (existing === undefined || !certificateFits(existing, privateKey, nowMs)) {
      // Written beside the final name and renamed over it: a reader never sees half a certificate.
      const temporary = `${paths.certificate}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`
      const runner = yield* ProcessRunner
      yield* runner
        .run(["openssl", "req", "-new", "-x509", "-key", paths.key, "-sha256", "-days", "3650", "-subj", "/CN=Slipway registry token signer", "-out", temporary], {
          timeout: "30 seconds"
        })
        .pipe(
          Effect.andThen(Effect.try(() => renameSync(temporary, paths.certificate))),
          Effect.mapError(failed("openssl could not make the certificate (install Debian package openssl)"))
        )
        .pipe(Effect.ensuring(Effect.sync(() => rmSync(temporary, { force: true }))))
    }
    const certificatePem = readFileSync(paths.certificate, "utf8")
    const x5c = new X509Certificate(certificatePem).raw.toString("base64")
    return { privateKey, certificatePem, certificatePath: paths.certificate, x5c }
  })

/** One grant of a registry token: `actions` on the resource `type:name`. */
export interface ResourceAccess {
  readonly type: string
  readonly name: string
  readonly actions: ReadonlyArray<string>
}

export interface RegistryTokenClaims {
  readonly issuer: string
  readonly service: string
  readonly subject: string
  readonly nowSeconds: number
  readonly expiresAtSeconds: number
  readonly access: ReadonlyArray<ResourceAccess>
}

/** A registry token (ES256 JWS with the certificate in `x5c`), as distribution verifies it. */
export const signRegistryToken = (key: SigningKey, claims: RegistryTokenClaims): string => {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value), "utf8").toString("base64url")
  const header = encode({ typ: "JWT", alg: "ES256", x5c: [key.x5c] })
  const payload = encode({
    iss: claims.issuer,
    sub: claims.subject,
    aud: claims.service,
    exp: claims.expiresAtSeconds,
    nbf: claims.nowSeconds,
    iat: claims.nowSeconds,
    jti: randomBytes(16).toString("hex"),
    access: claims.access
  })
  const signature = sign("sha256", Buffer.from(`${header}.${payload}`), { key: key.privateKey, dsaEncoding: "ieee-p1363" })
  return `${header}.${payload}.${signature.toString("base64url")}`
}
