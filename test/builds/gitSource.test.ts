import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Fiber, Layer, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { GitSource, GitSourceError, GitSourceLive } from "../../server/builds/GitSource.ts"
import { BuildSettings, defaultBuildSettings } from "../../server/builds/settings.ts"
import { HOST_ENV, ProcessRunnerLive, processRunner } from "../../server/runtime/ProcessRunner.ts"
import { startGitServer, type TestGitServer, type TestRepo } from "../support/gitServer.ts"

const TOKEN = "ghs_testtoken_0123456789abcdef"

let server: TestGitServer
let work: string
let agent: TestRepo
let secret: TestRepo

const layerFor = (insecureGitHosts: ReadonlyArray<string>) =>
  GitSourceLive.pipe(
    Layer.provide(Layer.succeed(BuildSettings, { ...defaultBuildSettings(join(work, "builds")), insecureGitHosts })),
    Layer.provide(ProcessRunnerLive)
  )

const checkout = (request: Parameters<GitSource["Service"]["checkout"]>[0], hosts: ReadonlyArray<string> = [server.host]) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const git = yield* GitSource
      return yield* git.checkout(request)
    }).pipe(Effect.provide(layerFor(hosts)))
  )

const checkoutError = (request: Parameters<GitSource["Service"]["checkout"]>[0], hosts: ReadonlyArray<string> = [server.host]) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const git = yield* GitSource
      return yield* Effect.flip(git.checkout(request))
    }).pipe(Effect.provide(layerFor(hosts)))
  )

let n = 0
const freshDir = () => join(work, `co-${n++}`)

/** Every file under `dir` (including .git) as one string, to look for a leaked credential. */
const allText = (dir: string): string => {
  let out = ""
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name)
    if (entry.isFile()) out += readFileSync(path).toString("latin1")
  }
  return out
}

const gitIn = async (dir: string, ...args: Array<string>) =>
  (await Effect.runPromise(processRunner.run(["git", "-C", dir, ...args], { cleanEnv: true, env: { ...HOST_ENV, GIT_CONFIG_NOSYSTEM: "1", HOME: "/nonexistent" } }))).stdout.trim()

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "slipway-gitsource-"))
  server = await startGitServer({ tokens: { "acme/secret.git": TOKEN } })
  agent = await server.createRepo("acme/agent.git", [
    { files: { "README.md": "one\n" }, message: "first" },
    { files: { "README.md": "two\n" }, tag: "v2", message: "second" },
    { files: { "README.md": "three\n", "src/agent.ts": "export const x = 3\n" }, message: "third" },
    { files: { "README.md": "feature\n" }, branch: "feature", message: "on a branch" }
  ])
  secret = await server.createRepo("acme/secret.git", [{ files: { "secret.txt": "private\n" } }])
})

afterAll(async () => {
  await server?.stop()
  if (work) rmSync(work, { recursive: true, force: true })
})

