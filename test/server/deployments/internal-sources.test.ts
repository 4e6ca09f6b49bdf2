/**
 * The sources of `langgraph deploy` on the control plane (docs/registry.md, docs/real-api.md),
 * against a real server on the simulated runtime (which runs no registry: `auto` runs it with the
 * local runtime; the pushes themselves are test/registry/deploy-flow.test.ts): deployments
 * created without a revision, the fields the CLI sends, push-token and upload-url refused for
 * other sources with the message the CLI matches, and the first PATCH that brings a tarball.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { agentEntries, tarGzOf } from "../../uploads/tarballs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { containerBody, gitrepoBody, uniqueName, waitForRevision } from "./helpers.ts"

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(async () => {
  await t?.close()
})

/** `create_deployment` of host_backend.py, as the CLI sends it. */
const cliCreate = (source: "internal_docker" | "internal_source", extra: Record<string, unknown> = {}) => ({
  name: uniqueName(),
  source,
  source_config: { deployment_type: "dev" },
  source_revision_config: { ...extra },
  secrets: [{ name: "OPENAI_API_KEY", value: "sk-test" }]
})

const create = async (body: unknown) => {
  const response = await t.request("POST", "/v2/deployments", { body })
  expect(response.status, JSON.stringify(response.body)).toBe(201)
  return response.body
}

const cliMessage = (source: string) => `only available for '${source}' source deployments`

