/**
 * A git smart-HTTP server on loopback for tests: Debian's `git http-backend` (what real hosts
 * speak) as a CGI behind a tiny node HTTP server, serving the bare repositories the test makes.
 * Protocol v2 (so a shallow fetch of any reachable commit by its sha works, as on GitHub).
 *
 *   const server = await startGitServer({ tokens: { "acme/private.git": "s3cret" } })
 *   const repo = await server.createRepo("acme/agent.git", [
 *     { files: { "a.txt": "one" }, branch: "main" },
 *     { files: { "a.txt": "two" }, branch: "main", tag: "v2" }
 *   ])                                        // repo.commits[i] is the sha of commit i
 *   server.url("acme/agent.git")             // http://127.0.0.1:PORT/acme/agent.git
 *   server.requests                           // what was asked, with the credentials each carried
 *   await server.stop()
 *
 * A repository listed in `tokens` answers 401 (with a Basic challenge) unless the request carries
 * HTTP Basic `x-access-token:<its token>`.
 */
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import http from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { Effect } from "effect"
import { HOST_ENV, processRunner } from "../../server/runtime/ProcessRunner.ts"
import { which } from "../../server/runtime/local/tools.ts"

export interface RepoCommit {
  /** Files to write (path -> content; null deletes) before committing. */
  readonly files: Readonly<Record<string, string | null>>
  /** Branch the commit goes on (default main); a commit starts from the branch's previous tip. */
  readonly branch?: string
  readonly tag?: string
  readonly message?: string
}

export interface TestRepo {
  readonly name: string
  readonly url: string
  /** sha of each commit, in order. */
  readonly commits: ReadonlyArray<string>
  /** Adds commits later (a push). */
  readonly push: (commits: ReadonlyArray<RepoCommit>) => Promise<ReadonlyArray<string>>
}

export interface GitRequest {
  readonly method: string
  readonly path: string
  /** The Basic credentials the request carried (user:password), or undefined. */
  readonly basic: string | undefined
  readonly status: number
}

export interface TestGitServer {
  /** `127.0.0.1:PORT` */
  readonly host: string
  readonly url: (repo: string) => string
  readonly root: string
  readonly requests: Array<GitRequest>
  /** Requests held by `stallMs` right now. */
  readonly pending: () => number
  readonly createRepo: (name: string, commits: ReadonlyArray<RepoCommit>) => Promise<TestRepo>
  readonly stop: () => Promise<void>
}

const run = (argv: ReadonlyArray<string>, options: { cwd?: string; env?: Record<string, string> } = {}) =>
  Effect.runPromise(
    processRunner.run(argv, {
      cleanEnv: true,
      cwd: options.cwd,
      env: {
        ...HOST_ENV,
        HOME: "/nonexistent",
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_CONFIG_GLOBAL: "/dev/null",
        GIT_AUTHOR_NAME: "Test",
        GIT_AUTHOR_EMAIL: "test@example.com",
        GIT_COMMITTER_NAME: "Test",
        GIT_COMMITTER_EMAIL: "test@example.com",
        ...options.env
      },
      timeout: 60_000
    })
  ).then((r) => r.stdout)

