/**
 * The local runtime's usual test setting: a real OCI registry on loopback holding the test busybox
 * image (also as `library/python:3.12-slim`), named as the server's Docker Hub mirror, so that
 * templates naming `python:3.12-slim` pull for real and offline.
 *
 *   const mirror = await startImageMirror()            // beforeAll
 *   const t = await startTestServer({ runtime: "local" })  // in-process servers read mirror's env
 *   spawnServer({ env: { SLIPWAY_RUNTIME: "local", ...mirror.env } })  // child servers get it passed
 *   await mirror.stop()                                 // afterAll: registry, image build, env restored
 */
import { pushTestImages, removeTestImages, type TestImageName, type TestImageRefs } from "./images.ts"
import { startRegistry, type TestRegistry } from "./registry.ts"

export interface ImageMirror {
  readonly registry: TestRegistry
  /** `host:port` of the registry. */
  readonly host: string
  readonly images: TestImageRefs
  /** The server settings that name the registry as the (plain-HTTP) Docker Hub mirror. */
  readonly env: { readonly SLIPWAY_REGISTRY_MIRROR: string; readonly SLIPWAY_INSECURE_REGISTRIES: string }
  /** Stops the registry, removes the image build and restores the process environment. */
  readonly stop: () => Promise<void>
}

/**
 * Starts the registry, pushes `images` (busybox by default) and, unless `setProcessEnv: false`,
 * sets the mirror settings in this process's environment (for servers started in-process).
 */
export const startImageMirror = async (
  options: { readonly images?: ReadonlyArray<TestImageName>; readonly setProcessEnv?: boolean } = {}
): Promise<ImageMirror> => {
  const registry = await startRegistry()
  const saved = { mirror: process.env.SLIPWAY_REGISTRY_MIRROR, insecure: process.env.SLIPWAY_INSECURE_REGISTRIES }
  const restore = (name: string, value: string | undefined) => {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
  let images: TestImageRefs
  try {
    images = await pushTestImages(registry.host, { only: options.images ?? ["busybox"] })
  } catch (error) {
    await registry.stop()
    removeTestImages()
    throw error
  }
  const env = { SLIPWAY_REGISTRY_MIRROR: registry.host, SLIPWAY_INSECURE_REGISTRIES: registry.host }
  if (options.setProcessEnv !== false) Object.assign(process.env, env)
  return {
    registry,
    host: registry.host,
    images,
    env,
    stop: async () => {
      try {
        await registry.stop()
      } finally {
        removeTestImages()
        if (options.setProcessEnv !== false) {
          restore("SLIPWAY_REGISTRY_MIRROR", saved.mirror)
          restore("SLIPWAY_INSECURE_REGISTRIES", saved.insecure)
        }
      }
    }
  }
}
