/**
 * The registry Slipway fronts, with real parts: the real `docker-registry` started by the
 * service, its token endpoint served by a small node HTTP server calling the exported handler,
 * skopeo pushing with the push token as `docker push` would (user `oauth2accesstoken`), and
 * Slipway's image store pulling with its own credentials.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { type AddressInfo, createServer as createNetServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Scope } from "effect"
import { TestClock } from "effect/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeLogger } from "../../server/log.ts"
import { type Registry, makeRegistry, REGISTRY_TOKEN_PATH } from "../../server/registry/Registry.ts"
import { signingKeyPaths } from "../../server/registry/keys.ts"
import { defaultRegistrySettings } from "../../server/registry/settings.ts"
import { makeImageStore } from "../../server/runtime/local/ImageStore.ts"
import type { RegistryAuth } from "../../server/runtime/local/images/model.ts"
import { processRunner, ProcessRunnerLive } from "../../server/runtime/ProcessRunner.ts"
import { which } from "../../server/runtime/local/tools.ts"
import { buildTestImages, removeTestImages } from "../support/images.ts"

const TENANT_A = "0a000000-0000-4000-8000-00000000000a"
const TENANT_B = "0b000000-0000-4000-8000-00000000000b"
const DEPLOYMENT_1 = "d1000000-0000-4000-8000-000000000001"
const DEPLOYMENT_2 = "d2000000-0000-4000-8000-000000000002"

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createNetServer()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })

const skopeo = () => {
  const path = which("skopeo")
  if (path === null) throw new Error("skopeo not found: install Debian package skopeo")
  return path
}

let dir: string
let layout: string
let realmServer: Server
let scope: Scope.Closeable
let registry: Registry["Service"]
let realm: string
/** Registries by their token `service`: the realm server answers for each (one is the default). */
const registries = new Map<string, Registry["Service"]>()

/** `skopeo copy` of the test busybox image to `target`, as `docker push` with the token would; resolves to its output or the failure. */
const push = (target: string, password: string, image = "busybox"): Promise<{ readonly ok: boolean; readonly output: string }> =>
  run(
    processRunner
      .run(
        [skopeo(), "--insecure-policy", "copy", "--quiet", "--dest-tls-verify=false", "--dest-creds", `oauth2accesstoken:${password}`, `oci:${layout}:${image}`, `docker://${target}`],
        { timeout: "120 seconds" }
      )
      .pipe(
        Effect.match({
          onSuccess: (result) => ({ ok: true, output: result.stdout + result.stderr }),
          onFailure: (error) => ({ ok: false, output: error.stderrTail })
        })
      )
  )

/** Pulls `reference` as Slipway's runtime does: its image store (a fresh one under `root`), with `auth`. */
const pullWith = (root: string, insecureRegistry: string, reference: string, auth: RegistryAuth) =>
  Effect.flatMap(makeImageStore({ root: join(dir, root), insecureRegistries: [insecureRegistry] }), (store) => store.pull(reference, { auth })).pipe(
    Effect.provide(ProcessRunnerLive)
  )
const pull = (root: string, insecureRegistry: string, reference: string, auth: RegistryAuth) => run(pullWith(root, insecureRegistry, reference, auth))
/** The error of a pull that must fail. */
const pullError = (root: string, insecureRegistry: string, reference: string, auth: RegistryAuth) => run(Effect.flip(pullWith(root, insecureRegistry, reference, auth)))

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

/** A token from the token endpoint, as a client asks for it (Basic auth, scopes). */
const requestToken = (password: string, scopes: ReadonlyArray<string>, clock?: number) => {
  const query = new URLSearchParams([["service", "slipway-registry"], ...scopes.map((scope) => ["scope", scope] as [string, string])])
  const request = registry.handleTokenRequest({
    method: "GET",
    headers: { authorization: `Basic ${Buffer.from(`oauth2accesstoken:${password}`).toString("base64")}` },
    query
  })
  return run(clock === undefined ? request : at(clock, request))
}