describe("internal_docker and internal_source deployments", () => {
  it("are created without a revision until a PATCH brings the image or the tarball, with a generated custom_url", async () => {
    for (const source of ["internal_docker", "internal_source"] as const) {
      const deployment = await create(cliCreate(source))
      expect(deployment).toMatchObject({ source, latest_revision_id: null, active_revision_id: null, status: "AWAITING_DATABASE", secrets: [{ name: "OPENAI_API_KEY", value: "********" }] })
      expect(deployment.source_config.custom_url).toBe(`${t.url}/d/${deployment.name}`)
      const revisions = await t.request("GET", `/v2/deployments/${deployment.id}/revisions?limit=1`)
      expect(revisions.body.resources).toEqual([])
    }
  })

  it("take langgraph_config_path on create (internal_source), refuse what cannot exist yet and other sources' fields", async () => {
    const withConfig = await create(cliCreate("internal_source", { langgraph_config_path: "agent/langgraph.json" }))
    expect(withConfig.source_revision_config.graph_config_path).toBe("agent/langgraph.json")
    const refused = [
      [cliCreate("internal_docker", { image_uri: "registry.example.com/agent@sha256:" + "a".repeat(64) }), ["body", "source_revision_config", "image_uri"], "push-token"],
      [cliCreate("internal_source", { source_tarball_path: "uploads/a/b/c.tar.gz" }), ["body", "source_revision_config", "source_tarball_path"], "upload-url"],
      [{ ...cliCreate("internal_docker"), source_config: { repo_url: "https://github.com/acme/agent" } }, ["body", "source_config", "repo_url"], "applies to gitrepo deployments only"],
      [gitrepoBody(uniqueName(), { source_revision_config: { repo_ref: "main", graph_config_path: "langgraph.json", source_tarball_path: "x" } }), ["body", "source_revision_config", "source_tarball_path"], "applies to internal_source deployments only"],
      [{ ...cliCreate("internal_source"), source_config: { install_command: "npm ci; curl evil" } }, ["body", "source_config", "install_command"], "install_command contains disallowed characters or patterns"]
    ] as const
    for (const [body, loc, words] of refused) {
      const response = await t.request("POST", "/v2/deployments", { body })
      expect(response.status, JSON.stringify(response.body)).toBe(422)
      expect(response.body.detail[0].loc).toEqual(loc)
      expect(response.body.detail[0].msg).toContain(words)
    }
  })

  it("push-token and upload-url answer other sources 400 with the message the CLI matches; 404 for another tenant's deployment", async () => {
    const git = await create(gitrepoBody(uniqueName()))
    const image = await create(containerBody(uniqueName()))
    const docker = await create(cliCreate("internal_docker"))
    const tarball = await create(cliCreate("internal_source"))
    for (const deployment of [git, image, tarball]) {
      const response = await t.request("POST", `/v2/deployments/${deployment.id}/push-token`)
      expect(response.status).toBe(400)
      expect(response.body.detail).toContain(cliMessage("internal_docker"))
    }
    for (const deployment of [git, image, docker]) {
      const response = await t.request("POST", `/v2/deployments/${deployment.id}/upload-url`)
      expect(response.status).toBe(400)
      expect(response.body.detail).toContain(cliMessage("internal_source"))
    }
    // The simulated runtime runs no registry: said plainly.
    const noRegistry = await t.request("POST", `/v2/deployments/${docker.id}/push-token`)
    expect(noRegistry.status).toBe(503)
    expect(noRegistry.body.detail).toContain("no registry runs on this server")
    const other = t.keyFor(randomUUID())
    expect((await t.request("POST", `/v2/deployments/${tarball.id}/upload-url`, { key: other })).status).toBe(404)
    expect((await t.request("POST", `/v2/deployments/${docker.id}/push-token`, { key: other })).status).toBe(404)
  })

  it("a PATCH without the image or tarball is refused saying how to get one; an image of another path is refused", async () => {
    const docker = await create(cliCreate("internal_docker"))
    const secretsOnly = await t.request("PATCH", `/v2/deployments/${docker.id}`, { body: { secrets: [{ name: "A", value: "b" }] } })
    expect(secretsOnly.status).toBe(422)
    expect(secretsOnly.body.detail[0]).toMatchObject({ loc: ["body", "source_revision_config", "image_uri"], type: "missing" })
    expect(secretsOnly.body.detail[0].msg).toContain("push-token")
    const foreign = await t.request("PATCH", `/v2/deployments/${docker.id}`, {
      body: { revision_source: "internal_docker", source_revision_config: { image_uri: `ghcr.io/acme/agent@sha256:${"b".repeat(64)}` } }
    })
    expect(foreign.status).toBe(422)
    expect(foreign.body.detail[0].loc).toEqual(["body", "source_revision_config", "image_uri"])
    expect(foreign.body.detail[0].msg).toContain("this server runs no registry")
    const tarball = await create(cliCreate("internal_source"))
    const noPath = await t.request("PATCH", `/v2/deployments/${tarball.id}`, { body: { revision_source: "internal_source", source_revision_config: { langgraph_config_path: "langgraph.json" } } })
    expect(noPath.status).toBe(422)
    expect(noPath.body.detail[0]).toMatchObject({ loc: ["body", "source_revision_config", "source_tarball_path"], type: "missing" })
    expect(noPath.body.detail[0].msg).toContain("upload-url")
    const unknownPath = await t.request("PATCH", `/v2/deployments/${tarball.id}`, {
      body: { revision_source: "internal_source", source_revision_config: { source_tarball_path: `uploads/x/${tarball.id}/${randomUUID()}.tar.gz`, langgraph_config_path: "langgraph.json" } }
    })
    expect(unknownPath.status).toBe(400)
    expect(unknownPath.body.detail).toContain("is not an upload of this deployment")
    expect((await t.request("GET", `/v2/deployments/${tarball.id}`)).body.latest_revision_id).toBeNull()
  })

  it("upload-url, PUT as the CLI does, PATCH internal_source: the first revision, built and deployed (simulated)", async () => {
    const deployment = await create(cliCreate("internal_source"))
    const upload = await t.request("POST", `/v2/deployments/${deployment.id}/upload-url`)
    expect(upload.status).toBe(200)
    expect(upload.body.upload_url.startsWith(`${t.url}/v2/source-uploads/`)).toBe(true)
    expect(upload.body.object_path).toMatch(new RegExp(`^uploads/[0-9a-f-]+/${deployment.id}/[0-9a-f-]+\\.tar\\.gz$`))
    const tarball = tarGzOf(agentEntries)
    // _upload_to_gcs of deploy.py: no API key, these headers.
    const put = await fetch(upload.body.upload_url, {
      method: "PUT",
      headers: { "Content-Type": "application/gzip", "Content-Length": String(tarball.length), "X-Goog-Content-Length-Range": "0,209715200" },
      body: tarball
    })
    expect(put.status).toBe(200)
    // Another deployment cannot name this upload.
    const other = await create(cliCreate("internal_source"))
    const stolen = await t.request("PATCH", `/v2/deployments/${other.id}`, {
      body: { revision_source: "internal_source", source_revision_config: { source_tarball_path: upload.body.object_path, langgraph_config_path: "agent/langgraph.json" } }
    })
    expect(stolen.status).toBe(400)
    const patched = await t.request("PATCH", `/v2/deployments/${deployment.id}`, {
      body: {
        revision_source: "internal_source",
        source_revision_config: { source_tarball_path: upload.body.object_path, langgraph_config_path: "agent/langgraph.json" },
        source_config: { install_command: "npm ci", build_command: "npm run build" },
        secrets: [{ name: "OPENAI_API_KEY", value: "sk-test" }],
        tracked_packages: ["langgraph"]
      }
    })
    expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    expect(patched.body.latest_revision_id).not.toBeNull()
    expect(patched.body.source_config).toMatchObject({ install_command: "npm ci", build_command: "npm run build" })
    expect(patched.body.source_revision_config).toMatchObject({ source_tarball_path: upload.body.object_path, graph_config_path: "agent/langgraph.json" })
    const listed = await t.request("GET", `/v2/deployments/${deployment.id}/revisions?limit=1`)
    expect(listed.body.resources[0].id).toBe(patched.body.latest_revision_id)
    const revision = await waitForRevision(t.request, deployment.id, patched.body.latest_revision_id, (status) => status === "DEPLOYED")
    expect(revision).toMatchObject({ source: "internal_source", source_revision_config: { source_tarball_path: upload.body.object_path } })
    // The URL is used: a second PUT is refused.
    const again = await fetch(upload.body.upload_url, { method: "PUT", headers: { "Content-Type": "application/gzip" }, body: tarball })
    expect(again.status).toBe(409)
  })

  it("refuses a hostile tarball at the upload URL with a clear error, and the PATCH naming it", async () => {
    const deployment = await create(cliCreate("internal_source"))
    const hostile = [
      [[{ path: "langgraph.json", body: "{}" }, { path: "../escape.sh", body: "echo pwned" }], "has a '..' in its path"],
      [[{ path: "link", type: "SymbolicLink" as const, linkpath: "/etc" }, { path: "langgraph.json", body: "{}" }], "symbolic link to an absolute path"]
    ] as const
    for (const [entries, words] of hostile) {
      const upload = (await t.request("POST", `/v2/deployments/${deployment.id}/upload-url`)).body
      const body = tarGzOf(entries)
      const put = await fetch(upload.upload_url, { method: "PUT", headers: { "Content-Type": "application/gzip", "Content-Length": String(body.length) }, body })
      expect(put.status).toBe(400)
      expect(((await put.json()) as { detail: string }).detail).toContain(words)
      const patch = await t.request("PATCH", `/v2/deployments/${deployment.id}`, {
        body: { revision_source: "internal_source", source_revision_config: { source_tarball_path: upload.object_path, langgraph_config_path: "langgraph.json" } }
      })
      expect(patch.status).toBe(400)
      expect(patch.body.detail).toContain("nothing was uploaded")
    }
    // Not gzip at all; the wrong content type; an expired or altered URL.
    const upload = (await t.request("POST", `/v2/deployments/${deployment.id}/upload-url`)).body
    const text = await fetch(upload.upload_url, { method: "PUT", headers: { "Content-Type": "text/plain" }, body: "hello" })
    expect(text.status).toBe(415)
    const notGzip = await fetch(upload.upload_url, { method: "PUT", headers: { "Content-Type": "application/gzip" }, body: "hello" })
    expect(notGzip.status).toBe(400)
    const altered = await fetch(`${upload.upload_url.slice(0, -3)}abc`, { method: "PUT", headers: { "Content-Type": "application/gzip" }, body: tarGzOf(agentEntries) })
    expect(altered.status).toBe(401)
    expect((await t.request("GET", `/v2/deployments/${deployment.id}`)).body.latest_revision_id).toBeNull()
  })
})
