/**
 * A push of source code becomes an image that runs the agent: a JavaScript LangGraph agent served
 * by a git server on loopback is checked out (GitSource) and built (ImageBuilder) with the
 * Dockerfile the langgraph CLI writes for it, FROM the langgraphjs-api stand-in in a loopback
 * registry; then a source-only push is rebuilt with warm caches. Both builds are timed. The second
 * image is unpacked and run (bwrap, on the host's network) and answers through the LangGraph API.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Schedule } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { GitSource } from "../../server/builds/GitSource.ts"
import { type BuiltImage, ImageBuilder } from "../../server/builds/ImageBuilder.ts"
import { HOST_ENV, processRunner } from "../../server/runtime/ProcessRunner.ts"
import { agentDockerfile, agentFiles, DOCKERFILE_LINES } from "../support/agentRepo.ts"
import { type BuildEnv, collectLog, startBuildEnv, unpackLayout } from "../support/builds.ts"
import { startGitServer, type TestGitServer, type TestRepo } from "../support/gitServer.ts"
import { langgraphBase, pushLanggraphBase } from "../support/langgraphBase.ts"
import { startRegistry, type TestRegistry } from "../support/registry.ts"

let registry: TestRegistry
let git: TestGitServer
let env: BuildEnv
let repo: TestRepo
let baseImage: string
let scratch: string
let baseSeconds = 0

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "slipway-agent-test-"))
  chmodSync(scratch, 0o755)
  const started = Date.now()
  baseSeconds = (await langgraphBase()).buildSeconds
  registry = await startRegistry()
  baseImage = (await pushLanggraphBase(registry.host)).replace(/:24$/, "")
  console.log(`base image: ${baseSeconds > 0 ? `built in ${baseSeconds.toFixed(1)} s` : "from the cache"}, pushed after ${((Date.now() - started) / 1000).toFixed(1)} s`)
  git = await startGitServer()
  repo = await git.createRepo("acme/agent.git", [{ files: await agentFiles(baseImage, "v1"), message: "agent v1" }])
  env = await startBuildEnv({ registries: { insecureRegistries: [registry.host] }, insecureGitHosts: [git.host] })
}, 900_000)

afterAll(async () => {
  await env?.stop()
  await git?.stop()
  await registry?.stop()
  if (scratch) rmSync(scratch, { recursive: true, force: true })
})

interface Built {
  readonly image: BuiltImage
  readonly commitSha: string
  readonly rootfs: string
  readonly bundle: string
  readonly log: ReturnType<typeof collectLog>
  readonly seconds: number
}

/** Checks out main and builds it; answers the image unpacked into `dir`. */
const checkoutAndBuild = (tag: string) =>
  env.run(
    Effect.scoped(
      Effect.gen(function*() {
        const builder = yield* ImageBuilder
        const source = yield* GitSource
        const log = collectLog()
        const started = Date.now()
        const workspace = yield* builder.workspace
        const checkout = yield* source.checkout({ repoUrl: repo.url, ref: "main", dir: join(workspace, "agent") })
        const image = yield* builder.build({ cacheKey: "agent", tag, dockerfile: agentDockerfile(baseImage), contextDir: checkout.dir, onLog: log.onLog })
        const seconds = (Date.now() - started) / 1000
        const bundle = join(scratch, tag)
        const rootfs = yield* Effect.promise(() => unpackLayout(image.layout, image.layoutTag, bundle))
        return { image, commitSha: checkout.commitSha, rootfs, bundle, log, seconds } satisfies Built
      })
    )
  )

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

/** Runs the unpacked image's process (bwrap over its rootfs, host network) and asks its graph. */
const runAgent = (built: Built, question: string) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function*() {
        const config = JSON.parse(readFileSync(join(built.bundle, "config.json"), "utf8")) as { process: { args: Array<string>; env: Array<string>; cwd: string } }
        const port = yield* Effect.promise(freePort)
        const envArgs = [...config.process.env.filter((e) => !e.startsWith("PORT=")), `PORT=${port}`, "HOST=127.0.0.1"].flatMap((e) => {
          const at = e.indexOf("=")
          return ["--setenv", e.slice(0, at), e.slice(at + 1)]
        })
        const output: Array<string> = []
        const child = yield* processRunner.spawn(
          ["bwrap", "--bind", built.rootfs, "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf",
            "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--clearenv", ...envArgs, "--chdir", config.process.cwd, "--", ...config.process.args],
          { cleanEnv: true, env: HOST_ENV, stdio: ["ignore", "pipe", "pipe"] }
        )
        child.stdout?.on("data", (d: Buffer) => output.push(d.toString()))
        child.stderr?.on("data", (d: Buffer) => output.push(d.toString()))
        const base = `http://127.0.0.1:${port}`
        yield* Effect.tryPromise(() => fetch(`${base}/ok`).then((r) => (r.ok ? r.json() : Promise.reject(new Error(`status ${r.status}`))))).pipe(
          Effect.retry({ schedule: Schedule.spaced("250 millis"), times: 240 }),
          Effect.mapError(() => new Error(`the agent did not answer /ok: ${output.join("").slice(-2000)}`))
        )
        const response = yield* Effect.tryPromise(() =>
          fetch(`${base}/runs/wait`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ assistant_id: "agent", input: { question } }) }).then(async (r) => ({ status: r.status, body: await r.text() }))
        )
        return { ...response, output: output.join("") }
      })
    )
  )

