/**
 * The key that seals secrets at rest: generated once beside the database (0600), shared by
 * processes starting together, opened with the key of an unfinished rotation too; and
 * `secrets rotate` with SLIPWAY_SECRETS_KEY set re-seals with SLIPWAY_NEW_SECRETS_KEY, the
 * database's check value of the key included (a server with another key is refused at start).
 */
import { execFile } from "node:child_process"
import { readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import Database from "better-sqlite3"
import { describe, expect, it } from "vitest"
import { makeSecretBox } from "../../server/secrets/secrets.ts"
import { startServer } from "../../server/index.ts"
import { resolveSecretsKeys, secretsKeyPath } from "../../server/secrets/secretsKey.ts"
import { makeRequester, tempDatabasePath, TEST_KEY } from "../support/server.ts"

describe("resolveSecretsKeys", () => {
  it("prefers SLIPWAY_SECRETS_KEY; otherwise creates one key file (0600) that every later call reads", () => {
    const database = tempDatabasePath("slipway-keyfile")
    try {
      expect(resolveSecretsKeys({ databasePath: database.path, secretsKey: "from-env" })).toMatchObject({ key: "from-env", source: "env", created: false })
      const results = Array.from({ length: 5 }, () => resolveSecretsKeys({ databasePath: database.path, secretsKey: undefined }))
      expect(results.filter((result) => result.created)).toHaveLength(1)
      expect(new Set(results.map((result) => result.key)).size).toBe(1)
      expect(results[0]!.key).toMatch(/^[0-9a-f]{64}$/)
      expect(statSync(secretsKeyPath(database.path)).mode & 0o777).toBe(0o600)
      expect(resolveSecretsKeys({ databasePath: ":memory:", secretsKey: undefined }).source).toBe("memory")
    } finally {
      database.remove()
    }
  })

  it("opens values sealed with the key of an unfinished rotation (<key file>.next) as well", () => {
    const database = tempDatabasePath("slipway-keyfile")
    try {
      const first = resolveSecretsKeys({ databasePath: database.path, secretsKey: undefined })
      const next = "b".repeat(64)
      writeFileSync(`${first.path}.next`, `${next}\n`, { mode: 0o600 })
      const resumed = resolveSecretsKeys({ databasePath: database.path, secretsKey: undefined })
      expect(resumed.previous).toEqual([next])
      const box = makeSecretBox(resumed.key, resumed.previous)
      expect(box.open(makeSecretBox(next).seal("v1"))).toBe("v1")
      expect(box.open(makeSecretBox(first.key).seal("v2"))).toBe("v2")
      expect(() => makeSecretBox(first.key).open(makeSecretBox("c".repeat(64)).seal("v3"))).toThrow(/does not open/)
    } finally {
      database.remove()
    }
  })
})

describe("npm run keys -- secrets rotate with SLIPWAY_SECRETS_KEY", () => {
  it("re-seals every value with SLIPWAY_NEW_SECRETS_KEY, which the server then starts with", async () => {
    const database = tempDatabasePath("slipway-rotate-env")
    const [oldKey, newKey] = ["old-operator-key", "new-operator-key"]
    try {
      let server = await startServer({ port: 0, databasePath: database.path, apiKey: TEST_KEY, secretsKey: oldKey, logLevel: "silent" })
      const created = (
        await makeRequester(server.url, TEST_KEY)("POST", "/v2/deployments", {
          body: { name: "rotating", source: "external_container", source_revision_config: { image_uri: "r.example.com/a:1" }, secrets: [{ name: "S", value: "the-value" }] }
        })
      ).body
      await server.close()
      // Another key on the same database is refused before anything runs.
      await expect(startServer({ port: 0, databasePath: database.path, apiKey: TEST_KEY, secretsKey: newKey, logLevel: "silent" })).rejects.toThrow(/secrets check value/)
      const run = (env: Record<string, string>) =>
        promisify(execFile)(process.execPath, ["server/keys.ts", "secrets", "rotate"], {
          cwd: join(import.meta.dirname, "../.."),
          env: { ...process.env, DATABASE_PATH: database.path, ...env },
          encoding: "utf8"
        })
      await expect(run({ SLIPWAY_SECRETS_KEY: oldKey })).rejects.toThrow(/SLIPWAY_NEW_SECRETS_KEY/)
      const rotated = await run({ SLIPWAY_SECRETS_KEY: oldKey, SLIPWAY_NEW_SECRETS_KEY: newKey })
      expect(JSON.parse(rotated.stdout)).toMatchObject({ rotated: true, secret_values: 2 })

      const db = new Database(database.path, { readonly: true })
      const stored = JSON.parse(db.prepare("SELECT secrets FROM deployments").pluck().get() as string)[0].value as string
      db.close()
      expect(makeSecretBox(newKey).open(stored)).toBe("the-value")
      expect(() => makeSecretBox(oldKey).open(stored)).toThrow()

      // The database's check value was re-sealed with the rest: the old key is refused at start now.
      await expect(startServer({ port: 0, databasePath: database.path, apiKey: TEST_KEY, secretsKey: oldKey, logLevel: "silent" })).rejects.toThrow(
        /cannot open the database's secrets check value[^]*Set the same SLIPWAY_SECRETS_KEY on every replica/
      )
      server = await startServer({ port: 0, databasePath: database.path, apiKey: TEST_KEY, secretsKey: newKey, logLevel: "silent" })
      const patched = await makeRequester(server.url, TEST_KEY)("PATCH", `/v2/deployments/${created.id}`, { body: { secrets: [{ name: "S", value: "********" }, { name: "T", value: "t" }] } })
      expect(patched.status, JSON.stringify(patched.body)).toBe(200)
      await server.close()
      expect(readFileSync(database.path).length).toBeGreaterThan(0)
    } finally {
      database.remove()
    }
  })
})
