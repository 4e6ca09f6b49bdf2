/**
 * The local deployment driver against the deployment driver conformance suite
 * (test/runtime/deploymentDriver.suite.ts), on real time: a real registry with the test images,
 * real boxes, Slipway's own PostgreSQL and a Redis per deployment.
 */
import { describe, vi } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { afterAll, beforeAll } from "vitest"
import { defaultConfig } from "../../server/config.ts"
import { DeploymentObservationsLive } from "../../server/deployments/Driver.ts"
import { LocalDeploymentDriver } from "../../server/deployments/drivers/local.ts"
import { deploymentSourcesForTests } from "../support/deploymentSources.ts"
import { DeploymentDatabasesLive } from "../../server/deployments/local/databases.ts"
import { LogStoreLive } from "../../server/deployments/logs/index.ts"
import { BuildsLive } from "../../server/deployments/module.ts"
import { storesFor } from "../../server/store/index.ts"
import { DeploymentProxyLive } from "../../server/deployments/local/proxy.ts"
import { makeLogger } from "../../server/log.ts"
import { ServerEnv } from "../../server/module.ts"
import { layerSingleReplica } from "../../server/replicas/Replicas.ts"
import { LocalRuntimeLive } from "../../server/runtime/local/LocalRuntime.ts"
import { deploymentDriverSuite, type SuiteServices } from "../runtime/deploymentDriver.suite.ts"
import { pushTestImages, removeTestImages, type TestImageRefs } from "../support/images.ts"
import { startRegistry, type TestRegistry } from "../support/registry.ts"
import { tempDatabasePath } from "../support/server.ts"

vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 })

let registry: TestRegistry
let refs: TestImageRefs
const database = tempDatabasePath("deploysuite")
const saved = process.env.SLIPWAY_INSECURE_REGISTRIES

beforeAll(async () => {
  registry = await startRegistry()
  refs = await pushTestImages(registry.host, { only: ["http-ok", "crash"] })
  process.env.SLIPWAY_INSECURE_REGISTRIES = registry.host
})

afterAll(async () => {
  await registry?.stop()
  removeTestImages()
  if (saved === undefined) delete process.env.SLIPWAY_INSECURE_REGISTRIES
  else process.env.SLIPWAY_INSECURE_REGISTRIES = saved
  database.remove()
})

const env = Layer.succeed(ServerEnv, {
  config: { ...defaultConfig, databasePath: database.path, secretsKey: "driver-suite-secrets-key" },
  log: makeLogger("silent"),
  publicUrl: "http://127.0.0.1:9"
})

/** The driver with everything it runs on, as the server wires it (a fresh one per test). */
const driver = () =>
  LocalDeploymentDriver({ healthTimeoutMs: 10_000, healthMode: "auto", healthPath: "/ok", drainMs: 1000, port: 8000 }).pipe(
    Layer.provideMerge(DeploymentObservationsLive),
    Layer.provide(Layer.mergeAll(DeploymentDatabasesLive, LogStoreLive, DeploymentProxyLive, BuildsLive)),
    Layer.provide(deploymentSourcesForTests(database.path, makeLogger("silent"))),
    Layer.provide(LocalRuntimeLive),
    Layer.provide(Layer.orDie(storesFor({ databasePath: database.path, databaseUrl: undefined }))),
    Layer.provide(Layer.mergeAll(env, layerSingleReplica())),
    Layer.fresh
  )

/** Real boxes take real time: the driver runs on the live clock, not the test clock `it.effect` provides. */
const provide = <A, E>(effect: Effect.Effect<A, E, SuiteServices>) => TestClock.withLive(Effect.provide(Effect.scoped(effect), driver()))

describe("local deployment driver", () => {
  deploymentDriverSuite("local", provide, {
    advance: (millis) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, millis))),
    get healthyImage() {
      return refs.httpOk
    },
    get failingImage() {
      return refs.crash
    },
    settleMs: 15_000
  })
})
