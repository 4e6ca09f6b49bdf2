/**
 * The deployment runtime's `Registry` and `SourceUploads` for tests that build a driver or a
 * controller by hand (the server wires the real ones): a registry that is off (no push tokens,
 * nothing to remove) and uploads kept beside a test database.
 */
import { Layer } from "effect"
import type { Logger } from "../../server/log.ts"
import { makeRegistry, Registry } from "../../server/registry/Registry.ts"
import { defaultRegistrySettings } from "../../server/registry/settings.ts"
import { ProcessRunnerLive } from "../../server/runtime/ProcessRunner.ts"
import { defaultUploadSettings, makeSourceUploads, SourceUploads } from "../../server/uploads/SourceUploads.ts"

/** `SLIPWAY_REGISTRY=off`: push tokens are refused, deployments have no images there to remove. */
export const registryOff = (log: Logger) =>
  Layer.effect(
    Registry,
    makeRegistry({ settings: { ...defaultRegistrySettings, mode: "off" }, databasePath: "/nonexistent/slipway.db", secretsKey: "test", realm: "http://127.0.0.1:9/v2/registry/token", log })
  ).pipe(Layer.orDie, Layer.provide(ProcessRunnerLive))

/** Uploads under `<dir of databasePath>/uploads`. */
export const testUploads = (databasePath: string, log: Logger) =>
  Layer.succeed(SourceUploads, makeSourceUploads({ settings: defaultUploadSettings, databasePath, secretsKey: "test", publicUrl: "http://127.0.0.1:9", log }))

/** Both, as the deployment runtime provides them. */
export const deploymentSourcesForTests = (databasePath: string, log: Logger) => Layer.mergeAll(registryOff(log), testUploads(databasePath, log))