describe("GitSource", () => {
  it("checks out the tip of a branch, one commit deep", async () => {
    const dir = freshDir()
    const result = await checkout({ repoUrl: agent.url, ref: "main", dir })
    expect(result.commitSha).toBe(agent.commits[2])
    expect(readFileSync(join(dir, "README.md"), "utf8")).toBe("three\n")
    expect(readFileSync(join(dir, "src/agent.ts"), "utf8")).toContain("x = 3")
    expect(await gitIn(dir, "rev-list", "--count", "HEAD")).toBe("1")
    expect(existsSync(join(dir, ".git/shallow"))).toBe(true)
    const other = await checkout({ repoUrl: agent.url, ref: "feature", dir: freshDir() })
    expect(other.commitSha).toBe(agent.commits[3])
  })

  it("checks out a tag and a pinned commit (fetched by its sha)", async () => {
    const tagged = await checkout({ repoUrl: agent.url, ref: "v2", dir: freshDir() })
    expect(tagged.commitSha).toBe(agent.commits[1])
    expect(readFileSync(join(tagged.dir, "README.md"), "utf8")).toBe("two\n")
    const pinned = await checkout({ repoUrl: agent.url, ref: "main", commitSha: agent.commits[0], dir: freshDir() })
    expect(pinned.commitSha).toBe(agent.commits[0])
    expect(readFileSync(join(pinned.dir, "README.md"), "utf8")).toBe("one\n")
    expect(await gitIn(pinned.dir, "rev-list", "--count", "HEAD")).toBe("1")
  })

  it("unknown refs and commits fail naming the step, and leave no directory", async () => {
    const dir = freshDir()
    const error = await checkoutError({ repoUrl: agent.url, ref: "no-such-branch", dir })
    expect(error).toBeInstanceOf(GitSourceError)
    expect(error.kind).toBe("unknown_ref")
    expect(error.step).toBe("fetching no-such-branch")
    expect(error.message).toMatch(/^fetching no-such-branch: ref no-such-branch not found/)
    expect(existsSync(dir)).toBe(false)
    const bySha = await checkoutError({ repoUrl: agent.url, commitSha: "0123456789abcdef0123456789abcdef01234567", dir: freshDir() })
    expect(bySha.kind).toBe("unknown_ref")
    expect(bySha.message).toMatch(/commit 0123456789ab not found/)
    const short = await checkoutError({ repoUrl: agent.url, commitSha: "abc123", dir: freshDir() })
    expect(short.kind).toBe("invalid_request")
    const option = await checkoutError({ repoUrl: agent.url, ref: "--upload-pack=touch /tmp/x", dir: freshDir() })
    expect(option.kind).toBe("invalid_request")
    const missing = await checkoutError({ repoUrl: server.url("acme/none.git"), ref: "main", dir: freshDir() })
    expect(missing.kind).toBe("not_found")
  })

  it("a private repository needs its token; the token reaches only that repository and is on no disk afterwards", async () => {
    const without = await checkoutError({ repoUrl: secret.url, ref: "main", dir: freshDir() })
    expect(without.kind).toBe("auth")
    expect(without.message).toMatch(/^fetching main: authentication failed \(no token for this repository\)/)
    const wrong = await checkoutError({ repoUrl: secret.url, ref: "main", token: Redacted.make("nope"), dir: freshDir() })
    expect(wrong.kind).toBe("auth")
    expect(wrong.message).toMatch(/the token was refused/)
    expect(wrong.message).not.toContain("nope")

    const before = server.requests.length
    const dir = freshDir()
    const result = await checkout({ repoUrl: secret.url, ref: "main", token: Redacted.make(TOKEN), dir })
    expect(result.commitSha).toBe(secret.commits[0])
    expect(readFileSync(join(dir, "secret.txt"), "utf8")).toBe("private\n")
    const seen = server.requests.slice(before)
    expect(seen.length).toBeGreaterThan(0)
    expect(seen.every((r) => r.basic === `x-access-token:${TOKEN}` && r.status === 200)).toBe(true)
    // Nothing of the token on disk: not in .git/config, not anywhere in the checkout.
    const text = allText(dir)
    expect(text).not.toContain(TOKEN)
    expect(text).not.toContain(Buffer.from(`x-access-token:${TOKEN}`).toString("base64"))
    expect(readFileSync(join(dir, ".git/config"), "utf8")).toContain(secret.url)

    // A public repository fetched with a token for another does not get it either.
    const mark = server.requests.length
    await checkout({ repoUrl: agent.url, ref: "main", dir: freshDir() })
    expect(server.requests.slice(mark).every((r) => r.basic === undefined)).toBe(true)
  })

  it("refuses plain-HTTP hosts that are not listed, and URLs with credentials or other schemes", async () => {
    const before = server.requests.length
    const refused = await checkoutError({ repoUrl: agent.url, ref: "main", dir: freshDir() }, [])
    expect(refused.kind).toBe("insecure_host")
    expect(refused.message).toContain(`plain-HTTP git host ${server.host} refused`)
    expect(refused.message).toContain("SLIPWAY_INSECURE_GIT_HOSTS")
    expect(server.requests.length).toBe(before)
    const withUser = await checkoutError({ repoUrl: agent.url.replace("http://", "http://me:pw@"), ref: "main", dir: freshDir() })
    expect(withUser.kind).toBe("invalid_request")
    expect(withUser.message).not.toContain("pw")
    for (const url of ["file:///etc", "ext::sh -c touch% /tmp/pwned", "ssh://git@example.com/x.git", "git://example.com/x.git"]) {
      expect((await checkoutError({ repoUrl: url, ref: "main", dir: freshDir() })).kind).toBe("invalid_request")
    }
  })

  it("an unreachable host fails as unreachable, naming the step", async () => {
    // A port nobody listens on (the server's, after a probe; listed so the scheme passes).
    const probe = await startGitServer()
    const host = probe.host
    await probe.stop()
    const error = await checkoutError({ repoUrl: `http://${host}/acme/agent.git`, ref: "main", dir: freshDir() }, [host])
    expect(error.kind).toBe("unreachable")
    expect(error.message).toMatch(new RegExp(`^fetching main: cannot reach ${host.replace(/\./g, "\\.")}`))
  })

  it("interrupting a checkout kills git and removes the directory", async () => {
    const slow = await startGitServer({ stallMs: 60_000 })
    try {
      const repo = await slow.createRepo("acme/slow.git", [{ files: { "a.txt": "a\n" } }])
      const dir = freshDir()
      const program = Effect.gen(function*() {
        const git = yield* GitSource
        const fiber = yield* Effect.forkChild(git.checkout({ repoUrl: repo.url, ref: "main", dir }))
        // Wait until git is talking to the (stalled) server.
        yield* Effect.promise(async () => {
          const deadline = Date.now() + 15_000
          while (slow.pending() === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
        })
        expect(slow.pending()).toBeGreaterThan(0)
        const exit = yield* Fiber.interrupt(fiber).pipe(Effect.andThen(Fiber.await(fiber)))
        return exit
      })
      const exit = await Effect.runPromise(program.pipe(Effect.provide(layerFor([slow.host]))))
      expect(Exit.hasInterrupts(exit)).toBe(true)
      expect(existsSync(dir)).toBe(false)
      // No git process of that checkout is left.
      const ps = (await Effect.runPromise(processRunner.run(["ps", "-eo", "args"]))).stdout
      expect(ps.split("\n").filter((l) => l.includes(dir))).toEqual([])
    } finally {
      await slow.stop()
    }
  })

  it("the directory must be empty", async () => {
    const dir = freshDir()
    await checkout({ repoUrl: agent.url, ref: "main", dir })
    const error = await checkoutError({ repoUrl: agent.url, ref: "main", dir })
    expect(error.step).toBe("preparing the checkout directory")
    expect(statSync(join(dir, "README.md")).isFile()).toBe(true)
  })
})
