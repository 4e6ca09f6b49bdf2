/**
 * The key that seals secrets at rest: generated once beside the database (0600), shared by
 * processes starting together, opened with the key of an unfinished rotation too; and
 * `secrets rotate` with SLIPWAY_SECRETS_KEY set re-seals with SLIPWAY_NEW_SECRETS_KEY, the
 * database's check value of the key included (a server with another key is refused at start).
 */
import { execFile } from "node:child_process"
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs"
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

  it("on PostgreSQL (DATABASE_URL) takes SLIPWAY_SECRETS_KEY and creates no key file beside DATABASE_PATH; a key file already there is still read", () => {
    const database = tempDatabasePath("slipway-keyfile")
    const databaseUrl = "postgres://slipway@127.0.0.1:5432/slipway"
    try {
      expect(() => resolveSecretsKeys({ databasePath: database.path, databaseUrl, secretsKey: undefined })).toThrow(/DATABASE_URL is set, so SLIPWAY_SECRETS_KEY must be too/)
      expect(existsSync(secretsKeyPath(database.path))).toBe(false)
      expect(resolveSecretsKeys({ databasePath: database.path, databaseUrl, secretsKey: "shared" })).toMatchObject({ key: "shared", source: "env" })
      expect(existsSync(secretsKeyPath(database.path))).toBe(false)
      // Made by an earlier version (or for SQLite before a move to PostgreSQL): its sealed values stay readable.
      const made = resolveSecretsKeys({ databasePath: database.path, secretsKey: undefined })
      expect(resolveSecretsKeys({ databasePath: database.path, databaseUrl, secretsKey: undefined })).toMatchObject({ key: made.key, source: "file", created: false })
    } finally {
      database.remove()
    }
  })

  it("a server that cannot listen (a bad HOST) or has no key for its PostgreSQL database writes no key file", async () => {
    const database = tempDatabasePath("slipway-keyfile")
    try {
      await expect(startServer({ port: 0, host: "203.0.113.1", databasePath: database.path, apiKey: TEST_KEY, secretsKey: undefined, logLevel: "silent" })).rejects.toThrow(/EADDRNOTAVAIL/)
      expect(existsSync(secretsKeyPath(database.path))).toBe(false)
      await expect(
        startServer({ port: 0, databasePath: database.path, databaseUrl: "postgres://slipway@127.0.0.1:1/slipway", apiKey: TEST_KEY, secretsKey: undefined, logLevel: "silent" })
      ).rejects.toThrow(/SLIPWAY_SECRETS_KEY must be too/)
      expect(existsSync(secretsKeyPath(database.path))).toBe(false)
      // `npm start` says so in one line and exits 2, before it opens anything.
      const started = await promisify(execFile)(process.execPath, ["server/main.ts"], {
        cwd: join(import.meta.dirname, "../.."),
        env: { PATH: process.env.PATH ?? "", DATABASE_PATH: database.path, DATABASE_URL: "postgres://slipway@127.0.0.1:1/slipway", PORT: "0" },
        encoding: "utf8"
      }).then(
        () => ({ code: 0, stderr: "" }),
        (error: { code: number; stderr: string }) => error
      )
      expect(started.code).toBe(2)
      expect(started.stderr.trim()).toMatch(/^slipway: DATABASE_URL is set, so SLIPWAY_SECRETS_KEY must be too/)
      expect(existsSync(secretsKeyPath(database.path))).toBe(false)
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
