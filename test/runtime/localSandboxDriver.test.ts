/**
 * The local sandbox driver against the sandbox driver suite, on real time: real boxes on an image
 * pulled from a real registry on loopback (named as the Docker Hub mirror), real volumes.
 */
import { describe, vi } from "@effect/vitest"
import { Effect, Layer, type Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { defaultConfig } from "../../server/config.ts"
import { makeLogger } from "../../server/log.ts"
import { ServerEnv } from "../../server/module.ts"
import { LocalRuntimeLive } from "../../server/runtime/local/LocalRuntime.ts"
import { BoxRegistryLive } from "../../server/sandboxes/BoxRegistry.ts"
import { type SandboxDriver, type SandboxObservations, SandboxObservationsLive } from "../../server/sandboxes/Driver.ts"
import { LocalSandboxDriver } from "../../server/sandboxes/drivers/local.ts"
import { type ImageMirror, startImageMirror } from "../support/mirror.ts"
import { tempDatabasePath } from "../support/server.ts"
import { sandboxDriverSuite } from "./sandboxDriver.suite.ts"

vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 })

let mirror: ImageMirror
const database = tempDatabasePath("sandboxsuite")

beforeAll(async () => {
  mirror = await startImageMirror()
})

afterAll(async () => {
  await mirror?.stop()
  database.remove()
})

const driver = () =>
  LocalSandboxDriver.pipe(
    Layer.provideMerge(Layer.mergeAll(BoxRegistryLive, SandboxObservationsLive)),
    Layer.provide(LocalRuntimeLive),
    Layer.provide(Layer.succeed(ServerEnv, { config: { ...defaultConfig, databasePath: database.path }, log: makeLogger("silent"), publicUrl: "http://127.0.0.1:9" }))
  )

describe("local sandbox driver", () => {
  sandboxDriverSuite("local", <A, E>(effect: Effect.Effect<A, E, SandboxDriver | SandboxObservations | Scope.Scope>) => Effect.scoped(Effect.provide(effect, driver())), {
    image: "python:3.12-slim",
    get missingImage() {
      return `${mirror.host}/slipway-test/nothing-here:1`
    },
    live: true,
    claims: { volumes: true, images: true }
  })
})
