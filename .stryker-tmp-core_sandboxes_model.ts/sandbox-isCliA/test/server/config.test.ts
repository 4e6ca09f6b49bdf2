// @ts-nocheck
import { describe, expect, it } from "vitest"
import { ConfigError, configFromEnv } from "../../server/config.ts"
import { startServer } from "../../server/index.ts"
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
    [{ SLIPWAY_RUNTIME: "kubernetes" }, /SLIPWAY_RUNTIME supports only "local"/]
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
})
