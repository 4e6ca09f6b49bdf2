/**
 * Registry passwords at rest: sealed with the server's generated secrets key (never plaintext in
 * the database file or its WAL) and re-sealed by `npm run keys -- secrets rotate`, after which
 * they open with the new key only.
 */
import { execFile } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import Database from "better-sqlite3"
import { expect, it } from "vitest"
import { makeSecretBox } from "../../server/secrets/secrets.ts"
import { startServer } from "../../server/index.ts"
import { makeLogger } from "../../server/log.ts"
import { makeRequester, TEST_KEY, tempDatabasePath } from "../support/server.ts"

it("seals registry passwords with the generated key and re-seals them on rotation", async () => {
  const database = tempDatabasePath("slipway-registry-secrets")
  const password = `pw-${crypto.randomUUID()}`
  try {
    const server = await startServer({ port: 0, databasePath: database.path, apiKey: TEST_KEY, runtime: "simulated", secretsKey: undefined, logger: makeLogger("silent") })
    try {
      const request = makeRequester(server.url, TEST_KEY)
      const created = await request("POST", "/v2/sandboxes/registries", { body: { name: "private", url: "registry.example.com", username: "robot", password } })
      expect(created.status).toBe(201)
      expect(JSON.stringify(created.body)).not.toContain(password)
    } finally {
      await server.close()
    }
    const stored = () => {
      const db = new Database(database.path, { readonly: true })
      try {
        return (db.prepare("SELECT password_sealed FROM sandbox_registries WHERE name = 'private'").get() as { password_sealed: string }).password_sealed
      } finally {
        db.close()
      }
    }
    const keyFile = `${database.path}.secrets-key`
    const firstKey = readFileSync(keyFile, "utf8").trim()
    const before = stored()
    expect(before.startsWith("enc:v1:")).toBe(true)
    expect(makeSecretBox(firstKey).open(before)).toBe(password)
    for (const path of [database.path, `${database.path}-wal`].filter(existsSync)) expect(readFileSync(path).includes(Buffer.from(password))).toBe(false)

    const { stdout } = await promisify(execFile)(process.execPath, ["server/keys.ts", "secrets", "rotate"], {
      cwd: join(import.meta.dirname, "../.."),
      env: { ...process.env, DATABASE_PATH: database.path, SLIPWAY_SECRETS_KEY: "" },
      encoding: "utf8"
    })
    expect(JSON.parse(stdout.trim())).toMatchObject({ rotated: true, registry_passwords: 1 })
    const secondKey = readFileSync(keyFile, "utf8").trim()
    expect(secondKey).not.toBe(firstKey)
    const after = stored()
    expect(after).not.toBe(before)
    expect(makeSecretBox(secondKey).open(after)).toBe(password)
    expect(() => makeSecretBox(firstKey).open(after)).toThrow()
  } finally {
    database.remove()
  }
}, 60_000)
