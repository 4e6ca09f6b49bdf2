import { statSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { ConfigError, configFromEnv } from "../../server/config.ts"
import { startServer } from "../../server/index.ts"
import { makeDirectory } from "../../server/directories.ts"
import { tempDatabasePath } from "../support/server.ts"

describe("server configuration", () => {
  it("reads the documented variables with their defaults", () => {
    const config = configFromEnv({})
    expect(config).toMatchObject({
      port: 8080,
      host: "127.0.0.1",
      databasePath: "./data/slipway.db",
      defaultTenantId: "00000000-0000-4000-8000-000000000001",
      storageQuota: "100Gi",
      storageClasses: ["standard", "fast"],
      revisionStepMs: 250,
      logLevel: "info"
    })
    const custom = configFromEnv({ PORT: "9000", SLIPWAY_STORAGE_CLASSES: "ssd, hdd", SLIPWAY_PUBLIC_URL: "https://slipway.example/", LOG_LEVEL: "WARN" })
    expect(custom).toMatchObject({ port: 9000, storageClasses: ["ssd", "hdd"], publicUrl: "https://slipway.example", logLevel: "warn" })
  })

  it.each([
    [{ PORT: "eighty" }, /PORT must be an integer/],
    [{ LOG_LEVEL: "loud" }, /LOG_LEVEL must be one of/],
    [{ SLIPWAY_STORAGE_QUOTA: "lots" }, /SLIPWAY_STORAGE_QUOTA: Invalid quantity 'lots'/],
    [{ SLIPWAY_STORAGE_QUOTA: "-5Gi" }, /SLIPWAY_STORAGE_QUOTA must not be negative/],
    [{ SLIPWAY_STORAGE_CLASSES: " , " }, /at least one storage class/],
    [{ SLIPWAY_RUNTIME: "kubernetes" }, /SLIPWAY_RUNTIME must be one of auto, simulated, local/],
    [{ SLIPWAY_PUBLIC_URL: "localhost:8091" }, /SLIPWAY_PUBLIC_URL must be an http:\/\/ or https:\/\/ URL/],
    [{ SLIPWAY_PUBLIC_URL: "ftp://slipway.example" }, /SLIPWAY_PUBLIC_URL must be an http:\/\/ or https:\/\/ URL/],
    [{ SLIPWAY_PUBLIC_URL: "https://slipway.example/?x=1" }, /without credentials, query or fragment/],
    [{ SLIPWAY_TENANT_ID: "default" }, /SLIPWAY_TENANT_ID must be a UUID/],
    [{ SLIPWAY_API_KEY: "short" }, /SLIPWAY_API_KEY must be at least 16/],
    [{ SLIPWAY_API_KEY: "a key with spaces in it" }, /SLIPWAY_API_KEY must be at least 16/],
    [{ SLIPWAY_SECRETS_KEY: "  " }, /SLIPWAY_SECRETS_KEY is blank/],
    [{ DATABASE_URL: "postgres://" }, /DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL/],
    [{ DATABASE_URL: "mysql://u:hunter2@db/x" }, /got "mysql:\/\/\*\*\*@db\/x"/]
  ])("refuses %j with a clear message", (env, message) => {
    expect(() => configFromEnv(env)).toThrow(ConfigError)
    expect(() => configFromEnv(env)).toThrow(message)
  })

  it("refuses a bad quota in startServer before opening the port or the database", async () => {
    const database = tempDatabasePath()
    try {
      await expect(startServer({ port: 0, databasePath: database.path, storageQuota: "10 gigs", logLevel: "silent" })).rejects.toThrow(
        /SLIPWAY_STORAGE_QUOTA/
      )
      const { existsSync } = await import("node:fs")
      expect(existsSync(database.path)).toBe(false)
    } finally {
      database.remove()
    }
  })

  it("creates a database directory, or refuses at once where Node's recursive mkdir never returns", () => {
    const database = tempDatabasePath()
    try {
      makeDirectory(join(database.dir, "a", "b", "c"))
      expect(statSync(join(database.dir, "a", "b", "c")).isDirectory()).toBe(true)
      makeDirectory(join(database.dir, "a", "b"))
      // procfs answers ENOENT to mkdir, as does a dangling symlink: fs.mkdirSync({ recursive }) loops forever on both.
      expect(() => makeDirectory("/proc/slipway-test/data")).toThrow(/ENOENT.*\/proc\/slipway-test/)
      symlinkSync(join(database.dir, "nowhere"), join(database.dir, "dangling"))
      expect(() => makeDirectory(join(database.dir, "dangling", "data"))).toThrow(/ENOENT/)
      writeFileSync(join(database.dir, "file"), "")
      expect(() => makeDirectory(join(database.dir, "file"))).toThrow(/ENOTDIR/)
      expect(() => makeDirectory(join(database.dir, "file", "sub"))).toThrow(/ENOTDIR/)
    } finally {
      database.remove()
    }
  })
})