export const startGitServer = async (
  options: {
    readonly tokens?: Readonly<Record<string, string>>
    /** Holds every fetch (the upload-pack POST) this long before answering: for interruption tests. */
    readonly stallMs?: number
  } = {}
): Promise<TestGitServer> => {
  const git = which("git")
  if (git === null) throw new Error("git not found: install Debian package git")
  const root = mkdtempSync(join(tmpdir(), "slipway-git-"))
  const reposDir = join(root, "repos")
  mkdirSync(reposDir)
  const backend = "/usr/lib/git-core/git-http-backend"
  const requests: Array<GitRequest> = []
  const tokens = options.tokens ?? {}

  let stalled = 0
  const server = http.createServer((req, res) => {
    if (options.stallMs !== undefined && req.method === "POST") {
      stalled++
      const timer = setTimeout(() => {
        stalled--
        serve(req, res)
      }, options.stallMs)
      res.on("close", () => {
        if (!res.writableEnded) {
          clearTimeout(timer)
          stalled--
        }
      })
      return
    }
    serve(req, res)
  })
  const serve = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://x")
    const path = decodeURIComponent(url.pathname)
    const auth = req.headers.authorization
    const basic = auth?.startsWith("Basic ") ? Buffer.from(auth.slice(6), "base64").toString("utf8") : undefined
    const repo = Object.keys(tokens).find((r) => path === `/${r}` || path.startsWith(`/${r}/`))
    const record = (status: number) => requests.push({ method: req.method ?? "GET", path: `${path}${url.search}`, basic, status })
    if (repo !== undefined && basic !== `x-access-token:${tokens[repo]}`) {
      record(401)
      req.resume()
      res.writeHead(401, { "WWW-Authenticate": 'Basic realm="slipway-test"', "Content-Type": "text/plain" })
      res.end("unauthorized\n")
      return
    }
    const child = spawn(backend, [], {
      env: {
        PATH: HOST_ENV.PATH!,
        GIT_PROJECT_ROOT: reposDir,
        GIT_HTTP_EXPORT_ALL: "1",
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_CONFIG_GLOBAL: "/dev/null",
        REQUEST_METHOD: req.method ?? "GET",
        PATH_INFO: path,
        QUERY_STRING: url.search.replace(/^\?/, ""),
        CONTENT_TYPE: req.headers["content-type"] ?? "",
        REMOTE_ADDR: req.socket.remoteAddress ?? "127.0.0.1",
        ...(basic ? { REMOTE_USER: basic.split(":")[0]! } : {}),
        ...(req.headers["content-encoding"] ? { HTTP_CONTENT_ENCODING: String(req.headers["content-encoding"]) } : {}),
        ...(req.headers["git-protocol"] ? { GIT_PROTOCOL: String(req.headers["git-protocol"]) } : {})
      },
      stdio: ["pipe", "pipe", "pipe"]
    })
    req.pipe(child.stdin)
    child.stdin.on("error", () => undefined)
    let head = Buffer.alloc(0)
    let headerDone = false
    let status = 200
    child.stdout.on("data", (chunk: Buffer) => {
      if (headerDone) return void res.write(chunk)
      head = Buffer.concat([head, chunk])
      const end = head.indexOf("\r\n\r\n") >= 0 ? head.indexOf("\r\n\r\n") : head.indexOf("\n\n")
      if (end < 0) return
      const sepLength = head[end] === 13 ? 4 : 2
      const headers: Record<string, string> = {}
      for (const line of head.subarray(0, end).toString("latin1").split(/\r?\n/)) {
        const at = line.indexOf(":")
        if (at <= 0) continue
        const name = line.slice(0, at).trim()
        const value = line.slice(at + 1).trim()
        if (name.toLowerCase() === "status") status = Number(value.split(" ")[0])
        else headers[name] = value
      }
      headerDone = true
      record(status)
      res.writeHead(status, headers)
      res.write(head.subarray(end + sepLength))
    })
    child.stdout.on("end", () => {
      if (!headerDone) {
        record(502)
        res.writeHead(502)
      }
      res.end()
    })
    child.on("error", () => res.destroy())
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  const host = `127.0.0.1:${port}`
  const urlOf = (name: string) => `http://${host}/${name}`

  const createRepo = async (name: string, commits: ReadonlyArray<RepoCommit>): Promise<TestRepo> => {
    const bare = join(reposDir, name)
    mkdirSync(dirname(bare), { recursive: true })
    await run([git, "init", "-q", "--bare", "-b", "main", bare])
    await run([git, "-C", bare, "config", "http.receivepack", "true"])
    const work = mkdtempSync(join(root, "work-"))
    await run([git, "init", "-q", "-b", "main", work])
    await run([git, "-C", work, "remote", "add", "origin", bare])
    let current: string | undefined
    const push = async (more: ReadonlyArray<RepoCommit>) => {
      const shas: Array<string> = []
      for (const [i, commit] of more.entries()) {
        const branch = commit.branch ?? "main"
        if (current !== branch) {
          const exists = (await run([git, "-C", work, "branch", "--list", branch])).trim() !== ""
          await run([git, "-C", work, "checkout", "-q", ...(exists ? [] : ["-b"]), branch])
          current = branch
        }
        for (const [file, content] of Object.entries(commit.files)) {
          const path = join(work, file)
          if (content === null) rmSync(path, { force: true })
          else {
            mkdirSync(dirname(path), { recursive: true })
            writeFileSync(path, content)
          }
        }
        await run([git, "-C", work, "add", "-A"])
        await run([git, "-C", work, "commit", "-q", "--allow-empty", "-m", commit.message ?? `commit ${i}`])
        const sha = (await run([git, "-C", work, "rev-parse", "HEAD"])).trim()
        if (commit.tag) await run([git, "-C", work, "tag", commit.tag])
        await run([git, "-C", work, "push", "-q", "--force", "origin", branch, ...(commit.tag ? [`refs/tags/${commit.tag}`] : [])])
        shas.push(sha)
      }
      return shas
    }
    const shas = await push(commits)
    return { name, url: urlOf(name), commits: shas, push }
  }

  return {
    host,
    url: urlOf,
    root,
    requests,
    pending: () => stalled,
    createRepo,
    stop: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      rmSync(root, { recursive: true, force: true })
    }
  }
}