/** Runs `effect` with Effect's clock set to `timeMs` (what the service reads the time from). */
const at = <A, E>(timeMs: number, effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.gen(function* () {
    yield* TestClock.setTime(timeMs)
    return yield* effect
  }).pipe(Effect.provide(TestClock.layer()))

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "slipway-registry-test-"))
  layout = await buildTestImages()
  // The realm: a small node server calling the exported handler, as the server will mount it.
  realmServer = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://realm")
    if (url.pathname !== REGISTRY_TOKEN_PATH) {
      response.writeHead(404).end()
      return
    }
    const target = registries.get(url.searchParams.get("service") ?? "") ?? registry
    void run(target.handleTokenRequest({ method: request.method ?? "GET", headers: request.headers, query: url.searchParams })).then((answer) => {
      response.writeHead(answer.status, answer.headers).end(JSON.stringify(answer.body))
    })
  })
  await new Promise<void>((resolve) => realmServer.listen(0, "127.0.0.1", resolve))
  realm = `http://127.0.0.1:${(realmServer.address() as AddressInfo).port}${REGISTRY_TOKEN_PATH}`
  const port = await freePort()
  scope = await run(Scope.make())
  registry = await run(
    makeRegistry({
      settings: { ...defaultRegistrySettings, mode: "on", addr: `127.0.0.1:${port}`, gcSchedule: undefined },
      databasePath: join(dir, "slipway.db"),
      secretsKey: "0".repeat(64),
      realm,
      log: makeLogger("silent")
    }).pipe(Scope.provide(scope), Effect.provide(ProcessRunnerLive))
  )
}, 120_000)

