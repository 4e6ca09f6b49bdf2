/**
 * `langgraph deploy` (local build and push) against a real Slipway server: the `local` runtime,
 * the registry Slipway runs (Debian's docker-registry, token auth with Slipway as the token
 * server), real boxes. The test replays deploy.py / host_backend.py request for request (the
 * same JSON, the same order), with skopeo as the pusher where the CLI runs `docker push`
 * (user `oauth2accesstoken`, the push token as password), then serves what was pushed at the
 * deployment's custom_url and reads its logs as `langgraph deploy logs --follow` does.
 * Refused: another tenant's or another deployment's token, an expired or altered token, a
 * deleted deployment's token; a deleted deployment's images leave the registry.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { tmpdir } from "node:os"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer } from "../../server/index.ts"
import { makeLogger } from "../../server/log.ts"
import { makeCredentialTokens } from "../../server/registry/access.ts"
import { buildTestImages, removeTestImages } from "../support/images.ts"
import { freePort } from "../support/registry.ts"
import { runCommand } from "../support/run.ts"
import { makeRequester, TEST_KEY, tempDatabasePath } from "../support/server.ts"
import { setEnv } from "../support/env.ts"
import { closeLocalServer } from "./closeLocalServer.ts"

const SECRETS_KEY = "langgraph-deploy-test-secrets-key-0123456789"
const database = tempDatabasePath("lgdeploy")
const work = mkdtempSync(join(tmpdir(), "slipway-lgdeploy-"))
type Server = Awaited<ReturnType<typeof startServer>>
let server: Server
let layout: string
let restoreEnv: () => void = () => undefined

/** The CLI's HostBackendClient: X-Api-Key and Accept: application/json on every request. */
let cli: ReturnType<typeof makeRequester>
const call = async (method: string, path: string, payload?: unknown, key?: string) => {
  const response = await cli(method, path, { ...(payload === undefined ? {} : { body: payload }), headers: { accept: "application/json" }, ...(key ? { key } : {}) })
  return response
}

beforeAll(async () => {
  layout = await buildTestImages()
  restoreEnv = setEnv({
    SLIPWAY_REGISTRY: "on",
    SLIPWAY_REGISTRY_ADDR: `127.0.0.1:${await freePort()}`,
    SLIPWAY_REGISTRY_GC: "off",
    SLIPWAY_DEPLOY_HEALTH_TIMEOUT_MS: "20000",
    SLIPWAY_DEPLOY_DRAIN_MS: "1000"
  })
  server = await startServer({ port: 0, databasePath: database.path, apiKey: TEST_KEY, runtime: "local", logger: makeLogger("silent"), secretsKey: SECRETS_KEY })
  cli = makeRequester(server.url, TEST_KEY)
}, 180_000)

afterAll(async () => {
  const { running, closed } = await closeLocalServer(server, database.dir)
  removeTestImages()
  restoreEnv()
  rmSync(work, { recursive: true, force: true })
  database.remove()
  if (closed) throw closed
  // The server stopped everything it ran.
  expect(running).toEqual([])
}, 180_000)

/** `docker push` of a test image with the push token, done by skopeo; the pushed manifest's digest, or the failure's output. */
const push = async (target: string, token: string, image = "http-ok"): Promise<{ readonly ok: true; readonly digest: string } | { readonly ok: false; readonly output: string }> => {
  const digestFile = join(work, `${randomUUID()}.digest`)
  try {
    await runCommand(
      ["skopeo", "--insecure-policy", "copy", "--quiet", "--dest-tls-verify=false", "--dest-creds", `oauth2accesstoken:${token}`, "--digestfile", digestFile, `oci:${layout}:${image}`, `docker://${target}`],
      { timeoutMs: 120_000 }
    )
    return { ok: true, digest: readFileSync(digestFile, "utf8").trim() }
  } catch (error) {
    return { ok: false, output: String((error as Error).message) }
  }
}

/** `find_deployment_id_by_name`, then `create_deployment` with source internal_docker, as deploy.py does. */
const createAsCli = async (name: string, key?: string) => {
  const listed = await call("GET", `/v2/deployments?name_contains=${encodeURIComponent(name)}`, undefined, key)
  expect(listed.status).toBe(200)
  expect(listed.body.resources.find((deployment: { name: string }) => deployment.name === name)).toBeUndefined()
  const created = await call(
    "POST",
    "/v2/deployments",
    { name, source: "internal_docker", source_config: { deployment_type: "dev" }, source_revision_config: {}, secrets: [{ name: "GREETING", value: "hello" }] },
    key
  )
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  expect(created.body.latest_revision_id).toBeNull()
  return created.body as { id: string; name: string; tenant_id: string }
}

const pushToken = async (deploymentId: string, key?: string) => {
  const response = await call("POST", `/v2/deployments/${deploymentId}/push-token`, undefined, key)
  expect(response.status, JSON.stringify(response.body)).toBe(200)
  return response.body as { token: string; registry_url: string; expires_at: string }
}