describe("a push becomes an image that runs the agent", () => {
  let cold: Built

  it("builds the agent from its repository at the pushed commit (cold caches)", async () => {
    cold = await checkoutAndBuild("r1")
    console.log(`cold build (checkout + build + export): ${cold.seconds.toFixed(1)} s, build ${(cold.image.durationMs / 1000).toFixed(1)} s; steps: ${cold.image.steps.map((s) => `${s.index}:${(s.durationMs / 1000).toFixed(1)}s${s.cached ? "(cached)" : ""}`).join(" ")}`)
    expect(cold.commitSha).toBe(repo.commits[0])
    const text = cold.log.text()
    expect(text).toContain("STEP 5/8: RUN npm ci")
    expect(text).toMatch(/added \d+ packages/)
    expect(text).toContain("Prebuild script not found, skipping")
    // The agent and its dependencies are in the image.
    expect(readFileSync(join(cold.rootfs, "deps/agent/src/agent.ts"), "utf8")).toContain("slipway v1 answers")
    expect(JSON.parse(readFileSync(join(cold.rootfs, "deps/agent/node_modules/@langchain/langgraph/package.json"), "utf8")).version).toBe("1.7.3")
    expect(readFileSync(join(cold.rootfs, "opt/agent/prepared"), "utf8")).toBe("prepared\n")
    expect(existsSync(join(cold.rootfs, "api/entrypoint.mjs"))).toBe(true)
    const config = JSON.parse(readFileSync(join(cold.bundle, "config.json"), "utf8")) as { process: { env: Array<string>; cwd: string; args: Array<string> } }
    expect(config.process.env).toContain(`LANGSERVE_GRAPHS={"agent": "./src/agent.ts:graph"}`)
    expect(config.process.cwd).toBe("/deps/agent")
    expect(config.process.args).toEqual(["/usr/local/bin/node", "/api/entrypoint.mjs"])
  }, 900_000)

  it("rebuilds a source-only push reusing every layer before ADD and installing from the warm npm cache; the new image answers with the new code", async () => {
    expect(cold, "the cold build ran").toBeDefined()
    const [sha] = await repo.push([{ files: { "src/agent.ts": (await agentFiles(baseImage, "v2"))["src/agent.ts"]! }, message: "agent v2" }])
    const warm = await checkoutAndBuild("r2")
    console.log(
      `warm rebuild after a source-only push (checkout + build + export): ${warm.seconds.toFixed(1)} s, build ${(warm.image.durationMs / 1000).toFixed(1)} s (cold: ${cold.seconds.toFixed(1)} s); ` +
        `egress connections cold ${cold.image.egress.allowed}, warm ${warm.image.egress.allowed}; steps: ${warm.image.steps.map((s) => `${s.index}:${(s.durationMs / 1000).toFixed(1)}s${s.cached ? "(cached)" : ""}`).join(" ")}`
    )
    expect(warm.commitSha).toBe(sha)
    const byIndex = new Map(warm.image.steps.map((s) => [s.index, s]))
    // Every layer before ADD came from the cache (the base and the dockerfile_lines)...
    expect(byIndex.get(1 + DOCKERFILE_LINES.length)?.cached).toBe(true)
    expect(byIndex.get(2 + DOCKERFILE_LINES.length)?.instruction).toBe("ADD . /deps/agent")
    expect(byIndex.get(2 + DOCKERFILE_LINES.length)?.cached).toBe(false)
    // ...and npm ci ran again, fetching nothing it had fetched before.
    expect(byIndex.get(5)?.instruction).toBe("RUN npm ci")
    expect(byIndex.get(5)?.cached).toBe(false)
    expect(warm.image.egress.allowed).toBeLessThan(cold.image.egress.allowed)
    expect(warm.seconds).toBeLessThan(cold.seconds)
    expect(readFileSync(join(warm.rootfs, "deps/agent/src/agent.ts"), "utf8")).toContain("slipway v2 answers")

    const answer = await runAgent(warm, "hello")
    expect(answer.status, answer.output.slice(-2000)).toBe(200)
    expect(JSON.parse(answer.body)).toMatchObject({ question: "hello", answer: "slipway v2 answers: HELLO" })
  }, 900_000)
})
