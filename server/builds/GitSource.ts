/**
 * The source of a build: one commit of a git repository, checked out with Debian's `git`.
 *
 * `checkout` fetches exactly one commit (`--depth 1`): the tip of a branch or tag, or a pinned
 * commit sha (fetched by id; GitHub and `git http-backend` with protocol v2 allow that), into a
 * fresh directory, and answers the commit sha it checked out.
 *
 * - Only `https://` URLs, or `http://` for the `host:port`s listed in SLIPWAY_INSECURE_GIT_HOSTS;
 *   no credentials in the URL, no other transports (git's `protocol.allow` is `never` but for
 *   those two).
 * - A read token (an integration's, for private GitHub repositories) is sent as HTTP Basic
 *   `x-access-token:<token>` through `http.<repo url>.extraHeader`, handed to git in ITS
 *   environment only (`GIT_CONFIG_COUNT`): never in argv, never written to disk (.git/config holds
 *   the URL only), never in a log or an error, and only to URLs under the repository's (a redirect
 *   to another host does not get it).
 * - git runs with a clean environment: no system or global config, no terminal prompts, no
 *   credential helpers, the C locale (its messages are classified into `GitSourceError` kinds).
 * - Interrupting the effect kills git; a failed or interrupted checkout removes the directory.
 */
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs"
import { Context, Data, Duration, Effect, Layer, Redacted } from "effect"
import { repoUrlProblem } from "../../core/index.ts"
import { HOST_ENV, ProcessRunner, type CommandFailed } from "../runtime/ProcessRunner.ts"
import { BuildSettings } from "./settings.ts"

export type GitSourceErrorKind = "invalid_request" | "insecure_host" | "unreachable" | "not_found" | "unknown_ref" | "auth" | "timeout" | "failed"

/** A checkout that did not succeed; `message` is short, names the step, and never holds a credential. */
export class GitSourceError extends Data.TaggedError("GitSourceError")<{
  readonly kind: GitSourceErrorKind
  /** What was being done: "checking the URL", "fetching main", "checking out". */
  readonly step: string
  readonly message: string
}> {}

export interface CheckoutRequest {
  readonly repoUrl: string
  /** A branch or tag name (`main`, `v1.2`, `refs/heads/main`). Ignored when `commitSha` is set. */
  readonly ref?: string | undefined
  /** A full commit id to check out (40 or 64 hex digits). */
  readonly commitSha?: string | undefined
  /** Read token for a private repository: sent as HTTP Basic `x-access-token:<token>`. */
  readonly token?: Redacted.Redacted<string> | undefined
  /** Where to check out: created; must not exist or be empty. Removed again when the checkout fails. */
  readonly dir: string
  /** Default 10 minutes. */
  readonly timeout?: Duration.Input | undefined
}

export interface Checkout {
  readonly dir: string
  /** The commit checked out (full sha). */
  readonly commitSha: string
}

export class GitSource extends Context.Service<
  GitSource,
  {
    readonly checkout: (request: CheckoutRequest) => Effect.Effect<Checkout, GitSourceError>
  }
>()("slipway/GitSource") {}

const SHA_RE = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/
/** Branch and tag names git accepts, minus anything that could read as an option or a refspec. */
const REF_RE = /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)(?!.*\.lock(?:\/|$))[A-Za-z0-9._\/@+-]{1,255}$/

/**
 * Why `repoUrl` may not be fetched, or the URL: core's `repo_url` grammar (`repoUrlProblem`: no
 * credentials, no other transport, …; its messages never quote the URL), then https, or http for
 * the `insecureHosts` (SLIPWAY_INSECURE_GIT_HOSTS: `host:port`, a bare host meaning port 80).
 * ssh URLs, which the API accepts, are not fetched by builds.
 */
export const checkRepoUrl = (repoUrl: string, insecureHosts: ReadonlyArray<string>): URL | GitSourceError => {
  const bad = (kind: GitSourceErrorKind, why: string) => new GitSourceError({ kind, step: "checking the repository URL", message: why })
  const problem = repoUrlProblem(repoUrl, { insecureHosts: "any" })
  if (problem !== undefined) return bad("invalid_request", problem.includes("credentials") ? `${problem} (give the integration a read token instead)` : problem)
  const url = URL.canParse(repoUrl) ? new URL(repoUrl) : undefined
  if (url?.protocol === "https:") return url
  if (url?.protocol === "http:") {
    if (repoUrlProblem(repoUrl, { insecureHosts }) === undefined) return url
    return bad("insecure_host", `plain-HTTP git host ${url.host.toLowerCase()} refused (list it in SLIPWAY_INSECURE_GIT_HOSTS to allow it)`)
  }
  return bad("invalid_request", "builds fetch repositories over https:// only (ssh:// and git@host:path URLs are not supported for builds)")
}