/** `_poll_revision_status`: the latest revision, then GET it every second until a final status. */
const pollAsCli = async (deploymentId: string, timeoutMs = 240_000) => {
  const listed = await call("GET", `/v2/deployments/${deploymentId}/revisions?limit=1`)
  const revisionId = listed.body.resources[0].id as string
  const seen: Array<string> = []
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const revision = (await call("GET", `/v2/deployments/${deploymentId}/revisions/${revisionId}`)).body
    if (seen.at(-1) !== revision.status) seen.push(revision.status)
    if (["DEPLOYED", "CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED", "SKIPPED"].includes(revision.status)) return { revision, seen }
    if (Date.now() > deadline) throw new Error(`revision still ${revision.status} (${revision.status_message}) after ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}

describe("langgraph deploy, local build: push-token, docker push, PATCH with the digest", () => {
  let deployment: { id: string; name: string; tenant_id: string }
  let token: { token: string; registry_url: string; expires_at: string }
  let pushedImage: string

  it("deploys what was pushed and serves it at the deployment's custom_url", async () => {
    const name = `lg-${Date.now().toString(36)}`
    deployment = await createAsCli(name)
    token = await pushToken(deployment.id)
    expect(token.registry_url).toBe(`${process.env.SLIPWAY_REGISTRY_ADDR}/${deployment.tenant_id}/${deployment.id}`)
    expect(Date.parse(token.expires_at)).toBeGreaterThan(Date.now())
    // deploy.py: remote_image = f"{registry_url}/{normalize_name(name)}:{tag}", pushed with the token, digest resolved.
    const remoteImage = `${token.registry_url}/${name}:latest`
    const pushed = await push(remoteImage, token.token)
    expect(pushed.ok, pushed.ok ? "" : pushed.output).toBe(true)
    pushedImage = `${token.registry_url}/${name}@${(pushed as { digest: string }).digest}`
    const updated = await call("PATCH", `/v2/deployments/${deployment.id}`, {
      revision_source: "internal_docker",
      source_revision_config: { image_uri: pushedImage },
      tracked_packages: ["langgraph"],
      secrets: [{ name: "GREETING", value: "hello" }]
    })
    expect(updated.status, JSON.stringify(updated.body)).toBe(200)
    expect(updated.body.tenant_id).toBe(deployment.tenant_id)
    const { revision, seen } = await pollAsCli(deployment.id)
    expect(revision.status, `${revision.status_message} (${seen.join(" > ")})`).toBe("DEPLOYED")
    expect(revision.source).toBe("internal_docker")
    // _print_deployment_result: the URL is the deployment's custom_url.
    const customUrl = (await call("GET", `/v2/deployments/${deployment.id}`)).body.source_config.custom_url as string
    expect(customUrl).toBe(`${server.url}/d/${name}`)
    const served = await fetch(`${customUrl}/ok`)
    expect(served.status).toBe(200)
    expect((await served.text()).trim()).toBe("ok")
  }, 300_000)

  it("a second push of a new tag deploys a second revision", async () => {
    const pushed = await push(`${token.registry_url}/${deployment.name}:v2`, token.token)
    expect(pushed.ok, pushed.ok ? "" : pushed.output).toBe(true)
    const updated = await call("PATCH", `/v2/deployments/${deployment.id}`, {
      revision_source: "internal_docker",
      source_revision_config: { image_uri: `${token.registry_url}/${deployment.name}:v2` },
      secrets: [{ name: "GREETING", value: "hello again" }]
    })
    expect(updated.status, JSON.stringify(updated.body)).toBe(200)
    const { revision } = await pollAsCli(deployment.id)
    expect(revision.status, revision.status_message).toBe("DEPLOYED")
  }, 300_000)

  it("reads the build and deploy logs as the CLI does: build logs paged by next_offset, deploy logs followed by start_time, deduplicated by id", async () => {
    const revisionId = (await call("GET", `/v2/deployments/${deployment.id}/revisions?limit=1`)).body.resources[0].id
    // _stream_build_logs: asc, 50 at a time, offset = next_offset.
    const buildLines: Array<string> = []
    let offset: string | null = null
    for (let page = 0; page < 20; page++) {
      const body: Record<string, unknown> = offset ? { order: "asc", limit: 50, offset } : { order: "asc", limit: 50 }
      const answer = await call("POST", `/v1/projects/${deployment.id}/revisions/${revisionId}/build_logs`, body)
      expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      buildLines.push(...answer.body.logs.map((entry: { message: string }) => entry.message))
      if (answer.body.logs.length === 0) break
      offset = answer.body.next_offset ?? offset
    }
    expect(buildLines.some((line) => line.startsWith("pulling image"))).toBe(true)
    // deploy logs: desc first, then asc from the newest timestamp (as datetime.isoformat() writes it).
    const first = await call("POST", `/v1/projects/${deployment.id}/deploy_logs`, { limit: 100, order: "desc" })
    expect(first.status).toBe(200)
    expect(first.body.logs.length).toBeGreaterThan(0)
    const seen = new Set<string>(first.body.logs.map((entry: { id: string }) => entry.id))
    const newest = first.body.logs[0].timestamp as number
    const startTime = new Date(newest).toISOString().replace("Z", "000+00:00")
    const next = await call("POST", `/v1/projects/${deployment.id}/deploy_logs`, { limit: 100, order: "asc", start_time: startTime })
    expect(next.status, JSON.stringify(next.body)).toBe(200)
    // The entry at start_time comes back: the CLI drops it by id.
    expect(next.body.logs.some((entry: { id: string }) => seen.has(entry.id))).toBe(true)
    expect(next.body.logs.every((entry: { timestamp: number }) => entry.timestamp >= newest)).toBe(true)
  })

  it("refuses tokens of another tenant, another deployment, altered or expired ones, and PATCHes naming other images", async () => {
    const keyB = (await server.run(server.keys.createKey({ tenantId: randomUUID() }))).key
    const theirs = await createAsCli(`lg-b-${Date.now().toString(36)}`, keyB)
    const theirToken = await pushToken(theirs.id, keyB)
    // Another tenant's token on our path, and our token on theirs.
    expect((await push(`${token.registry_url}/x:1`, theirToken.token, "busybox")).ok).toBe(false)
    expect((await push(`${theirToken.registry_url}/x:1`, token.token, "busybox")).ok).toBe(false)
    // Another deployment of the same tenant.
    const sibling = await createAsCli(`lg-c-${Date.now().toString(36)}`)
    const siblingToken = await pushToken(sibling.id)
    const refused = await push(`${token.registry_url}/x:1`, siblingToken.token, "busybox")
    expect(refused.ok).toBe(false)
    expect((refused as { output: string }).output).toMatch(/denied|unauthorized/i)
    // A path next to ours that merely starts like it.
    expect((await push(`${token.registry_url}x/y:1`, token.token, "busybox")).ok).toBe(false)
    // Altered and expired tokens (the second signed with the server's key, expired a minute ago).
    expect((await push(`${token.registry_url}/x:1`, `${token.token.slice(0, -2)}xx`, "busybox")).ok).toBe(false)
    const expired = makeCredentialTokens(SECRETS_KEY).sign({ t: deployment.tenant_id, d: deployment.id, a: ["push", "pull"], e: Math.floor(Date.now() / 1000) - 60 })
    const late = await push(`${token.registry_url}/x:1`, expired, "busybox")
    expect(late.ok).toBe(false)
    expect((late as { output: string }).output).toMatch(/expired|unauthorized/i)
    // The same token, not expired, works: the refusals above are the token's, not the path's.
    const fresh = makeCredentialTokens(SECRETS_KEY).sign({ t: deployment.tenant_id, d: deployment.id, a: ["push", "pull"], e: Math.floor(Date.now() / 1000) + 60 })
    expect((await push(`${token.registry_url}/x:1`, fresh, "busybox")).ok).toBe(true)
    // A PATCH naming an image outside the deployment's path: 422 at image_uri.
    const foreign = await call("PATCH", `/v2/deployments/${deployment.id}`, { revision_source: "internal_docker", source_revision_config: { image_uri: `${siblingToken.registry_url}/x:1` } })
    expect(foreign.status).toBe(422)
    expect(foreign.body.detail[0].loc).toEqual(["body", "source_revision_config", "image_uri"])
    // push-token of a deployment that is not internal_docker: the 400 the CLI recognises.
    const image = await call("POST", "/v2/deployments", { name: `lg-img-${Date.now().toString(36)}`, source: "external_docker", source_revision_config: { image_uri: pushedImage } })
    const notOurs = await call("POST", `/v2/deployments/${image.body.id}/push-token`)
    expect(notOurs.status).toBe(400)
    expect(notOurs.body.detail).toContain("only available for 'internal_docker' source deployments")
  }, 300_000)

  it("a deleted deployment's token stops working and its images leave the registry", async () => {
    const repository = join(database.dir, "registry", "data", "docker", "registry", "v2", "repositories", deployment.tenant_id, deployment.id)
    expect(existsSync(repository)).toBe(true)
    expect((await call("DELETE", `/v2/deployments/${deployment.id}`)).status).toBe(204)
    const deadline = Date.now() + 60_000
    while ((await call("GET", `/v2/deployments/${deployment.id}`)).status !== 404) {
      if (Date.now() > deadline) throw new Error("the deployment was not deleted within 60 s")
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    expect(existsSync(repository)).toBe(false)
    const fresh = makeCredentialTokens(SECRETS_KEY).sign({ t: deployment.tenant_id, d: deployment.id, a: ["push", "pull"], e: Math.floor(Date.now() / 1000) + 60 })
    const refused = await push(`${token.registry_url}/x:1`, fresh, "busybox")
    expect(refused.ok).toBe(false)
  }, 120_000)
})