afterAll(async () => {
  if (scope) await run(Scope.close(scope, Exit.void))
  realmServer?.close()
  removeTestImages()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe("registry", () => {
  it("keeps its signing key beside the database, readable by the server only", () => {
    const paths = signingKeyPaths(join(dir, "slipway.db"))
    expect(statSync(paths.key).mode & 0o777).toBe(0o600)
    expect(statSync(paths.certificate).isFile()).toBe(true)
  })

  it("takes a push with the push token and serves it to Slipway's own pull credentials", async () => {
    const token = await run(registry.pushToken(TENANT_A, DEPLOYMENT_1))
    expect(token.registry_url).toBe(`${registry.host}/${TENANT_A}/${DEPLOYMENT_1}`)
    expect(Date.parse(token.expires_at) - Date.now()).toBeGreaterThan(3500_000)
    const pushed = await push(`${token.registry_url}/agent:1`, token.token)
    expect(pushed.output).toBe(pushed.ok ? pushed.output : "push succeeded")

    // Slipway pulls what was pushed through its image store, with its own credentials.
    const auth = await run(registry.pullCredentials(TENANT_A, DEPLOYMENT_1))
    const image = await pull("images", registry.host, `${token.registry_url}/agent:1`, auth)
    expect(image.digest).toMatch(/^sha256:[0-9a-f]{64}$/)
    expect(registry.isDeploymentImage(`${token.registry_url}/agent@${image.digest}`, TENANT_A, DEPLOYMENT_1)).toBe(true)
    expect(registry.isDeploymentImage(`${token.registry_url}/agent@${image.digest}`, TENANT_A, DEPLOYMENT_2)).toBe(false)

    // The pull credentials read; they do not write.
    const pullOnly = await push(`${token.registry_url}/other:1`, auth.password)
    expect(pullOnly.ok).toBe(false)
    // Another deployment's pull credentials do not read it.
    const other = await run(registry.pullCredentials(TENANT_A, DEPLOYMENT_2))
    expect(await pullError("images-2", registry.host, `${token.registry_url}/agent:1`, other)).toMatchObject({
      kind: "unauthorized"
    })
  }, 180_000)

  it("refuses another deployment's token, another tenant's, and a path outside the deployment's", async () => {
    const target = `${registry.host}/${TENANT_A}/${DEPLOYMENT_1}/agent:evil`
    const otherDeployment = await run(registry.pushToken(TENANT_A, DEPLOYMENT_2))
    const otherTenant = await run(registry.pushToken(TENANT_B, DEPLOYMENT_1))
    for (const token of [otherDeployment, otherTenant]) {
      const result = await push(target, token.token)
      expect(result.ok).toBe(false)
      expect(result.output).toMatch(/unauthorized|denied|authentication required/i)
    }
    const own = await run(registry.pushToken(TENANT_A, DEPLOYMENT_1))
    for (const path of [`${TENANT_A}/${DEPLOYMENT_2}/agent:1`, `${TENANT_A}/${DEPLOYMENT_1}x/agent:1`, `elsewhere/agent:1`]) {
      const result = await push(`${registry.host}/${path}`, own.token)
      expect(result.ok).toBe(false)
      expect(result.output).toMatch(/unauthorized|denied|authentication required/i)
    }
  }, 180_000)

  it("refuses an expired push token and a tampered one at the token endpoint", async () => {
    const expired = await run(at(Date.now() - 2 * 3600_000, registry.pushToken(TENANT_A, DEPLOYMENT_1)))
    const result = await push(`${expired.registry_url}/agent:late`, expired.token)
    expect(result.ok).toBe(false)
    expect(result.output).toMatch(/expired|unauthorized/i)
    const answer = await requestToken(expired.token, [`repository:${TENANT_A}/${DEPLOYMENT_1}/agent:push,pull`])
    expect(answer.status).toBe(401)
    expect(JSON.stringify(answer.body)).toContain("the push token has expired")

    const fresh = await run(registry.pushToken(TENANT_A, DEPLOYMENT_1))
    const tampered = `${fresh.token.slice(0, -2)}${fresh.token.endsWith("AA") ? "BB" : "AA"}`
    const refused = await requestToken(tampered, [])
    expect(refused.status).toBe(401)
    expect(refused.headers["www-authenticate"]).toContain("Basic")
  })

  it("answers docker login (no scope) and grants only the deployment's repositories", async () => {
    const { token } = await run(registry.pushToken(TENANT_A, DEPLOYMENT_1))
    const login = await requestToken(token, [])
    expect(login.status).toBe(200)
    const body = login.body as { token: string; access_token: string; expires_in: number }
    expect(body.access_token).toBe(body.token)
    expect(body.expires_in).toBeGreaterThan(0)
    expect(body.expires_in).toBeLessThanOrEqual(300)
    const base = await fetch(`http://${registry.host}/v2/`, { headers: { authorization: `Bearer ${body.token}` } })
    expect(base.status).toBe(200)

    const scoped = await requestToken(token, [`repository:${TENANT_A}/${DEPLOYMENT_1}/agent:pull,push,delete repository:${TENANT_B}/${DEPLOYMENT_1}/agent:pull`, "registry:catalog:*"])
    const claims = JSON.parse(Buffer.from((scoped.body as { token: string }).token.split(".")[1]!, "base64url").toString()) as { access: unknown; aud: unknown }
    expect(claims.aud).toBe("slipway-registry")
    expect(claims.access).toEqual([{ type: "repository", name: `${TENANT_A}/${DEPLOYMENT_1}/agent`, actions: ["pull", "push"] }])
  })

  it("has the registry itself refuse a registry token past its expiry", async () => {
    const repository = `${TENANT_A}/${DEPLOYMENT_1}/agent`
    const { token } = await run(registry.pushToken(TENANT_A, DEPLOYMENT_1))
    const fresh = await requestToken(token, [`repository:${repository}:pull`])
    const ok = await fetch(`http://${registry.host}/v2/${repository}/tags/list`, { headers: { authorization: `Bearer ${(fresh.body as { token: string }).token}` } })
    expect(ok.status).toBe(200)
    // Issued (by Effect's clock) ten minutes ago: its 300 s are over, past the registry's 60 s leeway.
    const old = await run(at(Date.now() - 600_000, Effect.flatMap(registry.pushToken(TENANT_A, DEPLOYMENT_1), ({ token }) => Effect.succeed(token))))
    const stale = await requestToken(old, [`repository:${repository}:pull`], Date.now() - 600_000)
    expect(stale.status).toBe(200)
    const refused = await fetch(`http://${registry.host}/v2/${repository}/tags/list`, { headers: { authorization: `Bearer ${(stale.body as { token: string }).token}` } })
    expect(refused.status).toBe(401)
    expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"')
  })

  it("removes a deleted deployment's images, then garbage collection frees their blobs and the registry takes pushes again", async () => {
    const token = await run(registry.pushToken(TENANT_B, DEPLOYMENT_2))
    // An image of its own (http-ok: its config and manifest blobs are nobody else's), in two repositories.
    expect((await push(`${token.registry_url}/agent:1`, token.token, "http-ok")).ok).toBe(true)
    expect((await push(`${token.registry_url}/tools:2`, token.token, "http-ok")).ok).toBe(true)
    const removed = await run(registry.removeRepository(TENANT_B, DEPLOYMENT_2))
    expect(removed).toEqual({ repositories: 2, manifests: 2 })
    const auth = await run(registry.pullCredentials(TENANT_B, DEPLOYMENT_2))
    expect(await pullError("images-3", registry.host, `${token.registry_url}/agent:1`, auth)).toMatchObject({
      kind: "not_found"
    })
    expect(await run(registry.removeRepository(TENANT_B, DEPLOYMENT_2))).toEqual({ repositories: 0, manifests: 0 })

    const report = await run(registry.garbageCollect)
    // DEPLOYMENT_1's image (the same layers) is still referenced; the removed image's manifest and config blobs are not.
    expect(report.blobsMarked).toBeGreaterThan(0)
    expect(report.blobsDeleted).toBeGreaterThanOrEqual(2)
    // Writable again after the read-only window.
    expect((await push(`${token.registry_url}/agent:3`, token.token)).ok).toBe(true)
    const kept = await run(registry.pullCredentials(TENANT_A, DEPLOYMENT_1))
    const image = await pull("images-4", registry.host, `${registry.host}/${TENANT_A}/${DEPLOYMENT_1}/agent:1`, kept)
    expect(image.digest).toMatch(/^sha256:/)
  }, 240_000)

  it("runs garbage collection on its schedule, in a read-only window, and keeps what is in use", async () => {
    const lines: Array<{ readonly msg: string; readonly readOnly?: boolean }> = []
    const log = makeLogger("info", (line) => lines.push(JSON.parse(line)))
    const options = {
      databasePath: join(dir, "second", "slipway.db"),
      secretsKey: "0".repeat(64),
      realm,
      service: "second-registry",
      log
    }
    const addr = `127.0.0.1:${await freePort()}`
    // First without a schedule: push an image; then started again (same key, same storage) collecting every 2 s.
    const first = await run(Scope.make())
    let token: { readonly token: string; readonly registry_url: string }
    try {
      const other = await run(makeRegistry({ ...options, settings: { ...defaultRegistrySettings, mode: "on", addr, gcSchedule: undefined } }).pipe(Scope.provide(first), Effect.provide(ProcessRunnerLive)))
      registries.set("second-registry", other)
      token = await run(other.pushToken(TENANT_A, DEPLOYMENT_1))
      expect((await push(`${token.registry_url}/agent:1`, token.token)).ok).toBe(true)
    } finally {
      await run(Scope.close(first, Exit.void))
    }
    const second = await run(Scope.make())
    try {
      const other = await run(makeRegistry({ ...options, settings: { ...defaultRegistrySettings, mode: "on", addr, gcSchedule: "*/2 * * * * *" } }).pipe(Scope.provide(second), Effect.provide(ProcessRunnerLive)))
      registries.set("second-registry", other)
      const deadline = Date.now() + 30_000
      while (!lines.some((line) => line.msg === "registry garbage collection: read-only window ends") && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100))
      const messages = lines.map((line) => `${line.msg}${line.readOnly === undefined ? "" : ` readOnly=${line.readOnly}`}`)
      const window = messages.indexOf("registry garbage collection: read-only window starts")
      expect(window).toBeGreaterThanOrEqual(0)
      expect(messages.slice(window, window + 4)).toEqual([
        "registry garbage collection: read-only window starts",
        "registry serving readOnly=true",
        "registry serving readOnly=false",
        "registry garbage collection: read-only window ends"
      ])
      // The token issued before the restart still works (same key), and the image survived the collection.
      const auth = await run(other.pullCredentials(TENANT_A, DEPLOYMENT_1))
      const image = await pull("images-5", other.host, `${token.registry_url}/agent:1`, auth)
      expect(image.digest).toMatch(/^sha256:/)
    } finally {
      registries.delete("second-registry")
      await run(Scope.close(second, Exit.void))
    }
  }, 90_000)

  it("refuses ids that cannot name a repository", async () => {
    const exit = await Effect.runPromiseExit(registry.pushToken("Tenant With Spaces", DEPLOYMENT_1))
    expect(Exit.isFailure(exit)).toBe(true)
    expect(JSON.stringify(exit)).toContain("cannot name a repository")
  })
})