/** Where a git failure came from, from its stderr (C locale). */
export const classifyGitFailure = (stderr: string): { readonly kind: GitSourceErrorKind; readonly reason: string } => {
  const lines = stderr.split("\n").map((l) => l.trim()).filter((l) => l.length > 0)
  const fatal = lines.filter((l) => /^(fatal|error):/.test(l)).map((l) => l.replace(/^(fatal|error):\s*/, ""))
  const reason = (fatal[fatal.length - 1] ?? lines[lines.length - 1] ?? "git failed").slice(0, 300)
  const all = stderr
  if (/Authentication failed|could not read (Username|Password)|terminal prompts disabled|returned error: 40[13]\b/.test(all)) return { kind: "auth", reason }
  if (/couldn't find remote ref|not our ref|unadvertised object|no such remote ref|did not send all necessary objects/i.test(all)) return { kind: "unknown_ref", reason }
  if (/returned error: 404|repository '.*' not found|not found$/im.test(all)) return { kind: "not_found", reason }
  if (/Could not resolve host|Failed to connect|Connection refused|Connection timed out|Couldn't connect|Network is unreachable|No route to host|Operation timed out|Recv failure|SSL|certificate|unable to access/i.test(all))
    return { kind: "unreachable", reason }
  return { kind: "failed", reason }
}

export const makeGitSource = Effect.gen(function*() {
  const runner = yield* ProcessRunner
  const settings = yield* BuildSettings

  const checkout = (request: CheckoutRequest): Effect.Effect<Checkout, GitSourceError> =>
    Effect.gen(function*() {
      const url = checkRepoUrl(request.repoUrl, settings.insecureGitHosts)
      if (url instanceof GitSourceError) return yield* url
      const sha = request.commitSha?.trim().toLowerCase()
      const ref = request.ref?.trim()
      if (sha !== undefined && sha !== "" && !SHA_RE.test(sha))
        return yield* new GitSourceError({ kind: "invalid_request", step: "checking the commit", message: `commit ${JSON.stringify(request.commitSha!.slice(0, 80))} is not a full commit sha (40 hex digits)` })
      if (!sha && !ref) return yield* new GitSourceError({ kind: "invalid_request", step: "checking the ref", message: "neither a ref nor a commit to check out" })
      if (!sha && !REF_RE.test(ref!))
        return yield* new GitSourceError({ kind: "invalid_request", step: "checking the ref", message: `ref ${JSON.stringify(ref!.slice(0, 80))} is not a valid branch or tag name` })
      const want = sha || ref!
      const what = sha ? `commit ${sha.slice(0, 12)}` : ref!
      const timeout = Duration.fromInputUnsafe(request.timeout ?? Duration.minutes(10))
      const repo = url.href

      // Configuration for this git process only (never argv, never a file).
      const config: Array<readonly [string, string]> = [
        ["protocol.allow", "never"],
        ["protocol.https.allow", "always"],
        ["credential.helper", ""],
        ["core.askPass", ""],
        ["init.defaultBranch", "main"],
        ["advice.detachedHead", "false"],
        ["http.followRedirects", "initial"]
      ]
      if (url.protocol === "http:") config.push(["protocol.http.allow", "always"])
      if (request.token !== undefined) {
        const basic = Buffer.from(`x-access-token:${Redacted.value(request.token)}`).toString("base64")
        // http.<url>.* applies to this repository's URLs only.
        config.push([`http.${repo}.extraHeader`, `Authorization: Basic ${basic}`])
      }
      const env: Record<string, string> = {
        ...HOST_ENV,
        HOME: "/nonexistent",
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_CONFIG_GLOBAL: "/dev/null",
        GIT_TERMINAL_PROMPT: "0",
        GIT_PROTOCOL_FROM_USER: "0",
        GIT_CONFIG_COUNT: String(config.length)
      }
      config.forEach(([key, value], i) => {
        env[`GIT_CONFIG_KEY_${i}`] = key
        env[`GIT_CONFIG_VALUE_${i}`] = value
      })

      const git = (step: string, args: ReadonlyArray<string>) =>
        runner.run(["git", "-C", request.dir, ...args], { cleanEnv: true, env, timeout }).pipe(
          Effect.mapError((error: CommandFailed) => {
            if (error.kind === "timeout") return new GitSourceError({ kind: "timeout", step, message: `${step}: timed out after ${Duration.format(timeout)}` })
            if (error.kind === "spawn") return new GitSourceError({ kind: "failed", step, message: `${step}: git could not start${error.errno === "ENOENT" ? " (install Debian package git)" : ""}` })
            const { kind, reason } = classifyGitFailure(error.stderrTail)
            const prefix =
              kind === "auth" ? `${step}: authentication failed${request.token === undefined ? " (no token for this repository)" : " (the token was refused)"}`
              : kind === "unknown_ref" ? `${step}: ${sha ? "commit" : "ref"} ${what} not found in ${repo}`
              : kind === "not_found" ? `${step}: repository ${repo} not found`
              : kind === "unreachable" ? `${step}: cannot reach ${url.host}`
              : step
            return new GitSourceError({ kind, step, message: `${prefix}: ${reason}` })
          })
        )

      let created = false
      const prepare = Effect.try({
        try: () => {
          if (existsSync(request.dir) && readdirSync(request.dir).length > 0) throw new Error(`${request.dir} is not empty`)
          mkdirSync(request.dir, { recursive: true, mode: 0o755 })
          created = true
        },
        catch: (error) => new GitSourceError({ kind: "failed", step: "preparing the checkout directory", message: `preparing the checkout directory: ${(error as Error).message}` })
      })
      const work = Effect.gen(function*() {
        yield* prepare
        yield* git("initializing the repository", ["init", "-q"])
        yield* git("adding the remote", ["remote", "add", "origin", repo])
        yield* git(`fetching ${what}`, ["fetch", "-q", "--depth", "1", "--no-tags", "--no-recurse-submodules", "--", "origin", want])
        yield* git("checking out", ["checkout", "-q", "--detach", "FETCH_HEAD"])
        const head = (yield* git("reading the commit", ["rev-parse", "HEAD"])).stdout.trim()
        if (sha && head !== sha) return yield* new GitSourceError({ kind: "unknown_ref", step: `fetching ${what}`, message: `fetching ${what}: the server answered commit ${head.slice(0, 12)}` })
        return { dir: request.dir, commitSha: head }
      })
      return yield* work.pipe(
        Effect.onExit((exit) =>
          exit._tag === "Success" || !created ? Effect.void : Effect.sync(() => rmSync(request.dir, { recursive: true, force: true }))
        )
      )
    })

  return GitSource.of({ checkout })
})

export const GitSourceLive = Layer.effect(GitSource, makeGitSource)
